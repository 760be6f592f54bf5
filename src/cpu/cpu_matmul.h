/* Multithreaded matrix products against weight matrices read from the mmap:
 * the rows of W are split into tasks on the thread pool, and within a task
 * the activation rows go through in blocks so a block of weights stays in
 * cache while every activation row of the block uses it (prefill), while a
 * single activation row streams the weights once (decoding). */
#ifndef NC_CPU_MATMUL_H
#define NC_CPU_MATMUL_H

#include "base/pool.h"
#include "cpu/cpu_kernels.h"

typedef struct cpu_mat {
    cpu_wtype type;
    const void *data; /* [rows, cols], row-major, rows contiguous */
    int rows, cols;
} cpu_mat;

/* The input rows of one or more matrix products. A quantized matrix reads
 * them as int8 blocks (cpu_quant.h): they are quantized into q/s on first
 * use and reused by the next products over the same rows (q, k and v;
 * gate and up). q and s are caller scratch of cpu_qact_q_bytes(n, k) and
 * cpu_qact_s_bytes(n, k) bytes (NULL when no matrix is quantized). */
typedef struct cpu_act {
    const float *x;
    size_t ldx;
    int n, k;
    int8_t *q;
    float *s;
    int is_quantized;
    /* Optional scratch for prompts: one panel of panel_floats (>=
     * CPU_MATMUL_PANEL_ROWS * k) per pool thread, where a task packs its
     * weight rows to fp32 once for the prompt GEMM (cpu_gemm_kernels), or
     * quantized rows for the int8 panel kernels. NULL: the row tiles. */
    float *panels;
    size_t panel_floats;
    /* Optional scratch for prompts on AMX tiles (kern->amx): the rows packed
     * as bf16 terms (amx_x, cpu_amx_x_bytes(n, k) or more, filled on first
     * use like q/s) and per pool thread amx_scratch_bytes for weight rows. */
    void *amx_x;
    size_t amx_x_bytes;
    int amx_packed;
    void *amx_scratch;
    size_t amx_scratch_bytes;
    /* Optional scratch for the prompt GEMMs that convert the activations
     * once per product (cpu_gemm_kernels.x_prep): gemm_x_bytes bytes, and
     * the GEMM whose conversion they hold (NULL: none yet). */
    void *gemm_x;
    size_t gemm_x_bytes;
    const cpu_gemm_kernels *gemm_x_of;
} cpu_act;

#define CPU_MATMUL_PANEL_ROWS 64

static inline cpu_act cpu_act_rows(const float *x, size_t ldx, int n, int k, int8_t *q, float *s) {
    cpu_act a = {x, ldx, n, k, q, s, 0, NULL, 0, NULL, 0, 0, NULL, 0, NULL, 0, NULL};
    return a;
}

/* Whether cpu_matmul_act of w reads a's rows as int8 blocks (q, s): Q8/Q4
 * weights with few rows. Long prompts (and float weights) run the fp32 GEMM
 * on a->x itself, so a caller may skip quantizing activations for them. */
int cpu_matmul_reads_int8(const cpu_kernels *kern, const cpu_mat *w, const cpu_act *a);

/* Y = X W^T for any weight type (w->cols == a->k). */
void cpu_matmul_act(nc_pool *pool, const cpu_kernels *kern, const cpu_mat *w, cpu_act *a, float *y,
                    size_t ldy);

/* Several products of the same input rows (q, k and v; gate and up) as one
 * set of pool tasks: one dispatch instead of one per matrix, and the
 * threads balance over all of them. */
typedef struct cpu_product {
    const cpu_mat *w;
    float *y;
    size_t ldy;
} cpu_product;

#define CPU_MATMUL_MAX_MANY 4

/* Which product of a set a pool task belongs to, first[i] being product
 * i's first task (first[count] = the number of tasks). */
static inline int cpu_product_of_task(const int *first, int task) {
    int i = 0;
    while (task >= first[i + 1])
        i++;
    return i;
}

void cpu_matmul_many(nc_pool *pool, const cpu_kernels *kern, cpu_act *a, int count,
                     const cpu_product *p);

size_t cpu_mat_bytes(const cpu_mat *w);

/* Row r of w as fp32 (Q8/Q4 dequantized as d * code): embedding lookups. */
void cpu_mat_row_to_f32(const cpu_kernels *kern, const cpu_mat *w, int r, float *dst);

/* Weight rows per pool task of a one-row product (decoding) of `rows` rows
 * on `threads` threads: about 4 tasks per thread, whole 16-row steps; the
 * bandwidth probe's kernel patterns split their products the same way. */
int cpu_matmul_decode_rows_per_task(int rows, int threads);

#endif
