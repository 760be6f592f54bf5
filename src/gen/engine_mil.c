/* The mil backend's host loop (engine_mil.h). A forward of n tokens runs in
 * chunks of a bucket size S (the smallest bucket that holds the rest, or
 * the largest); token i of a chunk at position p sits in column p mod S of
 * every S-wide tensor, which is what lets the kv kernel place it with
 * constant gather indices. Per chunk and layer: qkv -> kv -> attn -> mlp;
 * then the head on the last token, alone in a 32-wide input. */
#include "gen/engine_mil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/half.h"
#include "base/pool.h"
#include "io/hf_weights.h"
#include "lower/weights_fp16.h"
#include "mil/interp.h"
#include "mil/parse.h"

struct gen_mil {
    lower_manifest man;
    char dir[4096];
    int L, S_max;
    mil_program **progs;   /* per manifest program */
    int *layer_prog;       /* layer -> program index */
    int head_prog;         /* -1: head on the CPU */
    mil_interp **its;      /* [L][kernel][bucket], prepared on first use */
    mil_interp *head_it;
    nc_pool *pool;
    hf_weights *ckpt;
    const st_tensor *embed, *lm_head, *final_norm;
    float *kc, *vc;        /* [L][kvd * ctx], fp16 values held as float */
    float *x, *cs, *sn, *mask, *wr, *hx, *rows, *inv_freq, *normed;
    int pos;
    gen_mil_layer_hook hook;
    void *hook_user;
};

const lower_manifest *gen_mil_manifest(const gen_mil *m) {
    return &m->man;
}

void gen_mil_set_layer_hook(gen_mil *m, gen_mil_layer_hook hook, void *user) {
    m->hook = hook;
    m->hook_user = user;
}

static nc_status find_tensor(gen_mil *m, const char *name, int64_t d0, int64_t d1,
                             const st_tensor **out, nc_error *err) {
    const st_tensor *t = hf_weights_find(m->ckpt, name, NULL);
    if (!t) return nc_fail(err, NC_ERR_NOT_FOUND, "%s: tensor %s is missing", m->man.source_dir, name);
    int rank = d1 ? 2 : 1;
    if (t->ndim != rank || t->shape[0] != d0 || (d1 && t->shape[1] != d1) ||
        (t->dtype != ST_BF16 && t->dtype != ST_F16 && t->dtype != ST_F32))
        return nc_fail(err, NC_ERR_FORMAT, "tensor %s: shape or dtype differs from the bundle's model", name);
    *out = t;
    return NC_OK;
}

