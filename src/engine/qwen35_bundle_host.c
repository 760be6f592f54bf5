/* The Qwen3.5 host side of a lowered bundle (qwen35_bundle_host.h): what
 * qwen35-mil and qwen35-ane share beyond Qwen3's host. */
#include "engine/qwen35_bundle_host.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lower/qwen35_lower.h"

nc_status q35_host_open(q35_host *q, const char *dir, const qb_host *h, nc_error *err) {
    memset(q, 0, sizeof *q);
    NC_TRY(qwen35_config_load(dir, &q->cfg, err));
    const qwen35_config *c = &q->cfg;
    const qwen3_config *shape = &h->man.cfg;
    if (shape->hidden_size != c->hidden_size || shape->num_hidden_layers != c->num_hidden_layers ||
        shape->head_dim != c->head_dim || shape->vocab_size != c->vocab_size)
        return nc_fail(err, NC_ERR_FORMAT,
                       "%s: manifest.json and config.json describe different models", dir);
    size_t smax = (size_t)h->S_max, W = LOWER_STEP_SEQ;
    q->inv_freq = malloc((size_t)c->rotary_dim / 2 * sizeof *q->inv_freq + 1);
    q->valid = malloc(smax * sizeof *q->valid);
    q->pick_state = malloc(W * W * sizeof *q->pick_state);
    q->pick_new = malloc(smax * W * sizeof *q->pick_new);
    q->replay = malloc((size_t)h->man.ctx * sizeof *q->replay);
    if (!q->inv_freq || !q->valid || !q->pick_state || !q->pick_new || !q->replay)
        return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    /* as transformers computes it: theta^(-2i/rotary_dim) in fp32 */
    for (int i = 0; i < c->rotary_dim / 2; i++)
        q->inv_freq[i] =
            (float)(1.0 / pow((double)c->rope_theta, (double)(2 * i) / (double)c->rotary_dim));
    return NC_OK;
}

void q35_host_free(q35_host *q) {
    free(q->inv_freq);
    free(q->valid);
    free(q->pick_state);
    free(q->pick_new);
    free(q->replay);
    memset(q, 0, sizeof *q);
}

void q35_host_rope(const q35_host *q, qb_host *h, int n, int p, int S) {
    int hd = q->cfg.head_dim, rd = q->cfg.rotary_dim;
    for (int i = 0; i < n; i++) {
        int col = (p + i) % S;
        for (int d = 0; d < hd; d++) {
            float a = d < rd ? (float)(p + i) * q->inv_freq[d % (rd / 2)] : 0.0f;
            h->cs[(size_t)d * S + col] = d < rd ? (float)cos((double)a) : 1.0f;
            h->sn[(size_t)d * S + col] = d < rd ? (float)sin((double)a) : 0.0f;
        }
    }
}

/* The padding is marked invalid; the new conv window is the last K-1
 * inputs (of the state when the chunk is shorter than that). */
void q35_host_chunk_picks(q35_host *q, int n, int S) {
    size_t W = LOWER_STEP_SEQ;
    int K = q->cfg.linear_conv_kernel_dim;
    for (int i = 0; i < S; i++)
        q->valid[i] = i < n ? 1.0f : 0.0f;
    memset(q->pick_state, 0, W * W * sizeof(float));
    memset(q->pick_new, 0, (size_t)S * W * sizeof(float));
    for (int k = 0; k < K - 1; k++) {
        int at = n - (K - 1) + k; /* the input kept in column k, from the chunk's start */
        if (at < 0)
            q->pick_state[(size_t)(K - 1 + at) * W + k] = 1.0f;
        else
            q->pick_new[(size_t)at * W + k] = 1.0f;
    }
}

size_t q35_host_kv_bytes_per_token(const q35_host *q) {
    const qwen35_config *c = &q->cfg;
    return 2 * sizeof(float) * (size_t)c->n_full * c->num_key_value_heads * (size_t)c->head_dim;
}

nc_status q35_seq_init(q35_seq *s, const qb_host *h, nc_error *err) {
    s->tokens = calloc((size_t)h->man.ctx, sizeof(int32_t));
    if (!s->tokens)
        return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory for a sequence (ctx %d)", h->dir,
                       h->man.ctx);
    return NC_OK;
}

void q35_seq_release(q35_seq *s) {
    free(s->tokens);
    s->tokens = NULL;
}

int q35_seq_truncate(engine *e, engine_seq *seq, int n_keep) {
    (void)e;
    q35_seq *s = (q35_seq *)seq;
    if (n_keep < 0 || n_keep >= s->base.pos) return s->base.pos;
    s->base.pos = n_keep;
    s->lin_pos = 0;
    s->need_reset = 1;
    return n_keep;
}

nc_status q35_host_step(q35_host *q, qb_host *h, engine_step_item *items, int n_items,
                        qb_chunk_fn run, q35_reset_fn reset, void *user) {
    for (int i = 0; i < n_items; i++) {
        engine_step_item it = items[i];
        q35_seq *s = (q35_seq *)it.seq;
        int pos = s->base.pos;
        items[i].status = qb_host_check(h, it.tokens, it.n, pos, &items[i].err);
        if (items[i].status != NC_OK || it.n == 0) continue; /* nothing changed */
        if (s->need_reset) {
            items[i].status = reset(user, it.seq, &items[i].err);
            if (items[i].status != NC_OK) continue;
            s->need_reset = 0;
        }
        int back = pos - s->lin_pos;
        if (back > 0) {
            memcpy(q->replay, s->tokens + s->lin_pos, (size_t)back * sizeof(int32_t));
            memcpy(q->replay + back, it.tokens, (size_t)it.n * sizeof(int32_t));
            it.tokens = q->replay;
            it.n += back;
            s->base.pos = s->lin_pos;
        }
        qb_host_step(h, &it, 1, run, user);
        items[i].status = it.status;
        items[i].err = it.err;
        if (it.status == NC_OK) {
            memcpy(s->tokens + s->lin_pos, it.tokens, (size_t)it.n * sizeof(int32_t));
            s->lin_pos = s->base.pos;
        } else { /* the linear states may be part-way: rebuilt by the next step */
            s->base.pos = pos;
            s->lin_pos = 0;
            s->need_reset = 1;
        }
    }
    return NC_OK;
}
