/* Batched encoder calls of the public API: embeddings of many texts (or
 * token-id rows) and classifier logits of text pairs, each batch one padded
 * forward pass through the engine seam, rows sorted by length so batches
 * carry little padding (as sentence-transformers' encode). The pooling,
 * normalization, truncation and prompts of a sentence-transformers folder
 * come from m->st (models/modernbert_st.h). */
#include <stdlib.h>
#include <string.h>

#include "api/api_model.h"

#define DEFAULT_BATCH 32

/* One input row: its ids (owned), and the leading tokens the pooling skips. */
typedef struct row {
    int32_t *ids;
    int n, skip;
} row;

static void free_rows(row *r, size_t n) {
    for (size_t i = 0; r && i < n; i++)
        free(r[i].ids);
    free(r);
}

static nc_status check_encoder(const nc_model *m, const char *what, nc_error *err) {
    if (!m) return nc_fail(err, NC_ERR_INVALID, "%s: NULL model", what);
    if (m->kind != NC_MODEL_ENCODER)
        return nc_fail(err, NC_ERR_INVALID, "%s: the model is not an encoder", what);
    return NC_OK;
}

/* How many special tokens the tokenizer's template puts before and after a
 * text: where the plain ids of a probe sit inside its special-token ids. */
static nc_status template_counts(const nc_model *m, int *before, int *after, nc_error *err) {
    const tok_tokenizer *t = m->tokenizer.tok;
    int32_t *plain = NULL, *full = NULL;
    size_t np = 0, nf = 0;
    nc_status st = tok_encode(t, "a", 1, &plain, &np, err);
    if (st == NC_OK) st = tok_encode_special(t, "a", 1, &full, &nf, err);
    *before = *after = 0;
    if (st == NC_OK) {
        size_t at = 0;
        while (at + np <= nf && memcmp(full + at, plain, np * sizeof *plain))
            at++;
        if (at + np > nf)
            st = nc_fail(err, NC_ERR_UNSUPPORTED,
                         "the tokenizer's post-processor changes the text's own tokens");
        *before = (int)at;
        *after = (int)(nf - np - at);
    }
    free(plain);
    free(full);
    return st;
}

/* Fits r to the folder's sequence limit by dropping text tokens before the
 * closing special tokens (as HF truncation), or refuses a row longer than
 * the model's positions. */
static nc_status fit_row(const nc_model *m, row *r, int after, size_t index, const char *what,
                         nc_error *err) {
    int limit = m->st.max_seq_length;
    int max_pos = m->enc->encoder->max_position_embeddings;
    if (limit > max_pos || limit <= 0) limit = 0;
    if (limit && r->n > limit && limit > after) {
        memmove(r->ids + limit - after, r->ids + r->n - after, (size_t)after * sizeof *r->ids);
        r->n = limit;
    }
    if (r->skip >= r->n) r->skip = r->n; /* all prompt: sentence-transformers pools nothing */
    if (r->n > max_pos)
        return nc_fail(err, NC_ERR_RANGE, "%s: input %zu has %d tokens, more than the model's %d",
                       what, index, r->n, max_pos);
    if (r->n == 0) return nc_fail(err, NC_ERR_INVALID, "%s: input %zu gives no tokens", what, index);
    return NC_OK;
}

