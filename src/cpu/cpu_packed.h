/* Weight matrices packed once into the panels of a kernel table's prompt
 * GEMM (cpu_gemm_kernels) and kept, for models that run many prompts over
 * the same weights (the encoders): cpu_matmul.c packs each task's weight rows
 * again on every call, which cost an encoder forward pass a fifth of its
 * time. Products run as pool tasks of consecutive row groups, and hand
 * each block of outputs to a caller's epilogue while it is still in cache
 * (a residual add, RoPE, a gated activation), so no separate pass is
 * needed. */
#ifndef NC_CPU_PACKED_H
#define NC_CPU_PACKED_H

#include "base/error.h"
#include "base/pool.h"
#include "cpu/cpu_matmul.h"

/* Output rows of W (= output columns) per group. */
#define CPU_PACKED_GROUP_ROWS CPU_MATMUL_PANEL_ROWS
/* Activation rows per epilogue block at most: 11 activation tiles of
 * gemm_bf16w.h (blocks are whole tiles). */
#define CPU_PACKED_TOKENS 132

/* The matrix's rows are split into `parts` equal parts (1, or 2 for a gated
 * MLP's [input; gate] rows) and group g packs rows g*G.. of every part side
 * by side (G = CPU_PACKED_GROUP_ROWS / parts), so one task sees the matching
 * rows of each part. */
typedef struct cpu_packed {
    const cpu_gemm_kernels *g;        /* fp32 panels (or bf16 dot products) */
    const struct cpu_gemm_bf16w *w16; /* else bf16 panels (gemm_bf16w.h, either table) */
    unsigned char *panel;             /* NULL: not packed */
    int rows, cols, parts, part_rows, group_rows, groups;
    size_t part_bytes; /* panel bytes per part of a group */
} cpu_packed;

/* Whether a packed copy of weights of type t pays on kern: bf16 weights on
 * a table with bf16 panels (AVX-512 without AMX; the bytes of the weights),
 * on bf16 dot products where the fast contract chose them (NECTAR_BF16=fast:
 * gemm_bf16w_fast), else widened to fp32.
 * AMX tables read bf16 tiles in place; fp32 panels (the other tables and
 * types) cost twice the bytes and gained nothing measurable, so callers
 * leave those to cpu_matmul.c. cpu_packed_init itself packs for any table
 * and float type. */
int cpu_packed_wanted(const cpu_kernels *kern, cpu_wtype t);

/* Bytes cpu_packed_init allocates for w split into parts. */
size_t cpu_packed_bytes(const cpu_kernels *kern, const cpu_mat *w, int parts);

/* Packs w (w->rows divisible by parts) for kern, the groups split over the
 * pool. Out of memory: NC_ERR_NOMEM naming `what`, p left empty. */
nc_status cpu_packed_init(cpu_packed *p, nc_pool *pool, const cpu_kernels *kern, const cpu_mat *w,
                          int parts, const char *what, nc_error *err);
void cpu_packed_free(cpu_packed *p);

/* One block of a product's outputs: activation rows t0..t0+nt, and of each
 * part q the outputs of W rows q * part_rows + r0 + i for i < rows, at
 * y[t * ldy + q * part_off + i] (t relative to t0). */
typedef struct cpu_packed_block {
    const float *y;
    size_t ldy, part_off;
    int t0, nt, r0, rows;
} cpu_packed_block;

typedef void (*cpu_packed_epilogue)(void *ctx, const cpu_packed_block *b);

/* Per-thread scratch floats of cpu_packed_matmul's output blocks. */
#define CPU_PACKED_SCRATCH_FLOATS ((size_t)CPU_PACKED_TOKENS * CPU_PACKED_GROUP_ROWS)
/* Scratch floats cpu_packed_matmul needs for up to n rows of up to k
 * values on a pool of `threads`: each thread's output blocks, then the
 * activation tiles of bf16 panels (gemm_bf16w.h). */
size_t cpu_packed_scratch_floats(int threads, int n, int k);

/* X W^T for the n rows of x (p->cols values each), in blocks (one row group,
 * at most CPU_PACKED_TOKENS rows) handed to epi(ctx, block); a pool task
 * runs consecutive groups. scratch holds cpu_packed_scratch_floats(pool
 * threads, n, p->cols) floats. */
void cpu_packed_matmul(nc_pool *pool, const cpu_packed *p, const float *x, size_t ldx, int n,
                       cpu_packed_epilogue epi, void *ctx, float *scratch);

/* Whether cpu_packed_matmul runs p on activation tiles (gemm_bf16w.h: bf16
 * panels), packing x first. A caller that has just written the rows, and
 * has them in cache, can pack them itself (cpu_packed_pack_tile) and call
 * cpu_packed_matmul_tiles: one pass and one pool loop fewer. */
int cpu_packed_tiled(const cpu_packed *p);
/* Columns c0..c0+cols of `rows` activation rows (at most CPU_BF16W_TB; x
 * points at row 0, column c0) into the tile at xt + t0 * p->cols for the
 * rows from t0 (a multiple of CPU_BF16W_TB); rows past `rows` zero. p tiled. */
void cpu_packed_pack_tile(const cpu_packed *p, const float *x, size_t ldx, int rows, int c0,
                          int cols, float *xt, int t0);
/* cpu_packed_matmul with the n rows already in tiles at xt (p tiled). */
void cpu_packed_matmul_tiles(nc_pool *pool, const cpu_packed *p, const float *xt, int n,
                             cpu_packed_epilogue epi, void *ctx, float *scratch);
/* The same on AMX tiles, where the table has them (cpu_packed_wanted is 0):
 * the weights w (w->rows divisible by parts) are read in place as bf16
 * tiles, a holds the n input rows with AMX scratch attached; each task
 * writes its group of outputs into y ([n][w->rows] in W's row order, row
 * stride ldy) and hands them to epi in blocks. Returns 0, having done
 * nothing, where the tiles do not take a (cpu_amx_takes). */
int cpu_packed_matmul_amx(nc_pool *pool, const cpu_kernels *kern, const cpu_mat *w, int parts,
                          cpu_act *a, float *y, size_t ldy, cpu_packed_epilogue epi, void *ctx);

/* The same epilogue over a product computed elsewhere (y = X W^T in W's row
 * order, row stride ldy, for a matrix of `rows` rows in `parts` parts), in
 * blocks of one row group and at most CPU_PACKED_TOKENS rows, split over
 * the pool. */
void cpu_packed_epilogue_rows(nc_pool *pool, const float *y, size_t ldy, int n, int rows, int parts,
                              cpu_packed_epilogue epi, void *ctx);

#endif
