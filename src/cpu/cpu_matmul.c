/* Splitting a matrix product into pool tasks (see cpu_matmul.h). */
#include "cpu/cpu_matmul.h"

#include "cpu/cpu_amx_dispatch.h"
#include "cpu/cpu_quant.h"
#include "cpu/q4_interleave.h"

/* Activation rows per inner call of the row-tile kernels when n > 1: 16
 * rows of fp32 activations (16 x 4 KiB at k = 1024) stay in L1/L2 while a
 * task's weight rows pass. */
#define TOKEN_BLOCK 16
/* Weight rows per task when n > 1: a multiple of every table's GEMM block
 * height (cpu_gemm_kernels.nr). For the GEMM on Qwen3-0.6B pp512, 32 and 64
 * were alike, 128 ~3% and 256 ~5% slower (a larger panel leaves less of L2
 * to the activations). */
#define ROWS_PER_TASK_BATCH CPU_MATMUL_PANEL_ROWS
/* From this many activation rows on, a task packs its weight rows into a
 * panel once: float weights into fp32 panels for the GEMM (cpu_gemm_kernels),
 * where each packed weight then feeds n FMAs; Q8/Q4 weights into the int8
 * panels of cpu_qpanel_kernels where the table has them. */
#define PANEL_MIN_TOKENS 8
/* Tables without int8 panels run Q8/Q4 prompts of this many rows on the
 * fp32 GEMM (dequantized into the panel, fp32 activations), shorter ones on
 * the int8 row tiles: packing fp32 panels costs about a cycle per weight,
 * which n FMAs per weight repay only for long enough batches. */
#define GEMM_MIN_TOKENS_QUANT 128

typedef struct {
    const cpu_kernels *kern;
    const cpu_mat *w;
    const float *x;
    size_t ldx, ldy;
    float *y;
    int n, rows_per_task;
    const cpu_act *act; /* quantized weights: the int8 rows; panel scratch */
    int is_gemm;        /* uses_gemm() */
    const void *gemm_x; /* the GEMM's activations converted once (x_prep), or NULL */
} matmul_job;

/* The prompt GEMM for w's type: bf16 dot products where the table has them. */
static const cpu_gemm_kernels *gemm_for(const cpu_kernels *kern, const cpu_mat *w) {
    return w->type == CPU_W_BF16 && kern->gemm_bf16 ? kern->gemm_bf16 : &kern->gemm;
}

/* Whether a product of n rows runs on the prompt GEMM: enough rows, and
 * panel scratch (cpu_act) that holds a task's rows. */
static int uses_gemm(const cpu_kernels *kern, const cpu_mat *w, const cpu_act *a, int n) {
    const cpu_gemm_kernels *g = gemm_for(kern, w);
    if (cpu_wtype_is_quant(w->type) && kern->qpanel) return 0; /* the int8 GEMM */
    int min_tokens = cpu_wtype_is_quant(w->type) ? GEMM_MIN_TOKENS_QUANT : PANEL_MIN_TOKENS;
    return g->run && n >= min_tokens && a && a->panels &&
           a->panel_floats >= cpu_gemm_panel_floats(g, ROWS_PER_TASK_BATCH, w->cols);
}

