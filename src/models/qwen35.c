/* Qwen3.5 forward pass on the CPU, as transformers' modeling_qwen3_5.py
 * computes it. Each decoder layer: x += mixer(rmsnorm(x)); x += mlp(...),
 * where the RMSNorms scale by (1 + w) and the mixer is either
 *  - gated full attention: q_proj gives each head's query and an output
 *    gate; q/k RMSNorm, RoPE on the first rotary_dim dims of each head,
 *    grouped-query attention over the KV cache, out * sigmoid(gate), o_proj;
 *  - Gated DeltaNet: in_proj_qkv -> causal depthwise conv1d + SiLU ->
 *    L2-normed q, k and v; beta = sigmoid(in_proj_b), decay
 *    g = -exp(A_log) softplus(in_proj_a + dt_bias); the gated delta rule
 *    (chunked for a sequence's prompt rows, recurrent for one row); an
 *    RMSNorm per head gated by silu(in_proj_z); out_proj.
 * As in Qwen3, a batch is rows of one or more sequences sharing each pass
 * over the weights; a sequence's rows are contiguous (a segment), which the
 * conv and the delta rule walk in order. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/half.h"
#include "cpu/cpu_attention.h"
#include "cpu/cpu_delta.h"
#include "cpu/cpu_ops.h"
#include "models/dec_kv.h"
#include "models/qwen35_impl.h"

typedef struct segment {
    qwen35_state *s;
    int first, n; /* rows [first, first + n) */
} segment;

typedef struct layer_ctx {
    qwen35_model *m;
    const qwen35_layer *L;
    const segment *segs;
} layer_ctx;

static float sigmoidf(float x) {
    return 1.0f / (1.0f + expf(-x));
}
/* torch's softplus (beta 1, threshold 20) */
static float softplusf(float x) {
    return x > 20.0f ? x : log1pf(expf(x));
}

static size_t kv_dim(const qwen35_config *c) {
    return (size_t)c->num_key_value_heads * c->head_dim;
}

/* Layer L's index into s's caches or recurrent states: its slot among the
 * model's full or linear layers, or (a layer state) among those s keeps. */
static int slot_of(const qwen35_state *s, const qwen35_model *m, const qwen35_layer *L) {
    return s->slot ? s->slot[L - m->layers] : L->slot;
}

/* ---- gated full attention ------------------------------------------------ */

/* Row i: split q_proj's output into the query and the gate of each head,
 * q/k RMSNorm and partial RoPE, then K and V into the row's cache. */
static void attn_row_prep(void *ctx, int i, int thread) {
    (void)thread;
    const layer_ctx *lc = ctx;
    qwen35_model *m = lc->m;
    qwen35_workspace *w = &m->ws;
    const qwen35_config *c = &m->cfg;
    const qwen35_layer *L = lc->L;
    int hd = c->head_dim, rd = c->rotary_dim;
    size_t qd = (size_t)c->num_attention_heads * hd, kvd = kv_dim(c);
    const float *cs = w->rope_cos + (size_t)i * rd / 2, *sn = w->rope_sin + (size_t)i * rd / 2;
    const float *src = w->big + (size_t)i * 2 * qd;
    for (int h = 0; h < c->num_attention_heads; h++) {
        float *q = w->q + (size_t)i * qd + (size_t)h * hd;
        memcpy(q, src + (size_t)h * 2 * hd, (size_t)hd * sizeof(float));
        memcpy(w->gate + (size_t)i * qd + (size_t)h * hd, src + (size_t)h * 2 * hd + hd,
               (size_t)hd * sizeof(float));
    }
    /* RoPE on the first rd dims of each head; the rest pass */
    dec_norm_rope_heads(m->b.kern->rows, w->q + (size_t)i * qd, c->num_attention_heads, hd,
                        L->q_norm, c->rms_norm_eps, cs, sn, rd);
    float *k = w->k + (size_t)i * kvd;
    dec_norm_rope_heads(m->b.kern->rows, k, c->num_key_value_heads, hd, L->k_norm, c->rms_norm_eps,
                        cs, sn, rd);
    qwen35_state *s = w->row_state[i];
    dec_kv kv = {kvd, hd, s->ctx, m->b.kv_f16};
    dec_kv_store(&kv, s->k_cache, s->v_cache, slot_of(s, m, L), m->b.rows.row_pos[i], k,
                 w->v + (size_t)i * kvd, &m->b.rows.row_k[i], &m->b.rows.row_v[i]);
    m->b.rows.row_kv_head_stride[i] = dec_kv_head_stride(&kv);
}

