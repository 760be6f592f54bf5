/* Sentence-transformers folders as they are downloaded: modules.json (a
 * Transformer at the root, then Pooling and optionally Normalize),
 * 1_Pooling/config.json (the pooling mode, in the current `pooling_mode`
 * form or the older `pooling_mode_*_tokens` flags), the sequence limit
 * (sentence_bert_config.json's max_seq_length, or tokenizer_config.json's
 * model_max_length as sentence-transformers 6 saves it) and the prompts of
 * config_sentence_transformers.json. And the pooling itself, on final
 * hidden states, as sentence_transformers' Pooling computes it. A folder
 * without modules.json gets the config's classifier_pooling and nothing
 * else. */
#ifndef NC_MODELS_MODERNBERT_ST_H
#define NC_MODELS_MODERNBERT_ST_H

#include <stdint.h>

#include "base/error.h"

typedef enum {
    MODERNBERT_ST_CLS,
    MODERNBERT_ST_MEAN,
    MODERNBERT_ST_MAX,
    MODERNBERT_ST_LASTTOKEN,
    MODERNBERT_ST_MEAN_SQRT_LEN,
    MODERNBERT_ST_WEIGHTEDMEAN
} modernbert_st_pooling;

#define MODERNBERT_ST_MAX_PROMPTS 32

typedef struct modernbert_st {
    int is_st;          /* modules.json was there */
    int pooling;        /* modernbert_st_pooling */
    int include_prompt; /* 0: prompt tokens are left out of the pooling */
    int normalize;      /* a Normalize module follows the pooling */
    int max_seq_length; /* longer inputs are truncated (0: no limit, over-long is an error) */
    int n_prompts;
    char *prompt_names[MODERNBERT_ST_MAX_PROMPTS], *prompts[MODERNBERT_ST_MAX_PROMPTS];
    char *default_prompt_name; /* NULL: none */
} modernbert_st;

/* Reads dir's sentence-transformers files; default_pooling (CLS or MEAN)
 * applies when there are none. Errors name the file and field. Unsupported
 * modules (Dense, several pooling modes at once) are NC_ERR_UNSUPPORTED. */
nc_status modernbert_st_load(const char *dir, int default_pooling, modernbert_st *st,
                             nc_error *err);
void modernbert_st_free(modernbert_st *st);

/* The text of prompt `name` ("query"), NULL when the folder has none. */
const char *modernbert_st_prompt(const modernbert_st *st, const char *name);

/* Name of a pooling mode ("cls", "mean", ...). */
const char *modernbert_st_pooling_name(int pooling);

/* Pools last [batch][seq][d] over the real tokens (mask [batch][seq], 1 =
 * real, right padded), skipping each row's first skip[b] tokens when
 * skip is not NULL (a prompt left out of the pooling), into out [batch][d];
 * then scales each row to unit L2 norm when normalize. */
void modernbert_st_pool(int pooling, int normalize, const float *last, const int32_t *mask,
                        const int *skip, int batch, int seq, int d, float *out);

#endif