nc_status gen_mil_open(const char *dir, int n_threads, gen_mil **out, nc_error *err) {
    gen_mil *m = calloc(1, sizeof *m);
    if (!m) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    snprintf(m->dir, sizeof m->dir, "%s", dir);
    m->head_prog = -1;
    nc_status st = lower_manifest_read(dir, &m->man, err);
    const qwen3_config *c = &m->man.cfg;
    m->L = c->num_hidden_layers;
    if (!st) {
        m->S_max = m->man.seqs[m->man.n_seqs - 1];
        m->progs = calloc((size_t)m->man.n_programs, sizeof *m->progs);
        m->layer_prog = malloc((size_t)m->L * sizeof *m->layer_prog);
        m->its = calloc((size_t)m->L * LOWER_N_KERNELS * m->man.n_seqs, sizeof *m->its);
        if (!m->progs || !m->layer_prog || !m->its) st = nc_fail(err, NC_ERR_NOMEM, "out of memory");
    }
    for (int l = 0; !st && l < m->L; l++) m->layer_prog[l] = -1;
    for (int p = 0; !st && p < m->man.n_programs; p++) {
        const lower_program_info *pi = &m->man.programs[p];
        char path[8300];
        snprintf(path, sizeof path, "%s/%s", dir, pi->path);
        st = mil_parse_file(path, &m->progs[p], err);
        if (!st && pi->layer >= 0 && pi->layer < m->L) m->layer_prog[pi->layer] = p;
        if (!st && pi->layer < 0) m->head_prog = p;
    }
    for (int l = 0; !st && l < m->L; l++)
        if (m->layer_prog[l] < 0) st = nc_fail(err, NC_ERR_FORMAT, "%s: no program for layer %d", dir, l);
    if (!st && m->man.lm_head_on_ane && m->head_prog < 0)
        st = nc_fail(err, NC_ERR_FORMAT, "%s: the manifest puts the LM head on the ANE but lists no head program", dir);
    if (!st) st = hf_weights_open(m->man.source_dir, &m->ckpt, err);
    if (!st) st = find_tensor(m, m->man.embed_tensor, c->vocab_size, c->hidden_size, &m->embed, err);
    if (!st && !m->man.lm_head_on_ane) {
        st = find_tensor(m, m->man.lm_head_tensor, c->vocab_size, c->hidden_size, &m->lm_head, err);
        if (!st) st = find_tensor(m, m->man.final_norm_tensor, c->hidden_size, 0, &m->final_norm, err);
    }
    if (!st) st = nc_pool_new(n_threads, &m->pool, err);
    if (!st) {
        size_t kvd = (size_t)c->num_key_value_heads * c->head_dim, ctx = (size_t)m->man.ctx;
        size_t D = (size_t)c->hidden_size, hd = (size_t)c->head_dim, S = (size_t)m->S_max;
        m->kc = calloc((size_t)m->L * kvd * ctx, sizeof(float));
        m->vc = calloc((size_t)m->L * kvd * ctx, sizeof(float));
        m->x = malloc(D * S * sizeof(float));
        m->cs = malloc(hd * S * sizeof(float));
        m->sn = malloc(hd * S * sizeof(float));
        m->mask = malloc(S * ctx * sizeof(float));
        m->wr = malloc(ctx * sizeof(float));
        m->hx = malloc(D * LOWER_HEAD_SEQ * sizeof(float));
        m->rows = malloc(D * S * sizeof(float));
        m->normed = malloc(D * sizeof(float));
        m->inv_freq = malloc(hd / 2 * sizeof(float));
        if (!m->kc || !m->vc || !m->x || !m->cs || !m->sn || !m->mask || !m->wr || !m->hx ||
            !m->rows || !m->normed || !m->inv_freq)
            st = nc_fail(err, NC_ERR_NOMEM, "%s: out of memory for the KV cache (ctx %d)", dir, m->man.ctx);
        /* as transformers computes it: theta^(-2i/d) in fp32 */
        for (size_t i = 0; !st && i < hd / 2; i++)
            m->inv_freq[i] = (float)(1.0 / pow((double)c->rope_theta, (double)(2 * i) / (double)hd));
    }
    if (st) {
        gen_mil_free(m);
        return st;
    }
    *out = m;
    return NC_OK;
}

void gen_mil_free(gen_mil *m) {
    if (!m) return;
    if (m->its)
        for (int i = 0; i < m->L * LOWER_N_KERNELS * m->man.n_seqs; i++) mil_interp_free(m->its[i]);
    mil_interp_free(m->head_it);
    for (int p = 0; m->progs && p < m->man.n_programs; p++) mil_program_free(m->progs[p]);
    free(m->progs);
    free(m->its);
    free(m->layer_prog);
    nc_pool_free(m->pool);
    hf_weights_close(m->ckpt);
    free(m->kc);
    free(m->vc);
    free(m->x);
    free(m->cs);
    free(m->sn);
    free(m->mask);
    free(m->wr);
    free(m->hx);
    free(m->rows);
    free(m->normed);
    free(m->inv_freq);
    lower_manifest_free(&m->man);
    free(m);
}

/* A prepared function with its manifest entry. */
typedef struct kernel_run {
    mil_interp *it;
    const lower_fn_info *fn;
} kernel_run;

static nc_status kernel(gen_mil *m, int prog, const char *fn_name, mil_interp **slot,
                        kernel_run *k, nc_error *err) {
    const lower_program_info *pi = &m->man.programs[prog];
    k->fn = lower_manifest_fn(pi, fn_name);
    if (!k->fn) return nc_fail(err, NC_ERR_NOT_FOUND, "%s: the manifest lists no function %s in %s", m->dir, fn_name, pi->path);
    if (!*slot) {
        NC_TRY(mil_interp_new(m->progs[prog], fn_name, MIL_INTERP_FP16, slot, err));
        mil_interp_set_pool(*slot, m->pool);
    }
    k->it = *slot;
    return NC_OK;
}

