/* `nectar gen-random --like qwen3-0.6b OUT`: a Qwen3 folder with random
 * weights at a real model's shapes (HF layout: config.json,
 * generation_config.json, model.safetensors or shards + index, tokenizer
 * files), for benchmarks and memory checks without downloads. Matrices are
 * N(0, 0.02) (Irwin-Hall approximation), norms 1 + N(0, 0.02); the fill is
 * parallel and deterministic for a seed whatever the thread count. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/half.h"
#include "base/mmap.h"
#include "base/pool.h"
#include "base/timer.h"
#include "commands.h"
#include "enc_cli.h"
#include "io/hf_weights.h"
#include "io/safetensors_write.h"

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
#define MAX_TENSORS 1024
#define RNG_BLOCK ((size_t)1 << 16)

typedef struct gen_plan {
    st_write_tensor t[MAX_TENSORS];
    char names[MAX_TENSORS][96];
    int is_norm[MAX_TENSORS];
    int n;
    uint64_t seed;
    nc_pool *pool;
} gen_plan;

static void add_tensor(gen_plan *p, const char *name, st_dtype dt, int64_t d0, int64_t d1) {
    st_write_tensor *t = &p->t[p->n];
    snprintf(p->names[p->n], sizeof p->names[0], "%s", name);
    t->name = p->names[p->n];
    t->dtype = dt;
    t->ndim = d1 ? 2 : 1;
    t->shape[0] = d0;
    t->shape[1] = d1;
    p->is_norm[p->n] = d1 == 0;
    p->n++;
}

static void plan_tensors(gen_plan *p, const like_shape *s, st_dtype dt) {
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

static uint64_t splitmix(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

typedef struct {
    const gen_plan *p;
    int index;
    size_t first, n;
    void *dst;
} fill_job;

/* One RNG block: its own stream, so the output does not depend on how the
 * blocks are spread over threads. */
static void fill_block(void *ctx, int task, int thread) {
    (void)thread;
    const fill_job *j = ctx;
    size_t b0 = (size_t)task * RNG_BLOCK, b1 = b0 + RNG_BLOCK < j->n ? b0 + RNG_BLOCK : j->n;
    uint64_t st = j->p->seed ^ ((uint64_t)j->index << 40) ^ ((j->first + b0) / RNG_BLOCK);
    splitmix(&st);
    st_dtype dt = j->p->t[j->index].dtype;
    float base = j->p->is_norm[j->index] ? 1.0f : 0.0f;
    for (size_t i = b0; i < b1; i++) {
        uint64_t r = splitmix(&st);
        /* sum of four uniform(0,1): mean 2, variance 1/3 */
        float u = (float)((r & 0xffff) + ((r >> 16) & 0xffff) + ((r >> 32) & 0xffff) + (r >> 48)) *
                  (1.0f / 65536.0f);
        float v = base + 0.02f * (u - 2.0f) * 1.7320508f;
        if (dt == ST_BF16)
            ((nc_bf16 *)j->dst)[i] = nc_f32_to_bf16(v);
        else if (dt == ST_F16)
            ((nc_fp16 *)j->dst)[i] = nc_f32_to_fp16(v);
        else
            ((float *)j->dst)[i] = v;
    }
}

static nc_status fill_random(void *ctx, int index, size_t first, size_t n, void *dst,
                             nc_error *err) {
    (void)err;
    const gen_plan *p = ctx;
    fill_job j = {p, index, first, n, dst};
    nc_pool_for(p->pool, (int)((n + RNG_BLOCK - 1) / RNG_BLOCK), fill_block, &j);
    return NC_OK;
}

/* A sub-plan (one shard) shares the parent's fill via an index offset. */
typedef struct {
    gen_plan *p;
    int offset;
} shard_ctx;