static void attn_row_gate(void *ctx, int i, int thread) {
    (void)thread;
    const layer_ctx *lc = ctx;
    qwen35_workspace *w = &lc->m->ws;
    size_t qd = (size_t)lc->m->cfg.num_attention_heads * lc->m->cfg.head_dim;
    float *o = w->att + (size_t)i * qd;
    lc->m->b.kern->rows->sigmoid_mul(o, w->gate + (size_t)i * qd, o, qd);
}

/* xb (normed rows) -> xb (the attention block's output). */
static void full_attention(qwen35_model *m, const qwen35_layer *L, cpu_act *xa, int n) {
    const qwen35_config *c = &m->cfg;
    qwen35_workspace *w = &m->ws;
    size_t qd = (size_t)c->num_attention_heads * c->head_dim, kvd = kv_dim(c);
    cpu_matmul_many(
        m->b.pool, m->b.kern, xa, 3,
        (cpu_product[]){{&L->q, w->big, 2 * qd}, {&L->k, w->k, kvd}, {&L->v, w->v, kvd}});
    layer_ctx lc = {m, L, NULL};
    nc_pool_for(m->b.pool, n, attn_row_prep, &lc);
    cpu_attention_args aa = {.q = w->q,
                             .out = w->att,
                             .ldq = qd,
                             .ldo = qd,
                             .k_cache = m->b.rows.row_k,
                             .v_cache = m->b.rows.row_v,
                             .kv_head_stride = m->b.rows.row_kv_head_stride,
                             .kv_f16 = m->b.kv_f16,
                             .n_keys = m->b.rows.row_n_keys,
                             .n = n,
                             .n_heads = c->num_attention_heads,
                             .n_kv_heads = c->num_key_value_heads,
                             .head_dim = c->head_dim,
                             .scale = 1.0f / sqrtf((float)c->head_dim),
                             .scores = w->scores,
                             .scores_stride = (size_t)c->max_position_embeddings,
                             .kv_pack = &m->b.kv_pack};
    cpu_attention(m->b.pool, m->b.kern, &aa);
    nc_pool_for(n > 1 ? m->b.pool : NULL, n, attn_row_gate, &lc);
    cpu_act att = dec_act_rows(&m->b.dec, w->att, qd, n, (int)qd);
    cpu_matmul_act(m->b.pool, m->b.kern, &L->o, &att, w->xb, (size_t)c->hidden_size);
}

/* ---- Gated DeltaNet ------------------------------------------------------ */

/* Row i after the conv: L2-norm q and k heads (q also * 1/sqrt(dk)); b, a
 * -> beta, g in place. */
static void linear_row_prep(void *ctx, int i, int thread) {
    (void)thread;
    const layer_ctx *lc = ctx;
    const qwen35_config *c = &lc->m->cfg;
    qwen35_workspace *w = &lc->m->ws;
    const qwen35_layer *L = lc->L;
    int nk = c->linear_num_key_heads, dk = c->linear_key_head_dim, nv = c->linear_num_value_heads;
    float *row = w->big + (size_t)i * qwen35_conv_dim(c);
    float scale = 1.0f / sqrtf((float)dk);
    for (int h = 0; h < nk; h++) {
        cpu_l2norm_scale(row + (size_t)h * dk, dk, 1e-6f, scale);
        cpu_l2norm_scale(row + (size_t)(nk + h) * dk, dk, 1e-6f, 1.0f);
    }
    float *ba = w->ba + (size_t)i * 2 * nv;
    for (int h = 0; h < nv; h++) {
        ba[h] = sigmoidf(ba[h]);
        ba[nv + h] = L->neg_A[h] * softplusf(ba[nv + h] + L->dt_bias[h]);
    }
}

