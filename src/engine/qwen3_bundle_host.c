/* Host side of a Qwen3 bundle (qwen3_bundle_host.h): checkpoint tensors,
 * chunk inputs, the CPU head, the chunk loop. */
#include "engine/qwen3_bundle_host.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/half.h"
#include "lower/weights_fp16.h"
#include "models/rope_scaling.h"

static nc_status find_tensor(qb_host *h, const char *name, int64_t d0, int64_t d1,
                             const st_tensor **out, nc_error *err) {
    const st_tensor *t = hf_weights_find(h->ckpt, name, NULL);
    if (!t)
        return nc_fail(err, NC_ERR_NOT_FOUND, "%s: tensor %s is missing", h->man.source_dir, name);
    int rank = d1 ? 2 : 1;
    if (t->ndim != rank || t->shape[0] != d0 || (d1 && t->shape[1] != d1) ||
        (t->dtype != ST_BF16 && t->dtype != ST_F16 && t->dtype != ST_F32))
        return nc_fail(err, NC_ERR_FORMAT,
                       "tensor %s: shape or dtype differs from the bundle's model", name);
    *out = t;
    return NC_OK;
}

void qb_host_free(qb_host *h) {
    nc_pool_free(h->pool);
    hf_weights_close(h->ckpt);
    free(h->x);
    free(h->cs);
    free(h->sn);
    free(h->mask);
    free(h->wr);
    free(h->inv_freq);
    free(h->normed);
    free(h->rows);
    free(h->hx);
    free(h->cs_l);
    free(h->sn_l);
    free(h->mask_l);
    free(h->wr_l);
    free(h->inv_freq_l);
    lower_manifest_free(&h->man);
    memset(h, 0, sizeof *h);
}

/* Gemma 3's embedding scale, rounded to the embedding's dtype as HF's
 * (and the CPU decoder's) is; its sliding layers' window and inputs. */
static nc_status open_gemma(qb_host *h, nc_error *err) {
    const qwen3_config *c = &h->man.cfg;
    float s = c->embed_scale > 0 ? c->embed_scale : 1.0f;
    if (h->embed->dtype == ST_BF16) s = nc_bf16_to_f32(nc_f32_to_bf16(s));
    if (h->embed->dtype == ST_F16) s = nc_round_fp16(s);
    h->embed_scale = s;
    int any = 0;
    for (int l = 0; l < c->num_hidden_layers; l++)
        any |= qwen3_layer_sliding(c, l);
    if (!any) return NC_OK;
    size_t hd = (size_t)c->head_dim, S = (size_t)h->S_max;
    h->W = lower_qwen3_window(c->sliding_window, h->man.ctx, h->S_max);
    h->cs_l = malloc(hd * S * sizeof(float));
    h->sn_l = malloc(hd * S * sizeof(float));
    h->mask_l = malloc(S * (size_t)h->W * sizeof(float));
    h->wr_l = malloc((size_t)h->W * sizeof(float));
    h->inv_freq_l = malloc(hd / 2 * sizeof(float));
    if (!h->cs_l || !h->sn_l || !h->mask_l || !h->wr_l || !h->inv_freq_l)
        return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory for the chunk buffers", h->dir);
    for (size_t i = 0; i < hd / 2; i++) /* the local base, never scaled */
        h->inv_freq_l[i] =
            (float)(1.0 / pow((double)c->rope_local_theta, (double)(2 * i) / (double)hd));
    return NC_OK;
}

nc_status qb_host_open(qb_host *h, const char *dir, int n_threads, nc_error *err) {
    memset(h, 0, sizeof *h);
    snprintf(h->dir, sizeof h->dir, "%s", dir);
    NC_TRY(lower_manifest_read(dir, &h->man, err));
    const qwen3_config *c = &h->man.cfg;
    h->S_max = h->man.seqs[h->man.n_seqs - 1];
    nc_status st = hf_weights_open(h->man.source_dir, &h->ckpt, err);
    if (!st)
        st = find_tensor(h, h->man.embed_tensor, c->vocab_size, c->hidden_size, &h->embed, err);
    if (!st && !h->man.lm_head_on_ane) {
        st = find_tensor(h, h->man.lm_head_tensor, c->vocab_size, c->hidden_size, &h->lm_head, err);
        if (!st)
            st = find_tensor(h, h->man.final_norm_tensor, c->hidden_size, 0, &h->final_norm, err);
    }
    if (!st) st = nc_pool_new(n_threads, &h->pool, err);
    if (!st) {
        size_t D = (size_t)c->hidden_size, hd = (size_t)c->head_dim, S = (size_t)h->S_max;
        size_t ctx = (size_t)h->man.ctx;
        h->x = malloc(D * S * sizeof(float));
        h->cs = malloc(hd * S * sizeof(float));
        h->sn = malloc(hd * S * sizeof(float));
        h->mask = malloc(S * ctx * sizeof(float));
        h->wr = malloc(ctx * sizeof(float));
        h->inv_freq = malloc(hd / 2 * sizeof(float));
        h->normed = malloc(D * sizeof(float));
        h->rows = malloc(D * S * sizeof(float));
        h->hx = malloc(D * LOWER_HEAD_SEQ * sizeof(float));
        if (!h->x || !h->cs || !h->sn || !h->mask || !h->wr || !h->inv_freq || !h->normed ||
            !h->rows || !h->hx)
            st = nc_fail(err, NC_ERR_NOMEM, "%s: out of memory for the chunk buffers", dir);
        /* as transformers computes it: theta^(-2i/d) in fp32 */
        for (size_t i = 0; !st && i < hd / 2; i++)
            h->inv_freq[i] =
                (float)(1.0 / pow((double)c->rope_theta, (double)(2 * i) / (double)hd));
        /* Llama 3's scaled frequencies (none for Qwen3), as the CPU decoder scales them */
        if (!st) rope_scaling_apply(h->inv_freq, (int)(hd / 2), &c->rope_scaling);
    }
    if (!st) st = open_gemma(h, err);
    if (st) qb_host_free(h);
    return st;
}

