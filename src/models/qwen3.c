/* Qwen3 forward pass on the CPU, as transformers' modeling_qwen3.py computes
 * it (and modeling_llama.py: the same without the QK-norm, q_norm NULL;
 * modeling_gemma3.py: a scaled embedding, norms after the attention and the
 * MLP too, a GELU-tanh gate, its attention scale, sliding-window layers
 * with their own RoPE base, a final logit softcap): pre-norm decoder
 * layers with QK-norm before rotate-half RoPE, grouped query attention and
 * a SiLU-gated MLP. A sliding layer's window is a mask (each row's first
 * key): its cache keeps every position, as a global layer's does. A batch is a set of rows, each
 * one token of some sequence at some position: every matrix sees all rows at once (a prompt, or one
 * new token of each of several sequences), only attention and the KV cache are per sequence.
 * Weights stay in the mmap in their stored dtype (float, or Q8/Q4 blocks read with int8
 * activations); the KV cache is fp32, [layer][kv head][position][head_dim]. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/half.h"
#include "cpu/cpu_attention.h"
#include "cpu/cpu_ops.h"
#include "models/dec_kv.h"
#include "models/qwen3_impl.h"

typedef struct {
    qwen3_model *m;
    int layer;
} layer_ctx;

static size_t kv_dim(const qwen3_config *c) {
    return (size_t)c->num_key_value_heads * c->head_dim;
}

/* Row i: q_norm and RoPE on each query head; k_norm and RoPE on each key
 * head; then K and V into the row's cache at its position. */
static void qk_norm_rope_store_row(void *ctx, int i, int thread) {
    (void)thread;
    const layer_ctx *lc = ctx;
    qwen3_workspace *w = &lc->m->ws;
    const qwen3_config *c = &lc->m->cfg;
    const qwen3_layer *L = &lc->m->layers[lc->layer];
    int hd = c->head_dim;
    size_t kvd = kv_dim(c);
    int local = qwen3_layer_sliding(c, lc->layer);
    const float *cs = (local ? w->rope_cos_local : w->rope_cos) + (size_t)i * hd / 2;
    const float *sn = (local ? w->rope_sin_local : w->rope_sin) + (size_t)i * hd / 2;
    float *q = w->q + (size_t)i * c->num_attention_heads * hd;
    dec_norm_rope_heads(lc->m->b.kern->rows, q, c->num_attention_heads, hd, L->q_norm,
                        c->rms_norm_eps, cs, sn, hd);
    float *k = w->k + (size_t)i * kvd;
    dec_norm_rope_heads(lc->m->b.kern->rows, k, c->num_key_value_heads, hd, L->k_norm,
                        c->rms_norm_eps, cs, sn, hd);
    const dec_rows_ws *R = &lc->m->b.rows;
    qwen3_state *s = w->row_state[i];
    dec_kv kv = {kvd, hd, s->ctx, lc->m->b.kv_f16};
    dec_kv_store(&kv, s->k_cache, s->v_cache, s->slot ? s->slot[lc->layer] : lc->layer,
                 R->row_pos[i], k, w->v + (size_t)i * kvd,
                 &R->row_k[i], &R->row_v[i]);
    R->row_kv_head_stride[i] = dec_kv_head_stride(&kv);
}

/* The RoPE angles of each planned row's position (and a sliding layer's
 * first key). */
static void rows_rope(qwen3_model *m, int n) {
    const qwen3_config *c = &m->cfg;
    dec_rows_ws *R = &m->b.rows;
    qwen3_workspace *w = &m->ws;
    int hd = c->head_dim;
    for (int i = 0; i < n; i++) {
        cpu_rope_angles(w->rope_cos + (size_t)i * hd / 2, w->rope_sin + (size_t)i * hd / 2,
                        m->inv_freq, hd, R->row_pos[i]);
        R->row_n_keys[i] = R->row_pos[i] + 1;
        if (!w->first_key) continue;
        cpu_rope_angles(w->rope_cos_local + (size_t)i * hd / 2,
                        w->rope_sin_local + (size_t)i * hd / 2, m->inv_freq_local, hd,
                        R->row_pos[i]);
        w->first_key[i] =
            R->row_pos[i] < c->sliding_window ? 0 : R->row_pos[i] - c->sliding_window + 1;
    }
}

