/* `nectar gen-random --like qwen3-0.6b OUT`: a Qwen3 folder with random
 * weights at a real model's shapes (HF layout: config.json,
 * generation_config.json, model.safetensors or shards + index, tokenizer
 * files), for benchmarks and memory checks without downloads. Matrices are
 * N(0, 0.02) (Irwin-Hall approximation), norms 1 + N(0, 0.02), filled by
 * src/io/safetensors_random.h (parallel, deterministic for a seed). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mmap.h"
#include "base/pool.h"
#include "base/timer.h"
#include "commands.h"
#include "gen_random_common.h"
#include "io/hf_weights.h"
#include "io/safetensors_random.h"

typedef struct like_shape {
    const char *name;
    int hidden, inter, layers, heads, kv_heads, head_dim, vocab, max_pos;
} like_shape;

/* Real configs (Qwen3 family, tied embeddings); "tiny" is for tests. */
static const like_shape likes[] = {
    {"qwen3-0.6b", 1024, 3072, 28, 16, 8, 128, 151936, 40960},
    {"qwen3-1.7b", 2048, 6144, 28, 16, 8, 128, 151936, 40960},
    {"qwen3-4b", 2560, 9728, 36, 32, 8, 128, 151936, 40960},
    {"tiny", 64, 160, 2, 4, 2, 32, 512, 512},
};

#define SHARD_MAX_BYTES ((size_t)4 << 30) /* like HF's shards */

static void add_tensor(st_random_plan *p, const char *name, st_dtype dt, int64_t d0, int64_t d1) {
    st_random_add(p, name, dt, d0, d1, d1 == 0);
}

static void plan_tensors(st_random_plan *p, const like_shape *s, st_dtype dt) {
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
        T("mlp.gate_proj.weight", s->inter, d);
        T("mlp.up_proj.weight", s->inter, d);
        T("mlp.down_proj.weight", d, s->inter);
#undef T
    }
    add_tensor(p, "model.norm.weight", dt, d, 0);
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

static nc_status write_json(const char *dir, const char *name, json_t *j, nc_error *err) {
    char path[4096];
    hf_path_join(path, sizeof path, dir, name);
    char *s = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
    json_decref(j);
    if (!s) return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory", path);
    size_t len = strlen(s);
    s[len] = '\n'; /* json_dumps leaves room for the NUL we overwrite */
    nc_status st = nc_write_file_atomic(path, s, len + 1, err);
    free(s);
    return st;
}

static json_t *config_json(const like_shape *s, const char *dtype_name) {
    json_t *c = json_object();
    json_object_set_new(c, "architectures", json_pack("[s]", "Qwen3ForCausalLM"));
    json_object_set_new(c, "attention_bias", json_false());
    json_object_set_new(c, "attention_dropout", json_real(0.0));
    json_object_set_new(c, "bos_token_id", json_integer(s->vocab > 151643 ? 151643 : 0));
    json_object_set_new(c, "eos_token_id", json_integer(s->vocab > 151645 ? 151645 : 1));
    json_object_set_new(c, "head_dim", json_integer(s->head_dim));
    json_object_set_new(c, "hidden_act", json_string("silu"));
    json_object_set_new(c, "hidden_size", json_integer(s->hidden));
    json_object_set_new(c, "initializer_range", json_real(0.02));
    json_object_set_new(c, "intermediate_size", json_integer(s->inter));
    json_object_set_new(c, "max_position_embeddings", json_integer(s->max_pos));
    json_object_set_new(c, "max_window_layers", json_integer(s->layers));
    json_object_set_new(c, "model_type", json_string("qwen3"));
    json_object_set_new(c, "num_attention_heads", json_integer(s->heads));
    json_object_set_new(c, "num_hidden_layers", json_integer(s->layers));
    json_object_set_new(c, "num_key_value_heads", json_integer(s->kv_heads));
    json_object_set_new(c, "rms_norm_eps", json_real(1e-6));
    json_object_set_new(c, "rope_scaling", json_null());
    json_object_set_new(c, "rope_theta", json_real(1000000.0));
    json_object_set_new(c, "sliding_window", json_null());
    json_object_set_new(c, "tie_word_embeddings", json_true());
    json_object_set_new(c, "torch_dtype", json_string(dtype_name));
    json_object_set_new(c, "use_cache", json_true());
    json_object_set_new(c, "use_sliding_window", json_false());
    json_object_set_new(c, "vocab_size", json_integer(s->vocab));
    return c;
}

