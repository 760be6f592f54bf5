/* Random Qwen3 folders (model_random.h): matrices N(0, 0.02) (Irwin-Hall
 * approximation), norms 1 + N(0, 0.02); config.json through the one Qwen3
 * config writer (qwen3_config.h) plus the fields transformers expects;
 * weights in one file up to 4 GB, else in shards with an index, as HF does. */
#include <stdio.h>
#include <string.h>

#include "base/json.h"
#include "base/pool.h"
#include "io/hf_weights.h"
#include "io/safetensors_random.h"
#include "models/model_random.h"
#include "models/qwen3_config.h"

#define SHARD_MAX_BYTES ((size_t)4 << 30) /* like HF's shards */

static void add_tensor(st_random_plan *p, const char *name, st_dtype dt, int64_t d0, int64_t d1) {
    st_random_add(p, name, dt, d0, d1, d1 == 0);
}

static void plan_tensors(st_random_plan *p, const model_preset *s, st_dtype dt) {
    int64_t d = s->hidden, qd = (int64_t)s->heads * s->head_dim,
            kvd = (int64_t)s->kv_heads * s->head_dim;
    add_tensor(p, "model.embed_tokens.weight", dt, s->vocab, d);
    char n[96];
    for (int l = 0; l < s->layers; l++) {
#define T(suffix, a, b)                                                                            \
    (snprintf(n, sizeof n, "model.layers.%d.%s", l, suffix), add_tensor(p, n, dt, a, b))
        T("input_layernorm.weight", d, 0);
        T("self_attn.q_proj.weight", qd, d);
        T("self_attn.k_proj.weight", kvd, d);
        T("self_attn.v_proj.weight", kvd, d);
        T("self_attn.o_proj.weight", d, qd);
        T("self_attn.q_norm.weight", s->head_dim, 0);
        T("self_attn.k_norm.weight", s->head_dim, 0);
        T("post_attention_layernorm.weight", d, 0);
        T("mlp.gate_proj.weight", s->intermediate, d);
        T("mlp.up_proj.weight", s->intermediate, d);
        T("mlp.down_proj.weight", d, s->intermediate);
#undef T
    }
    add_tensor(p, "model.norm.weight", dt, d, 0);
    if (!s->tied) add_tensor(p, "lm_head.weight", dt, s->vocab, d);
}

/* The preset as the config the loader will read back. */
static void preset_config(const model_preset *s, qwen3_config *c) {
    memset(c, 0, sizeof *c);
    c->vocab_size = s->vocab;
    c->hidden_size = s->hidden;
    c->intermediate_size = s->intermediate;
    c->num_hidden_layers = s->layers;
    c->num_attention_heads = s->heads;
    c->num_key_value_heads = s->kv_heads;
    c->head_dim = s->head_dim;
    c->max_position_embeddings = s->max_pos;
    c->rms_norm_eps = 1e-6f;
    c->rope_theta = (float)s->rope_theta;
    c->tie_word_embeddings = s->tied;
    c->bos_token_id = s->bos;
    c->eos_token_ids[c->n_eos++] = s->eos;
}

static json_t *config_json(const model_preset *s, st_dtype dt) {
    qwen3_config c;
    preset_config(s, &c);
    json_t *o = qwen3_config_to_json(&c);
    if (!o) return NULL;
    json_object_set_new(o, "architectures", json_pack("[s]", "Qwen3ForCausalLM"));
    json_object_set_new(o, "attention_bias", json_false());
    json_object_set_new(o, "attention_dropout", json_real(0.0));
    json_object_set_new(o, "hidden_act", json_string("silu"));
    json_object_set_new(o, "initializer_range", json_real(0.02));
    json_object_set_new(o, "max_window_layers", json_integer(s->layers));
    json_object_set_new(o, "rope_scaling", json_null());
    json_object_set_new(o, "sliding_window", json_null());
    json_object_set_new(o, "torch_dtype", json_string(model_random_torch_dtype(dt)));
    json_object_set_new(o, "use_cache", json_true());
    json_object_set_new(o, "use_sliding_window", json_false());
    return o;
}