int qb_host_bucket(const qb_host *h, int n) {
    int b = 0;
    while (b + 1 < h->man.n_seqs && h->man.seqs[b] < n)
        b++;
    return b;
}

/* One set of a chunk's attention inputs: RoPE tables [hd][S] (cos 1, sin 0
 * in unused columns), mask [S][len] (closed, but for padding rows' first
 * key: any finite row), write mask [len] (0). */
typedef struct chunk_set {
    float *cs, *sn, *mask, *wr;
    const float *inv_freq;
    int len;
} chunk_set;

static void set_clear(const chunk_set *c, int hd, int S) {
    for (size_t i = 0; i < (size_t)hd * S; i++) {
        c->cs[i] = 1.0f;
        c->sn[i] = 0.0f;
    }
    for (size_t i = 0; i < (size_t)S * c->len; i++)
        c->mask[i] = (float)LOWER_MASK_NEG;
    for (int r = 0; r < S; r++)
        c->mask[(size_t)r * c->len] = 0.0f; /* padding rows: any finite row */
    memset(c->wr, 0, (size_t)c->len * sizeof(float));
}

/* Column col's RoPE angles for position pos, as transformers: fp32 pos * inv_freq. */
static void set_rope(const chunk_set *c, int hd, int S, int col, int pos) {
    for (int d = 0; d < hd; d++) {
        float a = (float)pos * c->inv_freq[d % (hd / 2)];
        c->cs[(size_t)d * S + col] = (float)cos((double)a);
        c->sn[(size_t)d * S + col] = (float)sin((double)a);
    }
}

/* A sliding layer's inputs (Gemma 3): slot j of the W-long cache holds the
 * latest position t = j (mod W) written so far; the token at position q
 * sees it when t <= q and q - t < sliding_window. */
static void chunk_inputs_local(qb_host *h, int n, int p, int S) {
    const qwen3_config *c = &h->man.cfg;
    int hd = c->head_dim, W = h->W, last = p + n - 1;
    chunk_set l = {h->cs_l, h->sn_l, h->mask_l, h->wr_l, h->inv_freq_l, W};
    set_clear(&l, hd, S);
    for (int i = 0; i < n; i++) {
        int pos = p + i, col = pos % S;
        set_rope(&l, hd, S, col, pos);
        h->mask_l[(size_t)col * W] = (float)LOWER_MASK_NEG;
        for (int j = 0; j < W; j++) {
            int t = last - ((last - j) % W + W) % W;
            if (t >= 0 && t <= pos && pos - t < c->sliding_window)
                h->mask_l[(size_t)col * W + j] = 0.0f;
        }
        h->wr_l[pos % W] = 1.0f;
    }
}

void qb_host_chunk_inputs(qb_host *h, const int32_t *toks, int n, int p, int S) {
    const qwen3_config *c = &h->man.cfg;
    int D = c->hidden_size, hd = c->head_dim, ctx = h->man.ctx;
    chunk_set g = {h->cs, h->sn, h->mask, h->wr, h->inv_freq, ctx};
    memset(h->x, 0, (size_t)D * S * sizeof(float));
    set_clear(&g, hd, S);
    for (int i = 0; i < n; i++) {
        int pos = p + i, col = pos % S;
        size_t row = (size_t)toks[i] * D;
        for (int d = 0; d < D; d++)
            h->x[(size_t)d * S + col] =
                nc_round_fp16(lower_tensor_f32_at(h->embed, row + d) * h->embed_scale);
        set_rope(&g, hd, S, col, pos);
        for (int k = 0; k <= pos; k++)
            h->mask[(size_t)col * ctx + k] = 0.0f;
        h->wr[pos] = 1.0f;
    }
    if (h->W) chunk_inputs_local(h, n, p, S);
}

