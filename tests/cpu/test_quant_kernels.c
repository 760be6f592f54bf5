/* Quantized formats and kernels: the Q8/Q4 block layouts checked on
 * hand-built blocks (llama.cpp's Q8_0/Q4_0: fp16 scale, then codes; Q4 low
 * nibbles are weights 0-15, high nibbles 16-31), the quantization error
 * bounds, and every kernel table's quantized matmul against a
 * double-precision sum over the dequantized weights and activations on
 * awkward sizes (k not a multiple of 32 or 64, one block, odd row and token
 * counts, row sub-ranges, padded strides), plus the threaded path. */
#include <math.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../test.h"
#include "base/half.h"
#include "cpu/cpu_kernels.h"
#include "cpu/cpu_matmul.h"
#include "cpu/cpu_quant.h"
#include "cpu/q4_interleave.h"
#include "cpu/qgemv.h"

static uint32_t rng = 7;
static float frand(void) { /* uniform in [-1, 1) */
    rng = rng * 1664525u + 1013904223u;
    return (float)(rng >> 8) / (float)(1 << 23) - 1.0f;
}

static void test_q8_block_layout_by_hand(void) {
    float x[32];
    for (int i = 0; i < 32; i++)
        x[i] = (float)(i - 16) / 16.0f; /* amax 1 at i = 0 */
    uint8_t blk[CPU_Q8_BLOCK_BYTES];
    cpu_quantize_weight_row(CPU_W_Q8, x, 32, blk);
    nc_fp16 d;
    memcpy(&d, blk, 2);
    CHECK(d == nc_f32_to_fp16(1.0f / 127.0f)); /* scale first, fp16 */
    float ds = nc_fp16_to_f32(d);
    for (int i = 0; i < 32; i++)
        CHECK((int8_t)blk[2 + i] == (int)lroundf(x[i] / ds));
    CHECK((int8_t)blk[2] == -127);
    CHECK(cpu_wtype_row_bytes(CPU_W_Q8, 33) == 68 && cpu_wtype_row_bytes(CPU_W_Q8, 32) == 34);
}

static void test_q4_block_layout_by_hand(void) {
    /* Largest magnitude -8 at i = 5: d = -8 / -8 = 1, so code = x + 8. */
    float x[32];
    for (int i = 0; i < 32; i++)
        x[i] = (float)((i * 3) % 15 - 7);
    x[5] = -8.0f;
    uint8_t blk[CPU_Q4_BLOCK_BYTES];
    cpu_quantize_weight_row(CPU_W_Q4, x, 32, blk);
    nc_fp16 d;
    memcpy(&d, blk, 2);
    CHECK(nc_fp16_to_f32(d) == 1.0f);
    for (int i = 0; i < 16; i++) {
        CHECK((blk[2 + i] & 15) == (int)x[i] + 8);
        CHECK((blk[2 + i] >> 4) == (int)x[i + 16] + 8);
    }
    float back[32];
    cpu_dequantize_row(CPU_W_Q4, blk, back, 32);
    for (int i = 0; i < 32; i++)
        CHECK(back[i] == x[i]);
    CHECK(cpu_wtype_row_bytes(CPU_W_Q4, 688) == 22 * 18);
}

/* Round trip within half a step of each block's scale (Q4: one step, as the
 * code range -8..7 clips the side opposite the largest magnitude at 7 steps,
 * llama.cpp's Q4_0 rule); activation padding is zero. */
static void test_quantize_dequantize_error_within_half_step(void) {
    int cols = 100;
    float x[100], back[100];
    for (int i = 0; i < cols; i++)
        x[i] = frand() * (i < 50 ? 1.0f : 1e-3f);
    for (int t = CPU_W_Q8; t <= CPU_W_Q4; t++) {
        uint8_t row[4 * CPU_Q8_BLOCK_BYTES];
        cpu_quantize_weight_row((cpu_wtype)t, x, cols, row);
        cpu_dequantize_row((cpu_wtype)t, row, back, cols);
        for (int j = 0; j < 4; j++) {
            nc_fp16 d;
            memcpy(&d, row + (size_t)j * cpu_wtype_row_bytes((cpu_wtype)t, 32), 2);
            float step = fabsf(nc_fp16_to_f32(d));
            for (int i = j * 32; i < cols && i < j * 32 + 32; i++)
                CHECKF(fabsf(back[i] - x[i]) <=
                           (t == CPU_W_Q8 ? 0.5f : 1.0f) * step * 1.001f + 1e-12f,
                       "%s i=%d x=%g back=%g step=%g", cpu_wtype_name((cpu_wtype)t), i, x[i],
                       back[i], step);
        }
    }
    int8_t q[128];
    float s[4 * CPU_QSCALE_REP];
    cpu_quantize_act_row(x, cols, q, s);
    for (int i = 0; i < cols; i++)
        CHECK(fabsf(q[i] * s[(i / 32) * CPU_QSCALE_REP] - x[i]) <= 0.5f * s[(i / 32) * 8] * 1.001f);
    for (int i = cols; i < 128; i++)
        CHECK(q[i] == 0);
    for (int j = 0; j < 4; j++)
        for (int r = 1; r < CPU_QSCALE_REP; r++)
            CHECK(s[j * 8 + r] == s[j * 8]);
}

