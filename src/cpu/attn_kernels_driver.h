/* The P.V register tiles and the loops around them, shared by the SIMD
 * attention kernel files (attn_kernels_avx2.c, _avx512.c, _neon.c), and the
 * exp they share (vexp.h). Each file defines pv_ldv_<SUF>(v, i)
 * (WIDTH values from element i, widened to fp32 in a register) for SUF f32
 * and f16, then expands CPU_DEF_ATTN_PV into a kernel pv_<NAME> of
 * attn_kernels.h reading SUF values (a file may expand it more than once,
 * with tiles of other sizes). The streaming P.V's loop over blocks of
 * value rows with their lines asked for ahead (cpu_pv_blocks) is here too.
 * Kernel files only. */
#ifndef NC_CPU_ATTN_KERNELS_DRIVER_H
#define NC_CPU_ATTN_KERNELS_DRIVER_H

#include "base/half.h"

/* The softmax exp: cpu/vexp.h. */
#include "cpu/vexp.h"

/* One value of a row as fp32 (the scalar column tail). */
static inline float pv_ld1_f32(const void *v, size_t i) {
    return ((const float *)v)[i];
}
static inline float pv_ld1_f16(const void *v, size_t i) {
    return nc_fp16_to_f32(((const nc_fp16 *)v)[i]);
}

/* Most rows and value vectors a tile spans (its accumulator array). */
#define CPU_PV_ROWS_CAP 4
#define CPU_PV_VECS_CAP 8

/* CPU_PV_IN_REGISTER(x): an empty asm that takes x in a vector register, so
 * the compiler keeps each loaded value vector in one instead of folding the
 * load into every FMA that uses it (GCC did: R loads of each vector per key,
 * and the loads, not the FMAs, set the pace). */
#if defined(__x86_64__)
#define CPU_PV_IN_REGISTER(x) __asm__("" : "+v"(x))
#elif defined(__aarch64__)
#define CPU_PV_IN_REGISTER(x) __asm__("" : "+w"(x))
#else
#define CPU_PV_IN_REGISTER(x) (void)0
#endif

/* pv_tile_<NAME>: rows 0..R-1 of o, columns c0 .. c0 + NV * WIDTH - 1. R and
 * NV are constants after inlining, so acc[][] lives in registers: per key,
 * NV value vectors are loaded once and each feeds R FMAs, one broadcast
 * probability per row feeds NV; o is loaded once at the start and stored
 * once at the end (the old one-row axpy did both for every key).
 *
 * pv_cols_<NAME>: the full width of R rows in MAXV-vector tiles, a narrower
 * tile for the leftover whole vectors, a scalar loop for cols % WIDTH.
 * pv_<NAME>: rows in tiles of MAXR, then one tile of the leftover rows.
 * MAXR <= CPU_PV_ROWS_CAP, MAXV <= CPU_PV_VECS_CAP.
 * LOADO(ptr), BCAST(f), FMA(a, b, acc) = acc + a * b, STORE(ptr, v). */
