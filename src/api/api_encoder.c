/* Encoder calls of the public API (embeddings, fill-mask, classification):
 * one text at a time, with the tokenizer's special tokens, through the CPU
 * engine or a bundle's, through the engine seam. */
#include <stdlib.h>
#include <string.h>

#include "api/api_model.h"
#include "models/modernbert_rank.h"

static nc_status forward(nc_model *m, const modernbert_io *io, nc_error *err) {
    return engine_encode(m->enc, io, err);
}

/* The ids of text with special tokens, checked against the model. */
static nc_status encode(nc_model *m, const char *text, const char *what, int32_t **ids, int *n,
                        nc_error *err) {
    if (!m || !text) return nc_fail(err, NC_ERR_INVALID, "%s: NULL argument", what);
    if (m->kind != NC_MODEL_ENCODER)
        return nc_fail(err, NC_ERR_INVALID, "%s: the model is not an encoder", what);
    size_t len;
    NC_TRY(tok_encode_special(m->tokenizer.tok, text, strlen(text), ids, &len, err));
    const modernbert_config *c = m->enc->encoder;
    nc_status st = NC_OK;
    if (len == 0)
        st = nc_fail(err, NC_ERR_INVALID, "%s: the text gives no tokens", what);
    else if (len > (size_t)c->max_position_embeddings)
        st = nc_fail(err, NC_ERR_RANGE, "%s: the text has %zu tokens, more than the model's %d",
                     what, len, c->max_position_embeddings);
    if (st != NC_OK) {
        free(*ids);
        *ids = NULL;
        return st;
    }
    *n = (int)len;
    return NC_OK;
}

NC_API nc_status nc_embed(nc_model *m, const char *text, float *out, size_t n_out, nc_error *err) {
    if (!text) return nc_fail(err, NC_ERR_INVALID, "nc_embed: NULL argument");
    return nc_embed_batch(m, &text, 1, NULL, out, n_out, NULL, err);
}

NC_API nc_status nc_fill_mask(nc_model *m, const char *text, int k, int32_t *ids, float *probs,
                              int max_masks, int *n_masks, nc_error *err) {
    int32_t *tok;
    int n;
    NC_TRY(encode(m, text, "nc_fill_mask", &tok, &n, err));
    const modernbert_config *c = m->enc->encoder;
    int V = c->vocab_size;
    int32_t mask_id = tok_find(m->tokenizer.tok, "[MASK]");
    if (mask_id < 0) mask_id = tok_find(m->tokenizer.tok, "<mask>");
    int *rows = malloc((size_t)n * sizeof *rows), n_rows = 0;
    nc_status st = NC_OK;
    if (!rows)
        st = nc_fail(err, NC_ERR_NOMEM, "nc_fill_mask: out of memory");
    else if (c->head != MODERNBERT_HEAD_MLM)
        st = nc_fail(err, NC_ERR_INVALID, "nc_fill_mask: the model has no masked-LM head");
    else if (mask_id < 0)
        st = nc_fail(err, NC_ERR_NOT_FOUND, "nc_fill_mask: the tokenizer has no [MASK] or <mask>");
    else if (k < 1 || k > V || max_masks < 0 || (max_masks && (!ids || !probs)) || !n_masks)
        st = nc_fail(err, NC_ERR_INVALID, "nc_fill_mask: k %d not in [1, %d], or NULL outputs", k,
                     V);
    for (int t = 0; st == NC_OK && t < n; t++)
        if (tok[t] == mask_id) rows[n_rows++] = t;
    if (st == NC_OK && n_rows == 0)
        st = nc_fail(err, NC_ERR_INVALID, "nc_fill_mask: the text has no mask token");
    int n_out = n_rows < max_masks ? n_rows : max_masks;
    float *logits = st == NC_OK ? malloc((size_t)n_rows * (size_t)V * sizeof *logits) : NULL;
    float *p = st == NC_OK ? malloc((size_t)V * sizeof *p) : NULL;
    if (st == NC_OK && (!logits || !p))
        st = nc_fail(err, NC_ERR_NOMEM, "nc_fill_mask: out of memory");
    modernbert_io io = {.ids = tok,
                        .batch = 1,
                        .seq = n,
                        .mlm_logits = logits,
                        .mlm_rows = rows,
                        .n_mlm_rows = n_rows,
                        .pooling = -1};
    if (st == NC_OK) st = forward(m, &io, err);
    for (int i = 0; st == NC_OK && i < n_out; i++) {
        modernbert_softmax(logits + (size_t)i * V, V, p);
        modernbert_top_k(p, V, k, ids + (size_t)i * k, probs + (size_t)i * k);
    }
    if (st == NC_OK) *n_masks = n_rows;
    free(p);
    free(logits);
    free(rows);
    free(tok);
    return st;
}

NC_API nc_status nc_classify(nc_model *m, const char *text, float *probs, size_t n_probs,
                             nc_error *err) {
    int32_t *ids;
    int n;
    NC_TRY(encode(m, text, "nc_classify", &ids, &n, err));
    int L = nc_model_num_labels(m);
    float *logits = L ? malloc((size_t)L * sizeof *logits) : NULL;
    nc_status st = NC_OK;
    if (!L)
        st = nc_fail(err, NC_ERR_INVALID, "nc_classify: the model has no classifier head");
    else if (!logits)
        st = nc_fail(err, NC_ERR_NOMEM, "nc_classify: out of memory");
    else if (!probs || n_probs != (size_t)L)
        st = nc_fail(err, NC_ERR_INVALID, "nc_classify: the output holds %zu floats, not %d",
                     n_probs, L);
    modernbert_io io = {.ids = ids, .batch = 1, .seq = n, .cls_logits = logits, .pooling = -1};
    if (st == NC_OK) st = forward(m, &io, err);
    if (st == NC_OK) modernbert_softmax(logits, L, probs);
    free(logits);
    free(ids);
    return st;
}
