/* Texts to a padded batch of decision-model inputs: each text tokenized
 * with the tokenizer's special tokens (tok_encode_special) and right padded
 * with the encoder's pad id, to the longest row or to a fixed length (the
 * study's fixed shapes: B=1 L=96, B=3 L=64). */
#ifndef NC_DECIDE_DECISION_BATCH_H
#define NC_DECIDE_DECISION_BATCH_H

#include "decide/decision.h"
#include "text/tokenizer.h"

typedef struct decision_batch {
    int32_t *ids, *mask; /* [batch][seq] */
    int batch, seq;
} decision_batch;

/* fixed_seq > 0: every row padded to it (a longer text fails naming its
 * row); 0: to the longest row. Rows without tokens fail. Free with
 * decision_batch_free (also after a failure). */
nc_status decision_batch_texts(const tok_tokenizer *tok, const modernbert_config *enc,
                               const char *const *texts, int n, int fixed_seq, decision_batch *out,
                               nc_error *err);
/* The same from token rows as given (rows[i][0 .. lens[i]), special tokens
 * included). */
nc_status decision_batch_rows(const modernbert_config *enc, const int32_t *const *rows,
                              const size_t *lens, int n, int fixed_seq, decision_batch *out,
                              nc_error *err);
void decision_batch_free(decision_batch *b);

#endif