/* Binds input `name` (as listed by the manifest) from fp32 data. */
static nc_status bind(const kernel_run *k, const char *name, const float *data, size_t count,
                      nc_error *err) {
    const lower_io *io = lower_fn_io(k->fn, name, 0);
    if (!io) return nc_fail(err, NC_ERR_NOT_FOUND, "function %s has no input '%s' in the manifest", k->fn->name, name);
    size_t n = 1;
    for (int i = 0; i < io->rank; i++) n *= (size_t)io->shape[i];
    if (n != count)
        return nc_fail(err, NC_ERR_FORMAT, "function %s: input '%s' holds %zu values, the host has %zu",
                       k->fn->name, name, n, count);
    return mil_interp_set_input(k->it, io->name, MIL_DT_FP32, io->rank, io->shape, data, err);
}

/* Output `name` (as listed by the manifest), checked to hold count values. */
static nc_status fetch(const kernel_run *k, const char *name, size_t count, const float **out,
                       nc_error *err) {
    const lower_io *io = lower_fn_io(k->fn, name, 1);
    if (!io) return nc_fail(err, NC_ERR_NOT_FOUND, "function %s has no output '%s' in the manifest", k->fn->name, name);
    mil_interp_view v;
    NC_TRY(mil_interp_get(k->it, io->name, &v, err));
    if (v.count != count || !v.f32)
        return nc_fail(err, NC_ERR_FORMAT, "function %s: output '%s' has %zu values, expected %zu",
                       k->fn->name, name, v.count, count);
    *out = v.f32;
    return NC_OK;
}

/* Host-made inputs of a chunk of n tokens at position p in S columns. */
static void chunk_inputs(gen_mil *m, const int32_t *toks, int n, int p, int S) {
    const qwen3_config *c = &m->man.cfg;
    int D = c->hidden_size, hd = c->head_dim, ctx = m->man.ctx;
    memset(m->x, 0, (size_t)D * S * sizeof(float));
    for (size_t i = 0; i < (size_t)hd * S; i++) {
        m->cs[i] = 1.0f;
        m->sn[i] = 0.0f;
    }
    for (size_t i = 0; i < (size_t)S * ctx; i++) m->mask[i] = (float)LOWER_MASK_NEG;
    for (int r = 0; r < S; r++) m->mask[(size_t)r * ctx] = 0.0f; /* padding rows: any finite row */
    memset(m->wr, 0, (size_t)ctx * sizeof(float));
    for (int i = 0; i < n; i++) {
        int pos = p + i, col = pos % S;
        size_t row = (size_t)toks[i] * D;
        for (int d = 0; d < D; d++) m->x[(size_t)d * S + col] = nc_round_fp16(lower_tensor_f32_at(m->embed, row + d));
        for (int d = 0; d < hd; d++) {
            float a = (float)pos * m->inv_freq[d % (hd / 2)];
            m->cs[(size_t)d * S + col] = (float)cos((double)a);
            m->sn[(size_t)d * S + col] = (float)sin((double)a);
        }
        for (int k = 0; k <= pos; k++) m->mask[(size_t)col * ctx + k] = 0.0f;
        m->wr[pos] = 1.0f;
    }
}