static json_t *generation_config_json(const model_preset *s) {
    json_t *g = json_object(), *eos = json_array();
    json_object_set_new(g, "bos_token_id", json_integer(s->bos));
    json_array_append_new(eos, json_integer(s->eos));
    if (s->eos_extra >= 0) json_array_append_new(eos, json_integer(s->eos_extra));
    json_object_set_new(g, "eos_token_id", eos);
    return g;
}

/* A sub-plan (one shard) shares the parent's fill via an index offset. */
typedef struct {
    st_random_plan *p;
    int offset;
} shard_ctx;

static nc_status fill_shard(void *ctx, int index, size_t first, size_t n, void *dst,
                            nc_error *err) {
    shard_ctx *s = ctx;
    return st_random_fill(s->p, index + s->offset, first, n, dst, err);
}

/* start[0..n_shards]: the first tensor of each shard of at most
 * SHARD_MAX_BYTES (a bigger tensor gets a shard of its own); returns n_shards. */
static int split_shards(const st_random_plan *p, int *start) {
    int n_shards = 0;
    size_t acc = 0;
    start[0] = 0;
    for (int i = 0; i < p->n; i++) {
        size_t b = st_write_tensor_bytes(&p->t[i]);
        if (acc > 0 && acc + b > SHARD_MAX_BYTES) {
            start[++n_shards] = i;
            acc = 0;
        }
        acc += b;
    }
    start[++n_shards] = p->n;
    return n_shards;
}

static nc_status write_weights(st_random_plan *p, const char *out, const int *start, int n_shards,
                               nc_error *err) {
    char path[4096];
    if (n_shards == 1) {
        hf_path_join(path, sizeof path, out, "model.safetensors");
        return st_write_file(path, p->t, p->n, st_random_fill, p, err);
    }
    json_t *index = json_object(), *map = json_object();
    json_object_set_new(index, "metadata",
                        json_pack("{s:I}", "total_size", (json_int_t)st_random_bytes(p)));
    for (int s = 0; s < n_shards; s++) {
        char name[64];
        snprintf(name, sizeof name, "model-%05d-of-%05d.safetensors", s + 1, n_shards);
        hf_path_join(path, sizeof path, out, name);
        shard_ctx sc = {p, start[s]};
        nc_status st =
            st_write_file(path, p->t + start[s], start[s + 1] - start[s], fill_shard, &sc, err);
        if (st != NC_OK) {
            json_decref(index);
            json_decref(map);
            return st;
        }
        for (int i = start[s]; i < start[s + 1]; i++)
            json_object_set_new(map, p->t[i].name, json_string(name));
    }
    json_object_set_new(index, "weight_map", map);
    hf_path_join(path, sizeof path, out, "model.safetensors.index.json");
    return nc_json_save(index, path, 2, err);
}

nc_status qwen3_random_write(const model_preset *s, const char *out, const model_random_options *o,
                             model_random_report *r, nc_error *err) {
    static st_random_plan plan; /* large (names); one per process */
    memset(&plan, 0, sizeof plan);
    plan.kind = ST_RANDOM_SUM4;
    plan.seed = o->seed * 0x9e3779b97f4a7c15ull;
    plan_tensors(&plan, s, o->dtype);
    int start[ST_RANDOM_MAX_TENSORS + 1];
    memset(r, 0, sizeof *r);
    r->n_tensors = plan.n;
    r->bytes = st_random_bytes(&plan);
    r->n_files = split_shards(&plan, start);
    if (o->dry_run) return NC_OK;

    char path[4096];
    json_t *cfg = config_json(s, o->dtype);
    if (!cfg) return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", out);
    hf_path_join(path, sizeof path, out, "config.json");
    NC_TRY(nc_json_save(cfg, path, 2, err));
    hf_path_join(path, sizeof path, out, "generation_config.json");
    NC_TRY(nc_json_save(generation_config_json(s), path, 2, err));
    NC_TRY(nc_pool_new(o->n_threads, &plan.pool, err));
    nc_status st = write_weights(&plan, out, start, r->n_files, err);
    nc_pool_free(plan.pool);
    return st;
}
