/* The int8 prompt GEMM on AVX-VNNI (the VEX-encoded 256-bit vpdpbusd of
 * Alder Lake and later clients, Zen 5, and the AVX-512 server cores that
 * have it too; CPUID.(7,1):EAX[4]), for the AVX2 table ("avx2-vnni"). The
 * AVX-512 int8 GEMM (qkernels_avx512.c) at half the width: a panel holds 8
 * weight rows side by side, 4 codes of each row per 32-bit lane, so one
 * vpdpbusd multiplies 8 rows x 4 codes by the same 4 activation bytes
 * broadcast into one int32 sum per row and token; a block of 32 codes is 8
 * such steps, then its sums are converted and scaled once. The unsigned
 * operand is the activation as x + 128 (x xor 0x80, on the broadcast), so
 * each row and block starts at its packed correction -128 * sum(w).
 *
 * Panel, per group of 8 rows and block (QV_BLOCK_BYTES = 320): 8 x 32
 * bytes of signed codes ([step][row][4 codes]; Q4 as nibble - 8), the 8
 * fp32 scales, the 8 int32 corrections. Rows past the matrix are zero. A
 * tile is 2 groups x 3 tokens: 6 int32 sums and 6 fp32 accumulators of the
 * 16 registers. */
#include <immintrin.h>
#include <string.h>

#include "base/half.h"
#include "cpu/q4_interleave.h"
#include "cpu/qkernels.h"

#define INLINE static inline __attribute__((always_inline))

#define QV_ROWS 8
#define QV_TOKENS 3
#define QV_SCALES 256
#define QV_CORR 288
#define QV_BLOCK_BYTES 320

static size_t qpanel_bytes_avxvnni(int rows, int nb) {
    return (size_t)((rows + QV_ROWS - 1) / QV_ROWS) * (size_t)nb * QV_BLOCK_BYTES;
}

/* A block's 32 codes as signed bytes into codes[]. */
INLINE void codes_q8(const uint8_t *blk, int8_t *codes) {
    memcpy(codes, blk + 2, 32);
}
INLINE void codes_q4(const uint8_t *blk, int8_t *codes) {
    __m128i p = _mm_loadu_si128((const __m128i *)(blk + 2)), m = _mm_set1_epi8(15);
    __m128i eight = _mm_set1_epi8(8);
    _mm_storeu_si128((__m128i *)codes, _mm_sub_epi8(_mm_and_si128(p, m), eight));
    _mm_storeu_si128((__m128i *)(codes + 16),
                     _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(p, 4), m), eight));
}

#define DEF_QPANEL_PACK(FMT, BLOCK_BYTES)                                                          \
    static void qpanel_##FMT##_avxvnni(const void *w, size_t ldw, int nb, int r0, int r1,          \
                                       void *panel) {                                              \
        for (int g = r0; g < r1; g += QV_ROWS) {                                                   \
            int valid = r1 - g < QV_ROWS ? r1 - g : QV_ROWS;                                       \
            uint8_t *dst = (uint8_t *)panel + (size_t)((g - r0) / QV_ROWS) * nb * QV_BLOCK_BYTES;  \
            const uint8_t *row0 = (const uint8_t *)w + (size_t)g * ldw;                            \
            for (int j = 0; j < nb; j++) {                                                         \
                uint8_t *e = dst + (size_t)j * QV_BLOCK_BYTES;                                     \
                float d[QV_ROWS] = {0};                                                            \
                int32_t corr[QV_ROWS] = {0};                                                       \
                for (int a = 0; a < QV_ROWS; a++) {                                                \
                    int8_t codes[32] = {0};                                                        \
                    if (a < valid) {                                                               \
                        const uint8_t *blk = row0 + (size_t)a * ldw + (size_t)j * BLOCK_BYTES;     \
                        codes_##FMT(blk, codes);                                                   \
                        uint16_t h;                                                                \
                        memcpy(&h, blk, 2);                                                        \
                        d[a] = nc_fp16_to_f32(h);                                                  \
                    }                                                                              \
                    for (int c = 0; c < 8; c++) {                                                  \
                        memcpy(e + c * 32 + a * 4, codes + c * 4, 4);                              \
                        for (int i = 0; i < 4; i++)                                                \
                            corr[a] -= 128 * codes[c * 4 + i];                                     \
                    }                                                                              \
                }                                                                                  \
                memcpy(e + QV_SCALES, d, sizeof d);                                                \
                memcpy(e + QV_CORR, corr, sizeof corr);                                            \
            }                                                                                      \
        }                                                                                          \
    }