static nc_status run_layer(gen_mil *m, int l, int b, int S, nc_error *err) {
    const qwen3_config *c = &m->man.cfg;
    size_t D = (size_t)c->hidden_size, hd = (size_t)c->head_dim, ctx = (size_t)m->man.ctx;
    size_t kvd = (size_t)c->num_key_value_heads * hd, qd = (size_t)c->num_attention_heads * hd;
    float *kc = m->kc + (size_t)l * kvd * ctx, *vc = m->vc + (size_t)l * kvd * ctx;
    kernel_run k[LOWER_N_KERNELS];
    for (int i = 0; i < LOWER_N_KERNELS; i++) {
        char fn[64];
        snprintf(fn, sizeof fn, "%s_s%d", lower_kernel_name((lower_kernel)i), S);
        mil_interp **slot = &m->its[((size_t)l * LOWER_N_KERNELS + i) * m->man.n_seqs + b];
        NC_TRY(kernel(m, m->layer_prog[l], fn, slot, &k[i], err));
    }
    const float *q, *kn, *vn, *ko, *vo, *xo;
    /* 1: norm + QKV + q/k norm + RoPE */
    NC_TRY(bind(&k[0], "x", m->x, D * S, err));
    NC_TRY(bind(&k[0], "rope_cos", m->cs, hd * S, err));
    NC_TRY(bind(&k[0], "rope_sin", m->sn, hd * S, err));
    NC_TRY(mil_interp_run(k[0].it, err));
    NC_TRY(fetch(&k[0], "q", qd * S, &q, err));
    NC_TRY(fetch(&k[0], "k_new", kvd * S, &kn, err));
    NC_TRY(fetch(&k[0], "v_new", kvd * S, &vn, err));
    /* 2: the cache update; the host keeps the result */
    NC_TRY(bind(&k[1], "k_cache", kc, kvd * ctx, err));
    NC_TRY(bind(&k[1], "v_cache", vc, kvd * ctx, err));
    NC_TRY(bind(&k[1], "k_new", kn, kvd * S, err));
    NC_TRY(bind(&k[1], "v_new", vn, kvd * S, err));
    NC_TRY(bind(&k[1], "kv_write", m->wr, ctx, err));
    NC_TRY(mil_interp_run(k[1].it, err));
    NC_TRY(fetch(&k[1], "k_cache_out", kvd * ctx, &ko, err));
    NC_TRY(fetch(&k[1], "v_cache_out", kvd * ctx, &vo, err));
    memcpy(kc, ko, kvd * ctx * sizeof(float));
    memcpy(vc, vo, kvd * ctx * sizeof(float));
    /* 3: attention + o_proj + residual */
    NC_TRY(bind(&k[2], "x", m->x, D * S, err));
    NC_TRY(bind(&k[2], "q", q, qd * S, err));
    NC_TRY(bind(&k[2], "k_cache", kc, kvd * ctx, err));
    NC_TRY(bind(&k[2], "v_cache", vc, kvd * ctx, err));
    NC_TRY(bind(&k[2], "attn_mask", m->mask, (size_t)S * ctx, err));
    NC_TRY(mil_interp_run(k[2].it, err));
    NC_TRY(fetch(&k[2], "x_out", D * S, &xo, err));
    memcpy(m->x, xo, D * S * sizeof(float));
    /* 4: norm + MLP + residual */
    NC_TRY(bind(&k[3], "x", m->x, D * S, err));
    NC_TRY(mil_interp_run(k[3].it, err));
    NC_TRY(fetch(&k[3], "x_out", D * S, &xo, err));
    memcpy(m->x, xo, D * S * sizeof(float));
    return NC_OK;
}

typedef struct {
    gen_mil *m;
    float *logits;
} cpu_head_ctx;

static void cpu_head_rows(void *ctx, int task, int thread) {
    (void)thread;
    cpu_head_ctx *h = ctx;
    const gen_mil *m = h->m;
    int D = m->man.cfg.hidden_size, V = m->man.cfg.vocab_size;
    for (int r = task * 256; r < V && r < task * 256 + 256; r++) {
        double s = 0;
        for (int d = 0; d < D; d++) s += (double)lower_tensor_f32_at(m->lm_head, (size_t)r * D + d) * m->normed[d];
        h->logits[r] = (float)s;
    }
}

/* Final norm + LM head of the token in column col (fp32, on the CPU). */
static void head_cpu(gen_mil *m, int col, int S, float *logits) {
    const qwen3_config *c = &m->man.cfg;
    int D = c->hidden_size;
    double ss = 0;
    for (int d = 0; d < D; d++) {
        double v = m->x[(size_t)d * S + col];
        ss += v * v;
    }
    float r = (float)(1.0 / sqrt(ss / D + c->rms_norm_eps));
    for (int d = 0; d < D; d++)
        m->normed[d] = m->x[(size_t)d * S + col] * r * lower_tensor_f32_at(m->final_norm, (size_t)d);
    cpu_head_ctx h = {m, logits};
    nc_pool_for(m->pool, (c->vocab_size + 255) / 256, cpu_head_rows, &h);
}