/* Splits the plan into shards of at most SHARD_MAX_BYTES and writes them. */
static nc_status write_weights(st_random_plan *p, const char *out, nc_error *err) {
    size_t total = st_random_bytes(p);
    char path[4096];
    if (total <= SHARD_MAX_BYTES) {
        hf_path_join(path, sizeof path, out, "model.safetensors");
        return st_write_file(path, p->t, p->n, st_random_fill, p, err);
    }
    int start[ST_RANDOM_MAX_TENSORS + 1], n_shards = 0;
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
    json_t *index = json_object(), *map = json_object();
    json_object_set_new(index, "metadata", json_pack("{s:I}", "total_size", (json_int_t)total));
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
    return write_json(out, "model.safetensors.index.json", index, err);
}

static int usage(void) {
    fprintf(stderr, "usage: nectar gen-random --like qwen3-0.6b|qwen3-1.7b|qwen3-4b OUT\n"
                    "       (encoders: --like modernbert-base|modernbert-large|mmbert-base)\n"
                    "         [--dtype bf16|f16|f32] [--seed S] [--tokenizer DIR] [-t N]\n"
                    "Writes a Qwen3 folder with random weights at the real shapes.\n"
                    "Tokenizer files are copied from DIR (default: $NECTAR_SHARED/data/\n"
                    "qwen3-tokenizer, NECTAR_SHARED defaulting to ../shared) when it exists.\n");
    return 2;
}

int cmd_gen_random(int argc, char **argv) {
    int is_encoder = gen_random_is_encoder(argc, argv); /* ModernBERT shapes */
    gen_random_args a;
    int rc = gen_random_parse(argc, argv, is_encoder ? gen_random_encoder_usage : usage, &a);
    if (rc >= 0) return rc;
    if (is_encoder) return gen_random_encoder(&a);
    const like_shape *shape = NULL;
    for (size_t i = 0; i < sizeof likes / sizeof likes[0]; i++)
        if (!strcmp(a.like, likes[i].name)) shape = &likes[i];
    if (!shape)
        return cli_failf("gen-random: unknown --like '%s' (qwen3-0.6b, qwen3-1.7b, qwen3-4b)",
                         a.like);
    if ((rc = gen_random_make_out(a.out))) return rc;

    double t0 = nc_now_s();
    nc_error err;
    static st_random_plan plan; /* large (names); one per process */
    memset(&plan, 0, sizeof plan);
    plan.kind = ST_RANDOM_SUM4;
    plan.seed = a.seed * 0x9e3779b97f4a7c15ull;
    plan_tensors(&plan, shape, a.dt);
    if (nc_pool_new(a.threads, &plan.pool, &err) != NC_OK) return cli_fail(&err);
    nc_status st = write_json(a.out, "config.json", config_json(shape, a.torch_dtype), &err);
    if (st == NC_OK) {
        json_t *g = json_object();
        json_object_set_new(g, "bos_token_id", json_integer(shape->vocab > 151643 ? 151643 : 0));
        json_object_set_new(g, "eos_token_id",
                            shape->vocab > 151645 ? json_pack("[i,i]", 151645, 151643)
                                                  : json_pack("[i]", 1));
        st = write_json(a.out, "generation_config.json", g, &err);
    }
    if (st == NC_OK) st = write_weights(&plan, a.out, &err);
    nc_pool_free(plan.pool);
    if (st != NC_OK) return cli_fail(&err);

    char shared_tok[4096];
    const char *tok_dir = a.tok_dir;
    if (!tok_dir && shape->vocab == 151936) {
        const char *root = getenv("NECTAR_SHARED");
        snprintf(shared_tok, sizeof shared_tok, "%s/data/qwen3-tokenizer",
                 root && *root ? root : "../shared");
        if (nc_is_dir(shared_tok)) tok_dir = shared_tok;
    }
    static const char *const files[] = {"tokenizer.json", "tokenizer_config.json", "vocab.json",
                                        "merges.txt"};
    if (tok_dir && (rc = gen_random_copy_tokenizer(tok_dir, a.out, files, 4, 0))) return rc;
    fprintf(stderr, "wrote %s: %s shape, %s, %d tensors, %.2f GB in %.1f s%s\n", a.out, shape->name,
            a.dtype, plan.n, (double)st_random_bytes(&plan) / 1e9, nc_now_s() - t0,
            tok_dir ? "" : " (no tokenizer copied)");
    return 0;
}