DEF_QPANEL_PACK(q8, CPU_Q8_BLOCK_BYTES)
DEF_QPANEL_PACK(q4, CPU_Q4_BLOCK_BYTES)

/* Rows r0..r1 (multiples of 16) of a Q4X16 matrix into panels: the 32
 * bytes of half h of a group's code chunk c are panel group h's
 * [row][4 bytes], so their low nibbles are step c and their high ones step
 * c + 4. The signed codes' sums per row come from vpmaddubsw by 1 (at most
 * 8 * 2 * 8 in int16), times -128 by vpmaddwd. */
static void qpanel_q4x16_avxvnni(const void *w, size_t ldw, int nb, int r0, int r1, void *panel) {
    const __m256i nibble = _mm256_set1_epi8(0x0f), k8 = _mm256_set1_epi8(8),
                  one = _mm256_set1_epi8(1);
    for (int g = r0; g < r1; g += CPU_Q4X16_ROWS) {
        const uint8_t *src = (const uint8_t *)w + (size_t)g * ldw;
        for (int j = 0; j < nb; j++)
            for (int h = 0; h < 2; h++) {
                int pg = (g - r0) / QV_ROWS + h;
                uint8_t *o = (uint8_t *)panel + ((size_t)pg * nb + (size_t)j) * QV_BLOCK_BYTES;
                const uint8_t *sc = src + cpu_q4x16_scale_at(j, 0) + h * 16;
                const uint8_t *c = src + cpu_q4x16_code_at(j, 0, 0) + h * 32;
                __m256i sum = _mm256_setzero_si256();
                for (int q = 0; q < 4; q++) {
                    __m256i v = _mm256_loadu_si256((const __m256i *)(c + q * 64));
                    __m256i lo = _mm256_sub_epi8(_mm256_and_si256(v, nibble), k8);
                    __m256i hi =
                        _mm256_sub_epi8(_mm256_and_si256(_mm256_srli_epi16(v, 4), nibble), k8);
                    _mm256_storeu_si256((__m256i *)(o + q * 32), lo);
                    _mm256_storeu_si256((__m256i *)(o + (q + 4) * 32), hi);
                    sum = _mm256_add_epi16(sum, _mm256_add_epi16(_mm256_maddubs_epi16(one, lo),
                                                                 _mm256_maddubs_epi16(one, hi)));
                }
                _mm256_storeu_ps((float *)(o + QV_SCALES),
                                 _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)sc)));
                _mm256_storeu_si256((__m256i *)(o + QV_CORR),
                                    _mm256_madd_epi16(sum, _mm256_set1_epi16(-128)));
            }
    }
}

/* The first `valid` rows of v into y (added to y when accumulate). */
INLINE void store8(float *y, __m256 v, int valid) {
    if (valid >= 8) {
        _mm256_storeu_ps(y, v);
        return;
    }
    float part[8];
    _mm256_storeu_ps(part, v);
    for (int a = 0; a < valid; a++)
        y[a] = part[a];
}

/* All nb blocks of RG groups (p, group stride ldp bytes) x TB tokens (xq at
 * stride ldq, xs their scales at stride lds) into y[b * ldy + row] (the
 * first `valid` rows). RG and TB are constants after inlining. */