static nc_status fill_shard(void *ctx, int index, size_t first, size_t n, void *dst,
                            nc_error *err) {
    shard_ctx *s = ctx;
    return fill_random(s->p, index + s->offset, first, n, dst, err);
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

static nc_status copy_file(const char *src_dir, const char *dst_dir, const char *name,
                           nc_error *err) {
    char src[4096], dst[4096];
    hf_path_join(src, sizeof src, src_dir, name);
    hf_path_join(dst, sizeof dst, dst_dir, name);
    if (!nc_file_exists(src)) return NC_OK;
    char *data;
    size_t len;
    NC_TRY(nc_read_file(src, &data, &len, err));
    nc_status st = nc_write_file_atomic(dst, data, len, err);
    free(data);
    return st;
}

/* Splits the plan into shards of at most SHARD_MAX_BYTES and writes them. */
static nc_status write_weights(gen_plan *p, const char *out, nc_error *err) {
    size_t total = 0;
    for (int i = 0; i < p->n; i++)
        total += st_write_tensor_bytes(&p->t[i]);
    char path[4096];
    if (total <= SHARD_MAX_BYTES) {
        hf_path_join(path, sizeof path, out, "model.safetensors");
        return st_write_file(path, p->t, p->n, fill_random, p, err);
    }
    int start[MAX_TENSORS + 1], n_shards = 0;
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
    if (gen_random_is_encoder(argc, argv)) return gen_random_encoder(argc, argv); /* ModernBERT */
    const char *like = NULL, *out = NULL, *dtype = "bf16", *tok_dir = NULL;
    uint64_t seed = 1;
    int threads = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has_val = i + 1 < argc;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage();
            return 0;
        } else if (!strcmp(a, "--like") && has_val)
            like = argv[++i];
        else if (!strcmp(a, "--dtype") && has_val)
            dtype = argv[++i];
        else if (!strcmp(a, "--seed") && has_val)
            seed = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(a, "--tokenizer") && has_val)
            tok_dir = argv[++i];
        else if (!strcmp(a, "-t") && has_val)
            threads = atoi(argv[++i]);
        else if (a[0] == '-')
            return cli_failf("gen-random: unknown or incomplete option '%s'", a), usage();
        else if (!out)
            out = a;
        else
            return cli_failf("gen-random: unexpected argument '%s'", a), usage();
    }
    if (!like || !out) return usage();
    const like_shape *shape = NULL;
    for (size_t i = 0; i < sizeof likes / sizeof likes[0]; i++)
        if (!strcmp(like, likes[i].name)) shape = &likes[i];
    if (!shape)
        return cli_failf("gen-random: unknown --like '%s' (qwen3-0.6b, qwen3-1.7b, qwen3-4b)",
                         like);
    st_dtype dt;
    const char *torch_dtype;
    if (!strcmp(dtype, "bf16"))
        dt = ST_BF16, torch_dtype = "bfloat16";
    else if (!strcmp(dtype, "f16"))
        dt = ST_F16, torch_dtype = "float16";
    else if (!strcmp(dtype, "f32"))
        dt = ST_F32, torch_dtype = "float32";
    else
        return cli_failf("gen-random: --dtype must be bf16, f16 or f32, not '%s'", dtype);
    if (mkdir(out, 0777) != 0 && errno != EEXIST)
        return cli_failf("%s: cannot create folder: %s", out, strerror(errno));
    if (!nc_is_dir(out)) return cli_failf("%s: not a folder", out);

    double t0 = nc_now_s();
    nc_error err;
    static gen_plan plan; /* large (names); one per process */
    memset(&plan, 0, sizeof plan);
    plan.seed = seed * 0x9e3779b97f4a7c15ull;
    plan_tensors(&plan, shape, dt);
    if (nc_pool_new(threads, &plan.pool, &err) != NC_OK) return cli_fail(&err);
    nc_status st = write_json(out, "config.json", config_json(shape, torch_dtype), &err);
    if (st == NC_OK) {
        json_t *g = json_object();
        json_object_set_new(g, "bos_token_id", json_integer(shape->vocab > 151643 ? 151643 : 0));
        json_object_set_new(g, "eos_token_id",
                            shape->vocab > 151645 ? json_pack("[i,i]", 151645, 151643)
                                                  : json_pack("[i]", 1));
        st = write_json(out, "generation_config.json", g, &err);
    }
    if (st == NC_OK) st = write_weights(&plan, out, &err);
    nc_pool_free(plan.pool);
    if (st != NC_OK) return cli_fail(&err);

    char shared_tok[4096];
    if (!tok_dir && shape->vocab == 151936) {
        const char *root = getenv("NECTAR_SHARED");
        snprintf(shared_tok, sizeof shared_tok, "%s/data/qwen3-tokenizer",
                 root && *root ? root : "../shared");
        if (nc_is_dir(shared_tok)) tok_dir = shared_tok;
    }
    if (tok_dir) {
        if (!nc_is_dir(tok_dir)) return cli_failf("%s: tokenizer folder not found", tok_dir);
        const char *files[] = {"tokenizer.json", "tokenizer_config.json", "vocab.json",
                               "merges.txt"};
        for (size_t i = 0; i < sizeof files / sizeof files[0] && st == NC_OK; i++)
            st = copy_file(tok_dir, out, files[i], &err);
        if (st != NC_OK) return cli_fail(&err);
    }
    size_t bytes = 0;
    for (int i = 0; i < plan.n; i++)
        bytes += st_write_tensor_bytes(&plan.t[i]);
    fprintf(stderr, "wrote %s: %s shape, %s, %d tensors, %.2f GB in %.1f s%s\n", out, shape->name,
            dtype, plan.n, (double)bytes / 1e9, nc_now_s() - t0,
            tok_dir ? "" : " (no tokenizer copied)");
    return 0;
}
