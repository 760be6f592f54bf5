/* The steps every CPU decoder's load and free take (dec_model.h). */
#include "models/dec_model.h"

#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "cpu/cpu_quant.h"
#include "cpu/q4_interleave.h"
#include "models/hf_tensors.h"

nc_status dec_model_load(dec_model *b, void *model, const char *dir, int n_threads,
                         const dec_load_steps *steps, nc_error *err) {
    if (!(b->dir = strdup(dir))) return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", dir);
    b->kern = cpu_kernels_get();
    b->kv_f16 = 0; /* fp32 unless the caller asks */
    NC_TRY(steps->config(model, err));
    if (!steps->no_safetensors) NC_TRY(hf_weights_open_to_run(dir, &b->weights, err));
    /* the pool first: the weights step interleaves Q4 rows on it, in
     * weights made writable only where that can happen (mprotect walks
     * the whole copy twice) */
    NC_TRY(nc_pool_new(n_threads, &b->pool, err));
    int rewrite = cpu_q4_interleave_wanted(b->kern);
    if (rewrite) hf_weights_writable(b->weights, 1);
    nc_status st = steps->weights(model, err);
    if (rewrite) hf_weights_writable(b->weights, 0);
    NC_TRY(st);
    return steps->workspace(model, err);
}

nc_status dec_model_load_mat(const dec_model *b, const char *name, int rows, int cols, cpu_mat *out,
                             nc_error *err) {
    NC_TRY(hft_load_mat(b->weights, b->dir, name, rows, cols, out, err));
    if (out->type != CPU_W_Q4 || !cpu_q4_interleave_wanted(b->kern) || !cpu_q4x16_fits(rows, cols))
        return NC_OK;
    int earlier;
    void *data = hf_weights_rewritable(b->weights, name, &earlier);
    if (data && cpu_q4x16_interleave(b->pool, data, rows, cols, err) != NC_OK)
        return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory interleaving '%s'", b->dir, name);
    if (data || earlier) out->type = CPU_W_Q4X16;
    return NC_OK;
}

nc_status dec_rows_ws_new(dec_model *b, int rows, int widest, nc_error *err) {
    dec_rows_ws *r = &b->rows;
    size_t n = (size_t)rows;
    r->xq = nc_alloc_aligned(cpu_qact_q_bytes(rows, widest));
    r->xs = nc_alloc_aligned(cpu_qact_s_bytes(rows, widest));
    NC_TRY(cpu_prompt_scratch_reserve(&r->prompt, b->kern, nc_pool_threads(b->pool), rows, widest,
                                      b->dir, err));
    r->row_pos = calloc(n, sizeof *r->row_pos);
    r->row_n_keys = calloc(n, sizeof *r->row_n_keys);
    r->row_token = calloc(n, sizeof *r->row_token);
    r->row_k = calloc(n, sizeof *r->row_k);
    r->row_v = calloc(n, sizeof *r->row_v);
    r->row_kv_head_stride = calloc(n, sizeof *r->row_kv_head_stride);
    r->logit_dst = calloc(n, sizeof *r->logit_dst);
    if (!r->xq || !r->xs || !r->row_pos || !r->row_n_keys || !r->row_token || !r->row_k ||
        !r->row_v || !r->row_kv_head_stride || !r->logit_dst)
        return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory for the batch workspace", b->dir);
    b->dec = (dec_ctx){b->pool, b->kern, r->xq, r->xs, &r->prompt};
    return NC_OK;
}

void dec_model_free(dec_model *b) {
    dec_rows_ws *r = &b->rows;
    nc_pool_free(b->pool);
    nc_free_aligned(r->xq);
    nc_free_aligned(r->xs);
    cpu_prompt_scratch_free(&r->prompt);
    nc_free_aligned(b->kv_pack.buf);
    free(r->row_pos);
    free(r->row_n_keys);
    free(r->row_token);
    free(r->row_k);
    free(r->row_v);
    free(r->row_kv_head_stride);
    free(r->logit_dst);
    hf_weights_close(b->weights);
    free(b->dir);
}

const char *dec_model_residency(const dec_model *b) {
    return b->weights && b->weights->residency.why ? b->weights->residency.why : "mmapped";
}
