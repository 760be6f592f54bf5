/* What the arm64 quantized kernel files share (qkernels_neon.c: armv8.0;
 * qkernels_dotprod_neon.c: sdot; qkernels_i8mm_neon.c: smmla): reading Q8/Q4
 * blocks as signed codes, the per-row register tile around a 32-code dot
 * product, and the int8 prompt GEMM's panel (its packing and the loops
 * around a file's tile). Include only from those files, each compiled with
 * its own -march (Makefile). */
#ifndef NC_CPU_QKERNELS_NEON_H
#define NC_CPU_QKERNELS_NEON_H

#include <arm_neon.h>
#include <string.h>

#include "base/half.h"
#include "cpu/qkernels.h"

#define QN_INLINE static inline __attribute__((always_inline))

QN_INLINE float qn_scale_of(const uint8_t *blk) {
    uint16_t h;
    memcpy(&h, blk, 2);
    return nc_fp16_to_f32(h);
}

/* A block's 32 codes as signed bytes: w0 codes 0-15, w1 16-31 (Q4: the low
 * nibbles, then the high ones, each minus 8). */
QN_INLINE void qn_load_q8(const uint8_t *blk, int8x16_t *w0, int8x16_t *w1) {
    *w0 = vld1q_s8((const int8_t *)(blk + 2));
    *w1 = vld1q_s8((const int8_t *)(blk + 18));
}
QN_INLINE void qn_load_q4(const uint8_t *blk, int8x16_t *w0, int8x16_t *w1) {
    uint8x16_t p = vld1q_u8(blk + 2);
    int8x16_t eight = vdupq_n_s8(8);
    *w0 = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(p, vdupq_n_u8(15))), eight);
    *w1 = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(p, 4)), eight);
}

/* qtile_<FMT>_<SUF> for CPU_DEF_QMATMUL_LOOPS: RB rows x TB tokens (<= 4
 * each), per block DOT(w0, w1, x0, x1) = the 32 products summed into int32
 * lanes, converted and scaled by both block scales. */
#define QN_DEF_QTILE(FMT, BLOCK_BYTES, SUF, DOT)                                                   \
    QN_INLINE void qtile_##FMT##_##SUF(const uint8_t *w, size_t ldw, const int8_t *xq, size_t ldq, \
                                       const float *xs, size_t lds, float *y, size_t ldy, int nb,  \
                                       int r, int t, const int RB, const int TB) {                 \
        float32x4_t acc[4][4];                                                                     \
        _Pragma("GCC unroll 4") for (int a = 0; a < RB; a++)                                       \
            _Pragma("GCC unroll 4") for (int b = 0; b < TB; b++) acc[a][b] = vdupq_n_f32(0.0f);    \
        for (int j = 0; j < nb; j++) {                                                             \
            int8x16_t w0[4], w1[4];                                                                \
            float dw[4];                                                                           \
            _Pragma("GCC unroll 4") for (int a = 0; a < RB; a++) {                                 \
                const uint8_t *blk = w + (size_t)(r + a) * ldw + (size_t)j * BLOCK_BYTES;          \
                if (TB == 1) /* decoding: the next tile's rows (kernels_driver.h) */               \
                    __builtin_prefetch(blk + (size_t)RB * ldw);                                    \
                qn_load_##FMT(blk, &w0[a], &w1[a]);                                                \
                dw[a] = qn_scale_of(blk);                                                          \
            }                                                                                      \
            _Pragma("GCC unroll 4") for (int b = 0; b < TB; b++) {                                 \
                const int8_t *xb = xq + (size_t)(t + b) * ldq + (size_t)j * 32;                    \
                int8x16_t x0 = vld1q_s8(xb), x1 = vld1q_s8(xb + 16);                               \
                float dx = xs[(size_t)(t + b) * lds + (size_t)j * CPU_QSCALE_REP];                 \
                _Pragma("GCC unroll 4") for (int a = 0; a < RB; a++) acc[a][b] =                   \
                    vfmaq_n_f32(acc[a][b], vcvtq_f32_s32(DOT(w0[a], w1[a], x0, x1)), dw[a] * dx);  \
            }                                                                                      \
        }                                                                                          \
        for (int a = 0; a < RB; a++)                                                               \
            for (int b = 0; b < TB; b++)                                                           \
                y[(size_t)(t + b) * ldy + (size_t)(r + a)] = vaddvq_f32(acc[a][b]);                \
    }

/* cpu_qmatmul_q8_<SUF> and cpu_qmatmul_q4_<SUF> on QN_DEF_QTILE: decoding
 * 4 x 1 tiles, prompts 4 x 2. */
