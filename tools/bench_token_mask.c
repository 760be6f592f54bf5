/* Per-token cost of constrained sampling (src/gen/token_mask.c): the mask
 * over a whole vocabulary at each step of a constrained random walk, for a
 * json_schema (an object of strings, numbers, an enum, an array) and for
 * json_object; also the one-time vocabulary sort. Not a test (no timing
 * assertions); the figures are in docs/server.md. Build and run:
 *   make build/libnectar.a
 *   cc -O2 -std=c11 -Iinclude -Isrc -D_POSIX_C_SOURCE=200809L tools/bench_token_mask.c \
 *      build/libnectar.a $(pkg-config --libs libpcre2-8 libutf8proc jansson) -lm -lpthread \
 *      -o /tmp/bench_token_mask
 *   /tmp/bench_token_mask path/to/Qwen3/tokenizer.json */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/timer.h"
#include "gen/token_mask.h"

static double cpu_s(void) {
    return (double)clock() / CLOCKS_PER_SEC;
}

static const char *schema =
    "{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\",\"maxLength\":40},"
    "\"population\":{\"type\":\"integer\"},\"size\":{\"enum\":[\"small\",\"large\"]},"
    "\"zones\":{\"type\":\"array\",\"items\":{\"type\":\"number\"},\"maxItems\":4},"
    "\"note\":{\"type\":\"string\",\"maxLength\":60}},"
    "\"required\":[\"city\",\"population\",\"size\",\"zones\",\"note\"]}";

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s tokenizer.json\n", argv[0]);
        return 2;
    }
    nc_error err;
    tok_tokenizer *t;
    if (tok_load(argv[1], &t, &err) != NC_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    int n_vocab = tok_vocab_size(t);
    int32_t eog = tok_find(t, "<|im_end|>");
    double t0 = nc_now_s();
    tm_vocab *v;
    if (tm_vocab_new(t, n_vocab, &eog, 1, &v, &err) != NC_OK) return 1;
    printf("vocabulary %d tokens: sorted in %.1f ms\n", n_vocab, 1000 * (nc_now_s() - t0));
    float *logits = malloc((size_t)n_vocab * sizeof *logits);
    uint64_t x = 88172645463325252ull;
    for (int mode = 0; mode < 2; mode++) {
        js_graph g;
        if ((mode == 0 ? js_compile(schema, "schema", &g, &err) : js_any_object(&g, &err)) != NC_OK)
            return 1;
        jm_grammar gr = {&g, "", "", 0, 0, 0};
        double mask_wall = 0, mask_cpu = 0;
        long steps = 0;
        for (int walk = 0; walk < 4; walk++) {
            jm_state s;
            jm_start(&gr, &s);
            for (int step = 0; step < 400; step++) {
                for (int i = 0; i < n_vocab; i++) {
                    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                    logits[i] = (float)(x >> 40) / 16777216.0f;
                }
                logits[eog] += 0.5f;
                double w = nc_now_s(), c = cpu_s();
                tm_mask(v, &gr, &s, logits);
                mask_wall += nc_now_s() - w;
                mask_cpu += cpu_s() - c;
                steps++;
                int best = 0;
                for (int i = 1; i < n_vocab; i++)
                    if (logits[i] > logits[best]) best = i;
                if (!tm_accept(v, &gr, &s, best) || best == eog) break;
            }
        }
        printf("%s: %ld masked steps, %.2f ms wall, %.2f ms CPU per token\n",
               mode == 0 ? "json_schema" : "json_object", steps, 1000 * mask_wall / (double)steps,
               1000 * mask_cpu / (double)steps);
        js_free(&g);
    }
    free(logits);
    tm_vocab_free(v);
    tok_free(t);
    return 0;
}
