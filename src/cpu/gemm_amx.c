/* AMX-BF16 prompt products (see gemm_amx.h). Tiles: C^T = W X^T, so the
 * weight rows are the A operand (16 rows x 32 bf16, read in place for bf16
 * weights) and the activations the B operand, packed once per product in
 * the pair-interleaved layout B[k/2][token][2]. Tile registers: 0-3 the 2x2
 * block of 16x16 fp32 results, 4-5 two weight blocks, 6-7 two token blocks. */
#include "cpu/gemm_amx.h"

#include <cpuid.h>
#include <immintrin.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cpu/transpose_avx512.h"

#define INLINE static inline __attribute__((always_inline))

#define TILE_ROWS 16
#define TILE_K 32 /* bf16 per tile row */
#define TILE_BYTES 1024
#define X_TERMS 3
/* Weight rows converted into the scratch at a time (see cpu_amx_scratch_bytes). */
#define SCRATCH_ROWS 64
/* Tokens per pass over a task's weight rows: 64 tokens of packed
 * activations (at k = 3072, 1.1 MiB) and 64 weight rows stay in L2. */
#define TOKEN_CHUNK 64

#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18

static int amx_ok;
static pthread_once_t amx_once = PTHREAD_ONCE_INIT;

static void amx_detect(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !((c >> 27) & 1)) return; /* OSXSAVE */
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return;
    int avx512 = ((b >> 16) & 1) && ((b >> 30) & 1) && ((b >> 31) & 1) && ((b >> 17) & 1);
    int amx = ((d >> 22) & 1) && ((d >> 24) & 1); /* AMX-BF16, AMX-TILE */
    if (!avx512 || !amx) return;
    /* Linux hands out the 8 KiB tile state only on request. */
    if (syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) != 0) return;
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    unsigned long long xcr0 = ((unsigned long long)hi << 32) | lo;
    amx_ok = (xcr0 & 0x600e6) == 0x600e6; /* AVX-512 state and both tile states */
}

int cpu_amx_available(void) {
    pthread_once(&amx_once, amx_detect);
    return amx_ok;
}

typedef struct {
    uint8_t palette, start_row;
    uint8_t reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tile_config;

static void tiles_configure(void) {
    tile_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    for (int i = 0; i < 8; i++) {
        cfg.colsb[i] = 64;
        cfg.rows[i] = TILE_ROWS;
    }
    _tile_loadconfig(&cfg);
}

static int k_blocks(int k) {
    return (k + TILE_K - 1) / TILE_K;
}

size_t cpu_amx_x_bytes(int n, int k) {
    return (size_t)X_TERMS * (size_t)cpu_amx_token_blocks(n) * (size_t)k_blocks(k) * TILE_BYTES;
}

size_t cpu_amx_scratch_bytes(int k) {
    return (size_t)3 * SCRATCH_ROWS * (size_t)k_blocks(k) * TILE_K * sizeof(uint16_t);
}

/* The bf16 terms of 16 floats, each rounded to nearest even: x = t0 + t1
 * + t2 exactly (each remainder is exact in fp32 and has 8 fewer significant
 * bits), and stopping after fewer terms leaves an unbiased error. */
INLINE void split3(__m512 x, __m512i t[3]) {
    const __m512i top = _mm512_set1_epi32((int)0xffff0000u), half = _mm512_set1_epi32(0x7fff),
                  one = _mm512_set1_epi32(1);
    for (int i = 0; i < 3; i++) {
        __m512i bits = _mm512_castps_si512(x);
        __m512i odd = _mm512_and_si512(_mm512_srli_epi32(bits, 16), one);
        bits = _mm512_and_si512(_mm512_add_epi32(bits, _mm512_add_epi32(half, odd)), top);
        t[i] = _mm512_srli_epi32(bits, 16);
        x = _mm512_sub_ps(x, _mm512_castsi512_ps(bits));
    }
}

/* 32 bf16 (two vectors of 16 in epi32 lanes) as 16 pairs (k even | k odd << 16). */
INLINE __m512i pairs(__m512i lo16, __m512i hi16) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm512_cvtepi32_epi16(lo16)),
                              _mm512_cvtepi32_epi16(hi16), 1);
}

INLINE __m512 load_masked(const float *p, int count) {
    if (count >= 16) return _mm512_loadu_ps(p);
    if (count <= 0) return _mm512_setzero_ps();
    return _mm512_maskz_loadu_ps((__mmask16)((1u << count) - 1), p);
}

