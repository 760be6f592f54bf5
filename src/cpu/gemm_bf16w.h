/* The prompt GEMM on bf16 weights packed once into panels that stay bf16
 * (cpu_packed.c keeps them): each 32-bit lane of a panel step holds the
 * weights of rows j and j + 16 of a 32-row block, widened to fp32 in
 * registers by one shift and one mask, then fp32 FMAs against fp32
 * activations (no rounding of the activations, unlike gemm_bf16.h). Half
 * the bytes of fp32 panels, so a forward pass streams the bf16 weights
 * once; each block's tiles prefetch the next block, spread over the tiles,
 * so the stream overlaps the FMAs. The activations are packed too, once per
 * product, into tiles of CPU_BF16W_TB rows laid out column by column, so a
 * tile reads one sequential stream of them instead of one per row.
 *
 * The fast table (NECTAR_BF16=fast only) keeps the same bytes in another
 * order: step c of a block holds the column pair (2c, 2c + 1) of rows 0-15,
 * then of rows 16-31, each row's pair in one 32-bit lane, for vdpbf16ps;
 * its tiles hold the activations rounded to bf16, a pair per 32-bit slot
 * (half a tile's floats). It needs an even k. */
#ifndef NC_CPU_GEMM_BF16W_H
#define NC_CPU_GEMM_BF16W_H

#include <stddef.h>
#include <stdint.h>

/* Rows per panel block. */
#define CPU_BF16W_NR 32
/* Activation rows per tile. */
#define CPU_BF16W_TB 12

/* Floats of the activation tiles of n rows of k values. */
static inline size_t cpu_bf16w_tiles_floats(int n, int k) {
    return (size_t)((n + CPU_BF16W_TB - 1) / CPU_BF16W_TB) * CPU_BF16W_TB * (size_t)k;
}

typedef struct cpu_gemm_bf16w {
    /* Rows r0..r1 of a bf16 matrix (row stride ldw bytes, k columns) into
     * blocks of CPU_BF16W_NR rows, block b at panel + b * NR * k: step i
     * holds 32 bf16, lane j (j < 16) = row j | row j + 16 << 16 (rows past
     * r1 zero). */
    void (*pack)(const void *w, size_t ldw, int k, int r0, int r1, uint16_t *panel);
    /* Columns c0..c0+k of one activation tile: rows (at most CPU_BF16W_TB)
     * rows of x (row stride ldx floats, k values, x at column c0) into the
     * tile starting at `tile`: tile[(c0 + i) * TB + b] = x[b][i], rows past
     * `rows` zero (the fast table: c0 and k even, the pair of columns
     * 2c, 2c + 1 in 32-bit slot c * TB + b). */
    void (*pack_x)(const float *x, size_t ldx, int rows, int c0, int k, float *tile);
    /* y[t * ldy + r] = sum_i x[t][i] W[r, i] for t < n, r < rows of the
     * panel, x as n rows of tiles from pack_x (tile j at xt + j * TB * k);
     * prefetches the bytes that follow each block, up to pf_end (the next
     * block the caller will run). */
    void (*run)(const uint16_t *panel, int k, int rows, const float *xt, float *y, size_t ldy,
                int n, const void *pf_end);
} cpu_gemm_bf16w;

/* The portable packing (the layout is the same for every table), and the
 * fast table's (k even). */
void cpu_bf16w_pack(const void *w, size_t ldw, int k, int r0, int r1, uint16_t *panel);
void cpu_bf16w_pack_pairs(const void *w, size_t ldw, int k, int r0, int r1, uint16_t *panel);

#if defined(__x86_64__) || defined(_M_X64)
extern const cpu_gemm_bf16w cpu_gemm_bf16w_avx512;
/* vdpbf16ps on the activations rounded to bf16 (AVX512-BF16; the fast
 * contract: 2^-9 per product, as gemm_bf16.h's CPU_BF16_FAST). */
extern const cpu_gemm_bf16w cpu_gemm_bf16w_fast_avx512;
#endif

#endif