static int by_length_desc(const void *a, const void *b, void *rows) {
    const row *r = rows;
    int na = r[*(const size_t *)a].n, nb = r[*(const size_t *)b].n;
    if (na != nb) return nb - na;
    return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

/* The order to run rows in: longest first, ties by index. */
static size_t *length_order(const row *rows, size_t n) {
    size_t *order = malloc((n ? n : 1) * sizeof *order);
    if (!order) return NULL;
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    /* insertion sort keeps it portable (no qsort_r); n is a request's inputs */
    for (size_t i = 1; i < n; i++) {
        size_t k = order[i], j = i;
        while (j > 0 && by_length_desc(&order[j - 1], &k, (void *)rows) > 0) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = k;
    }
    return order;
}

/* Runs rows in padded batches; each batch's outputs go to out rows of
 * width `width` (the pooled embedding, or the classifier's logits). */
static nc_status run_rows(nc_model *m, row *rows, size_t n, int batch_size, int normalize,
                          int classify, float *out, size_t *n_tokens, const char *what,
                          nc_error *err) {
    const modernbert_config *c = m->enc->encoder;
    int d = c->hidden_size, width = classify ? c->num_labels : d;
    if (batch_size <= 0) batch_size = DEFAULT_BATCH;
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        total += (size_t)rows[i].n;
        for (int t = 0; t < rows[i].n; t++)
            if (rows[i].ids[t] < 0 || rows[i].ids[t] >= c->vocab_size)
                return nc_fail(err, NC_ERR_INVALID,
                               "%s: input %zu: token id %d is outside the vocabulary (%d)", what,
                               i, (int)rows[i].ids[t], c->vocab_size);
    }
    size_t *order = length_order(rows, n);
    int seq_max = n ? rows[order ? order[0] : 0].n : 1;
    size_t cap = (size_t)batch_size * (size_t)seq_max;
    int32_t *ids = malloc(cap * sizeof *ids), *mask = malloc(cap * sizeof *mask);
    int *skip = malloc((size_t)batch_size * sizeof *skip);
    float *last = classify ? NULL : malloc(cap * (size_t)d * sizeof *last);
    float *res = malloc((size_t)batch_size * (size_t)width * sizeof *res);
    nc_status st = NC_OK;
    if (!order || !ids || !mask || !skip || (!classify && !last) || !res)
        st = nc_fail(err, NC_ERR_NOMEM, "%s: out of memory for %zu inputs", what, n);
    int32_t pad = c->pad_token_id >= 0 ? c->pad_token_id : 0;
    for (size_t i0 = 0; st == NC_OK && i0 < n; i0 += (size_t)batch_size) {
        int b = (int)(n - i0 < (size_t)batch_size ? n - i0 : (size_t)batch_size);
        int seq = rows[order[i0]].n; /* the longest of this batch */
        for (int k = 0; k < b; k++) {
            const row *r = &rows[order[i0 + (size_t)k]];
            for (int t = 0; t < seq; t++) {
                ids[(size_t)k * seq + t] = t < r->n ? r->ids[t] : pad;
                mask[(size_t)k * seq + t] = t < r->n;
            }
            skip[k] = r->skip;
        }
        modernbert_io io = {.ids = ids, .mask = mask, .batch = b, .seq = seq, .pooling = -1};
        if (classify)
            io.cls_logits = res;
        else
            io.last = last;
        st = engine_encode(m->enc, &io, err);
        if (st != NC_OK) break;
        if (!classify)
            modernbert_st_pool(m->st.pooling, normalize || m->st.normalize, last, mask, skip, b,
                               seq, d, res);
        for (int k = 0; k < b; k++)
            memcpy(out + order[i0 + (size_t)k] * (size_t)width, res + (size_t)k * width,
                   (size_t)width * sizeof *out);
    }
    if (st == NC_OK && n_tokens) *n_tokens = total;
    free(order);
    free(ids);
    free(mask);
    free(skip);
    free(last);
    free(res);
    return st;
}

static nc_status check_out(const nc_model *m, size_t n, size_t n_out, const float *out,
                           const char *what, nc_error *err) {
    size_t d = (size_t)m->enc->encoder->hidden_size;
    if (!out || n_out != n * d)
        return nc_fail(err, NC_ERR_INVALID, "%s: the output holds %zu floats, not %zu x %zu",
                       what, n_out, n, d);
    return NC_OK;
}