/* Decoder layer l over the n planned rows of ws.x, in place. */
static void layer_rows(qwen3_model *m, int l, int n) {
    const qwen3_config *c = &m->cfg;
    const cpu_kernels *K = m->b.kern;
    dec_rows_ws *R = &m->b.rows;
    qwen3_workspace *w = &m->ws;
    nc_pool *pool = m->b.pool;
    int d = c->hidden_size, hd = c->head_dim;
    size_t qd = (size_t)c->num_attention_heads * hd, kvd = kv_dim(c);
    const qwen3_layer *L = &m->layers[l];
    layer_ctx lc = {m, l};

    /* attention */
    /* norm (and int8 blocks) of every row in one pass and dispatch */
    cpu_act xa =
        dec_act_rows_q(&m->b.dec, w->xb, n, d, (const cpu_mat *[]){&L->q, &L->k, &L->v}, 3);
    dec_row_steps(
        &m->b.dec,
        &(dec_row_step){w->x, NULL, L->attn_norm, w->xb, NULL, d, c->rms_norm_eps, &xa, 0}, n);
    /* q, k, v: one input, one dispatch */
    cpu_matmul_many(pool, K, &xa, 3,
                    (cpu_product[]){{&L->q, w->q, qd}, {&L->k, w->k, kvd}, {&L->v, w->v, kvd}});
    nc_pool_for(pool, n, qk_norm_rope_store_row, &lc);
    cpu_attention_args aa = {.q = w->q,
                             .out = w->att,
                             .ldq = qd,
                             .ldo = qd,
                             .k_cache = R->row_k,
                             .v_cache = R->row_v,
                             .kv_head_stride = R->row_kv_head_stride,
                             .kv_f16 = m->b.kv_f16,
                             .n_keys = R->row_n_keys,
                             .first_key = qwen3_layer_sliding(c, l) ? w->first_key : NULL,
                             .n = n,
                             .n_heads = c->num_attention_heads,
                             .n_kv_heads = c->num_key_value_heads,
                             .head_dim = hd,
                             .scale = m->attn_scale,
                             .scores = w->scores,
                             .scores_stride = (size_t)c->max_position_embeddings,
                             .kv_pack = &m->b.kv_pack};
    cpu_attention(pool, K, &aa);
    cpu_act att = dec_act_rows(&m->b.dec, w->att, qd, n, (int)qd);
    cpu_matmul_act(pool, K, &L->o, &att, w->xb, d);
    if (L->post_attn_norm)
        dec_norm_rows(&m->b.dec, w->xb, n, d, L->post_attn_norm, c->rms_norm_eps);

    /* MLP: down(silu(gate(x)) * up(x)), after the residual add of the
     * attention output */
    dec_mlp mlp = {L->mlp_norm,     &L->gate,        &L->up,
                   &L->down,        c->rms_norm_eps, c->act == QWEN3_ACT_GELU_TANH,
                   L->post_mlp_norm};
    dec_mlp_rows(&m->b.dec, &mlp, w->x, w->xb, w->xb, w->hb, w->hb2, n);
}

/* The decoder over the n rows planned in the workspace (row_token,
 * row_state, row_pos); leaves the final hidden states in ws.x. */
static void decoder_rows(qwen3_model *m, int n) {
    const qwen3_config *c = &m->cfg;
    const cpu_kernels *K = m->b.kern;
    dec_rows_ws *R = &m->b.rows;
    int d = c->hidden_size;
    /* token embeddings, and the RoPE angles of each row's position */
    for (int i = 0; i < n; i++) {
        float *x = m->ws.x + (size_t)i * d;
        cpu_mat_row_to_f32(K, &m->embed, R->row_token[i], x); /* any type, Q8/Q4 too */
        if (m->embed_scale)
            for (int j = 0; j < d; j++)
                x[j] *= m->embed_scale;
    }
    rows_rope(m, n);
    for (int l = 0; l < c->num_hidden_layers; l++) {
        layer_rows(m, l, n);
        if (m->layer_hook) m->layer_hook(m->layer_hook_user, l, m->ws.x, n, d);
    }
}

/* Final norm and LM head for the rows that want logits (logit_dst set),
 * QWEN3_LOGIT_ROWS at a time through the workspace. */
static void lm_head_rows(qwen3_model *m, int n) {
    const dec_head h = {m->final_norm,      &m->lm_head,       m->cfg.rms_norm_eps,
                        m->cfg.hidden_size, m->cfg.vocab_size, m->cfg.final_softcap};
    dec_head_rows(&m->b.dec, &h, m->ws.x, m->b.rows.logit_dst, n, m->ws.xb, m->ws.logits);
}

static nc_status check_item(const qwen3_model *m, const qwen3_batch_item *it, int index,
                            nc_error *err) {
    if (!it->state || it->state->m != m || it->n < 0 || (it->n > 0 && !it->tokens))
        return nc_fail(err, NC_ERR_INVALID, "Qwen3 forward pass: batch item %d is malformed", index);
    return dec_check_tokens(it->tokens, it->n, it->state->pos, it->state->ctx, m->cfg.vocab_size,
                            err);
}