/* Channel blocks of the conv: one task each per sequence. */
static int conv_blocks(const qwen35_config *c) {
    return (int)((qwen35_conv_dim(c) + CPU_CONV_BLOCK - 1) / CPU_CONV_BLOCK);
}

/* Task (segment, block of channels): the conv over the segment's rows, in
 * order, with its window. */
static void linear_conv_task(void *ctx, int task, int thread) {
    (void)thread;
    const layer_ctx *lc = ctx;
    const qwen35_config *c = &lc->m->cfg;
    int nb = conv_blocks(c);
    const segment *sg = &lc->segs[task / nb];
    size_t cd = qwen35_conv_dim(c);
    cpu_conv1d_silu(lc->m->b.kern->rows, lc->m->ws.big + (size_t)sg->first * cd, cd, sg->n,
                    (int)cd, task % nb * CPU_CONV_BLOCK, lc->L->conv_w, c->linear_conv_kernel_dim,
                    sg->s->conv + (size_t)slot_of(sg->s, lc->m, lc->L) * qwen35_conv_floats(c));
}

/* Task (segment, value head): the delta rule over the segment's rows. */
static void linear_delta_task(void *ctx, int task, int thread) {
    const layer_ctx *lc = ctx;
    const qwen35_config *c = &lc->m->cfg;
    qwen35_workspace *w = &lc->m->ws;
    int nv = c->linear_num_value_heads, nk = c->linear_num_key_heads;
    int dk = c->linear_key_head_dim, dv = c->linear_value_head_dim;
    const segment *sg = &lc->segs[task / nv];
    int h = task % nv, kh = h / (nv / nk); /* each k head serves nv/nk consecutive v heads */
    size_t cd = qwen35_conv_dim(c), vd = (size_t)nv * dv;
    const float *rows = w->big + (size_t)sg->first * cd;
    const float *ba = w->ba + (size_t)sg->first * 2 * nv;
    cpu_delta_head hd = {
        .q = rows + (size_t)kh * dk,
        .k = rows + (size_t)(nk + kh) * dk,
        .v = rows + (size_t)2 * nk * dk + (size_t)h * dv,
        .beta = ba + h,
        .g = ba + nv + h,
        .ldqk = cd,
        .ldv = cd,
        .ldgb = 2 * (size_t)nv,
        .ldo = vd,
        .out = w->core + (size_t)sg->first * vd + (size_t)h * dv,
        .state = sg->s->rec + (size_t)slot_of(sg->s, lc->m, lc->L) * qwen35_rec_floats(c) +
                 (size_t)h * dk * dv,
        .n = sg->n,
        .dk = dk,
        .dv = dv,
    };
    if (sg->n == 1)
        cpu_delta_recurrent(&hd, lc->m->delta_gemm);
    else
        cpu_delta_chunked(&hd, QWEN35_CHUNK, w->delta_scratch + (size_t)thread * w->delta_floats,
                          lc->m->delta_gemm);
}

/* Row i: RMSNorm of each value head (plain weight) times silu(z). */
static void linear_row_gate(void *ctx, int i, int thread) {
    (void)thread;
    const layer_ctx *lc = ctx;
    const qwen35_config *c = &lc->m->cfg;
    qwen35_workspace *w = &lc->m->ws;
    int dv = c->linear_value_head_dim;
    size_t vd = (size_t)c->linear_num_value_heads * dv;
    float *o = w->core + (size_t)i * vd;
    const float *z = w->z + (size_t)i * vd;
    const cpu_row_kernels *rows = lc->m->b.kern->rows;
    for (int h = 0; h < c->linear_num_value_heads; h++)
        rows->rmsnorm(o + (size_t)h * dv, o + (size_t)h * dv, lc->L->gnorm, dv, c->rms_norm_eps);
    rows->silu_mul(o, z, o, vd);
}