NC_API nc_status nc_embed_batch(nc_model *m, const char *const *texts, size_t n,
                                const nc_embed_options *opt, float *out, size_t n_out,
                                size_t *n_tokens, nc_error *err) {
    const char *what = "nc_embed_batch";
    NC_TRY(check_encoder(m, what, err));
    NC_TRY(check_out(m, n, n_out, out, what, err));
    if (n && !texts) return nc_fail(err, NC_ERR_INVALID, "%s: NULL texts", what);
    nc_embed_options none = {0};
    if (!opt) opt = &none;
    const char *prompt = opt->prompt;
    if (!prompt && opt->prompt_name) {
        prompt = modernbert_st_prompt(&m->st, opt->prompt_name);
        if (!prompt)
            return nc_fail(err, NC_ERR_NOT_FOUND,
                           "%s: the model has no prompt '%s' (config_sentence_transformers.json)",
                           what, opt->prompt_name);
    }
    if (!prompt && m->st.default_prompt_name)
        prompt = modernbert_st_prompt(&m->st, m->st.default_prompt_name);
    if (prompt && !*prompt) prompt = NULL;
    int before, after;
    NC_TRY(template_counts(m, &before, &after, err));
    const tok_tokenizer *t = m->tokenizer.tok;
    /* The prompt's own length, without a trailing special token, is what a
     * pooling without the prompt skips (sentence-transformers' prompt_length). */
    int skip = 0;
    nc_status st = NC_OK;
    if (prompt && !m->st.include_prompt) {
        int32_t *p = NULL;
        size_t np = 0;
        st = tok_encode_special(t, prompt, strlen(prompt), &p, &np, err);
        skip = (int)np - (np && tok_is_special(t, p[np - 1]));
        free(p);
    }
    row *rows = calloc(n ? n : 1, sizeof *rows);
    if (!rows) return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", what);
    size_t plen = prompt ? strlen(prompt) : 0;
    for (size_t i = 0; st == NC_OK && i < n; i++) {
        if (!texts[i]) {
            st = nc_fail(err, NC_ERR_INVALID, "%s: text %zu is NULL", what, i);
            break;
        }
        size_t len = strlen(texts[i]);
        char *full = malloc(plen + len + 1);
        if (!full) {
            st = nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", what);
            break;
        }
        if (plen) memcpy(full, prompt, plen);
        memcpy(full + plen, texts[i], len + 1);
        size_t nid = 0;
        st = tok_encode_special(t, full, plen + len, &rows[i].ids, &nid, err);
        free(full);
        rows[i].n = (int)nid;
        rows[i].skip = skip;
        if (st == NC_OK) st = fit_row(m, &rows[i], after, i, what, err);
    }
    if (st == NC_OK)
        st = run_rows(m, rows, n, opt->batch_size, opt->normalize, 0, out, n_tokens, what, err);
    free_rows(rows, n);
    return st;
}

/* The row of ids with the template's special tokens around them, taken from
 * the special-token encoding of the empty text. */
static nc_status wrap_ids(const nc_model *m, const int32_t *ids, size_t n, int before, row *r,
                          nc_error *err) {
    int32_t *empty = NULL;
    size_t ne = 0;
    NC_TRY(tok_encode_special(m->tokenizer.tok, "", 0, &empty, &ne, err));
    r->ids = malloc((ne + n + 1) * sizeof *r->ids);
    if (!r->ids) {
        free(empty);
        return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    }
    memcpy(r->ids, empty, (size_t)before * sizeof *empty);
    if (n) memcpy(r->ids + before, ids, n * sizeof *ids);
    memcpy(r->ids + before + n, empty + before, (ne - (size_t)before) * sizeof *empty);
    r->n = (int)(ne + n);
    free(empty);
    return NC_OK;
}

