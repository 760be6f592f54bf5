/* What every CPU decoder model holds beside its layers (Qwen3 and Llama,
 * Qwen3.5), and the steps every load and free takes: the folder, its
 * safetensors, the thread pool and kernel table, the KV cache type, and
 * the per-row parts of the batch workspace (where each row belongs, the
 * int8 copies of its activations, prompt panels). A family's model embeds
 * a dec_model and gives its own config, weight and workspace steps. */
#ifndef NC_MODELS_DEC_MODEL_H
#define NC_MODELS_DEC_MODEL_H

#include <stdint.h>

#include "base/error.h"
#include "base/pool.h"
#include "cpu/cpu_attention.h"
#include "cpu/cpu_matmul.h"
#include "cpu/cpu_scratch.h"
#include "io/hf_weights.h"
#include "models/dec_rows.h"

/* Where each of up to `rows` rows of a batch belongs (its sequence's state
 * stays in the family's workspace, typed) and its activation scratch. */
typedef struct dec_rows_ws {
    int8_t *xq;                /* int8 activations for quantized matrices (cpu_act), */
    float *xs;                 /* sized for the batch's rows of the widest input */
    cpu_prompt_scratch prompt; /* fp32 weight panels / AMX tiles for prompts */
    int *row_pos;              /* position of each row in its sequence */
    int *row_n_keys;           /* row_pos + 1 */
    int32_t *row_token;
    const void **row_k, **row_v; /* the row's cache for the current layer */
    size_t *row_kv_head_stride;  /* its layout (dec_kv_head_stride) */
    float **logit_dst;           /* where a row's logits go (NULL: none) */
} dec_rows_ws;

typedef struct dec_model {
    char *dir;
    hf_weights *weights;
    nc_pool *pool;
    const cpu_kernels *kern;
    int kv_f16; /* KV caches of new states in fp16 */
    dec_rows_ws rows;
    dec_ctx dec;         /* pool, kernels and the rows' activation scratch for dec_rows */
    cpu_kv_pack kv_pack; /* where a prompt's attention copies each KV head once */
} dec_model;

/* A family's load steps, each given the family's model. */
typedef struct dec_load_steps {
    nc_status (*config)(void *model, nc_error *err);    /* before the weights open */
    nc_status (*weights)(void *model, nc_error *err);   /* after */
    nc_status (*workspace)(void *model, nc_error *err); /* after the pool */
    int no_safetensors; /* the weights step reads another source: dir has config.json only */
} dec_load_steps;

/* Fills b (inside `model`) for dir: kernels, then config, safetensors,
 * weights, a pool of n_threads (<= 0: all cores), workspace. On failure
 * the caller frees the model (dec_model_free frees b's part). */
nc_status dec_model_load(dec_model *b, void *model, const char *dir, int n_threads,
                         const dec_load_steps *steps, nc_error *err);
void dec_model_free(dec_model *b);

/* A [rows, cols] matrix of the weights step (hft_load_mat), its Q4 rows
 * interleaved in place (q4_interleave.h) where the table decodes that
 * layout and the weights were read into memory. */
nc_status dec_model_load_mat(const dec_model *b, const char *name, int rows, int cols,
                             cpu_mat *out, nc_error *err);

/* Where the weights live ("read into memory on huge pages (auto)", ...). */
const char *dec_model_residency(const dec_model *b);

/* The row parts of a workspace for `rows` rows whose widest matrix input
 * is `widest`; sets b->dec. */
nc_status dec_rows_ws_new(dec_model *b, int rows, int widest, nc_error *err);

#endif