#define CPU_DEF_ATTN_PV(NAME, SUF, VEC, WIDTH, MAXR, MAXV, LOADO, BCAST, FMA, STORE)               \
    static inline __attribute__((always_inline)) void pv_tile_##NAME(                              \
        const float *p, size_t ldp, const void *v, size_t ldv, float *o, size_t ldo, int keys,     \
        int c0, const int R, const int NV) {                                                       \
        VEC acc[CPU_PV_ROWS_CAP][CPU_PV_VECS_CAP];                                                 \
        _Pragma("GCC unroll 8") for (int r = 0; r < R; r++)                                        \
            _Pragma("GCC unroll 8") for (int a = 0; a < NV; a++) acc[r][a] =                       \
                LOADO(o + (size_t)r * ldo + (size_t)(c0 + a * WIDTH));                             \
        for (int t = 0; t < keys; t++) {                                                           \
            VEC vv[CPU_PV_VECS_CAP];                                                               \
            _Pragma("GCC unroll 8") for (int a = 0; a < NV; a++) vv[a] =                           \
                pv_ldv_##SUF(v, (size_t)t * ldv + (size_t)(c0 + a * WIDTH));                       \
            _Pragma("GCC unroll 8") for (int a = 0; a < NV; a++) CPU_PV_IN_REGISTER(vv[a]);        \
            _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) {                                  \
                VEC pb = BCAST(p[(size_t)r * ldp + (size_t)t]);                                    \
                _Pragma("GCC unroll 8") for (int a = 0; a < NV; a++) acc[r][a] =                   \
                    FMA(pb, vv[a], acc[r][a]);                                                     \
            }                                                                                      \
        }                                                                                          \
        _Pragma("GCC unroll 8") for (int r = 0; r < R; r++)                                        \
            _Pragma("GCC unroll 8") for (int a = 0; a < NV; a++)                                   \
                STORE(o + (size_t)r * ldo + (size_t)(c0 + a * WIDTH), acc[r][a]);                  \
    }                                                                                              \
    static inline __attribute__((always_inline)) void pv_cols_##NAME(                              \
        const float *p, size_t ldp, const void *v, size_t ldv, float *o, size_t ldo, int keys,     \
        int cols, const int R) {                                                                   \
        int c = 0;                                                                                 \
        for (; c + MAXV * WIDTH <= cols; c += MAXV * WIDTH)                                        \
            pv_tile_##NAME(p, ldp, v, ldv, o, ldo, keys, c, R, MAXV);                              \
        switch ((cols - c) / WIDTH) { /* < MAXV whole vectors left */                              \
        case 0:                                                                                    \
            break;                                                                                 \
        case 1:                                                                                    \
            pv_tile_##NAME(p, ldp, v, ldv, o, ldo, keys, c, R, 1);                                 \
            break;                                                                                 \
        case 2:                                                                                    \
            pv_tile_##NAME(p, ldp, v, ldv, o, ldo, keys, c, R, 2);                                 \
            break;                                                                                 \
        case 3:                                                                                    \
            pv_tile_##NAME(p, ldp, v, ldv, o, ldo, keys, c, R, 3);                                 \
            break;                                                                                 \
        case 4:                                                                                    \
            pv_tile_##NAME(p, ldp, v, ldv, o, ldo, keys, c, R, 4);                                 \
            break;                                                                                 \
        case 5:                                                                                    \
            pv_tile_##NAME(p, ldp, v, ldv, o, ldo, keys, c, R, 5);                                 \
            break;                                                                                 \
        case 6:                                                                                    \
            pv_tile_##NAME(p, ldp, v, ldv, o, ldo, keys, c, R, 6);                                 \
            break;                                                                                 \
        default:                                                                                   \
            pv_tile_##NAME(p, ldp, v, ldv, o, ldo, keys, c, R, 7);                                 \
            break;                                                                                 \
        }                                                                                          \
        for (c += (cols - c) / WIDTH * WIDTH; c < cols; c++)                                       \
            for (int r = 0; r < R; r++) {                                                          \
                float acc1 = o[(size_t)r * ldo + (size_t)c];                                       \
                for (int t = 0; t < keys; t++)                                                     \
                    acc1 += p[(size_t)r * ldp + (size_t)t] *                                       \
                            pv_ld1_##SUF(v, (size_t)t * ldv + (size_t)c);                          \
                o[(size_t)r * ldo + (size_t)c] = acc1;                                             \
            }                                                                                      \
    }                                                                                              \
    static void pv_##NAME(const float *p, size_t ldp, const void *v, size_t ldv, float *o,         \
                          size_t ldo, int rows, int keys, int cols) {                              \
        int r = 0;                                                                                 \
        for (; r + MAXR <= rows; r += MAXR)                                                        \
            pv_cols_##NAME(p + (size_t)r * ldp, ldp, v, ldv, o + (size_t)r * ldo, ldo, keys, cols, \
                           MAXR);                                                                  \
        switch (rows - r) { /* < MAXR rows left */                                                 \
        case 0:                                                                                    \
            break;                                                                                 \
        case 1:                                                                                    \
            pv_cols_##NAME(p + (size_t)r * ldp, ldp, v, ldv, o + (size_t)r * ldo, ldo, keys, cols, \
                           1);                                                                     \
            break;                                                                                 \
        case 2:                                                                                    \
            pv_cols_##NAME(p + (size_t)r * ldp, ldp, v, ldv, o + (size_t)r * ldo, ldo, keys, cols, \
                           2);                                                                     \
            break;                                                                                 \
        default:                                                                                   \
            pv_cols_##NAME(p + (size_t)r * ldp, ldp, v, ldv, o + (size_t)r * ldo, ldo, keys, cols, \
                           3);                                                                     \
            break;                                                                                 \
        }                                                                                          \
    }