static void linear_attention(qwen35_model *m, const qwen35_layer *L, cpu_act *xa, int n,
                             const segment *segs, int n_segs) {
    const qwen35_config *c = &m->cfg;
    qwen35_workspace *w = &m->ws;
    size_t cd = qwen35_conv_dim(c), nv = (size_t)c->linear_num_value_heads;
    size_t vd = nv * c->linear_value_head_dim;
    cpu_matmul_many(m->b.pool, m->b.kern, xa, 4,
                    (cpu_product[]){{&L->qkv, w->big, cd},
                                    {&L->z, w->z, vd},
                                    {&L->b, w->ba, 2 * nv},
                                    {&L->a, w->ba + nv, 2 * nv}});
    layer_ctx lc = {m, L, segs};
    nc_pool_for(n > 1 ? m->b.pool : NULL, n_segs * conv_blocks(c), linear_conv_task, &lc);
    nc_pool_for(n > 1 ? m->b.pool : NULL, n, linear_row_prep, &lc);
    nc_pool_for(m->b.pool, n_segs * (int)nv, linear_delta_task, &lc);
    nc_pool_for(n > 1 ? m->b.pool : NULL, n, linear_row_gate, &lc);
    cpu_act core = dec_act_rows(&m->b.dec, w->core, vd, n, (int)vd);
    cpu_matmul_act(m->b.pool, m->b.kern, &L->out, &core, w->xb, (size_t)c->hidden_size);
}

/* ---- the decoder ----------------------------------------------------------- */

/* The RoPE angles of each planned row's position. */
static void rows_rope(qwen35_model *m, int n) {
    qwen35_workspace *w = &m->ws;
    int rd = m->cfg.rotary_dim;
    for (int i = 0; i < n; i++) {
        cpu_rope_angles(w->rope_cos + (size_t)i * rd / 2, w->rope_sin + (size_t)i * rd / 2,
                        m->inv_freq, rd, m->b.rows.row_pos[i]);
        m->b.rows.row_n_keys[i] = m->b.rows.row_pos[i] + 1;
    }
}

/* Decoder layer l over the n planned rows of ws.x, in place. */
static void layer_rows(qwen35_model *m, int l, int n, const segment *segs, int n_segs) {
    const qwen35_config *c = &m->cfg;
    qwen35_workspace *w = &m->ws;
    int d = c->hidden_size;
    const qwen35_layer *L = &m->layers[l];
    const cpu_mat *reads[4] = {&L->q, &L->k, &L->v, NULL};
    if (!L->is_full) {
        reads[0] = &L->qkv, reads[1] = &L->z, reads[2] = &L->b, reads[3] = &L->a;
    }
    cpu_act xa = dec_act_rows_q(&m->b.dec, w->xb, n, d, reads, L->is_full ? 3 : 4);
    dec_row_steps(&m->b.dec,
                  &(dec_row_step){w->x, NULL, L->attn_norm, w->xb, NULL, d, c->rms_norm_eps, &xa, 0},
                  n);
    if (L->is_full)
        full_attention(m, L, &xa, n);
    else
        linear_attention(m, L, &xa, n, segs, n_segs);
    dec_mlp mlp = {L->mlp_norm, &L->gate, &L->up, &L->down, c->rms_norm_eps, 0, NULL};
    dec_mlp_rows(&m->b.dec, &mlp, w->x, w->xb, w->xb, w->hb, w->hb2, n);
}

