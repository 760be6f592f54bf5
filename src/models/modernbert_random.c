/* Random ModernBERT-family checkpoints (model_random.h) at a preset's shape
 * and special ids (models/presets.c). Values: the counter-based uniform
 * scheme of io/safetensors_random.h. */
#include "models/model_random.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/pool.h"
#include "io/hf_weights.h"
#include "io/safetensors_random.h"

static void make_plan(st_random_plan *p, const model_preset *s, st_dtype dt) {
    int64_t d = s->hidden;
    char n[80];
    st_random_add(p, "model.embeddings.tok_embeddings.weight", dt, s->vocab, d, 0);
    st_random_add(p, "model.embeddings.norm.weight", dt, d, 0, 1);
    for (int l = 0; l < s->layers; l++) {
#define T(suffix, a, b, one)                                                                       \
    (snprintf(n, sizeof n, "model.layers.%d.%s", l, suffix), st_random_add(p, n, dt, a, b, one))
        if (l > 0) T("attn_norm.weight", d, 0, 1);
        T("attn.Wqkv.weight", 3 * d, d, 0);
        T("attn.Wo.weight", d, d, 0);
        T("mlp_norm.weight", d, 0, 1);
        T("mlp.Wi.weight", 2 * (int64_t)s->intermediate, d, 0);
        T("mlp.Wo.weight", d, s->intermediate, 0);
#undef T
    }
    st_random_add(p, "model.final_norm.weight", dt, d, 0, 1);
    st_random_add(p, "head.dense.weight", dt, d, d, 0);
    st_random_add(p, "head.norm.weight", dt, d, 0, 1);
    st_random_add(p, "decoder.bias", dt, s->vocab, 0, 0);
}

static json_t *config_json(const model_preset *s, st_dtype dt) {
    json_t *c = json_object();
    json_object_set_new(c, "architectures", json_pack("[s]", "ModernBertForMaskedLM"));
    json_object_set_new(c, "model_type", json_string("modernbert"));
    json_object_set_new(c, "vocab_size", json_integer(s->vocab));
    json_object_set_new(c, "hidden_size", json_integer(s->hidden));
    json_object_set_new(c, "intermediate_size", json_integer(s->intermediate));
    json_object_set_new(c, "num_hidden_layers", json_integer(s->layers));
    json_object_set_new(c, "num_attention_heads", json_integer(s->heads));
    json_object_set_new(c, "max_position_embeddings", json_integer(s->max_pos));
    json_object_set_new(c, "global_attn_every_n_layers", json_integer(3));
    json_object_set_new(c, "local_attention", json_integer(128));
    json_object_set_new(c, "global_rope_theta", json_real(s->rope_theta));
    json_object_set_new(c, "local_rope_theta", json_real(s->rope_theta_local));
    json_object_set_new(c, "norm_eps", json_real(1e-5));
    json_object_set_new(c, "norm_bias", json_false());
    json_object_set_new(c, "attention_bias", json_false());
    json_object_set_new(c, "mlp_bias", json_false());
    json_object_set_new(c, "decoder_bias", json_true());
    json_object_set_new(c, "classifier_bias", json_false());
    json_object_set_new(c, "classifier_pooling", json_string("mean"));
    json_object_set_new(c, "hidden_activation", json_string("gelu"));
    json_object_set_new(c, "classifier_activation", json_string("gelu"));
    json_object_set_new(c, "tie_word_embeddings", json_true());
    json_object_set_new(c, "pad_token_id", json_integer(s->pad));
    json_object_set_new(c, "cls_token_id", json_integer(s->cls));
    json_object_set_new(c, "sep_token_id", json_integer(s->sep));
    json_object_set_new(c, "bos_token_id", json_integer(s->bos));
    json_object_set_new(c, "eos_token_id", json_integer(s->eos));
    json_object_set_new(c, "torch_dtype", json_string(model_random_torch_dtype(dt)));
    return c;
}

nc_status modernbert_random_write(const model_preset *s, const char *out,
                                  const model_random_options *o, model_random_report *r,
                                  nc_error *err) {
    static st_random_plan p; /* ~150 KiB of names: one per process */
    memset(&p, 0, sizeof p);
    p.kind = ST_RANDOM_UNIFORM;
    p.seed = st_random_mix(o->seed + 0x51ed270b27a1f3c5ull);
    make_plan(&p, s, o->dtype);
    memset(r, 0, sizeof *r);
    r->n_tensors = p.n;
    r->n_files = 1;
    r->bytes = st_random_bytes(&p);
    if (o->dry_run) return NC_OK;
    char path[4096];
    hf_path_join(path, sizeof path, out, "config.json");
    NC_TRY(nc_json_save(config_json(s, o->dtype), path, 2, err));
    NC_TRY(nc_pool_new(o->n_threads, &p.pool, err));
    hf_path_join(path, sizeof path, out, "model.safetensors");
    nc_status st = st_write_file(path, p.t, p.n, st_random_fill, &p, err);
    nc_pool_free(p.pool);
    return st;
}
