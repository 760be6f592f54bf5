/* Weights read into memory (st_make_resident, io/weights_residency.h): the
 * same bytes as the file holds, read back here with stdio at the offsets
 * the header names, with the data block 64-byte aligned; the
 * NECTAR_WEIGHTS policy's three settings and its one-line error. (The
 * decoders' parity tests run on whatever the default gives the machine:
 * tests/models/test_weights_residency_parity.sh runs one under both.) */
#include "../test.h"
#include "base/alloc.h"
#include "base/mmap.h"
#include "io/hf_weights.h"
#include "io/safetensors.h"
#include "io/weights_residency.h"

#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

static const char *FIXTURE = "tests/fixtures/qwen3/tiny_gqa2/model.safetensors";

/* The data block's start: 8 + the header length, read with stdio. */
static long data_start(FILE *f) {
    unsigned char b8[8];
    if (fseek(f, 0, SEEK_SET) != 0 || fread(b8, 1, 8, f) != 8) return -1;
    uint64_t h = 0;
    for (int i = 7; i >= 0; i--)
        h = h << 8 | b8[i];
    return (long)(8 + h);
}

static void test_resident_tensors_hold_the_files_bytes(void) {
    if (!nc_file_exists(FIXTURE)) SKIP("%s missing", FIXTURE);
    st_file *f;
    nc_error err;
    CHECK_OK(st_open(FIXTURE, &f, &err), &err);
    CHECK_OK(st_make_resident(f, 0, &err), &err);
    CHECK(f->map.region != NULL);
    FILE *raw = fopen(FIXTURE, "rb");
    CHECK(raw != NULL);
    long start = data_start(raw);
    CHECK(start > 8);
    int bad = 0, misaligned = 0;
    for (int i = 0; i < f->n_tensors; i++) {
        const st_tensor *t = &f->tensors[i];
        if (!t->size_bytes) continue;
        unsigned char *want = malloc(t->size_bytes);
        CHECK(want != NULL);
        CHECK(fseek(raw, start + (long)t->offset_bytes, SEEK_SET) == 0);
        CHECK(fread(want, 1, t->size_bytes, raw) == t->size_bytes);
        bad += memcmp(want, t->data, t->size_bytes) != 0;
        /* the data block starts on a line, so each tensor sits at its
         * offset modulo 64 */
        misaligned += ((uintptr_t)t->data - t->offset_bytes) % NC_ALIGN != 0;
        free(want);
    }
    CHECKF(bad == 0, "%d tensors differ from the file", bad);
    CHECKF(misaligned == 0, "%d tensors' data blocks off a 64-byte line", misaligned);
    fclose(raw);
    /* twice is a no-op */
    const void *before = f->tensors[0].data;
    CHECK_OK(st_make_resident(f, 0, &err), &err);
    CHECK(f->tensors[0].data == before);
    st_close(f);
}

/* The same with the file's pages dropped from the page cache as read. */
static void test_resident_after_dropping_the_page_cache(void) {
    if (!nc_file_exists(FIXTURE)) SKIP("%s missing", FIXTURE);
    st_file *a, *b;
    nc_error err;
    CHECK_OK(st_open(FIXTURE, &a, &err), &err);
    CHECK_OK(st_open(FIXTURE, &b, &err), &err);
    CHECK_OK(st_make_resident(b, 1, &err), &err);
    CHECK(a->n_tensors == b->n_tensors && b->map.region != NULL);
    int bad = 0;
    for (int i = 0; i < a->n_tensors; i++)
        bad += memcmp(a->tensors[i].data, b->tensors[i].data, a->tensors[i].size_bytes) != 0;
    CHECKF(bad == 0, "%d tensors differ from the mapped file", bad);
    st_close(a);
    st_close(b);
}

/* The pattern byte at file offset i: not a multiple of any chunk or page
 * size, so a chunk read from or to the wrong place shows. */
static unsigned char pattern_at(size_t i) {
    return (unsigned char)((i * 2654435761u) >> 13 ^ i / 4099);
}

/* A file past two of the reader's 64 MiB pieces (the fixtures above are
 * one piece), read with and without dropping its cache: every byte where
 * the file has it, the first at the requested alignment. */
