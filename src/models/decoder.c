/* What every decoder behind models/decoder.h shares. */
#include "models/decoder.h"

#include "base/pool.h"
#include "models/dec_model.h"
#include "models/family.h"

decoder_dims qwen3_dims(const qwen3_config *c) {
    return (decoder_dims){.layers = c->num_hidden_layers,
                          .hidden = c->hidden_size,
                          .intermediate = c->intermediate_size,
                          .heads = c->num_attention_heads,
                          .kv_heads = c->num_key_value_heads,
                          .head_dim = c->head_dim,
                          .vocab = c->vocab_size,
                          .tied = c->tie_word_embeddings,
                          .no_qk_norm = !c->qk_norm,
                          .sandwich_norms = c->sandwich_norm};
}

decoder_dims qwen35_dims(const qwen35_config *c) {
    qwen3_config q; /* the sizes both share */
    qwen35_config_shape(c, &q);
    decoder_dims d = qwen3_dims(&q);
    d.no_qk_norm = 0; /* its full-attention layers have q/k norms */
    d.rotary_dim = c->rotary_dim;
    d.n_linear = c->num_hidden_layers - c->n_full;
    d.lin_k_heads = c->linear_num_key_heads;
    d.lin_v_heads = c->linear_num_value_heads;
    d.lin_k_dim = c->linear_key_head_dim;
    d.lin_v_dim = c->linear_value_head_dim;
    d.lin_conv_kernel = c->linear_conv_kernel_dim;
    return d;
}

nc_status qwen3_dims_load(const char *dir, decoder_dims *d, nc_error *err) {
    qwen3_config c;
    NC_TRY(model_family_qwen3_config_load(dir, &c, err));
    *d = qwen3_dims(&c);
    return NC_OK;
}

nc_status qwen35_dims_load(const char *dir, decoder_dims *d, nc_error *err) {
    qwen35_config c;
    NC_TRY(qwen35_config_load(dir, &c, err));
    *d = qwen35_dims(&c);
    return NC_OK;
}

size_t decoder_kv_bytes_per_token(const decoder_dims *d, int kv_f16) {
    return 2 * (kv_f16 ? 2 : sizeof(float)) * (size_t)(d->layers - d->n_linear) *
           (size_t)d->kv_heads * (size_t)d->head_dim;
}

void decoder_shape_fill(decoder_shape *s, const dec_model *b, decoder_dims dims, int ctx_max,
                        const int32_t *eos_ids, int n_eos, const char *dtype,
                        size_t weight_bytes_per_token) {
    s->dims = dims;
    s->ctx_max = ctx_max;
    s->kv_f16 = b->kv_f16;
    s->kv_bytes_per_token = decoder_kv_bytes_per_token(&s->dims, s->kv_f16);
    s->dtype = dtype;
    s->weight_bytes_per_token = weight_bytes_per_token;
    s->weights_residency = dec_model_residency(b);
    s->n_threads = nc_pool_threads(b->pool);
    s->eos_ids = eos_ids;
    s->n_eos = n_eos;
}

void decoder_close(decoder *d) {
    if (d->model) d->ops->free(d->model);
    d->model = NULL;
}