/* Where check_case puts the weight rows: on the heap with a padded row
 * stride, or unpadded against an inaccessible page (the last row ending at
 * it, or the first row starting right after one), so that a kernel reading
 * a byte outside the matrix faults. */
typedef enum { ROWS_PADDED, ROWS_END_AT_FENCE, ROWS_START_AT_FENCE } rows_placement;

static uint8_t *rows_alloc(size_t bytes, rows_placement where, void **map, size_t *map_bytes) {
    *map = NULL;
    if (where == ROWS_PADDED) return calloc(1, bytes);
    size_t page = (size_t)sysconf(_SC_PAGESIZE), body = (bytes + page - 1) / page * page;
    *map_bytes = body + 2 * page;
    uint8_t *m = mmap(NULL, *map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return NULL;
    if (mprotect(m, page, PROT_NONE) != 0 || mprotect(m + page + body, page, PROT_NONE) != 0) {
        munmap(m, *map_bytes);
        return NULL;
    }
    *map = m;
    return where == ROWS_END_AT_FENCE ? m + page + body - bytes : m + page;
}

/* The activation quantizer (vectorised by the compiler) against the
 * scalar rule written out: d = amax / 127, codes (int)(x / d +- 0.5) with
 * the sign of x / d, clamped to +-127, zeros past k; bit for bit, on rows
 * with exact halves, zeros, -0, tiny and huge values and partial blocks. */
static void test_act_quantizer_matches_scalar_rule(void) {
    static const int ks[] = {1, 5, 31, 32, 33, 64, 100, 2048};
    float x[2048];
    int8_t q[2048];
    float s[64 * CPU_QSCALE_REP];
    int rows = 0;
    for (size_t a = 0; a < sizeof ks / sizeof *ks; a++)
        for (int variant = 0; variant < 6; variant++, rows++) {
            int k = ks[a], nb = cpu_qblocks(k);
            for (int i = 0; i < k; i++) {
                float v = frand();
                if (variant == 1) v = (float)((int)(v * 20.0f)) * 0.5f; /* ties (d = 1 below) */
                if (variant == 2) v = i % 3 == 0 ? 0.0f : i % 3 == 1 ? -0.0f : v;
                if (variant == 3) v *= 1e-30f;
                if (variant == 4) v *= 1e30f;
                if ((variant == 1 || variant == 5) && i % 32 == 7)
                    v = 127.0f; /* amax 127: d = 1, x / d exact */
                x[i] = v;
            }
            if (variant == 2 && k > 40) memset(x + 32, 0, sizeof(float) * 8); /* an all-zero run */
            memset(q, 0x55, sizeof q);
            cpu_quantize_act_row(x, k, q, s);
            int bad = 0;
            for (int j = 0; j < nb && !bad; j++) {
                float amax = 0.0f;
                for (int i = j * 32; i < k && i < j * 32 + 32; i++)
                    amax = fabsf(x[i]) > amax ? fabsf(x[i]) : amax;
                float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
                for (int r = 0; r < CPU_QSCALE_REP; r++)
                    bad |= memcmp(&s[j * CPU_QSCALE_REP + r], &d, 4) != 0;
                for (int i = j * 32; i < j * 32 + 32; i++) {
                    int want = 0;
                    if (i < k) {
                        float v = x[i] * id;
                        want = (int)(v + (v >= 0.0f ? 0.5f : -0.5f));
                        want = want < -127 ? -127 : want > 127 ? 127 : want;
                    }
                    if (q[i] != want) {
                        printf("  k=%d variant %d i=%d x=%.9g: got %d want %d\n", k, variant, i,
                               x[i], q[i], want);
                        bad = 1;
                        break;
                    }
                }
            }
            CHECK(!bad);
        }
    printf("  %d rows\n", rows);
}

/* One table, one format, one size: y against the double reference, from
 * the row kernels (qmatmul) or, with `panel`, the table's int8 GEMM (pack
 * rows r0..r1, then matmul). */
static int check_case_with(const cpu_kernels *tab, cpu_wtype t, int k, int n, int rows,
                           rows_placement where, int panel) {
    int nb = cpu_qblocks(k), pad = 3;
    int x16 = t == CPU_W_Q4X16; /* quantized as Q4 rows, then interleaved */
    cpu_wtype qt = x16 ? CPU_W_Q4 : t;
    size_t rb = cpu_wtype_row_bytes(t, k);
    /* padded: an odd row stride (Q4X16 has none: its groups are packed) */
    size_t ldw = where == ROWS_PADDED && !x16 ? rb + 5 : rb;
    size_t ldq = (size_t)nb * 32 + 64, lds = (size_t)nb * CPU_QSCALE_REP + 16;
    size_t ldy = (size_t)rows + pad;
    void *map;
    size_t map_bytes = 0;
    uint8_t *w = rows_alloc((size_t)rows * ldw, where, &map, &map_bytes);
    if (!w) return 0;
    float *wf = malloc(sizeof(float) * (size_t)rows * k), *xf = malloc(sizeof(float) * k);
    float *wd = malloc(sizeof(float) * (size_t)rows * k);
    int8_t *xq = calloc((size_t)n, ldq);
    float *xs = calloc((size_t)n * lds, sizeof(float)), *y = malloc(sizeof(float) * n * ldy);
    for (int r = 0; r < rows; r++) {
        for (int i = 0; i < k; i++)
            wf[(size_t)r * k + i] = frand() * (r % 3 == 0 ? 10.0f : 0.1f);
        cpu_quantize_weight_row(qt, wf + (size_t)r * k, k, w + (size_t)r * ldw);
        cpu_dequantize_row(qt, w + (size_t)r * ldw, wd + (size_t)r * k, k);
    }
    nc_error err;
    if (x16 && cpu_q4x16_interleave(NULL, w, rows, k, &err) != NC_OK) return 0;
    for (int b = 0; b < n; b++) {
        for (int i = 0; i < k; i++)
            xf[i] = frand() * (float)(b + 1);
        if (b == 1 && k > 3) xf[3] = 0.0f * xf[3] - 5.0f; /* a block with a large value */
        cpu_quantize_act_row(xf, k, xq + (size_t)b * ldq, xs + (size_t)b * lds);
    }
    for (size_t i = 0; i < (size_t)n * ldy; i++)
        y[i] = 12345.0f;
    /* padded: a row sub-range; fenced: every row, up to the fences */
    int r0 = where == ROWS_PADDED && rows > 2 ? 1 : 0;
    int r1 = where == ROWS_PADDED && rows > 3 ? rows - 1 : rows;
    if (x16) { /* whole groups of 16 rows */
        r0 = where == ROWS_PADDED && rows >= 48 ? 16 : 0;
        r1 = where == ROWS_PADDED && rows >= 48 ? rows - 16 : rows;
    }
    if (panel) {
        void *p = malloc(tab->qpanel->panel_bytes(r1 - r0, nb));
        tab->qpanel->pack[t - CPU_W_Q8](w, ldw, nb, r0, r1, p);
        tab->qpanel->matmul(p, nb, xq, ldq, xs, lds, y + r0, ldy, n, r1 - r0);
        free(p);
    } else {
        tab->qmatmul[t - CPU_W_Q8](w, ldw, xq, ldq, xs, lds, y, ldy, n, nb, r0, r1);
    }
    int bad = 0;
    for (int b = 0; b < n && !bad; b++)
        for (int r = 0; r < rows && !bad; r++) {
            double ref = 0, mag = 0;
            for (int i = 0; i < k; i++) {
                double xv = xq[(size_t)b * ldq + i] * (double)xs[(size_t)b * lds + (i / 32) * 8];
                ref += xv * wd[(size_t)r * k + i];
                mag += fabs(xv * wd[(size_t)r * k + i]);
            }
            float got = y[(size_t)b * ldy + r];
            if (r < r0 || r >= r1)
                bad = got != 12345.0f;
            else
                bad = !(fabs(got - ref) <= 1e-5 * mag + 1e-6);
            if (bad)
                printf("  %s %s k=%d n=%d row %d tok %d: got %.7g want %.7g\n", tab->name,
                       cpu_wtype_name(t), k, n, r, b, got, ref);
        }
    if (map)
        munmap(map, map_bytes);
    else
        free(w);
    free(wf);
    free(wd);
    free(xf);
    free(xq);
    free(xs);
    free(y);
    return !bad;
}

static int check_case_at(const cpu_kernels *tab, cpu_wtype t, int k, int n, int rows,
                         rows_placement where) {
    return check_case_with(tab, t, k, n, rows, where, 0);
}

static int check_case(const cpu_kernels *tab, cpu_wtype t, int k, int n, int rows) {
    return check_case_at(tab, t, k, n, rows, ROWS_PADDED);
}

/* Decoding (one activation row) walks 8-row tiles (AVX-512; 4 for AVX2 and
 * NEON), Q4 4 blocks per step then pairs and a lone block: every block
 * count mod 4, fewer blocks than a step, rows around the tile height, and
 * matrices that start or end at an inaccessible page. */
static void test_qdecode_all_tables_match_reference(void) {
    const cpu_kernels *tabs[8];
    int nt = cpu_kernels_available(tabs, 8), cases = 0;
    static const int ks[] = {20, 32, 64, 96, 128, 160, 224, 250, 1024, 1120, 2048 + 96};
    static const int rowss[] = {2, 9, 10, 11, 18, 27, 42};
    for (int ti = 0; ti < nt; ti++)
        for (int t = CPU_W_Q8; t <= CPU_W_Q4; t++)
            for (size_t a = 0; a < sizeof ks / sizeof *ks; a++)
                for (size_t c = 0; c < sizeof rowss / sizeof *rowss; c++, cases++)
                    CHECKF(check_case(tabs[ti], (cpu_wtype)t, ks[a], 1, rowss[c]), "%s %s k=%d",
                           tabs[ti]->name, cpu_wtype_name((cpu_wtype)t), ks[a]);
    for (int ti = 0; ti < nt; ti++)
        for (int t = CPU_W_Q8; t <= CPU_W_Q4; t++)
            for (size_t a = 0; a < sizeof ks / sizeof *ks; a++)
                for (int where = ROWS_END_AT_FENCE; where <= ROWS_START_AT_FENCE; where++) {
                    CHECK(
                        check_case_at(tabs[ti], (cpu_wtype)t, ks[a], 1, 16, (rows_placement)where));
                    CHECK(
                        check_case_at(tabs[ti], (cpu_wtype)t, ks[a], 3, 9, (rows_placement)where));
                    cases += 2;
                }
    printf("  %d cases\n", cases);
}

/* The row-sequential decode kernels (qgemv.h), each in a copy of the
 * AVX-512 table: the decode cases above (every block count mod 4 and 16,
 * rows against an inaccessible page, sub-ranges with a padded stride), k
 * past a chunk of prepared activations (512 blocks), and several
 * activation rows (handed to the table's kernel). */
static void test_qgemv_rows_match_reference(void) {
#if defined(__x86_64__)
    const cpu_kernels *tabs[8], *avx512 = NULL;
    int nt = cpu_kernels_available(tabs, 8), cases = 0;
    for (int i = 0; i < nt; i++)
        if (!strcmp(tabs[i]->name, "avx512")) avx512 = tabs[i];
    if (!avx512) SKIP("no AVX-512 table on this CPU");
    static const int ks[] = {20,  32,   64,   96,   128,  160,  224,         250,
                             512, 544,  1024, 1120, 2048 + 96, 16384 + 96, 16384 + 32 * 21 + 5};
    static const int rowss[] = {1, 2, 9, 18, 42};
    for (int c = 0; c < cpu_qgemv_avx512_count; c++) {
        cpu_kernels tab = *avx512;
        tab.name = cpu_qgemv_avx512[c].name;
        tab.qmatmul[cpu_qgemv_avx512[c].fmt] = cpu_qgemv_avx512[c].fn;
        cpu_wtype t = cpu_qgemv_avx512[c].fmt ? CPU_W_Q4 : CPU_W_Q8;
        for (size_t a = 0; a < sizeof ks / sizeof *ks; a++) {
            for (size_t r = 0; r < sizeof rowss / sizeof *rowss; r++, cases++)
                CHECKF(check_case(&tab, t, ks[a], 1, rowss[r]), "%s %s k=%d rows=%d", tab.name,
                       cpu_wtype_name(t), ks[a], rowss[r]);
            for (int where = ROWS_END_AT_FENCE; where <= ROWS_START_AT_FENCE; where++, cases += 2) {
                CHECK(check_case_at(&tab, t, ks[a], 1, 16, (rows_placement)where));
                CHECK(check_case_at(&tab, t, ks[a], 3, 9, (rows_placement)where));
            }
        }
    }
    printf("  %d cases\n", cases);
#else
    SKIP("x86-64 kernels");
#endif
}

static void test_qmatmul_all_tables_match_reference_awkward_sizes(void) {
    const cpu_kernels *tabs[8];
    int nt = cpu_kernels_available(tabs, 8);
    static const int ks[] = {1, 7, 31, 32, 33, 64, 65, 96, 100, 688};
    static const int ns[] = {1, 2, 3, 4, 5, 9, 17};
    static const int rowss[] = {1, 5, 13};
    int cases = 0;
    for (int ti = 0; ti < nt; ti++)
        for (int t = CPU_W_Q8; t <= CPU_W_Q4; t++)
            for (size_t a = 0; a < sizeof ks / sizeof *ks; a++)
                for (size_t b = 0; b < sizeof ns / sizeof *ns; b++)
                    for (size_t c = 0; c < sizeof rowss / sizeof *rowss; c++) {
                        CHECK(check_case(tabs[ti], (cpu_wtype)t, ks[a], ns[b], rowss[c]));
                        cases++;
                    }
    /* one large case per table and format: 3072 x 70 rows, 6 tokens */
    for (int ti = 0; ti < nt; ti++)
        for (int t = CPU_W_Q8; t <= CPU_W_Q4; t++, cases++)
            CHECK(check_case(tabs[ti], (cpu_wtype)t, 3072, 6, 70));
    printf("  %d tables (", nt);
    for (int i = 0; i < nt; i++)
        printf("%s%s", i ? ", " : "", tabs[i]->name);
    printf("), %d cases\n", cases);
}

/* The int8 prompt GEMM (cpu_qpanel_kernels, tables that have one) against
 * the double reference: token counts around its tile height (1-13, 20),
 * rows around its 16-row groups and sub-ranges, k with a lone last block,
 * and one k past its 4096-column chunk (partial sums added to y); weight
 * rows padded or against an inaccessible page. */
static void test_int8_gemm_all_tables_match_reference(void) {
    const cpu_kernels *tabs[8];
    int nt = cpu_kernels_available(tabs, 8), cases = 0;
    static const int ks[] = {1, 31, 32, 33, 64, 96, 100, 688, 1024};
    static const int rowss[] = {1, 5, 15, 16, 17, 33, 49, 64};
    for (int ti = 0; ti < nt; ti++) {
        if (!tabs[ti]->qpanel) continue;
        for (int t = CPU_W_Q8; t <= CPU_W_Q4; t++) {
            for (size_t a = 0; a < sizeof ks / sizeof *ks; a++)
                for (size_t c = 0; c < sizeof rowss / sizeof *rowss; c++)
                    for (int n = 1; n <= 13; n += 3, cases++)
                        CHECKF(check_case_with(tabs[ti], (cpu_wtype)t, ks[a], n, rowss[c],
                                               ROWS_PADDED, 1),
                               "%s %s k=%d n=%d rows=%d", tabs[ti]->name,
                               cpu_wtype_name((cpu_wtype)t), ks[a], n, rowss[c]);
            for (int n = 12; n <= 20; n += 8, cases += 3) {
                CHECK(check_case_with(tabs[ti], (cpu_wtype)t, 4096 + 96, n, 21, ROWS_PADDED, 1));
                CHECK(check_case_with(tabs[ti], (cpu_wtype)t, 688, n, 40, ROWS_END_AT_FENCE, 1));
                CHECK(check_case_with(tabs[ti], (cpu_wtype)t, 688, n, 40, ROWS_START_AT_FENCE, 1));
            }
        }
    }
    printf("  %d cases\n", cases);
}

/* The interleaved layout as q4_interleave.h writes it out, byte by byte:
 * per group of 16 rows and pair of blocks, 16 scales of each block, then
 * each block's codes as [chunk c][row a][code bytes 4c..4c+3]; rows read
 * back equal the Q4 rows they came from; which shapes fit. */
static void test_q4x16_layout_by_hand(void) {
    int rows = 32, k = 128, nb = 4;
    size_t rb = cpu_wtype_row_bytes(CPU_W_Q4, k);
    uint8_t *w = malloc(rows * rb), *orig = malloc(rows * rb);
    float x[128], back[128], want[128];
    for (int r = 0; r < rows; r++) {
        for (int i = 0; i < k; i++)
            x[i] = frand() * (float)(r + 1);
        cpu_quantize_weight_row(CPU_W_Q4, x, k, orig + (size_t)r * rb);
    }
    memcpy(w, orig, rows * rb);
    nc_error err;
    CHECK_OK(cpu_q4x16_interleave(NULL, w, rows, k, &err), &err);
    int bad = 0;
    for (int r = 0; r < rows; r++)
        for (int j = 0; j < nb; j++) {
            const uint8_t *blk = orig + (size_t)r * rb + (size_t)j * CPU_Q4_BLOCK_BYTES;
            const uint8_t *pair = w + (size_t)(r / 16) * 16 * rb + (size_t)(j / 2) * 576;
            int a = r % 16, h = j % 2;
            bad |= memcmp(pair + 32 * h + 2 * a, blk, 2) != 0;
            for (int i = 0; i < 16; i++)
                bad |= pair[64 + 256 * h + 64 * (i / 4) + 4 * a + i % 4] != blk[2 + i];
        }
    CHECK(!bad);
    cpu_mat m = {CPU_W_Q4X16, w, rows, k};
    for (int r = 0; r < rows; r++) {
        cpu_dequantize_row(CPU_W_Q4, orig + (size_t)r * rb, want, k);
        cpu_q4x16_row_to_f32(w, k, r, back);
        CHECK(!memcmp(back, want, sizeof want));
        cpu_mat_row_to_f32(cpu_kernels_get(), &m, r, back);
        CHECK(!memcmp(back, want, sizeof want));
    }
    CHECK(cpu_q4x16_fits(16, 64) && cpu_q4x16_fits(151936, 1024));
    CHECK(!cpu_q4x16_fits(15, 64) && !cpu_q4x16_fits(16, 32) && !cpu_q4x16_fits(16, 96) &&
          !cpu_q4x16_fits(24, 64) && !cpu_q4x16_fits(0, 64));
    CHECK(cpu_wtype_row_bytes(CPU_W_Q4X16, k) == rb && cpu_wtype_is_quant(CPU_W_Q4X16));
    free(w);
    free(orig);
}

/* The Q4X16 kernels (tables with qmatmul[2]) against the double reference
 * over the Q4 rows before interleaving: decoding and a few activation
 * rows, the int8 prompt GEMM from its own packer; block counts around the
 * 512-block chunk of prepared activations, whole-group sub-ranges, and
 * groups against an inaccessible page. */
static void test_q4x16_tables_match_reference(void) {
    const cpu_kernels *tabs[8];
    int nt = cpu_kernels_available(tabs, 8), cases = 0;
    static const int ks[] = {64, 128, 192, 1024, 3072, 2048 + 64, 16384 + 64, 16384 + 32 * 22};
    static const int rowss[] = {16, 32, 48, 80};
    static const int ns[] = {1, 2, 3, 7};
    for (int ti = 0; ti < nt; ti++) {
        if (!tabs[ti]->qmatmul[2]) continue;
        for (size_t a = 0; a < sizeof ks / sizeof *ks; a++) {
            for (size_t c = 0; c < sizeof rowss / sizeof *rowss; c++)
                for (size_t b = 0; b < sizeof ns / sizeof *ns; b++, cases++)
                    CHECKF(check_case(tabs[ti], CPU_W_Q4X16, ks[a], ns[b], rowss[c]),
                           "%s k=%d n=%d rows=%d", tabs[ti]->name, ks[a], ns[b], rowss[c]);
            for (int where = ROWS_END_AT_FENCE; where <= ROWS_START_AT_FENCE; where++, cases += 2) {
                CHECK(check_case_at(tabs[ti], CPU_W_Q4X16, ks[a], 1, 32, (rows_placement)where));
                CHECK(check_case_at(tabs[ti], CPU_W_Q4X16, ks[a], 3, 16, (rows_placement)where));
            }
            if (!tabs[ti]->qpanel || ks[a] > 4096 + 64) continue;
            for (size_t c = 0; c < sizeof rowss / sizeof *rowss; c++)
                for (int n = 1; n <= 13; n += 4, cases++)
                    CHECKF(
                        check_case_with(tabs[ti], CPU_W_Q4X16, ks[a], n, rowss[c], ROWS_PADDED, 1),
                        "%s panel k=%d n=%d rows=%d", tabs[ti]->name, ks[a], n, rowss[c]);
            cases++;
            CHECK(check_case_with(tabs[ti], CPU_W_Q4X16, ks[a], 9, 48, ROWS_END_AT_FENCE, 1));
        }
    }
    if (!cases) SKIP("no table decodes Q4X16 on this CPU");
    printf("  %d cases\n", cases);
}

/* cpu_matmul_act on quantized weights: threads, row split and activation
 * quantization give each table's single call, and match the dequantized
 * fp32 product within the activation quantization error. */
static void test_matmul_act_quantized_threaded(void) {
    const cpu_kernels *k = cpu_kernels_get();
    int rows = 300, cols = 200, n = 20;
    nc_error err;
    nc_pool *pool;
    CHECK_OK(nc_pool_new(2, &pool, &err), &err);
    float *wf = malloc(sizeof(float) * rows * cols), *x = malloc(sizeof(float) * n * cols);
    float *y = malloc(sizeof(float) * n * rows), *wd = malloc(sizeof(float) * cols);
    size_t rb = cpu_wtype_row_bytes(CPU_W_Q8, cols);
    uint8_t *w = malloc(rb * rows);
    int8_t *q = malloc(cpu_qact_q_bytes(n, cols));
    float *s = malloc(cpu_qact_s_bytes(n, cols));
    for (int i = 0; i < rows * cols; i++)
        wf[i] = frand();
    for (int i = 0; i < n * cols; i++)
        x[i] = frand();
    for (int r = 0; r < rows; r++)
        cpu_quantize_weight_row(CPU_W_Q8, wf + r * cols, cols, w + r * rb);
    cpu_mat m = {CPU_W_Q8, w, rows, cols};
    for (int nn = 1; nn <= n; nn += n - 1) {
        cpu_act a = cpu_act_rows(x, (size_t)cols, nn, cols, q, s);
        cpu_matmul_act(pool, k, &m, &a, y, (size_t)rows);
        CHECK(a.is_quantized);
        for (int b = 0; b < nn; b++)
            for (int r = 0; r < rows; r++) {
                cpu_dequantize_row(CPU_W_Q8, w + r * rb, wd, cols);
                double ref = 0, mag = 0;
                for (int i = 0; i < cols; i++) {
                    ref += (double)wd[i] * x[b * cols + i];
                    mag += fabs((double)wd[i]);
                }
                /* activation error: at most half a step (amax/127/2 <= 1/254) per value */
                CHECK(fabs(y[b * rows + r] - ref) <= mag / 254.0 + 1e-4);
            }
    }
    CHECK(cpu_mat_bytes(&m) == rb * rows);
    nc_pool_free(pool);
    free(wf);
    free(x);
    free(y);
    free(wd);
    free(w);
    free(q);
    free(s);
}

/* The prompt path that repacks a task's quantized rows into a panel (tables
 * that have one) against the scalar kernel, on awkward sizes: odd block
 * counts (a lone tail block), rows not a multiple of the tile. */
static void test_panel_prompt_path_matches_scalar(void) {
    const cpu_kernels *tabs[8];
    int nt = cpu_kernels_available(tabs, 8), cases = 0;
    static const int ks[] = {1, 33, 65, 96, 688, 1000};
    static const int ns[] = {8, 9, 17, 20};
    nc_error err;
    nc_pool *pool;
    CHECK_OK(nc_pool_new(2, &pool, &err), &err);
    for (int ti = 0; ti < nt; ti++) {
        if (!tabs[ti]->qpanel) continue;
        for (int t = CPU_W_Q8; t <= CPU_W_Q4; t++)
            for (size_t a = 0; a < sizeof ks / sizeof *ks; a++)
                for (size_t b = 0; b < sizeof ns / sizeof *ns; b++) {
                    int k = ks[a], n = ns[b], rows = 61, nb = cpu_qblocks(k);
                    size_t rb = cpu_wtype_row_bytes((cpu_wtype)t, k);
                    uint8_t *w = malloc(rb * rows);
                    float *x = malloc(sizeof(float) * n * k), *wf = malloc(sizeof(float) * k);
                    float *y = malloc(sizeof(float) * n * rows),
                          *y0 = malloc(sizeof(float) * n * rows);
                    int8_t *q = malloc(cpu_qact_q_bytes(n, k));
                    float *s = malloc(cpu_qact_s_bytes(n, k));
                    size_t pf = (size_t)CPU_MATMUL_PANEL_ROWS * k + 64;
                    float *panels = malloc(2 * pf * sizeof(float));
                    for (int r = 0; r < rows; r++) {
                        for (int i = 0; i < k; i++)
                            wf[i] = frand();
                        cpu_quantize_weight_row((cpu_wtype)t, wf, k, w + r * rb);
                    }
                    for (int i = 0; i < n * k; i++)
                        x[i] = frand();
                    cpu_mat m = {(cpu_wtype)t, w, rows, k};
                    cpu_act act = cpu_act_rows(x, (size_t)k, n, k, q, s);
                    act.panels = panels;
                    act.panel_floats = pf;
                    cpu_matmul_act(pool, tabs[ti], &m, &act, y, (size_t)rows);
                    cpu_kernels_scalar.qmatmul[t - CPU_W_Q8](w, rb, q, (size_t)nb * 32, s,
                                                             (size_t)nb * CPU_QSCALE_REP, y0,
                                                             (size_t)rows, n, nb, 0, rows);
                    int bad = 0;
                    for (int i = 0; i < n * rows && !bad; i++)
                        bad = !(fabsf(y[i] - y0[i]) <= 1e-4f * (1.0f + fabsf(y0[i])));
                    if (bad)
                        printf("  %s %s k=%d n=%d differs\n", tabs[ti]->name,
                               cpu_wtype_name((cpu_wtype)t), k, n);
                    free(w);
                    free(x);
                    free(wf);
                    free(y);
                    free(y0);
                    free(q);
                    free(s);
                    free(panels);
                    CHECK(!bad);
                    cases++;
                }
    }
    nc_pool_free(pool);
    printf("  %d cases\n", cases);
}

/* cpu_matmul_many (q, k, v in one dispatch) writes what one cpu_matmul_act
 * per matrix writes, for mixed weight types and 1 or 11 rows. */
static void test_matmul_many_equals_one_at_a_time(void) {
    const cpu_kernels *k = cpu_kernels_get();
    nc_error err;
    nc_pool *pool;
    CHECK_OK(nc_pool_new(2, &pool, &err), &err);
    int cols = 96, rows[3] = {40, 17, 70}, n_max = 11;
    cpu_wtype types[3] = {CPU_W_Q8, CPU_W_F32, CPU_W_Q4};
    void *w[3];
    float *y1[3], *y2[3];
    for (int m = 0; m < 3; m++) {
        size_t rb = cpu_wtype_row_bytes(types[m], cols);
        w[m] = malloc(rb * rows[m]);
        float row[96];
        for (int r = 0; r < rows[m]; r++) {
            for (int i = 0; i < cols; i++)
                row[i] = frand();
            if (types[m] == CPU_W_F32)
                memcpy((char *)w[m] + r * rb, row, sizeof row);
            else
                cpu_quantize_weight_row(types[m], row, cols, (char *)w[m] + r * rb);
        }
        y1[m] = malloc(sizeof(float) * n_max * rows[m]);
        y2[m] = malloc(sizeof(float) * n_max * rows[m]);
    }
    float *x = malloc(sizeof(float) * n_max * cols);
    for (int i = 0; i < n_max * cols; i++)
        x[i] = frand();
    int8_t *q = malloc(cpu_qact_q_bytes(n_max, cols));
    float *s = malloc(cpu_qact_s_bytes(n_max, cols));
    int bad = 0;
    for (int n = 1; n <= n_max; n += n_max - 1) {
        cpu_mat mats[3];
        for (int m = 0; m < 3; m++) {
            cpu_mat mm = {types[m], w[m], rows[m], cols};
            mats[m] = mm;
            cpu_act a = cpu_act_rows(x, (size_t)cols, n, cols, q, s);
            cpu_matmul_act(pool, k, &mats[m], &a, y1[m], (size_t)rows[m]);
        }
        cpu_act a = cpu_act_rows(x, (size_t)cols, n, cols, q, s);
        cpu_product p[3] = {{&mats[0], y2[0], (size_t)rows[0]},
                            {&mats[1], y2[1], (size_t)rows[1]},
                            {&mats[2], y2[2], (size_t)rows[2]}};
        cpu_matmul_many(pool, k, &a, 3, p);
        for (int m = 0; m < 3; m++)
            bad |= memcmp(y1[m], y2[m], sizeof(float) * (size_t)(n * rows[m])) != 0;
    }
    for (int m = 0; m < 3; m++) {
        free(w[m]);
        free(y1[m]);
        free(y2[m]);
    }
    free(x);
    free(q);
    free(s);
    nc_pool_free(pool);
    CHECK(!bad);
}

int main(void) {
    RUN(test_q8_block_layout_by_hand);
    RUN(test_q4_block_layout_by_hand);
    RUN(test_quantize_dequantize_error_within_half_step);
    RUN(test_act_quantizer_matches_scalar_rule);
    RUN(test_qmatmul_all_tables_match_reference_awkward_sizes);
    RUN(test_qgemv_rows_match_reference);
    RUN(test_qdecode_all_tables_match_reference);
    RUN(test_int8_gemm_all_tables_match_reference);
    RUN(test_matmul_act_quantized_threaded);
    RUN(test_panel_prompt_path_matches_scalar);
    RUN(test_matmul_many_equals_one_at_a_time);
    RUN(test_q4x16_layout_by_hand);
    RUN(test_q4x16_tables_match_reference);
    return nc_test_exit_code();
}
