/* Decoder steps shared by the CPU models (see dec_rows.h). */
#include "models/dec_rows.h"

#include <math.h>
#include <string.h>

#include "cpu/cpu_quant.h"
#include "cpu/rows.h"

cpu_act dec_act_rows(const dec_ctx *d, const float *x, size_t ldx, int n, int k) {
    cpu_act a = cpu_act_rows(x, ldx, n, k, d->xq, d->xs);
    cpu_act_attach(&a, d->prompt);
    return a;
}

cpu_act dec_act_rows_q(const dec_ctx *d, const float *x, int n, int k, const cpu_mat *const *reads,
                       int count) {
    cpu_act a = dec_act_rows(d, x, (size_t)k, n, k);
    int int8 = 0;
    for (int i = 0; i < count; i++)
        int8 |= cpu_matmul_reads_int8(d->kern, reads[i], &a);
    if (!int8) a.q = NULL;
    return a;
}

typedef struct {
    const dec_row_step *r;
    const cpu_row_kernels *rows;
} row_step_job;

static void row_step_task(void *ctx, int i, int thread) {
    (void)thread;
    const row_step_job *job = ctx;
    const dec_row_step *r = job->r;
    const cpu_row_kernels *rows = job->rows;
    size_t wd = (size_t)r->width;
    float *out = r->out + (size_t)i * wd;
    if (r->norm) {
        float *x = r->x + (size_t)i * wd;
        if (r->add) rows->add(x, r->add + (size_t)i * wd, wd);
        rows->rmsnorm(out, x, r->norm, r->width, r->eps);
    } else if (r->gelu_tanh) {
        rows->gelu_tanh_mul(out, out, r->mul + (size_t)i * wd, wd);
    } else {
        rows->silu_mul(out, out, r->mul + (size_t)i * wd, wd);
    }
    if (r->act->q) {
        size_t nb = (size_t)cpu_qblocks(r->width);
        cpu_quantize_act_row(out, r->width, r->act->q + (size_t)i * nb * CPU_QBLOCK,
                             r->act->s + (size_t)i * nb * CPU_QSCALE_REP);
    }
}

/* Inline for one row: a few microseconds of work, not worth a dispatch. */
void dec_row_steps(const dec_ctx *d, dec_row_step *r, int n) {
    row_step_job j = {r, d->kern->rows};
    nc_pool_for(n > 1 ? d->pool : NULL, n, row_step_task, &j);
    if (r->act->q) r->act->is_quantized = 1;
}

typedef struct norm_rows {
    const cpu_row_kernels *rows;
    float *x;
    const float *w;
    int width;
    float eps;
} norm_rows;

static void norm_row_task(void *ctx, int i, int thread) {
    (void)thread;
    const norm_rows *r = ctx;
    float *x = r->x + (size_t)i * r->width;
    r->rows->rmsnorm(x, x, r->w, r->width, r->eps);
}

void dec_norm_rows(const dec_ctx *d, float *x, int n, int width, const float *w, float eps) {
    norm_rows r = {d->kern->rows, x, w, width, eps};
    nc_pool_for(n > 1 ? d->pool : NULL, n, norm_row_task, &r);
}

void dec_mlp_rows(const dec_ctx *d, const dec_mlp *mlp, float *x, const float *add, float *xb,
                  float *hb, float *hb2, int n) {
    int dm = mlp->down->rows, ff = mlp->gate->rows;
    /* the residual add of the attention output, the norm and the int8
     * blocks in one pass */
    cpu_act xm = dec_act_rows_q(d, xb, n, dm, (const cpu_mat *[]){mlp->gate, mlp->up}, 2);
    dec_row_steps(d, &(dec_row_step){x, add, mlp->norm, xb, NULL, dm, mlp->eps, &xm, 0}, n);
    /* gate, up: one input, one dispatch */
    cpu_matmul_many(d->pool, d->kern, &xm, 2,
                    (cpu_product[]){{mlp->gate, hb, (size_t)ff}, {mlp->up, hb2, (size_t)ff}});
    cpu_act h = dec_act_rows_q(d, hb, n, ff, (const cpu_mat *[]){mlp->down}, 1);
    dec_row_steps(d, &(dec_row_step){NULL, NULL, NULL, hb, hb2, ff, 0.0f, &h, mlp->gelu_tanh}, n);
    cpu_matmul_act(d->pool, d->kern, mlp->down, &h, xb, (size_t)dm);
    if (mlp->post_norm) dec_norm_rows(d, xb, n, dm, mlp->post_norm, mlp->eps);
    size_t count = (size_t)n * dm;
    for (size_t i = 0; i < count; i++)
        x[i] += xb[i];
}

void dec_head_rows(const dec_ctx *d, const dec_head *h, const float *x, float *const *dst, int n,
                   float *xb, float *logits) {
    size_t w = (size_t)h->width, V = (size_t)h->vocab;
    int rows[DEC_LOGIT_ROWS], k = 0;
    for (int i = 0; i <= n; i++) {
        if (i < n && dst[i]) {
            d->kern->rows->rmsnorm(xb + (size_t)k * w, x + (size_t)i * w, h->norm, h->width, h->eps);
            rows[k++] = i;
        }
        if (k == DEC_LOGIT_ROWS || (i == n && k > 0)) {
            cpu_act xl = dec_act_rows(d, xb, w, k, h->width);
            cpu_matmul_act(d->pool, d->kern, h->lm_head, &xl, logits, V);
            if (h->softcap > 0) { /* HF: logits / cap, tanh, * cap */
                for (size_t j = 0; j < (size_t)k * V; j++)
                    logits[j] = tanhf(logits[j] / h->softcap) * h->softcap;
            }
            for (int j = 0; j < k; j++)
                memcpy(dst[rows[j]], logits + (size_t)j * V, V * sizeof(float));
            k = 0;
        }
    }
}

nc_status dec_check_tokens(const int32_t *tokens, int n, int pos, int ctx, int vocab,
                           nc_error *err) {
    if (n > ctx - pos)
        return nc_fail(err, NC_ERR_RANGE,
                       "context full: %d tokens in the cache + %d new > context of %d tokens", pos,
                       n, ctx);
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= vocab)
            return nc_fail(err, NC_ERR_INVALID,
                           "token id %d at index %d is outside the vocabulary (size %d)",
                           (int)tokens[i], i, vocab);
    return NC_OK;
}