static void matmul_task(void *ctx, int task, int thread) {
    const matmul_job *j = ctx;
    int r0 = task * j->rows_per_task;
    int r1 = r0 + j->rows_per_task;
    if (r1 > j->w->rows) r1 = j->w->rows;
    const cpu_act *a = j->act;
    size_t ldw = cpu_wtype_row_bytes(j->w->type, j->w->cols);
    if (j->is_gemm) {
        /* Pack this task's rows once; every activation row reuses them. */
        float *p = a->panels + (size_t)thread * a->panel_floats;
        const cpu_gemm_kernels *g = gemm_for(j->kern, j->w);
        g->pack(j->w->type, j->w->data, ldw, j->w->cols, r0, r1, p);
        if (j->gemm_x)
            g->run_x(p, j->w->cols, r1 - r0, j->gemm_x, j->n, j->y + r0, j->ldy);
        else
            g->run(p, j->w->cols, r1 - r0, j->x, j->ldx, j->y + r0, j->ldy, j->n);
        return;
    }
    if (cpu_wtype_is_quant(j->w->type)) {
        cpu_qmatmul_fn qf = j->kern->qmatmul[j->w->type - CPU_W_Q8];
        int nb = cpu_qblocks(j->w->cols);
        size_t ldq = (size_t)nb * CPU_QBLOCK, lds = (size_t)nb * CPU_QSCALE_REP;
        const cpu_qpanel_kernels *qp = j->kern->qpanel;
        if (qp && qp->pack[j->w->type - CPU_W_Q8] && j->n >= PANEL_MIN_TOKENS && a->panels &&
            a->panel_floats * sizeof(float) >= qp->panel_bytes(r1 - r0, nb)) {
            /* Repack this task's rows once; every activation row reuses them. */
            float *p = a->panels + (size_t)thread * a->panel_floats;
            qp->pack[j->w->type - CPU_W_Q8](j->w->data, ldw, nb, r0, r1, p);
            qp->matmul(p, nb, a->q, ldq, a->s, lds, j->y + r0, j->ldy, j->n, r1 - r0);
            return;
        }
        for (int t = 0; t < j->n; t += TOKEN_BLOCK) {
            int nt = j->n - t < TOKEN_BLOCK ? j->n - t : TOKEN_BLOCK;
            qf(j->w->data, ldw, a->q + (size_t)t * ldq, ldq, a->s + (size_t)t * lds, lds,
               j->y + (size_t)t * j->ldy, j->ldy, nt, nb, r0, r1);
        }
        return;
    }
    cpu_matmul_fn fn = j->kern->matmul[j->w->type];
    for (int t = 0; t < j->n; t += TOKEN_BLOCK) {
        int nt = j->n - t < TOKEN_BLOCK ? j->n - t : TOKEN_BLOCK;
        fn(j->w->data, (size_t)j->w->cols, j->x + (size_t)t * j->ldx, j->ldx,
           j->y + (size_t)t * j->ldy, j->ldy, nt, j->w->cols, r0, r1);
    }
}

int cpu_matmul_decode_rows_per_task(int rows, int threads) {
    /* Decoding is bandwidth bound: a few large tasks per thread balance
     * the load without paying a dispatch per few rows. */
    int per = ((rows + threads * 4 - 1) / (threads * 4) + 15) & ~15;
    return per < 16 ? 16 : per;
}

typedef struct {
    const cpu_gemm_kernels *g;
    cpu_act *a;
} gemm_x_job;

static void gemm_x_row_task(void *ctx, int t, int thread) {
    (void)thread;
    const gemm_x_job *j = ctx;
    j->g->x_prep(j->a->x + (size_t)t * j->a->ldx, j->a->n, j->a->k, t, j->a->gemm_x);
}

/* The activations as GEMM g reads them, converted once for every task of
 * every product over them (NULL where g converts in each task itself, or
 * the scratch is too small). */
static const void *gemm_x_once(nc_pool *pool, const cpu_gemm_kernels *g, cpu_act *a) {
    if (!g->x_prep || !a->gemm_x || a->gemm_x_bytes < g->x_bytes(a->n, a->k)) return NULL;
    if (a->gemm_x_of != g) {
        gemm_x_job j = {g, a};
        nc_pool_for(pool, a->n, gemm_x_row_task, &j);
        a->gemm_x_of = g;
    }
    return a->gemm_x;
}

/* One product as pool tasks: rows per task and the task count. */
static int plan_job(matmul_job *j, nc_pool *pool, const cpu_kernels *kern, const cpu_mat *w,
                    const float *x, size_t ldx, float *y, size_t ldy, int n, cpu_act *act) {
    int per = n == 1 ? cpu_matmul_decode_rows_per_task(w->rows, nc_pool_threads(pool))
                     : ROWS_PER_TASK_BATCH;
    int is_gemm = uses_gemm(kern, w, act, n);
    const void *gemm_x = is_gemm ? gemm_x_once(pool, gemm_for(kern, w), act) : NULL;
    matmul_job jj = {kern, w, x, ldx, ldy, y, n, per, act, is_gemm, gemm_x};
    *j = jj;
    return n > 0 && w->rows > 0 ? (w->rows + per - 1) / per : 0;
}

