/* Prompt products on AMX tiles as pool tasks (gemm_amx.h): the input rows
 * are packed once per set of products (one task per 16 tokens), then each
 * task runs one block of weight rows against all of them. Used by
 * cpu_matmul.c when the table has AMX and the caller gave the scratch. */
#include "cpu/cpu_amx_dispatch.h"

#include "cpu/gemm_amx.h"

/* Below this many rows a prompt is not worth packing for the tiles. */
#define AMX_MIN_TOKENS 16
/* Weight rows per task: 64 rows (128 KiB of bf16 at k = 1024) stay in L2
 * while every 64-token chunk of the packed input passes. */
#define AMX_ROWS_PER_TASK 64

int cpu_amx_takes(const cpu_kernels *kern, cpu_wtype t, const cpu_act *a) {
    if (cpu_wtype_is_quant(t) && kern->qpanel) return 0;
    return kern->amx && a->n >= AMX_MIN_TOKENS && a->amx_x && a->amx_scratch &&
           a->amx_x_bytes >= cpu_amx_x_bytes(a->n, a->k) &&
           a->amx_scratch_bytes >= cpu_amx_scratch_bytes(a->k);
}

static void pack_task(void *ctx, int tb, int thread) {
    (void)thread;
    const cpu_act *a = ctx;
    cpu_amx_pack_x(a->x, a->ldx, a->n, a->k, tb, a->amx_x);
}

void cpu_amx_pack_act(nc_pool *pool, cpu_act *a) {
    if (a->amx_packed) return;
    nc_pool_for(pool, cpu_amx_token_blocks(a->n), pack_task, a);
    a->amx_packed = 1;
}

typedef struct {
    const cpu_kernels *kern;
    const cpu_act *a;
    int count;
    const cpu_product *p;
    int first[CPU_MATMUL_MAX_MANY + 1]; /* first task of each product */
} amx_job;

static void product_task(void *ctx, int task, int thread) {
    const amx_job *j = ctx;
    int i = cpu_product_of_task(j->first, task);
    const cpu_mat *w = j->p[i].w;
    int r0 = (task - j->first[i]) * AMX_ROWS_PER_TASK;
    int r1 = r0 + AMX_ROWS_PER_TASK < w->rows ? r0 + AMX_ROWS_PER_TASK : w->rows;
    const cpu_act *a = j->a;
    cpu_amx_matmul(w->type, j->kern->row_to_f32[w->type], w->data,
                   cpu_wtype_row_bytes(w->type, w->cols), w->cols, r0, r1, a->amx_x, a->n,
                   j->p[i].y, j->p[i].ldy,
                   (char *)a->amx_scratch + (size_t)thread * a->amx_scratch_bytes);
}

int cpu_matmul_amx(nc_pool *pool, const cpu_kernels *kern, cpu_act *a, int count,
                   const cpu_product *p) {
    if (count > CPU_MATMUL_MAX_MANY) return 0;
    amx_job j = {kern, a, count, p, {0}};
    for (int i = 0; i < count; i++) {
        if (!cpu_amx_takes(kern, p[i].w->type, a) || p[i].w->cols != a->k) return 0;
        j.first[i + 1] = j.first[i] + (p[i].w->rows + AMX_ROWS_PER_TASK - 1) / AMX_ROWS_PER_TASK;
    }
    cpu_amx_pack_act(pool, a);
    nc_pool_for(pool, j.first[count], product_task, &j);
    return 1;
}