static void decoder_rows(qwen35_model *m, int n, const segment *segs, int n_segs) {
    const qwen35_config *c = &m->cfg;
    int d = c->hidden_size;
    for (int i = 0; i < n; i++) {
        cpu_mat_row_to_f32(m->b.kern, &m->embed, m->b.rows.row_token[i], m->ws.x + (size_t)i * d);
    }
    rows_rope(m, n);
    for (int l = 0; l < c->num_hidden_layers; l++) {
        layer_rows(m, l, n, segs, n_segs);
        if (m->layer_hook) m->layer_hook(m->layer_hook_user, l, m->ws.x, n, d);
    }
}

void qwen35_set_layer_hook(qwen35_model *m, qwen35_layer_hook hook, void *user) {
    m->layer_hook = hook;
    m->layer_hook_user = user;
}

/* Final norm and LM head for the rows that want logits. */
static void lm_head_rows(qwen35_model *m, int n) {
    const dec_head h = {m->final_norm,      &m->lm_head,       m->cfg.rms_norm_eps,
                        m->cfg.hidden_size, m->cfg.vocab_size, 0};
    dec_head_rows(&m->b.dec, &h, m->ws.x, m->b.rows.logit_dst, n, m->ws.xb, m->ws.logits);
}

static nc_status check_item(const qwen35_model *m, const qwen35_batch_item *it, int index,
                            nc_error *err) {
    if (!it->state || it->state->m != m || it->n < 0 || (it->n > 0 && !it->tokens))
        return nc_fail(err, NC_ERR_INVALID, "Qwen3.5 forward pass: batch item %d is malformed", index);
    return dec_check_tokens(it->tokens, it->n, it->state->pos, it->state->ctx, m->cfg.vocab_size,
                            err);
}

nc_status qwen35_forward_batch(qwen35_model *m, qwen35_batch_item *items, int count,
                               nc_error *err) {
    for (int i = 0; i < count; i++) {
        NC_TRY(check_item(m, &items[i], i, err));
        for (int j = 0; j < i; j++)
            if (items[j].state == items[i].state)
                return nc_fail(err, NC_ERR_INVALID,
                               "Qwen3.5 forward pass: batch items %d and %d share a state", j, i);
    }
    int fixed[64], *replay = count <= 32 ? fixed : malloc(2 * (size_t)count * sizeof *replay);
    segment segs_fixed[QWEN35_MAX_BATCH];
    if (!replay) return nc_fail(err, NC_ERR_NOMEM, "Qwen3.5 forward pass: out of memory");
    int *done = replay + count; /* rows of each item already through */
    /* Each item's rows: the tokens a truncation left to replay (no logits),
     * then its new tokens; all of them are in state->tokens from lin_pos. */
    for (int i = 0; i < count; i++) {
        qwen35_state *s = items[i].state;
        memcpy(s->tokens + s->pos, items[i].tokens, (size_t)items[i].n * sizeof(int32_t));
        replay[i] = items[i].n > 0 ? s->pos - s->lin_pos : 0;
        s->pos -= replay[i];
        done[i] = 0;
    }
    qwen35_workspace *w = &m->ws;
    size_t V = (size_t)m->cfg.vocab_size;
    for (;;) {
        int n = 0, n_segs = 0;
        for (int i = 0; i < count && n < QWEN35_MAX_BATCH; i++) {
            qwen35_batch_item *it = &items[i];
            qwen35_state *s = it->state;
            int total = replay[i] + it->n, take = total - done[i];
            if (take > QWEN35_MAX_BATCH - n) take = QWEN35_MAX_BATCH - n;
            /* a pass ends at a checkpoint, to snapshot the states there */
            if (s->snap_at > s->pos && s->pos + take > s->snap_at) take = s->snap_at - s->pos;
            if (take <= 0) continue;
            segs_fixed[n_segs++] = (segment){s, n, take};
            for (int j = 0; j < take; j++, n++) {
                int t = done[i] + j, out = t - replay[i]; /* index among the new tokens */
                m->b.rows.row_token[n] = s->tokens[s->pos + j];
                w->row_state[n] = s;
                m->b.rows.row_pos[n] = s->pos + j;
                m->b.rows.logit_dst[n] = out < 0            ? NULL
                                         : it->logits_all   ? it->logits_all + (size_t)out * V
                                         : out == it->n - 1 ? it->logits_last
                                                            : NULL;
            }
            done[i] += take;
            s->pos += take;
        }
        if (n == 0) break;
        decoder_rows(m, n, segs_fixed, n_segs);
        lm_head_rows(m, n);
        for (int g = 0; g < n_segs; g++) {
            qwen35_state *s = segs_fixed[g].s;
            if (s->snap_at == s->pos && s->snap_pos != s->pos) {
                s->lin_pos = s->pos;
                qwen35_state_snapshot(s);
            }
        }
    }
    for (int i = 0; i < count; i++) {
        qwen35_batch_item *it = &items[i];
        it->state->lin_pos = it->state->pos;
        if (it->n > 0 && it->state->snap_at >= 0)
            it->state->snap_at = -1; /* the checkpoint's snapshot stays */
        else if (replay[i] + it->n > 1)
            qwen35_state_snapshot(it->state);
        if (it->logits_all && it->logits_last && it->n > 0)
            memcpy(it->logits_last, it->logits_all + (size_t)(it->n - 1) * V, V * sizeof(float));
    }
    if (replay != fixed) free(replay);
    return NC_OK;
}

