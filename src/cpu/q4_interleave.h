/* Q4 weights interleaved by 16 rows (CPU_W_Q4X16), the layout the AVX-512
 * decode kernel reads: the same bytes as Q4 rows (cpu_quant.h), 18 per
 * block, rearranged at load so that one vpdpbusd multiplies 16 rows x 4
 * codes by 4 activation bytes broadcast, with no sums across lanes and no
 * permutes (the row kernels spend about 12 vector ops per 4 blocks of a
 * row on unaligned loads, a permute and a cross-row tree; this layout
 * about 25 per 16 row-blocks).
 *
 * Per group of 16 rows (16 * nb * 18 bytes, groups in row order) and pair
 * of blocks j = 2p, 2p + 1 (576 bytes, pairs in block order):
 *   bytes   0..31   the 16 rows' fp16 scales of block 2p (row order)
 *   bytes  32..63   those of block 2p + 1
 *   bytes  64..319  block 2p's codes as 4 chunks of 64 bytes: chunk c holds
 *                   for each row a (in order) its code bytes 4c..4c+3, so
 *                   lane a of a 32-bit vector is row a; a code byte i holds
 *                   weight i in its low nibble and weight i + 16 in its
 *                   high nibble, as in a Q4 block
 *   bytes 320..575  block 2p + 1's codes
 * Matrices whose rows are not a multiple of 16 or whose blocks per row are
 * odd keep the row layout (every real model's are). */
#ifndef NC_CPU_Q4_INTERLEAVE_H
#define NC_CPU_Q4_INTERLEAVE_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "base/pool.h"
#include "cpu/cpu_quant.h"

#define CPU_Q4X16_ROWS 16
#define CPU_Q4X16_PAIR_BYTES (2 * CPU_Q4X16_ROWS * CPU_Q4_BLOCK_BYTES) /* 576 */

/* The offsets within a group of block j's scale and of code byte i
 * (0..15) of row a. */
static inline size_t cpu_q4x16_scale_at(int j, int a) {
    return (size_t)(j / 2) * CPU_Q4X16_PAIR_BYTES + (size_t)(j % 2) * 32 + (size_t)a * 2;
}
static inline size_t cpu_q4x16_code_at(int j, int a, int i) {
    return (size_t)(j / 2) * CPU_Q4X16_PAIR_BYTES + 64 + (size_t)(j % 2) * 256 +
           (size_t)(i / 4) * 64 + (size_t)a * 4 + (size_t)(i % 4);
}

/* The group that holds row r (ldw: the bytes of a row, as for Q4 rows). */
static inline const uint8_t *cpu_q4x16_group(const void *data, size_t ldw, int r) {
    return (const uint8_t *)data + (size_t)(r / CPU_Q4X16_ROWS) * CPU_Q4X16_ROWS * ldw;
}

/* Whether a [rows, cols] Q4 matrix can be interleaved. */
int cpu_q4x16_fits(int rows, int cols);

/* Rewrites rows of Q4 (rows x cpu_qblocks(cols) blocks) at data in place
 * as the interleaved layout, groups split over the pool's threads (pool
 * NULL: this thread). The matrix must fit (cpu_q4x16_fits). Fails only on
 * out of memory (NC_ERR_NOMEM, data untouched). */
nc_status cpu_q4x16_interleave(nc_pool *pool, void *data, int rows, int cols, nc_error *err);

/* Row r (cols weights) of an interleaved matrix as fp32 (d * (code - 8)),
 * equal to cpu_dequantize_row of the row before interleaving. */
void cpu_q4x16_row_to_f32(const void *data, int cols, int r, float *dst);

#endif