static void test_load_resident_reads_every_piece(void) {
    char path[] = "/tmp/nectar_resident_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd < 0) return;
    const size_t size = ((size_t)128 << 20) + 4099, buf_bytes = (size_t)1 << 20;
    unsigned char *buf = malloc(buf_bytes);
    CHECK(buf != NULL);
    int wrote = buf != NULL;
    for (size_t at = 0; wrote && at < size; at += buf_bytes) {
        size_t n = size - at < buf_bytes ? size - at : buf_bytes;
        for (size_t i = 0; i < n; i++)
            buf[i] = pattern_at(at + i);
        wrote = write(fd, buf, n) == (ssize_t)n;
    }
    close(fd);
    free(buf);
    CHECK(wrote);
    for (int drop = 0; wrote && drop <= 1; drop++) {
        nc_mapped_file m;
        nc_error err;
        nc_status st = nc_load_file_resident(path, 13, drop, &m, &err);
        CHECKF(st == NC_OK, "drop %d: %s", drop, err.msg);
        if (st != NC_OK) continue; /* on to the unlink */
        CHECK(m.size_bytes == size && m.region != NULL);
        CHECK(((uintptr_t)m.data + 13) % NC_ALIGN == 0);
        size_t bad = 0, first_bad = 0;
        const unsigned char *d = m.data;
        for (size_t i = 0; i < m.size_bytes; i++)
            if (d[i] != pattern_at(i) && !bad++) first_bad = i;
        CHECKF(bad == 0, "drop %d: %zu bytes differ from the file, the first at %zu", drop, bad,
               first_bad);
        nc_unmap_file(&m);
    }
    unlink(path);
}

static void test_policy_settings(void) {
    weights_residency r;
    nc_error err;
    CHECK_OK(weights_residency_select("mmap", &err), &err);
    weights_residency_choose(1 << 20, &r);
    CHECK(!r.resident && strstr(r.why, "mmap"));
    CHECK_OK(weights_residency_select("resident", &err), &err);
    weights_residency_choose(1 << 20, &r);
    CHECK(r.resident && !r.drop_page_cache && strstr(r.why, "memory"));
    /* more than the machine has: read, dropping the file's cache as read */
    weights_residency_choose(SIZE_MAX / 2, &r);
    CHECK(r.resident && r.drop_page_cache);
    CHECK_OK(weights_residency_select(NULL, &err), &err); /* auto */
    weights_residency_choose(1 << 20, &r);
    CHECK(r.resident == nc_huge_pages_available());
    weights_residency_choose(SIZE_MAX / 2, &r);
    CHECK(!r.resident);
    CHECK(weights_residency_select("huge", &err) == NC_ERR_INVALID);
    CHECK(strstr(err.msg, "huge") && strstr(err.msg, "mmap") && !strchr(err.msg, '\n'));
    CHECK_OK(weights_residency_select("auto", &err), &err);
}

static void test_open_to_run_follows_the_setting(void) {
    if (!nc_file_exists(FIXTURE)) SKIP("%s missing", FIXTURE);
    nc_error err;
    hf_weights *w;
    CHECK_OK(weights_residency_select("resident", &err), &err);
    CHECK_OK(hf_weights_open_to_run("tests/fixtures/qwen3/tiny_gqa2", &w, &err), &err);
    CHECK(w->residency.resident && w->shards[0]->map.region != NULL);
    hf_weights_close(w);
    CHECK_OK(weights_residency_select("mmap", &err), &err);
    CHECK_OK(hf_weights_open_to_run("tests/fixtures/qwen3/tiny_gqa2", &w, &err), &err);
    CHECK(!w->residency.resident && w->shards[0]->map.region == NULL);
    hf_weights_close(w);
    CHECK_OK(weights_residency_select(NULL, &err), &err);
}

int main(void) {
    RUN(test_resident_tensors_hold_the_files_bytes);
    RUN(test_resident_after_dropping_the_page_cache);
    RUN(test_load_resident_reads_every_piece);
    RUN(test_policy_settings);
    RUN(test_open_to_run_follows_the_setting);
    return nc_test_exit_code();
}