void cpu_amx_pack_x(const float *x, size_t ldx, int n, int k, int tb, void *xp) {
    int nkb = k_blocks(k), ntb = cpu_amx_token_blocks(n);
    size_t term_bytes = (size_t)ntb * nkb * TILE_BYTES;
    uint8_t *block = (uint8_t *)xp + (size_t)tb * nkb * TILE_BYTES;
    for (int kb = 0; kb < nkb; kb++) {
        int k0 = kb * TILE_K;
        __m512i m[X_TERMS][16]; /* [term][token]: the token's 16 pairs */
        for (int t = 0; t < TILE_ROWS; t++) {
            int tok = tb * TILE_ROWS + t;
            __m512i a[3], b[3];
            if (tok < n) {
                const float *row = x + (size_t)tok * ldx + k0;
                split3(load_masked(row, k - k0), a);
                split3(load_masked(row + 16, k - k0 - 16), b);
            } else {
                for (int i = 0; i < 3; i++)
                    a[i] = b[i] = _mm512_setzero_si512();
            }
            for (int i = 0; i < X_TERMS; i++)
                m[i][t] = pairs(a[i], b[i]);
        }
        for (int i = 0; i < X_TERMS; i++) { /* -> B[pair][token] */
            cpu_transpose16_epi32(m[i]);
            uint8_t *tile = block + (size_t)i * term_bytes + (size_t)kb * TILE_BYTES;
            for (int p = 0; p < 16; p++)
                _mm512_storeu_si512((void *)(tile + 64 * p), m[i][p]);
        }
    }
}

/* Weight terms and which term products count: term i of x times term j of
 * w is kept when i + j <= limit (the dropped ones are below fp32 rounding
 * for float weights; below the quantization error for Q8/Q4). */
typedef struct {
    int w_terms, limit;
} term_plan;

static term_plan plan_for(cpu_wtype type) {
    switch (type) {
    case CPU_W_BF16:
        return (term_plan){1, 2};
    case CPU_W_F16:
        return (term_plan){2, 2};
    case CPU_W_F32:
        return (term_plan){3, 2};
    default:
        return (term_plan){2, 1}; /* Q8 (18 significant bits), Q4 (15) */
    }
}

/* Rows r..r+rows-1 of w as plan.w_terms bf16 term panels [term][row][k_pad]
 * in scratch; rows up to a multiple of 32 are zero. */
static void pack_w(cpu_row_fn to_f32, const uint8_t *w, size_t ldw, int k, int r, int rows,
                   term_plan plan, uint16_t *scratch, size_t term_stride) {
    int kp = k_blocks(k) * TILE_K;
    float buf[kp] __attribute__((aligned(64)));
    int padded = (rows + 31) & ~31;
    for (int a = 0; a < padded; a++) {
        if (a < rows) {
            to_f32(w + (size_t)(r + a) * ldw, buf, k);
            memset(buf + k, 0, (size_t)(kp - k) * sizeof(float));
        } else {
            memset(buf, 0, (size_t)kp * sizeof(float));
        }
        for (int i = 0; i < kp; i += 16) {
            __m512i t[3];
            split3(_mm512_load_ps(buf + i), t);
            for (int j = 0; j < plan.w_terms; j++)
                _mm256_storeu_si256((__m256i *)(scratch + j * term_stride + (size_t)a * kp + i),
                                    _mm512_cvtepi32_epi16(t[j]));
        }
    }
}

/* The 2x2 (RB weight blocks x TB token blocks) tile product over all k
 * blocks and the planned term pairs, into c[block][16][16] (rows = weight
 * rows, columns = tokens). */
INLINE void tile_product(const uint8_t *a0, size_t lda, size_t a_term, const uint8_t *b0,
                         size_t b_term, size_t b_block, int nkb, term_plan plan, float *c,
                         const int RB, const int TB) {
    _tile_zero(0);
    if (TB > 1) _tile_zero(1);
    if (RB > 1) _tile_zero(2);
    if (RB > 1 && TB > 1) _tile_zero(3);
    for (int kb = 0; kb < nkb; kb++) {
        for (int j = 0; j < plan.w_terms; j++) {
            const uint8_t *a = a0 + (size_t)j * a_term + (size_t)kb * 64;
            _tile_loadd(4, a, lda);
            if (RB > 1) _tile_loadd(5, a + TILE_ROWS * lda, lda);
            for (int i = 0; i < X_TERMS && i + j <= plan.limit; i++) {
                const uint8_t *b = b0 + (size_t)i * b_term + (size_t)kb * TILE_BYTES;
                _tile_loadd(6, b, 64);
                if (TB > 1) _tile_loadd(7, b + b_block, 64);
                _tile_dpbf16ps(0, 4, 6);
                if (TB > 1) _tile_dpbf16ps(1, 4, 7);
                if (RB > 1) _tile_dpbf16ps(2, 5, 6);
                if (RB > 1 && TB > 1) _tile_dpbf16ps(3, 5, 7);
            }
        }
    }
    _tile_stored(0, c, 64);
    if (TB > 1) _tile_stored(1, c + 256, 64);
    if (RB > 1) _tile_stored(2, c + 512, 64);
    if (RB > 1 && TB > 1) _tile_stored(3, c + 768, 64);
}