NC_API nc_status nc_embed_tokens(nc_model *m, const int32_t *const *ids, const size_t *n_ids,
                                 size_t n, const nc_embed_options *opt, float *out, size_t n_out,
                                 size_t *n_tokens, nc_error *err) {
    const char *what = "nc_embed_tokens";
    NC_TRY(check_encoder(m, what, err));
    NC_TRY(check_out(m, n, n_out, out, what, err));
    if (n && (!ids || !n_ids)) return nc_fail(err, NC_ERR_INVALID, "%s: NULL ids", what);
    int before, after;
    NC_TRY(template_counts(m, &before, &after, err));
    row *rows = calloc(n ? n : 1, sizeof *rows);
    if (!rows) return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", what);
    nc_status st = NC_OK;
    for (size_t i = 0; st == NC_OK && i < n; i++) {
        if (!ids[i] && n_ids[i])
            st = nc_fail(err, NC_ERR_INVALID, "%s: row %zu is NULL", what, i);
        if (st == NC_OK && n_ids[i] > (1u << 24))
            st = nc_fail(err, NC_ERR_RANGE, "%s: row %zu has %zu ids", what, i, n_ids[i]);
        if (st == NC_OK) st = wrap_ids(m, ids[i], n_ids[i], before, &rows[i], err);
        if (st == NC_OK) st = fit_row(m, &rows[i], after, i, what, err);
    }
    nc_embed_options none = {0};
    if (!opt) opt = &none;
    if (st == NC_OK)
        st = run_rows(m, rows, n, opt->batch_size, opt->normalize, 0, out, n_tokens, what, err);
    free_rows(rows, n);
    return st;
}

NC_API nc_status nc_classify_pairs(nc_model *m, const char *const *first,
                                   const char *const *second, size_t n, float *logits,
                                   size_t n_logits, size_t *n_tokens, nc_error *err) {
    const char *what = "nc_classify_pairs";
    NC_TRY(check_encoder(m, what, err));
    int L = m->enc->encoder->num_labels;
    if (m->enc->encoder->head != MODERNBERT_HEAD_CLASSIFIER || L <= 0)
        return nc_fail(err, NC_ERR_INVALID, "%s: the model has no classifier head", what);
    if (!logits || n_logits != n * (size_t)L)
        return nc_fail(err, NC_ERR_INVALID, "%s: the output holds %zu floats, not %zu x %d", what,
                       n_logits, n, L);
    if (n && (!first || !second)) return nc_fail(err, NC_ERR_INVALID, "%s: NULL texts", what);
    int before, after;
    NC_TRY(template_counts(m, &before, &after, err));
    row *rows = calloc(n ? n : 1, sizeof *rows);
    if (!rows) return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", what);
    nc_status st = NC_OK;
    const tok_tokenizer *t = m->tokenizer.tok;
    /* "[CLS] A [SEP]" + "B" + "[SEP]": the pair template of BERT-style
     * tokenizers, built from the single-text one. */
    for (size_t i = 0; st == NC_OK && i < n; i++) {
        if (!first[i] || !second[i]) {
            st = nc_fail(err, NC_ERR_INVALID, "%s: pair %zu has a NULL text", what, i);
            break;
        }
        int32_t *a = NULL, *bb = NULL;
        size_t na = 0, nb = 0;
        st = tok_encode_special(t, first[i], strlen(first[i]), &a, &na, err);
        if (st == NC_OK) st = tok_encode(t, second[i], strlen(second[i]), &bb, &nb, err);
        if (st == NC_OK && !(rows[i].ids = malloc((na + nb + (size_t)after + 1) * sizeof *a)))
            st = nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", what);
        if (st == NC_OK) {
            memcpy(rows[i].ids, a, na * sizeof *a);
            if (nb) memcpy(rows[i].ids + na, bb, nb * sizeof *bb);
            memcpy(rows[i].ids + na + nb, a + na - (size_t)after, (size_t)after * sizeof *a);
            rows[i].n = (int)(na + nb + (size_t)after);
            st = fit_row(m, &rows[i], after, i, what, err);
        }
        free(a);
        free(bb);
    }
    if (st == NC_OK) st = run_rows(m, rows, n, 0, 0, 1, logits, n_tokens, what, err);
    free_rows(rows, n);
    return st;
}
