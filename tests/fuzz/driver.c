/* A small stand-in for libFuzzer so every fuzz target runs in the ordinary
 * test suite: it feeds the seed files in tests/fuzz/corpus/<target>/ and then
 * deterministic random mutations of them (byte flips, truncations, splices,
 * interesting values) for a bounded number of iterations. The same targets
 * link against real libFuzzer with `make fuzz`. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mmap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t next_rand(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

#define MAX_SEEDS 256
static unsigned char *seeds[MAX_SEEDS];
static size_t seed_len[MAX_SEEDS];
static int n_seeds;

static void load_seeds(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) && n_seeds < MAX_SEEDS) {
        if (e->d_name[0] == '.') continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        char *buf;
        size_t len;
        if (nc_read_file(path, &buf, &len, NULL) == NC_OK) {
            seeds[n_seeds] = (unsigned char *)buf;
            seed_len[n_seeds++] = len;
        }
    }
    closedir(d);
}

static size_t mutate(unsigned char *buf, size_t len, size_t cap) {
    int n_edits = 1 + (int)(next_rand() % 4);
    for (int k = 0; k < n_edits; k++) {
        switch (next_rand() % 6) {
        case 0:
            if (len) buf[next_rand() % len] ^= (unsigned char)(1u << (next_rand() % 8));
            break;
        case 1:
            if (len) buf[next_rand() % len] = (unsigned char)next_rand();
            break;
        case 2:
            if (len) len = next_rand() % len;
            break; /* truncate */
        case 3: {  /* insert interesting byte */
            static const unsigned char vals[] = {0,   0xff, 0x7f, 0x80, '"', '{', '}', '[',  ']',
                                                 ',', ':',  '\\', '(',  ')', '<', '>', '\n', '0'};
            if (len < cap) {
                size_t at = len ? next_rand() % (len + 1) : 0;
                memmove(buf + at + 1, buf + at, len - at);
                buf[at] = vals[next_rand() % sizeof vals];
                len++;
            }
        } break;
        case 4:
            if (len > 1) { /* duplicate a chunk */
                size_t from = next_rand() % len, n = 1 + next_rand() % (len - from);
                if (len + n <= cap) {
                    size_t at = next_rand() % (len + 1);
                    memmove(buf + at + n, buf + at, len - at);
                    memmove(buf + at, buf + (from >= at ? from + n : from), n);
                    len += n;
                }
            }
            break;
        case 5:
            if (len) { /* delete a chunk */
                size_t at = next_rand() % len, n = 1 + next_rand() % (len - at);
                memmove(buf + at, buf + at + n, len - at - n);
                len -= n;
            }
            break;
        }
    }
    return len;
}

int main(int argc, char **argv) {
    const char *name = strrchr(argv[0], '/');
    name = name ? name + 1 : argv[0];
    char dir[4096];
    snprintf(dir, sizeof dir, "tests/fuzz/corpus/%s", name);
    load_seeds(dir);
    long iterations = argc > 1 ? atol(argv[1]) : 3000;
    const char *env = getenv("NECTAR_FUZZ_ITERATIONS");
    if (env) iterations = atol(env);

    for (int i = 0; i < n_seeds; i++)
        LLVMFuzzerTestOneInput(seeds[i], seed_len[i]);
    size_t cap = 1 << 16;
    unsigned char *buf = malloc(cap);
    for (long it = 0; it < iterations; it++) {
        size_t len = 0;
        if (n_seeds) {
            int s = (int)(next_rand() % (uint64_t)n_seeds);
            len = seed_len[s] < cap ? seed_len[s] : cap;
            memcpy(buf, seeds[s], len);
        } else {
            len = next_rand() % 256;
            for (size_t j = 0; j < len; j++)
                buf[j] = (unsigned char)next_rand();
        }
        len = mutate(buf, len, cap);
        unsigned char *exact = malloc(len ? len : 1); /* exact size so ASan sees overreads */
        memcpy(exact, buf, len);
        LLVMFuzzerTestOneInput(exact, len);
        free(exact);
    }
    free(buf);
    for (int i = 0; i < n_seeds; i++)
        free(seeds[i]);
    printf("PASS %s (%d seeds, %ld mutated inputs, no crash)\n", name, n_seeds, iterations);
    return 0;
}