/* c[(a*2+b)*256 + m*16 + t] into y[token][row], valid rows and tokens only. */
static void store_tiles(const float *c, int RB, int TB, int r, int rows_left, int t0, int n,
                        float *y, size_t ldy) {
    for (int a = 0; a < RB; a++)
        for (int b = 0; b < TB; b++) {
            const float *tile = c + (a * 2 + b) * 256;
            int m_end = rows_left - a * 16 < 16 ? rows_left - a * 16 : 16;
            int t_end = n - (t0 + b * 16) < 16 ? n - (t0 + b * 16) : 16;
            for (int t = 0; t < t_end; t++) {
                float *dst = y + (size_t)(t0 + b * 16 + t) * ldy + (size_t)(r + a * 16);
                for (int m = 0; m < m_end; m++)
                    dst[m] = tile[m * 16 + t];
            }
        }
}

void cpu_amx_matmul(cpu_wtype type, cpu_row_fn to_f32, const void *w, size_t ldw, int k, int r0,
                    int r1, const void *xp, int n, float *y, size_t ldy, void *scratch) {
    if (n <= 0 || r1 <= r0) return;
    tiles_configure();
    term_plan plan = plan_for(type);
    int nkb = k_blocks(k), ntb = cpu_amx_token_blocks(n);
    size_t b_block = (size_t)nkb * TILE_BYTES, b_term = (size_t)ntb * b_block;
    size_t kpad = (size_t)nkb * TILE_K;
    size_t term_stride = (size_t)SCRATCH_ROWS * kpad;
    float c[4 * 256] __attribute__((aligned(64)));
    for (int rs = r0; rs < r1; rs += SCRATCH_ROWS) {
        int rows = r1 - rs < SCRATCH_ROWS ? r1 - rs : SCRATCH_ROWS;
        /* bf16 rows are tiles in place when whole 16-row blocks fit */
        int in_place = type == CPU_W_BF16 && k % TILE_K == 0 && rows % 16 == 0;
        const uint8_t *abase;
        size_t lda, a_term;
        if (in_place) {
            abase = (const uint8_t *)w + (size_t)rs * ldw;
            lda = ldw;
            a_term = 0;
        } else {
            pack_w(to_f32, w, ldw, k, rs, rows, plan, scratch, term_stride);
            abase = scratch;
            lda = kpad * sizeof(uint16_t);
            a_term = term_stride * sizeof(uint16_t);
        }
        for (int tc = 0; tc < ntb; tc += TOKEN_CHUNK / 16) {
            int tc_end = tc + TOKEN_CHUNK / 16 < ntb ? tc + TOKEN_CHUNK / 16 : ntb;
            for (int a = 0; a < rows; a += 32) {
                const uint8_t *ab = abase + (size_t)a * lda;
                int two_rows = rows - a > 16;
                for (int tb = tc; tb < tc_end; tb += 2) {
                    const uint8_t *bb = (const uint8_t *)xp + (size_t)tb * b_block;
                    int two_tok = tb + 1 < tc_end;
                    if (two_rows && two_tok)
                        tile_product(ab, lda, a_term, bb, b_term, b_block, nkb, plan, c, 2, 2);
                    else if (two_rows)
                        tile_product(ab, lda, a_term, bb, b_term, b_block, nkb, plan, c, 2, 1);
                    else if (two_tok)
                        tile_product(ab, lda, a_term, bb, b_term, b_block, nkb, plan, c, 1, 2);
                    else
                        tile_product(ab, lda, a_term, bb, b_term, b_block, nkb, plan, c, 1, 1);
                    store_tiles(c, two_rows ? 2 : 1, two_tok ? 2 : 1, rs + a, rows - a, tb * 16, n,
                                y, ldy);
                }
            }
        }
    }
    _tile_release();
}

double cpu_amx_burn(long iters, float *sink) {
    if (!cpu_amx_available()) return 0;
    tiles_configure();
    static const uint16_t zeros[512] __attribute__((aligned(64)));
    _tile_loadd(4, zeros, 64);
    _tile_loadd(6, zeros, 64);
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    for (long i = 0; i < iters; i++) { /* four independent accumulators */
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 6);
        _tile_dpbf16ps(2, 4, 6);
        _tile_dpbf16ps(3, 4, 6);
    }
    float c[256] __attribute__((aligned(64)));
    _tile_stored(0, c, 64);
    *sink += c[0];
    _tile_release();
    return (double)iters * 4 * 16 * 16 * 32 * 2;
}