nc_status qwen35_forward(qwen35_model *m, qwen35_state *s, const int32_t *tokens, int n,
                         float *logits_last, float *logits_all, nc_error *err) {
    qwen35_batch_item it = {s, tokens, n, logits_last, logits_all};
    return qwen35_forward_batch(m, &it, 1, err);
}

nc_status qwen35_layer_forward(qwen35_model *m, qwen35_state *s, int layer, float *rows, int n,
                               int pos, nc_error *err) {
    const qwen35_config *c = &m->cfg;
    if (!s || s->m != m || layer < 0 || layer >= c->num_hidden_layers ||
        (s->slot && s->slot[layer] < 0))
        return nc_fail(err, NC_ERR_INVALID, "Qwen3.5 layer %d: the state holds nothing for it",
                       layer);
    if (n < 0 || pos < 0 || pos > s->ctx - n)
        return nc_fail(err, NC_ERR_RANGE,
                       "Qwen3.5 layer %d: %d tokens at position %d outside a context of %d",
                       layer, n, pos, s->ctx);
    const qwen35_layer *L = &m->layers[layer];
    if (!L->is_full && pos == 0) { /* a recurrent layer at position 0 starts empty */
        size_t slot = (size_t)slot_of(s, m, L);
        memset(s->conv + slot * qwen35_conv_floats(c), 0, qwen35_conv_floats(c) * sizeof(float));
        memset(s->rec + slot * qwen35_rec_floats(c), 0, qwen35_rec_floats(c) * sizeof(float));
    }
    dec_rows_ws *R = &m->b.rows;
    size_t d = (size_t)c->hidden_size;
    for (int done = 0; done < n;) {
        int take = n - done < QWEN35_MAX_BATCH ? n - done : QWEN35_MAX_BATCH;
        for (int i = 0; i < take; i++) {
            m->ws.row_state[i] = s;
            R->row_pos[i] = pos + done + i;
            R->logit_dst[i] = NULL;
        }
        rows_rope(m, take);
        segment seg = {s, 0, take};
        memcpy(m->ws.x, rows + (size_t)done * d, (size_t)take * d * sizeof(float));
        layer_rows(m, layer, take, &seg, 1);
        memcpy(rows + (size_t)done * d, m->ws.x, (size_t)take * d * sizeof(float));
        done += take;
    }
    return NC_OK;
}
