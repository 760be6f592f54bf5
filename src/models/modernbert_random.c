/* Random ModernBERT-family checkpoints (see modernbert_random.h). Shapes and
 * special ids are those of the hub configs (docs/references.md
 * §E.1). Values: the counter-based uniform
 * scheme of io/safetensors_random.h. */
#include "models/modernbert_random.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mmap.h"
#include "base/pool.h"
#include "io/hf_weights.h"
#include "io/safetensors_random.h"

typedef struct mb_shape {
    const char *name;
    int hidden, inter, layers, heads, vocab;
    double theta_global, theta_local;
    int pad, cls, sep, bos, eos;
} mb_shape;

static const mb_shape shapes[] = {
    {"modernbert-base", 768, 1152, 22, 12, 50368, 160000.0, 10000.0, 50283, 50281, 50282, 50281,
     50282},
    {"modernbert-large", 1024, 2624, 28, 16, 50368, 160000.0, 10000.0, 50283, 50281, 50282, 50281,
     50282},
    {"mmbert-base", 768, 1152, 22, 12, 256000, 160000.0, 160000.0, 0, 1, 1, 2, 1},
};

static const mb_shape *find_shape(const char *like) {
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        if (!strcmp(like, shapes[i].name)) return &shapes[i];
    return NULL;
}

int modernbert_random_knows(const char *like) {
    return find_shape(like) != NULL;
}

const char *modernbert_random_names(void) {
    return "modernbert-base, modernbert-large, mmbert-base";
}

static void make_plan(st_random_plan *p, const mb_shape *s, st_dtype dt) {
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
        T("mlp.Wi.weight", 2 * (int64_t)s->inter, d, 0);
        T("mlp.Wo.weight", d, s->inter, 0);
#undef T
    }
    st_random_add(p, "model.final_norm.weight", dt, d, 0, 1);
    st_random_add(p, "head.dense.weight", dt, d, d, 0);
    st_random_add(p, "head.norm.weight", dt, d, 0, 1);
    st_random_add(p, "decoder.bias", dt, s->vocab, 0, 0);
}

static json_t *config_json(const mb_shape *s, st_dtype dt) {
    json_t *c = json_object();
    json_object_set_new(c, "architectures", json_pack("[s]", "ModernBertForMaskedLM"));
    json_object_set_new(c, "model_type", json_string("modernbert"));
    json_object_set_new(c, "vocab_size", json_integer(s->vocab));
    json_object_set_new(c, "hidden_size", json_integer(s->hidden));
    json_object_set_new(c, "intermediate_size", json_integer(s->inter));
    json_object_set_new(c, "num_hidden_layers", json_integer(s->layers));
    json_object_set_new(c, "num_attention_heads", json_integer(s->heads));
    json_object_set_new(c, "max_position_embeddings", json_integer(8192));
    json_object_set_new(c, "global_attn_every_n_layers", json_integer(3));
    json_object_set_new(c, "local_attention", json_integer(128));
    json_object_set_new(c, "global_rope_theta", json_real(s->theta_global));
    json_object_set_new(c, "local_rope_theta", json_real(s->theta_local));
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
    json_object_set_new(c, "torch_dtype",
                        json_string(dt == ST_BF16  ? "bfloat16"
                                    : dt == ST_F16 ? "float16"
                                                   : "float32"));
    return c;
}

nc_status modernbert_random_write(const char *like, const char *out, st_dtype dtype, uint64_t seed,
                                  int n_threads, size_t *bytes_out, nc_error *err) {
    const mb_shape *s = find_shape(like);
    if (!s) return nc_fail(err, NC_ERR_INVALID, "unknown encoder shape '%s'", like);
    static st_random_plan p; /* ~150 KiB of names: one per process */
    memset(&p, 0, sizeof p);
    p.kind = ST_RANDOM_UNIFORM;
    p.seed = st_random_mix(seed + 0x51ed270b27a1f3c5ull);
    make_plan(&p, s, dtype);
    char path[4096];
    json_t *cfg = config_json(s, dtype);
    char *text = json_dumps(cfg, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
    json_decref(cfg);
    if (!text) return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", out);
    hf_path_join(path, sizeof path, out, "config.json");
    nc_status st = nc_write_file_atomic(path, text, strlen(text), err);
    free(text);
    NC_TRY(st);
    NC_TRY(nc_pool_new(n_threads, &p.pool, err));
    hf_path_join(path, sizeof path, out, "model.safetensors");
    st = st_write_file(path, p.t, p.n, st_random_fill, &p, err);
    nc_pool_free(p.pool);
    if (bytes_out) *bytes_out = st_random_bytes(&p);
    return st;
}
