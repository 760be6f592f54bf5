/* gen-random --type (models/quant_random.h): random matrices written
 * straight into q8/q4 blocks.
 * - Through the real writer, the file equals what `nectar quantize`
 *   (quant_write_model) makes of the float folder of the same plan: a bf16
 *   matrix whose q8 form crosses the writer's 4 MiB chunk inside a row, with
 *   1000 columns (a padded last block), an f16 matrix and a norm (copied).
 * - Fills at odd offsets and lengths (rows starting past the random
 *   generator's 64 Ki-value blocks, pieces of 1 byte to a whole chunk) give
 *   the bytes of quantizing the whole tensor's values row by row.
 * - Every dequantized weight lies within half a step (q8) or one step (q4,
 *   whose top code is clamped) of its random value, so the bytes are the
 *   quantization of those values. */
#define _XOPEN_SOURCE 700 /* nftw */
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../test.h"
#include "base/half.h"
#include "base/mmap.h"
#include "cpu/cpu_quant.h"
#include "models/model_random.h"
#include "models/quant_random.h"
#include "models/quant_write.h"

#define ROWS 4100
#define COLS 1000

static st_random_plan plan;

static void make_plan(void) {
    memset(&plan, 0, sizeof plan);
    plan.kind = ST_RANDOM_SUM4;
    plan.seed = 0x1234567ull;
    st_random_add(&plan, "a.weight", ST_BF16, ROWS, COLS, 0);
    st_random_add(&plan, "n.weight", ST_BF16, COLS, 0, 1);
    st_random_add(&plan, "b.weight", ST_F16, 70, 40, 0);
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *f) {
    (void)sb, (void)flag, (void)f;
    return remove(path);
}

static int same_file(const char *a, const char *b) {
    char *x = NULL, *y = NULL;
    size_t nx = 0, ny = 0;
    nc_error err = {0};
    int same = nc_read_file(a, &x, &nx, &err) == NC_OK && nc_read_file(b, &y, &ny, &err) == NC_OK &&
               nx == ny && nx > 0 && !memcmp(x, y, nx);
    if (!same) printf("  %s (%zu bytes) differs from %s (%zu bytes)\n", a, nx, b, ny);
    free(x);
    free(y);
    return same;
}

static void writer_equals_quantize(cpu_wtype type) {
    char root[] = "/tmp/nc_quant_random_XXXXXX", f[64], q[64], g[64], fq[96], gq[96];
    CHECK(mkdtemp(root));
    snprintf(f, sizeof f, "%s/float", root);
    snprintf(q, sizeof q, "%s/quantized", root);
    snprintf(g, sizeof g, "%s/direct", root);
    CHECK(mkdir(f, 0777) == 0 && mkdir(g, 0777) == 0);
    nc_error err = {0};
    model_random_report r;
    model_random_options o = {.n_threads = 2, .quant = CPU_W_N};
    make_plan();
    CHECK_OK(model_random_write_plan(&plan, f, json_object(), json_object(), &o, &r, &err), &err);
    CHECK_OK(quant_write_model(f, q, type, NULL, &err), &err);
    o.quant = type;
    o.n_threads = 1; /* another thread count: the same values */
    CHECK_OK(model_random_write_plan(&plan, g, json_object(), json_object(), &o, &r, &err), &err);
    size_t want = (size_t)ROWS * cpu_wtype_row_bytes(type, COLS) + COLS * 2 +
                  70 * cpu_wtype_row_bytes(type, 40);
    CHECKF(r.bytes == want, "reported %zu bytes, want %zu", r.bytes, want);
    snprintf(fq, sizeof fq, "%s/model.safetensors", q);
    snprintf(gq, sizeof gq, "%s/model.safetensors", g);
    int same = same_file(fq, gq);
    nftw(root, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
    CHECK(same);
}

static void test_q8_writer_equals_quantize(void) {
    writer_equals_quantize(CPU_W_Q8);
}
static void test_q4_writer_equals_quantize(void) {
    writer_equals_quantize(CPU_W_Q4);
}

static void pieces_equal_rows(cpu_wtype type) {
    make_plan();
    size_t rb = cpu_wtype_row_bytes(type, COLS), total = (size_t)ROWS * rb;
    nc_bf16 *v = malloc((size_t)ROWS * COLS * sizeof *v);
    uint8_t *want = malloc(total), *got = malloc(total);
    float *row = malloc(COLS * sizeof *row);
    quant_random q;
    nc_error err = {0};
    CHECK(v && want && got && row);
    CHECK_OK(st_random_fill(&plan, 0, 0, (size_t)ROWS * COLS, v, &err), &err);
    for (int i = 0; i < ROWS; i++) {
        nc_bf16_to_f32_n(v + (size_t)i * COLS, row, COLS);
        cpu_quantize_weight_row(type, row, COLS, want + i * rb);
    }
    CHECK_OK(quant_random_init(&q, &plan, type, &err), &err);
    static const size_t sizes[] = {1, 7, 1088, 1089, 65535, 200000, ST_WRITE_CHUNK_ELEMS, 333};
    size_t at = 0;
    for (int k = 0; at < total; k++) {
        size_t n = sizes[k % 8] < total - at ? sizes[k % 8] : total - at;
        if (quant_random_fill(&q, 0, at, n, got + at, &err) != NC_OK) break;
        at += n;
    }
    quant_random_free(&q);
    int same = at == total && !memcmp(want, got, total);
    /* each weight against its value: half a step (q8), one step (q4) */
    double worst = 0;
    for (int i = 0; i < ROWS; i += 97) {
        cpu_dequantize_row(type, got + i * rb, row, COLS);
        for (int c = 0; c < COLS; c++) {
            const uint8_t *blk =
                got + i * rb + (size_t)(c / 32) * (type == CPU_W_Q8 ? CPU_Q8_BLOCK_BYTES : CPU_Q4_BLOCK_BYTES);
            nc_fp16 h;
            memcpy(&h, blk, sizeof h);
            double d = fabs((double)nc_fp16_to_f32(h));
            double e = fabs((double)row[c] - nc_bf16_to_f32(v[(size_t)i * COLS + c])) / d;
            if (e > worst) worst = e;
        }
    }
    free(v);
    free(want);
    free(got);
    free(row);
    CHECKF(same, "%zu of %zu bytes filled; the bytes differ from quantizing the whole tensor", at,
           total);
    CHECKF(worst <= (type == CPU_W_Q8 ? 0.5 : 1.0) + 1e-3, "a weight is %.3f steps from its value",
           worst);
}

static void test_q8_pieces_equal_rows(void) {
    pieces_equal_rows(CPU_W_Q8);
}
static void test_q4_pieces_equal_rows(void) {
    pieces_equal_rows(CPU_W_Q4);
}

int main(void) {
    RUN(test_q8_writer_equals_quantize);
    RUN(test_q4_writer_equals_quantize);
    RUN(test_q8_pieces_equal_rows);
    RUN(test_q4_pieces_equal_rows);
    return nc_test_exit_code();
}