nc_status qwen3_forward_batch(qwen3_model *m, qwen3_batch_item *items, int count, nc_error *err) {
    for (int i = 0; i < count; i++) {
        NC_TRY(check_item(m, &items[i], i, err));
        for (int j = 0; j < i; j++)
            if (items[j].state == items[i].state)
                return nc_fail(err, NC_ERR_INVALID,
                               "Qwen3 forward pass: batch items %d and %d share a state", j, i);
    }
    qwen3_workspace *w = &m->ws;
    dec_rows_ws *R = &m->b.rows;
    size_t V = (size_t)m->cfg.vocab_size;
    int done[64] = {0}; /* tokens of each item already through */
    int *dn = count <= 64 ? done : calloc((size_t)count, sizeof *dn);
    if (!dn) return nc_fail(err, NC_ERR_NOMEM, "Qwen3 forward pass: out of memory");
    for (;;) {
        /* Plan one batch: rows of each item in turn, up to QWEN3_MAX_BATCH
         * rows and each state's own limit; positions follow the state. */
        int n = 0;
        for (int i = 0; i < count && n < QWEN3_MAX_BATCH; i++) {
            qwen3_batch_item *it = &items[i];
            int take = it->n - dn[i];
            if (take > it->state->batch) take = it->state->batch;
            if (take > QWEN3_MAX_BATCH - n) take = QWEN3_MAX_BATCH - n;
            for (int j = 0; j < take; j++, n++) {
                int t = dn[i] + j;
                R->row_token[n] = it->tokens[t];
                w->row_state[n] = it->state;
                R->row_pos[n] = it->state->pos + j;
                R->logit_dst[n] = it->logits_all   ? it->logits_all + (size_t)t * V
                                  : t == it->n - 1 ? it->logits_last
                                                   : NULL;
            }
            dn[i] += take;
            it->state->pos += take; /* rows planned above carry their positions */
        }
        if (n == 0) break;
        decoder_rows(m, n);
        lm_head_rows(m, n);
    }
    for (int i = 0; i < count; i++) /* both outputs asked: the last row is copied */
        if (items[i].logits_all && items[i].logits_last && items[i].n > 0)
            memcpy(items[i].logits_last, items[i].logits_all + (size_t)(items[i].n - 1) * V,
                   V * sizeof(float));
    if (dn != done) free(dn);
    return NC_OK;
}

nc_status qwen3_forward(qwen3_model *m, qwen3_state *s, const int32_t *tokens, int n,
                        float *logits_last, float *logits_all, nc_error *err) {
    qwen3_batch_item it = {s, tokens, n, logits_last, logits_all};
    return qwen3_forward_batch(m, &it, 1, err);
}

void qwen3_set_layer_hook(qwen3_model *m, qwen3_layer_hook hook, void *user) {
    m->layer_hook = hook;
    m->layer_hook_user = user;
}

nc_status qwen3_layer_forward(qwen3_model *m, qwen3_state *s, int layer, float *rows, int n,
                              int pos, nc_error *err) {
    const qwen3_config *c = &m->cfg;
    if (!s || s->m != m || layer < 0 || layer >= c->num_hidden_layers ||
        (s->slot && s->slot[layer] < 0))
        return nc_fail(err, NC_ERR_INVALID, "Qwen3 layer %d: the state holds no cache for it",
                       layer);
    if (n < 0 || pos < 0 || pos > s->ctx - n)
        return nc_fail(err, NC_ERR_RANGE,
                       "Qwen3 layer %d: %d tokens at position %d outside a context of %d", layer,
                       n, pos, s->ctx);
    dec_rows_ws *R = &m->b.rows;
    size_t d = (size_t)c->hidden_size;
    for (int done = 0; done < n;) {
        int take = n - done < QWEN3_MAX_BATCH ? n - done : QWEN3_MAX_BATCH;
        for (int i = 0; i < take; i++) {
            m->ws.row_state[i] = s;
            R->row_pos[i] = pos + done + i;
            R->logit_dst[i] = NULL;
        }
        rows_rope(m, take);
        memcpy(m->ws.x, rows + (size_t)done * d, (size_t)take * d * sizeof(float));
        layer_rows(m, layer, take);
        memcpy(rows + (size_t)done * d, m->ws.x, (size_t)take * d * sizeof(float));
        done += take;
    }
    if (pos + n > s->pos) s->pos = pos + n;
    return NC_OK;
}