static void run_matmul(nc_pool *pool, const cpu_kernels *kern, const cpu_mat *w, const float *x,
                       size_t ldx, float *y, size_t ldy, int n, cpu_act *act) {
    matmul_job j;
    int tasks = plan_job(&j, pool, kern, w, x, ldx, y, ldy, n, act);
    nc_pool_for(pool, tasks, matmul_task, &j);
}

static void quantize_row_task(void *ctx, int t, int thread) {
    (void)thread;
    const cpu_act *a = ctx;
    size_t nb = (size_t)cpu_qblocks(a->k);
    cpu_quantize_act_row(a->x + (size_t)t * a->ldx, a->k, a->q + (size_t)t * nb * CPU_QBLOCK,
                         a->s + (size_t)t * nb * CPU_QSCALE_REP);
}

static void quantize_once(nc_pool *pool, cpu_act *a) {
    if (a->is_quantized) return;
    /* a single row is a few microseconds of work: no dispatch for it */
    nc_pool_for(a->n > 1 ? pool : NULL, a->n, quantize_row_task, a);
    a->is_quantized = 1;
}

int cpu_matmul_reads_int8(const cpu_kernels *kern, const cpu_mat *w, const cpu_act *a) {
    return cpu_wtype_is_quant(w->type) && !cpu_amx_takes(kern, w->type, a) &&
           !uses_gemm(kern, w, a, a->n);
}

void cpu_matmul_act(nc_pool *pool, const cpu_kernels *kern, const cpu_mat *w, cpu_act *a, float *y,
                    size_t ldy) {
    if (cpu_matmul_amx(pool, kern, a, 1, &(cpu_product){w, y, ldy})) return;
    if (cpu_matmul_reads_int8(kern, w, a)) quantize_once(pool, a);
    run_matmul(pool, kern, w, a->x, a->ldx, y, ldy, a->n, a);
}

typedef struct {
    matmul_job jobs[CPU_MATMUL_MAX_MANY];
    int first[CPU_MATMUL_MAX_MANY + 1]; /* first task of each product */
} many_job;

static void many_task(void *ctx, int task, int thread) {
    const many_job *m = ctx;
    int i = cpu_product_of_task(m->first, task);
    matmul_task((void *)&m->jobs[i], task - m->first[i], thread);
}

void cpu_matmul_many(nc_pool *pool, const cpu_kernels *kern, cpu_act *a, int count,
                     const cpu_product *p) {
    if (cpu_matmul_amx(pool, kern, a, count, p)) return;
    many_job m;
    if (count > CPU_MATMUL_MAX_MANY) count = CPU_MATMUL_MAX_MANY;
    m.first[0] = 0;
    for (int i = 0; i < count; i++) {
        if (cpu_matmul_reads_int8(kern, p[i].w, a)) quantize_once(pool, a);
        m.first[i + 1] = m.first[i] + plan_job(&m.jobs[i], pool, kern, p[i].w, a->x, a->ldx, p[i].y,
                                               p[i].ldy, a->n, a);
    }
    nc_pool_for(pool, m.first[count], many_task, &m);
}

void cpu_mat_row_to_f32(const cpu_kernels *kern, const cpu_mat *w, int r, float *dst) {
    if (w->type == CPU_W_Q4X16) {
        cpu_q4x16_row_to_f32(w->data, w->cols, r, dst);
        return;
    }
    const uint8_t *row =
        (const uint8_t *)w->data + (size_t)r * cpu_wtype_row_bytes(w->type, w->cols);
    kern->row_to_f32[w->type](row, dst, w->cols);
}

size_t cpu_mat_bytes(const cpu_mat *w) {
    return (size_t)w->rows * cpu_wtype_row_bytes(w->type, w->cols);
}