INLINE void qgemm_tile(const uint8_t *p, size_t ldp, int nb, const int8_t *xq, size_t ldq,
                       const float *xs, size_t lds, float *y, size_t ldy, int valid, const int RG,
                       const int TB) {
    const __m256i k80 = _mm256_set1_epi8((char)0x80);
    __m256 acc[2][QV_TOKENS];
    _Pragma("GCC unroll 2") for (int g = 0; g < RG; g++)
        _Pragma("GCC unroll 3") for (int b = 0; b < TB; b++) acc[g][b] = _mm256_setzero_ps();
    for (int j = 0; j < nb; j++) {
        const uint8_t *e = p + (size_t)j * QV_BLOCK_BYTES;
        __m256i s[2][QV_TOKENS];
        _Pragma("GCC unroll 2") for (int g = 0; g < RG; g++) {
            __m256i corr = _mm256_loadu_si256((const __m256i *)(e + (size_t)g * ldp + QV_CORR));
            _Pragma("GCC unroll 3") for (int b = 0; b < TB; b++) s[g][b] = corr;
        }
        _Pragma("GCC unroll 8") for (int c = 0; c < 8; c++) {
            __m256i wv[2];
            _Pragma("GCC unroll 2") for (int g = 0; g < RG; g++) wv[g] =
                _mm256_loadu_si256((const __m256i *)(e + (size_t)g * ldp + c * 32));
            _Pragma("GCC unroll 3") for (int b = 0; b < TB; b++) {
                int32_t x4;
                memcpy(&x4, xq + (size_t)b * ldq + (size_t)j * 32 + c * 4, 4);
                __m256i xb = _mm256_xor_si256(_mm256_set1_epi32(x4), k80);
                _Pragma("GCC unroll 2") for (int g = 0; g < RG; g++) s[g][b] =
                    _mm256_dpbusd_avx_epi32(s[g][b], xb, wv[g]);
            }
        }
        _Pragma("GCC unroll 2") for (int g = 0; g < RG; g++) {
            __m256 dw = _mm256_loadu_ps((const float *)(e + (size_t)g * ldp + QV_SCALES));
            _Pragma("GCC unroll 3") for (int b = 0; b < TB; b++) {
                __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(s[g][b]),
                                         _mm256_set1_ps(xs[(size_t)b * lds + (size_t)j * 8]));
                acc[g][b] = _mm256_fmadd_ps(v, dw, acc[g][b]);
            }
        }
    }
    _Pragma("GCC unroll 2") for (int g = 0; g < RG; g++)
        _Pragma("GCC unroll 3") for (int b = 0; b < TB; b++)
            store8(y + (size_t)b * ldy + (size_t)g * QV_ROWS, acc[g][b], valid - g * QV_ROWS);
}

#define QV_CASE(RG, TB)                                                                            \
    case TB:                                                                                       \
        qgemm_tile(p, ldp, nb, xq, ldq, xs, lds, y, ldy, valid, RG, TB);                           \
        break;
#define QV_TILES(RG)                                                                               \
    switch (tb) {                                                                                  \
        QV_CASE(RG, 1)                                                                             \
        QV_CASE(RG, 2)                                                                             \
        QV_CASE(RG, 3)                                                                             \
    default:                                                                                       \
        break;                                                                                     \
    }

static void qgemm_tile_any(const uint8_t *p, size_t ldp, int nb, const int8_t *xq, size_t ldq,
                           const float *xs, size_t lds, float *y, size_t ldy, int valid, int rg,
                           int tb) {
    if (rg == 2) {
        QV_TILES(2)
    } else {
        QV_TILES(1)
    }
}

static void qmatmul_panel_avxvnni(const void *panel, int nb, const int8_t *xq, size_t ldq,
                                  const float *xs, size_t lds, float *y, size_t ldy, int n,
                                  int rows) {
    size_t ldp = (size_t)nb * QV_BLOCK_BYTES;
    int groups = (rows + QV_ROWS - 1) / QV_ROWS;
    for (int t = 0; t < n; t += QV_TOKENS) {
        int tb = n - t < QV_TOKENS ? n - t : QV_TOKENS;
        for (int g = 0; g < groups; g += 2)
            qgemm_tile_any((const uint8_t *)panel + (size_t)g * ldp, ldp, nb, xq + (size_t)t * ldq,
                           ldq, xs + (size_t)t * lds, lds,
                           y + (size_t)t * ldy + (size_t)g * QV_ROWS, ldy, rows - g * QV_ROWS,
                           groups - g >= 2 ? 2 : 1, tb);
    }
}

const cpu_qpanel_kernels cpu_qpanel_avxvnni = {
    .pack = {qpanel_q8_avxvnni, qpanel_q4_avxvnni, qpanel_q4x16_avxvnni},
    .matmul = qmatmul_panel_avxvnni,
    .panel_bytes = qpanel_bytes_avxvnni,
};