typedef struct head_task {
    qb_host *h;
    float *logits;
} head_task;

static void head_rows(void *ctx, int task, int thread) {
    (void)thread;
    head_task *t = ctx;
    const qb_host *h = t->h;
    int D = h->man.cfg.hidden_size, V = h->man.cfg.vocab_size;
    for (int r = task * 256; r < V && r < task * 256 + 256; r++) {
        double s = 0;
        for (int d = 0; d < D; d++)
            s += (double)lower_tensor_f32_at(h->lm_head, (size_t)r * D + d) * h->normed[d];
        t->logits[r] = (float)s;
    }
}

void qb_host_head_cpu(qb_host *h, const float *x, int col, int S, float *logits) {
    const qwen3_config *c = &h->man.cfg;
    int D = c->hidden_size;
    double ss = 0;
    for (int d = 0; d < D; d++) {
        double v = x[(size_t)d * S + col];
        ss += v * v;
    }
    float r = (float)(1.0 / sqrt(ss / D + c->rms_norm_eps));
    for (int d = 0; d < D; d++)
        h->normed[d] = x[(size_t)d * S + col] * r * lower_tensor_f32_at(h->final_norm, (size_t)d);
    head_task t = {h, logits};
    nc_pool_for(h->pool, (c->vocab_size + 255) / 256, head_rows, &t);
}

void qb_host_rows(qb_host *h, const float *x, int n, int p, int S) {
    int D = h->man.cfg.hidden_size;
    for (int i = 0; i < n; i++)
        for (int d = 0; d < D; d++)
            h->rows[(size_t)i * D + d] = x[(size_t)d * S + (p + i) % S];
}

nc_status qb_host_check(const qb_host *h, const int32_t *tokens, int n, int pos, nc_error *err) {
    if (n < 0 || n > h->man.ctx - pos)
        return nc_fail(err, NC_ERR_RANGE,
                       "context full: %d tokens in the cache + %d new > context of %d tokens "
                       "(the bundle's --ctx)",
                       pos, n, h->man.ctx);
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= h->man.cfg.vocab_size)
            return nc_fail(err, NC_ERR_INVALID,
                           "token id %d at index %d is outside the vocabulary (size %d)",
                           (int)tokens[i], i, h->man.cfg.vocab_size);
    return NC_OK;
}

int qb_seq_pos(const engine *e, const engine_seq *s) {
    (void)e;
    return ((const qb_seq *)s)->pos;
}

void qb_seq_init(qb_seq *s, const qb_host *h) {
    s->pos = 0;
    s->windowed = h->W > 0;
    s->keep_span = h->W - h->man.cfg.sliding_window + 1;
}

int qb_seq_truncate(engine *e, engine_seq *s, int n_keep) {
    (void)e;
    qb_seq *q = (qb_seq *)s;
    /* a sliding layer's window may have overwritten what position n_keep
     * still sees: then nothing is kept (the caller recomputes) */
    if (n_keep >= 0 && q->windowed && q->pos - n_keep > q->keep_span) n_keep = 0;
    if (n_keep >= 0 && n_keep < q->pos) q->pos = n_keep;
    return q->pos;
}

static nc_status forward(qb_host *h, engine_step_item *it, qb_chunk_fn run, void *user) {
    int pos = ((qb_seq *)it->seq)->pos, n = it->n;
    NC_TRY(qb_host_check(h, it->tokens, n, pos, &it->err));
    for (int done = 0; done < n;) {
        int take = n - done < h->S_max ? n - done : h->S_max;
        int S = h->man.seqs[qb_host_bucket(h, take)];
        qb_host_chunk_inputs(h, it->tokens + done, take, pos + done, S);
        NC_TRY(run(user, it->seq, take, pos + done, S, done + take == n ? it->logits : NULL,
                   &it->err));
        done += take;
    }
    return NC_OK;
}

nc_status qb_host_step(qb_host *h, engine_step_item *items, int n_items, qb_chunk_fn run,
                       void *user) {
    for (int i = 0; i < n_items; i++) {
        items[i].status = forward(h, &items[i], run, user);
        if (items[i].status == NC_OK) ((qb_seq *)items[i].seq)->pos += items[i].n;
    }
    return NC_OK;
}

void qb_host_kv_write(const qb_host *h, float *cache, const float *fresh, size_t C, int S) {
    size_t ctx = (size_t)h->man.ctx;
    for (size_t j = 0; j < ctx; j++) {
        if (h->wr[j] < 0.5f) continue;
        for (size_t c = 0; c < C; c++)
            cache[c * ctx + j] = fresh[c * (size_t)S + j % (size_t)S];
    }
}