#define QN_DEF_QMATMUL(SUF, DOT)                                                                   \
    QN_DEF_QTILE(q8, CPU_Q8_BLOCK_BYTES, SUF, DOT)                                                 \
    QN_DEF_QTILE(q4, CPU_Q4_BLOCK_BYTES, SUF, DOT)                                                 \
    CPU_DEF_QDECODE_FROM_QTILE(q8_##SUF, 4)                                                        \
    CPU_DEF_QDECODE_FROM_QTILE(q4_##SUF, 4)                                                        \
    CPU_DEF_QMATMUL_LOOPS(q8_##SUF, 4, 4, 2)                                                       \
    CPU_DEF_QMATMUL_LOOPS(q4_##SUF, 4, 4, 2)

/* ---- the int8 prompt GEMM's panel (cpu_qpanel_kernels) -----------------
 * Per group of QN_ROWS rows and block: QN_CODE_BYTES of signed codes in the
 * order the file's tile reads them (its PLACE macro), then the 8 rows' fp32
 * scales. Rows past the matrix are zero. Tiles are QN_ROWS rows x up to
 * QN_TOKENS tokens, all of k at once (4 activation rows of a 9728-column
 * matrix are 39 KiB: within the L1 of the cores this is for). */
#define QN_ROWS 8
#define QN_TOKENS 4
#define QN_CODE_BYTES 256
#define QN_BLOCK_BYTES (QN_CODE_BYTES + QN_ROWS * 4)

QN_INLINE size_t qn_panel_bytes(int rows, int nb) {
    return (size_t)((rows + QN_ROWS - 1) / QN_ROWS) * (size_t)nb * QN_BLOCK_BYTES;
}

/* qpanel_<FMT>_<SUF>: rows r0..r1 into the panel; PLACE(e, a, codes) puts
 * row a's 32 codes into a block entry e. */
#define QN_DEF_PACK(FMT, BLOCK_BYTES, SUF, PLACE)                                                  \
    static void qpanel_##FMT##_##SUF(const void *w, size_t ldw, int nb, int r0, int r1,            \
                                     void *panel) {                                                \
        for (int g = r0; g < r1; g += QN_ROWS) {                                                   \
            int valid = r1 - g < QN_ROWS ? r1 - g : QN_ROWS;                                       \
            uint8_t *dst = (uint8_t *)panel + (size_t)((g - r0) / QN_ROWS) * nb * QN_BLOCK_BYTES;  \
            const uint8_t *row0 = (const uint8_t *)w + (size_t)g * ldw;                            \
            for (int j = 0; j < nb; j++) {                                                         \
                uint8_t *e = dst + (size_t)j * QN_BLOCK_BYTES;                                     \
                float d[QN_ROWS] = {0};                                                            \
                for (int a = 0; a < QN_ROWS; a++) {                                                \
                    int8_t codes[32] = {0};                                                        \
                    if (a < valid) {                                                               \
                        const uint8_t *blk = row0 + (size_t)a * ldw + (size_t)j * BLOCK_BYTES;     \
                        int8x16_t c0, c1;                                                          \
                        qn_load_##FMT(blk, &c0, &c1);                                              \
                        vst1q_s8(codes, c0);                                                       \
                        vst1q_s8(codes + 16, c1);                                                  \
                        d[a] = qn_scale_of(blk);                                                   \
                    }                                                                              \
                    PLACE(e, a, codes);                                                            \
                }                                                                                  \
                memcpy(e + QN_CODE_BYTES, d, sizeof d);                                            \
            }                                                                                      \
        }                                                                                          \
    }

/* The cpu_qpanel_kernels cpu_qpanel_<SUF>: the packers and the loops over
 * tiles of tokens and row groups around TILE(p, nb, xq, ldq, xs, lds, y,
 * ldy, valid, TB), which writes y[b * ldy + row] for b < TB, row < valid. */
#define QN_DEF_QPANEL(SUF, PLACE, TILE)                                                            \
    QN_DEF_PACK(q8, CPU_Q8_BLOCK_BYTES, SUF, PLACE)                                                \
    QN_DEF_PACK(q4, CPU_Q4_BLOCK_BYTES, SUF, PLACE)                                                \
    static size_t qpanel_bytes_##SUF(int rows, int nb) {                                           \
        return qn_panel_bytes(rows, nb);                                                           \
    }                                                                                              \
    static void qmatmul_panel_##SUF(const void *panel, int nb, const int8_t *xq, size_t ldq,       \
                                    const float *xs, size_t lds, float *y, size_t ldy, int n,      \
                                    int rows) {                                                    \
        size_t ldp = (size_t)nb * QN_BLOCK_BYTES;                                                  \
        for (int t = 0; t < n; t += QN_TOKENS) {                                                   \
            int tb = n - t < QN_TOKENS ? n - t : QN_TOKENS;                                        \
            for (int g = 0; g * QN_ROWS < rows; g++) {                                             \
                const uint8_t *p = (const uint8_t *)panel + (size_t)g * ldp;                       \
                const int8_t *xt = xq + (size_t)t * ldq;                                           \
                const float *st = xs + (size_t)t * lds;                                            \
                float *yt = y + (size_t)t * ldy + (size_t)g * QN_ROWS;                             \
                int valid = rows - g * QN_ROWS;                                                    \
                switch (tb) {                                                                      \
                case 1:                                                                            \
                    TILE(p, nb, xt, ldq, st, lds, yt, ldy, valid, 1);                              \
                    break;                                                                         \
                case 2:                                                                            \
                    TILE(p, nb, xt, ldq, st, lds, yt, ldy, valid, 2);                              \
                    break;                                                                         \
                case 3:                                                                            \
                    TILE(p, nb, xt, ldq, st, lds, yt, ldy, valid, 3);                              \
                    break;                                                                         \
                default:                                                                           \
                    TILE(p, nb, xt, ldq, st, lds, yt, ldy, valid, 4);                              \
                    break;                                                                         \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }                                                                                              \
    const cpu_qpanel_kernels cpu_qpanel_##SUF = {                                                  \
        .pack = {qpanel_q8_##SUF, qpanel_q4_##SUF},                                                \
        .matmul = qmatmul_panel_##SUF,                                                             \
        .panel_bytes = qpanel_bytes_##SUF,                                                         \
    };

/* 4 rows' results of a token into y: the first `valid` of them (a group at
 * the matrix's end is partial). */
QN_INLINE void qn_store4(float *y, float32x4_t v, int valid) {
    if (valid >= 4) {
        vst1q_f32(y, v);
        return;
    }
    float part[4];
    vst1q_f32(part, v);
    for (int a = 0; a < valid; a++)
        y[a] = part[a];
}

#endif