static nc_status head_ane(gen_mil *m, int col, int S, float *logits, nc_error *err) {
    size_t D = (size_t)m->man.cfg.hidden_size, W = LOWER_HEAD_SEQ;
    char fn[32];
    snprintf(fn, sizeof fn, "head_s%d", LOWER_HEAD_SEQ);
    kernel_run k;
    NC_TRY(kernel(m, m->head_prog, fn, &m->head_it, &k, err));
    memset(m->hx, 0, D * W * sizeof(float));
    for (size_t d = 0; d < D; d++) m->hx[d * W] = m->x[d * S + col];
    NC_TRY(bind(&k, "x", m->hx, D * W, err));
    NC_TRY(mil_interp_run(k.it, err));
    int64_t off = 0;
    for (int i = 0; i < m->man.n_head_chunks; i++) {
        char name[32];
        const float *lg;
        snprintf(name, sizeof name, "logits_%d", i);
        int64_t rows = m->man.head_rows[i];
        NC_TRY(fetch(&k, name, (size_t)rows * W, &lg, err));
        if (off + rows > m->man.cfg.vocab_size)
            return nc_fail(err, NC_ERR_FORMAT, "%s: head chunks exceed the vocabulary", m->dir);
        for (int64_t r = 0; r < rows; r++) logits[off + r] = lg[(size_t)r * W];
        off += rows;
    }
    if (off != m->man.cfg.vocab_size)
        return nc_fail(err, NC_ERR_FORMAT, "%s: head chunks cover %lld of %d rows", m->dir,
                       (long long)off, m->man.cfg.vocab_size);
    return NC_OK;
}

static nc_status chunk_forward(gen_mil *m, const int32_t *toks, int n, int p, float *logits,
                               nc_error *err) {
    int b = 0;
    while (b + 1 < m->man.n_seqs && m->man.seqs[b] < n) b++;
    int S = m->man.seqs[b];
    chunk_inputs(m, toks, n, p, S);
    int D = m->man.cfg.hidden_size;
    for (int l = 0; l < m->L; l++) {
        NC_TRY(run_layer(m, l, b, S, err));
        if (m->hook) {
            for (int i = 0; i < n; i++)
                for (int d = 0; d < D; d++)
                    m->rows[(size_t)i * D + d] = m->x[(size_t)d * S + (p + i) % S];
            m->hook(m->hook_user, l, m->rows, n, D);
        }
    }
    if (!logits) return NC_OK;
    int col = (p + n - 1) % S;
    if (!m->man.lm_head_on_ane) {
        head_cpu(m, col, S, logits);
        return NC_OK;
    }
    return head_ane(m, col, S, logits, err);
}

static nc_status mil_forward(void *model, void *state, const int32_t *tokens, int n,
                             float *logits_last, nc_error *err) {
    gen_mil *m = model;
    (void)state;
    const qwen3_config *c = &m->man.cfg;
    if (n < 0 || n > m->man.ctx - m->pos)
        return nc_fail(err, NC_ERR_RANGE,
                       "context full: %d tokens in the cache + %d new > context of %d tokens "
                       "(the bundle's --ctx)", m->pos, n, m->man.ctx);
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= c->vocab_size)
            return nc_fail(err, NC_ERR_INVALID, "token id %d at index %d is outside the vocabulary (size %d)",
                           (int)tokens[i], i, c->vocab_size);
    int S_max = m->S_max;
    /* the cache below m->pos is never written, so a failure leaves it as it was */
    for (int done = 0; done < n;) {
        int take = n - done < S_max ? n - done : S_max;
        NC_TRY(chunk_forward(m, tokens + done, take, m->pos + done, done + take == n ? logits_last : NULL, err));
        done += take;
    }
    m->pos += n;
    return NC_OK;
}

static int mil_pos(const void *s) {
    return ((const gen_mil *)s)->pos;
}
static int mil_ctx(const void *s) {
    return ((const gen_mil *)s)->man.ctx;
}
/* Entries at and after n_keep stay in the buffers but are masked out and
 * overwritten by the next tokens. */
static void mil_truncate(void *s, int n_keep) {
    gen_mil *m = s;
    if (n_keep >= 0 && n_keep < m->pos) m->pos = n_keep;
}

gen_engine gen_engine_mil(gen_mil *m) {
    gen_engine e = {0};
    e.model = m;
    e.state = m;
    e.n_vocab = m->man.cfg.vocab_size;
    for (int i = 0; i < m->man.cfg.n_eos && i < 8; i++) e.eos_ids[e.n_eos++] = m->man.cfg.eos_token_ids[i];
    e.pos = mil_pos;
    e.ctx = mil_ctx;
    e.truncate = mil_truncate;
    e.forward = mil_forward;
    return e;
}
