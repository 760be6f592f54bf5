/* Host side of a decoder bundle (decoder_bundle_host.h): checkpoint
 * tensors, the layers' carried buffers, chunk inputs, the CPU head, the
 * chunk loop with its reset and replay. */
#include "engine/decoder_bundle_host.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/half.h"
#include "engine/engines.h"
#include "lower/qwen35_lower.h"
#include "lower/weights_fp16.h"
#include "models/rope_scaling.h"

const char *const db_carried_names[DB_N_CARRIED] = {"k_cache", "v_cache", "conv_state",
                                                    "delta_state"};

static nc_status find_tensor(db_host *h, const char *name, int64_t d0, int64_t d1,
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

void db_host_free(db_host *h) {
    nc_pool_free(h->pool);
    hf_weights_close(h->ckpt);
    float *bufs[] = {h->x,      h->cs,         h->sn,    h->mask,       h->wr,      h->inv_freq,
                     h->normed, h->rows,       h->hx,    h->cs_l,       h->sn_l,    h->mask_l,
                     h->wr_l,   h->inv_freq_l, h->valid, h->pick_state, h->pick_new};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        free(bufs[i]);
    free(h->replay);
    free(h->carried);
    lower_manifest_free(&h->man);
    memset(h, 0, sizeof *h);
}

size_t db_io_count(const lower_io *io) {
    size_t n = 1;
    for (int i = 0; i < io->rank; i++)
        n *= (size_t)io->shape[i];
    return n;
}

/* What each layer carries, as its functions declare it (a sliding layer's
 * cache is its window; --matmul-pad widens a recurrent state). */
static nc_status read_carried(db_host *h, nc_error *err) {
    const lower_manifest *man = &h->man;
    int L = man->cfg.num_hidden_layers;
    h->carried = calloc((size_t)L * DB_N_CARRIED, sizeof *h->carried);
    if (!h->carried) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    for (int p = 0; p < man->n_programs; p++) {
        const lower_program_info *pi = &man->programs[p];
        if (pi->layer < 0 || pi->layer >= L) continue;
        size_t *c = &h->carried[(size_t)pi->layer * DB_N_CARRIED];
        for (int f = 0; f < pi->n_fns; f++)
            for (int k = 0; k < DB_N_CARRIED; k++) {
                const lower_io *io = lower_fn_io(&pi->fns[f], db_carried_names[k], 0);
                if (io && !c[k]) c[k] = db_io_count(io);
            }
    }
    for (int l = 0; l < L; l++)
        if (db_host_recurrent(h, l)) {
            if (!h->carried[(size_t)l * DB_N_CARRIED + DB_CONV_STATE])
                return nc_fail(err, NC_ERR_FORMAT,
                               "%s: layer %d takes delta_state without conv_state", h->dir, l);
            h->n_recurrent++;
        }
    return NC_OK;
}

/* The embedding scale (Gemma 3), rounded to the embedding's dtype as HF's
 * (and the CPU decoder's) is; the sliding layers' window and inputs. */
static nc_status open_sliding(db_host *h, nc_error *err) {
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

/* A recurrent layer's prefill inputs and the replay buffer. */
static nc_status open_recurrent(db_host *h, nc_error *err) {
    if (!h->n_recurrent) return NC_OK;
    size_t smax = (size_t)h->S_max, W = LOWER_STEP_SEQ;
    h->valid = malloc(smax * sizeof *h->valid);
    h->pick_state = malloc(W * W * sizeof *h->pick_state);
    h->pick_new = malloc(smax * W * sizeof *h->pick_new);
    h->replay = malloc((size_t)h->man.ctx * sizeof *h->replay);
    if (!h->valid || !h->pick_state || !h->pick_new || !h->replay)
        return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    return NC_OK;
}

/* The family's sizes of the bundle's config.json, checked against the
 * manifest's model and programs. */
static nc_status read_dims(db_host *h, const char *dir, const model_family_row *family,
                           nc_error *err) {
    if (!family->read_dims)
        return nc_fail(err, NC_ERR_INTERNAL, "%s: the %s family has no decoder bundle", dir,
                       family->title);
    NC_TRY(family->read_dims(dir, &h->dims, err));
    const decoder_dims *d = &h->dims;
    const qwen3_config *c = &h->man.cfg;
    if (c->hidden_size != d->hidden || c->num_hidden_layers != d->layers ||
        c->head_dim != d->head_dim || c->vocab_size != d->vocab || d->n_linear != h->n_recurrent)
        return nc_fail(err, NC_ERR_FORMAT,
                       "%s: manifest.json and config.json describe different models", dir);
    return NC_OK;
}

nc_status db_host_open(db_host *h, const char *dir, const model_family_row *family, int n_threads,
                       nc_error *err) {
    memset(h, 0, sizeof *h);
    snprintf(h->dir, sizeof h->dir, "%s", dir);
    NC_TRY(lower_manifest_read(dir, &h->man, err));
    const qwen3_config *c = &h->man.cfg;
    h->S_max = h->man.seqs[h->man.n_seqs - 1];
    nc_status st = read_carried(h, err);
    if (!st) st = read_dims(h, dir, family, err);
    if (!st) st = hf_weights_open(h->man.source_dir, &h->ckpt, err);
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
        /* the rotated width of a head: all of it but for a partial rotary */
        int rd = h->dims.rotary_dim ? h->dims.rotary_dim : c->head_dim;
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
        /* as transformers computes it: theta^(-2i/rd) in fp32 */
        for (int i = 0; !st && i < rd / 2; i++)
            h->inv_freq[i] =
                (float)(1.0 / pow((double)c->rope_theta, (double)(2 * i) / (double)rd));
        /* Llama 3's scaled frequencies (none for the others), as the CPU decoder scales them */
        if (!st) rope_scaling_apply(h->inv_freq, rd / 2, &c->rope_scaling);
    }
    if (!st) st = open_sliding(h, err);
    if (!st) st = open_recurrent(h, err);
    if (st) db_host_free(h);
    return st;
}

nc_status db_host_fill_engine(const db_host *h, engine *e, const engine_options *opt, int kv_f16,
                              nc_error *err) {
    const lower_manifest *man = &h->man;
    if (opt->ctx > 0 && opt->ctx != man->ctx)
        return nc_fail(err, NC_ERR_INVALID,
                       "--ctx %d: the bundle %s was compiled for a context of %d tokens "
                       "(leave --ctx out, or recompile with nectar compile --ctx %d)",
                       opt->ctx, h->dir, man->ctx, opt->ctx);
    const qwen3_config *c = &man->cfg;
    e->dims = h->dims;
    e->n_vocab = c->vocab_size;
    e->ctx_max = man->ctx;
    e->n_layers = c->num_hidden_layers;
    e->hidden = c->hidden_size;
    e->weight_dtype = "fp16";
    e->is_kv_f16 = 1;
    e->n_threads = nc_pool_threads(h->pool);
    e->kv_bytes_per_token = decoder_kv_bytes_per_token(&e->dims, kv_f16);
    engine_set_eos(e, c->eos_token_ids, c->n_eos);
    return NC_OK;
}

/* One set of a chunk's attention inputs: RoPE tables [hd][S] (cos 1, sin 0
 * in unused columns and past the rotated width rd), mask [S][len] (closed,
 * but for padding rows' first key: any finite row), write mask [len] (0). */
typedef struct chunk_set {
    float *cs, *sn, *mask, *wr;
    const float *inv_freq;
    int len, rd;
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
static void set_rope(const chunk_set *c, int S, int col, int pos) {
    for (int d = 0; d < c->rd; d++) {
        float a = (float)pos * c->inv_freq[d % (c->rd / 2)];
        c->cs[(size_t)d * S + col] = (float)cos((double)a);
        c->sn[(size_t)d * S + col] = (float)sin((double)a);
    }
}

/* A sliding layer's inputs (Gemma 3): slot j of the W-long cache holds the
 * latest position t = j (mod W) written so far; the token at position q
 * sees it when t <= q and q - t < sliding_window. */
static void chunk_inputs_local(db_host *h, int n, int p, int S) {
    const qwen3_config *c = &h->man.cfg;
    int hd = c->head_dim, W = h->W, last = p + n - 1;
    chunk_set l = {h->cs_l, h->sn_l, h->mask_l, h->wr_l, h->inv_freq_l, W, hd};
    set_clear(&l, hd, S);
    for (int i = 0; i < n; i++) {
        int pos = p + i, col = pos % S;
        set_rope(&l, S, col, pos);
        h->mask_l[(size_t)col * W] = (float)LOWER_MASK_NEG;
        for (int j = 0; j < W; j++) {
            int t = last - ((last - j) % W + W) % W;
            if (t >= 0 && t <= pos && pos - t < c->sliding_window)
                h->mask_l[(size_t)col * W + j] = 0.0f;
        }
        h->wr_l[pos % W] = 1.0f;
    }
}

/* A recurrent layer's prefill chunk of n tokens (in order from column 0):
 * the padding is marked invalid; the new conv window is the last K-1
 * inputs (of the state when the chunk is shorter than that). */
static void chunk_picks(db_host *h, int n, int S) {
    size_t W = LOWER_STEP_SEQ;
    int K = h->dims.lin_conv_kernel;
    for (int i = 0; i < S; i++)
        h->valid[i] = i < n ? 1.0f : 0.0f;
    memset(h->pick_state, 0, W * W * sizeof(float));
    memset(h->pick_new, 0, (size_t)S * W * sizeof(float));
    for (int k = 0; k < K - 1; k++) {
        int at = n - (K - 1) + k; /* the input kept in column k, from the chunk's start */
        if (at < 0)
            h->pick_state[(size_t)(K - 1 + at) * W + k] = 1.0f;
        else
            h->pick_new[(size_t)at * W + k] = 1.0f;
    }
}

void db_host_chunk_inputs(db_host *h, const int32_t *toks, int n, int p, int S) {
    const qwen3_config *c = &h->man.cfg;
    int D = c->hidden_size, hd = c->head_dim, ctx = h->man.ctx;
    int rd = h->dims.rotary_dim ? h->dims.rotary_dim : hd;
    chunk_set g = {h->cs, h->sn, h->mask, h->wr, h->inv_freq, ctx, rd};
    memset(h->x, 0, (size_t)D * S * sizeof(float));
    set_clear(&g, hd, S);
    for (int i = 0; i < n; i++) {
        int pos = p + i, col = pos % S;
        size_t row = (size_t)toks[i] * D;
        for (int d = 0; d < D; d++)
            h->x[(size_t)d * S + col] =
                nc_round_fp16(lower_tensor_f32_at(h->embed, row + d) * h->embed_scale);
        set_rope(&g, S, col, pos);
        for (int k = 0; k <= pos; k++)
            h->mask[(size_t)col * ctx + k] = 0.0f;
        h->wr[pos] = 1.0f;
    }
    if (h->W) chunk_inputs_local(h, n, p, S);
    if (h->n_recurrent && n > 1) chunk_picks(h, n, S);
}

typedef struct head_task {
    db_host *h;
    float *logits;
} head_task;

static void head_rows(void *ctx, int task, int thread) {
    (void)thread;
    head_task *t = ctx;
    const db_host *h = t->h;
    int D = h->man.cfg.hidden_size, V = h->man.cfg.vocab_size;
    for (int r = task * 256; r < V && r < task * 256 + 256; r++) {
        double s = 0;
        for (int d = 0; d < D; d++)
            s += (double)lower_tensor_f32_at(h->lm_head, (size_t)r * D + d) * h->normed[d];
        t->logits[r] = (float)s;
    }
}

void db_host_head_cpu(db_host *h, const float *x, int col, int S, float *logits) {
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

void db_host_rows(db_host *h, const float *x, int n, int p, int S) {
    int D = h->man.cfg.hidden_size;
    for (int i = 0; i < n; i++)
        for (int d = 0; d < D; d++)
            h->rows[(size_t)i * D + d] = x[(size_t)d * S + (p + i) % S];
}

void db_host_kv_write(const db_host *h, float *cache, size_t width, const float *fresh, size_t C,
                      int S) {
    size_t ctx = (size_t)h->man.ctx;
    for (size_t j = 0; j < ctx; j++) {
        if (h->wr[j] < 0.5f) continue;
        for (size_t c = 0; c < C; c++)
            cache[c * width + j % width] = fresh[c * (size_t)S + j % (size_t)S];
    }
}

/* A forward of n tokens at position pos against the context and the
 * vocabulary; the message names the bundle's --ctx. */
static nc_status check_tokens(const db_host *h, const int32_t *tokens, int n, int pos,
                              nc_error *err) {
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

nc_status db_seq_init(db_seq *s, const db_host *h, nc_error *err) {
    memset(s, 0, sizeof *s);
    s->windowed = h->W > 0;
    s->keep_span = h->W - h->man.cfg.sliding_window + 1;
    if (!h->n_recurrent) return NC_OK;
    s->tokens = calloc((size_t)h->man.ctx, sizeof(int32_t));
    if (!s->tokens)
        return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory for a sequence (ctx %d)", h->dir,
                       h->man.ctx);
    return NC_OK;
}

void db_seq_release(db_seq *s) {
    free(s->tokens);
    s->tokens = NULL;
}

int db_seq_pos(const engine *e, const engine_seq *s) {
    (void)e;
    return ((const db_seq *)s)->pos;
}

int db_seq_truncate(engine *e, engine_seq *seq, int n_keep) {
    (void)e;
    db_seq *s = (db_seq *)seq;
    if (n_keep < 0 || n_keep >= s->pos) return s->pos;
    if (s->tokens) { /* recurrent states: reset, then replay the kept tokens */
        s->lin_pos = 0;
        s->need_reset = 1;
    } else if (s->windowed && s->pos - n_keep > s->keep_span) {
        /* a sliding layer's window may have overwritten what position
         * n_keep still sees: nothing is kept (the caller recomputes) */
        n_keep = 0;
    }
    s->pos = n_keep;
    return n_keep;
}

static nc_status forward(db_host *h, engine_step_item *it, db_chunk_fn run, void *user) {
    int pos = ((db_seq *)it->seq)->pos, n = it->n;
    NC_TRY(check_tokens(h, it->tokens, n, pos, &it->err));
    for (int done = 0; done < n;) {
        int take = n - done < h->S_max ? n - done : h->S_max;
        int b = 0;
        while (b + 1 < h->man.n_seqs && h->man.seqs[b] < take)
            b++;
        int S = h->man.seqs[b];
        db_host_chunk_inputs(h, it->tokens + done, take, pos + done, S);
        NC_TRY(run(user, it->seq, take, pos + done, S, done + take == n ? it->logits : NULL,
                   &it->err));
        done += take;
    }
    return NC_OK;
}

/* An item of a sequence with recurrent states: a pending reset, the replay
 * of what they have not absorbed, then its own tokens. */
static void step_recurrent(db_host *h, engine_step_item *item, db_chunk_fn run, db_reset_fn reset,
                           void *user) {
    engine_step_item it = *item;
    db_seq *s = (db_seq *)it.seq;
    int pos = s->pos;
    item->status = check_tokens(h, it.tokens, it.n, pos, &item->err);
    if (item->status != NC_OK || it.n == 0) return; /* nothing changed */
    if (s->need_reset) {
        item->status = reset(user, it.seq, &item->err);
        if (item->status != NC_OK) return;
        s->need_reset = 0;
    }
    int back = pos - s->lin_pos;
    if (back > 0) {
        memcpy(h->replay, s->tokens + s->lin_pos, (size_t)back * sizeof(int32_t));
        memcpy(h->replay + back, it.tokens, (size_t)it.n * sizeof(int32_t));
        it.tokens = h->replay;
        it.n += back;
        s->pos = s->lin_pos;
    }
    item->status = forward(h, &it, run, user);
    item->err = it.err;
    if (item->status == NC_OK) {
        s->pos += it.n;
        memcpy(s->tokens + s->lin_pos, it.tokens, (size_t)it.n * sizeof(int32_t));
        s->lin_pos = s->pos;
    } else { /* the states may be part-way: rebuilt by the next step */
        s->pos = pos;
        s->lin_pos = 0;
        s->need_reset = 1;
    }
}

nc_status db_host_step(db_host *h, engine_step_item *items, int n_items, db_chunk_fn run,
                       db_reset_fn reset, void *user) {
    for (int i = 0; i < n_items; i++) {
        engine_step_item *it = &items[i];
        if (((db_seq *)it->seq)->tokens) {
            step_recurrent(h, it, run, reset, user);
            continue;
        }
        it->status = forward(h, it, run, user);
        if (it->status == NC_OK) ((db_seq *)it->seq)->pos += it->n;
    }
    return NC_OK;
}
