/* Padded batches of tokenized texts (see decision_batch.h). */
#include <stdlib.h>
#include <string.h>

#include "decide/decision_batch.h"

nc_status decision_batch_rows(const modernbert_config *enc, const int32_t *const *rows,
                              const size_t *lens, int n, int fixed_seq, decision_batch *out,
                              nc_error *err) {
    memset(out, 0, sizeof *out);
    if (n < 1) return nc_fail(err, NC_ERR_INVALID, "decision: an empty batch");
    size_t seq = fixed_seq > 0 ? (size_t)fixed_seq : 1;
    for (int i = 0; i < n; i++) {
        if (lens[i] == 0) return nc_fail(err, NC_ERR_INVALID, "input %d gives no tokens", i + 1);
        if (lens[i] > (size_t)enc->max_position_embeddings ||
            (fixed_seq > 0 && lens[i] > (size_t)fixed_seq))
            return nc_fail(err, NC_ERR_RANGE, "input %d has %zu tokens, more than %d", i + 1,
                           lens[i], fixed_seq > 0 ? fixed_seq : enc->max_position_embeddings);
        if (lens[i] > seq) seq = lens[i];
    }
    out->ids = malloc((size_t)n * seq * sizeof *out->ids);
    out->mask = calloc((size_t)n * seq, sizeof *out->mask);
    if (!out->ids || !out->mask) return nc_fail(err, NC_ERR_NOMEM, "decision: out of memory");
    int32_t pad = enc->pad_token_id >= 0 ? enc->pad_token_id : 0;
    for (int i = 0; i < n; i++)
        for (size_t t = 0; t < seq; t++) {
            out->ids[(size_t)i * seq + t] = t < lens[i] ? rows[i][t] : pad;
            out->mask[(size_t)i * seq + t] = t < lens[i];
        }
    out->batch = n;
    out->seq = (int)seq;
    return NC_OK;
}

nc_status decision_batch_texts(const tok_tokenizer *tok, const modernbert_config *enc,
                               const char *const *texts, int n, int fixed_seq, decision_batch *out,
                               nc_error *err) {
    memset(out, 0, sizeof *out);
    int32_t **rows = calloc((size_t)n, sizeof *rows);
    size_t *lens = calloc((size_t)n, sizeof *lens);
    nc_status st = rows && lens ? NC_OK : nc_fail(err, NC_ERR_NOMEM, "decision: out of memory");
    for (int i = 0; i < n && st == NC_OK; i++)
        if ((st = tok_encode_special(tok, texts[i], strlen(texts[i]), &rows[i], &lens[i], err)))
            nc_fail_prefix(err, "input %d", i + 1);
    if (st == NC_OK)
        st = decision_batch_rows(enc, (const int32_t *const *)rows, lens, n, fixed_seq, out, err);
    for (int i = 0; rows && i < n; i++)
        free(rows[i]);
    free(rows);
    free(lens);
    return st;
}

void decision_batch_free(decision_batch *b) {
    free(b->ids);
    free(b->mask);
    b->ids = b->mask = NULL;
}