/* How far ahead of the keys or values in use the streaming kernels
 * (qk_stream, pv_stream) ask for cache lines, into L2 (prefetcht1 on x86):
 * on Zen 4 16 KiB read best, 8 and 32 about as well, 1-4 KiB less. */
#define CPU_STREAM_AHEAD 16384

/* The bytes from the first of n rows (ld elements of elt bytes apart) to the
 * end of the last one's cols: the end cpu_prefetch_lines clips to. */
static inline size_t cpu_rows_end(int n, size_t ld, int cols, size_t elt) {
    return ((size_t)(n - 1) * ld + (size_t)cols) * elt;
}

/* Asks for the lines of [at, at + n) of base, clipped to [0, end): nothing
 * past the rows in use (the unused context, or the cache's end). */
static inline void cpu_prefetch_lines(const char *base, size_t at, size_t n, size_t end) {
    for (size_t b = at; b < at + n && b < end; b += 64)
        __builtin_prefetch(base + b, 0, 2);
}

/* The P.V's block for a streaming pv: the value rows of 2 KiB go through
 * the tiles together (their passes over the block then read from L1), the
 * lines CPU_STREAM_AHEAD on asked for first. For tiles that read each row
 * in pieces (AVX2's 3 vectors of a 128-value row, AVX-512's 8 of a
 * 256-value row), which the hardware prefetchers of Zen 4 do not follow.
 * One core, fp32 values from memory: blocks of 1, 2, 4 and 16 KiB read
 * 22-24, 24-25, 21 and 11 GB/s with the AVX2 tiles (the larger blocks ask
 * for their lines in one burst). */
#define CPU_PV_BLOCK_BYTES 2048

typedef void (*cpu_pv_fn)(const float *p, size_t ldp, const void *v, size_t ldv, float *o,
                          size_t ldo, int rows, int keys, int cols);

/* pv (a table's kernel on elt-byte values) over the keys in blocks of
 * CPU_PV_BLOCK_BYTES of value rows, each block's lines ahead asked for
 * first; rows of at most whole_cols values (a width pv's tiles read whole
 * and in order, which the prefetchers follow) in one call, unblocked. pv
 * accumulates into o and each tile loads o, adds its keys in order and
 * stores it, so the blocks give the same sums as one call. */
static inline void cpu_pv_blocks(cpu_pv_fn pv, size_t elt, int whole_cols, const float *p,
                                 size_t ldp, const void *v, size_t ldv, float *o, size_t ldo,
                                 int rows, int keys, int cols) {
    if (cols <= whole_cols) {
        pv(p, ldp, v, ldv, o, ldo, rows, keys, cols);
        return;
    }
    size_t row_bytes = ldv * elt, end = cpu_rows_end(keys, ldv, cols, elt);
    int block = row_bytes >= CPU_PV_BLOCK_BYTES ? 1 : (int)(CPU_PV_BLOCK_BYTES / row_bytes);
    const char *vb = (const char *)v;
    for (int t = 0; t < keys; t += block) {
        int n = keys - t < block ? keys - t : block;
        cpu_prefetch_lines(vb, t * row_bytes + CPU_STREAM_AHEAD, (size_t)n * row_bytes, end);
        pv(p + t, ldp, vb + t * row_bytes, ldv, o, ldo, rows, n, cols);
    }
}

#endif
