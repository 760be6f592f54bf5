/* ModernBERT forward pass on the CPU, as transformers' modeling_modernbert.py
 * computes it with eager attention in fp32: embedding LayerNorm; per layer a
 * pre-norm (Identity for layer 0) fused-QKV attention with rotate-half RoPE
 * per head (theta of the layer's type), over all real keys (global layers)
 * or the |q - k| <= local_attention / 2 band (local layers); then a pre-norm
 * gated MLP act(first half of Wi x) * (second half); final LayerNorm. A batch
 * is batch x seq rows; every matrix sees all rows at once, attention is per
 * (row, head) over the keys of the row's own sequence. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/attn_kernels.h"
#include "cpu/cpu_ops.h"
#include "cpu/gelu.h"
#include "cpu/gemm_bf16w.h"
#include "cpu/rows.h"
#include "models/modernbert_impl.h"

typedef struct {
    modernbert_model *m;
    const modernbert_io *io;
    int layer;
    const float *w; /* layernorm: weight */
    float *out;
    const float *in;
    const float *qkv; /* attention: the layer's Q/K/V (qkv_head) */
} step_ctx;

static size_t dim(const modernbert_model *m) {
    return (size_t)m->cfg.hidden_size;
}

static int is_real(const modernbert_io *io, size_t row) {
    return !io->mask || io->mask[row] != 0;
}

/* ---- elementwise steps ---------------------------------------------------- */

static void layernorm_row(void *ctx, int r, int thread) {
    (void)thread;
    const step_ctx *s = ctx;
    size_t d = dim(s->m);
    s->m->kern->rows->layernorm(s->out + (size_t)r * d, s->in + (size_t)r * d, s->w, (int)d,
                                s->m->cfg.norm_eps);
}

void modernbert_layernorm_rows(modernbert_model *m, float *out, const float *x, const float *w,
                               int n) {
    step_ctx s = {.m = m, .w = w, .out = out, .in = x};
    nc_pool_for(n > 1 ? m->pool : NULL, n, layernorm_row, &s);
}

typedef struct {
    step_ctx s;
    const cpu_packed *next;
    float *tiles;
    int n;
} norm_tiles_ctx;

/* The rows of activation tile j normalized, then packed into the tile. */
static void layernorm_tile(void *ctx, int j, int thread) {
    const norm_tiles_ctx *c = ctx;
    int t0 = j * CPU_BF16W_TB, rows = c->n - t0 < CPU_BF16W_TB ? c->n - t0 : CPU_BF16W_TB;
    for (int r = t0; r < t0 + rows; r++)
        layernorm_row((void *)&c->s, r, thread);
    size_t d = dim(c->s.m);
    cpu_packed_pack_tile(c->next, c->s.out + (size_t)t0 * d, d, rows, 0, (int)d, c->tiles, t0);
}

/* LayerNorm of n rows into out, and into the activation tiles of the
 * product `next` that reads them, a tile per task. */
static void layernorm_to_tiles(modernbert_model *m, float *out, const float *x, const float *w,
                               int n, const cpu_packed *next, float *tiles) {
    norm_tiles_ctx c = {{.m = m, .w = w, .out = out, .in = x}, next, tiles, n};
    nc_pool_for(m->pool, (n + CPU_BF16W_TB - 1) / CPU_BF16W_TB, layernorm_tile, &c);
}

/* The other activations; GELU, the common one, runs on the table's vector
 * kernel (modernbert_act_apply, epi_gated). */
static float act1(modernbert_act a, float x) {
    switch (a) {
    case MODERNBERT_ACT_GELU:
        cpu_gelu_scalar(&x, &x, NULL, 1);
        return x;
    case MODERNBERT_ACT_GELU_TANH: {
        float u = 0.7978845608028654f * (x + 0.044715f * x * x * x);
        return 0.5f * x * (1.0f + tanhf(u));
    }
    case MODERNBERT_ACT_SILU:
        return x / (1.0f + expf(-x));
    case MODERNBERT_ACT_RELU:
        return x > 0 ? x : 0;
    }
    return x;
}

void modernbert_act_apply(const modernbert_model *m, modernbert_act act, float *y, size_t n) {
    if (act == MODERNBERT_ACT_GELU) {
        m->kern->gelu(y, y, NULL, n);
        return;
    }
    for (size_t i = 0; i < n; i++)
        y[i] = act1(act, y[i]);
}

/* ---- product epilogues (cpu_packed_block: a block of a product's outputs) -- */

typedef struct {
    modernbert_model *m;
    const modernbert_io *io;
    int layer, rope; /* rope: apply RoPE to the q and k heads of each block */
    float *dst;
    size_t ld;
    /* when set, each block of dst is also packed into the next product's
     * activation tiles (cpu_packed_pack_tile) while it is in cache */
    const cpu_packed *next;
    float *next_tiles;
    float *qkv; /* epi_qkv, rope_row: the layer's Q/K/V (qkv_head) */
} epi_ctx;

/* dst += y (the residual stream). */
static void epi_add(void *ctx, const cpu_packed_block *b) {
    const epi_ctx *e = ctx;
    for (int t = 0; t < b->nt; t++) {
        e->m->kern->rows->add(e->dst + (size_t)(b->t0 + t) * e->ld + (size_t)b->r0,
                              b->y + (size_t)t * b->ldy, (size_t)b->rows);
    }
}

/* dst = act(input) * gate, the two parts of Wi x (HF: input, gate = chunk(2)). */
static void epi_gated(void *ctx, const cpu_packed_block *b) {
    const epi_ctx *e = ctx;
    modernbert_act a = e->m->cfg.hidden_act;
    for (int t = 0; t < b->nt; t++) {
        float *h = e->dst + (size_t)(b->t0 + t) * e->ld + (size_t)b->r0;
        const float *in = b->y + (size_t)t * b->ldy, *gate = in + b->part_off;
        if (a == MODERNBERT_ACT_GELU) {
            e->m->kern->gelu(h, in, gate, (size_t)b->rows);
            continue;
        }
        for (int i = 0; i < b->rows; i++)
            h[i] = act1(a, in[i]) * gate[i];
    }
    /* blocks start on whole tiles (cpu_packed.h) */
    for (int t = 0; e->next_tiles && t < b->nt; t += CPU_BF16W_TB) {
        int t0 = b->t0 + t, rows = b->nt - t < CPU_BF16W_TB ? b->nt - t : CPU_BF16W_TB;
        cpu_packed_pack_tile(e->next, e->dst + (size_t)t0 * e->ld + (size_t)b->r0, e->ld, rows,
                             b->r0, b->rows, e->next_tiles, t0);
    }
}

/* RoPE on one head of the row at position pos, with the layer's theta. */
static void rope_head(const epi_ctx *e, float *v, int pos) {
    const modernbert_workspace *w = &e->m->ws;
    int hd = e->m->cfg.head_dim, type = e->m->cfg.is_global[e->layer] ? 0 : 1;
    size_t at = ((size_t)type * (size_t)w->seq_cap + (size_t)pos) * (size_t)hd / 2;
    e->m->kern->rows->rope(v, w->rope_cos + at, w->rope_sin + at, hd);
}

/* Where row r's head h of part `part` (0 q, 1 k, 2 v) lies in a Q/K/V
 * buffer (ws.qkv[]): head by head, [3][heads][n][head_dim] for the pass's n
 * rows, so attention reads a head's keys and values as one contiguous run
 * (rows 3D floats apart defeated the prefetcher: 9 KiB strides at
 * modernbert-base). */
static float *qkv_head(const modernbert_model *m, const float *qkv, int n, int part, int h, int r) {
    const modernbert_config *c = &m->cfg;
    size_t head = (size_t)part * (size_t)c->num_attention_heads + (size_t)h;
    return (float *)qkv + (head * (size_t)n + (size_t)r) * (size_t)c->head_dim;
}

/* e->qkv = y in head-major order, with RoPE on the query and key heads when
 * e->rope (the blocks then hold whole heads: see rope_fits). */
static void epi_qkv(void *ctx, const cpu_packed_block *b) {
    const epi_ctx *e = ctx;
    const modernbert_model *m = e->m;
    int hd = m->cfg.head_dim, d = (int)dim(m), n = e->io->batch * e->io->seq;
    for (int t = 0; t < b->nt; t++) {
        int r = b->t0 + t;
        const float *y = b->y + (size_t)t * b->ldy;
        for (int i = 0; i < b->rows;) { /* a run of one head's elements */
            int col = b->r0 + i, part = col / d, h = col % d / hd, at = col % hd;
            int len = hd - at < b->rows - i ? hd - at : b->rows - i;
            float *dst = qkv_head(m, e->qkv, n, part, h, r) + at;
            memcpy(dst, y + i, (size_t)len * sizeof(float));
            if (e->rope && part < 2) rope_head(e, dst, r % e->io->seq);
            i += len;
        }
    }
}

/* Whether every block of the QKV product holds whole heads. */
static int rope_fits(const modernbert_model *m) {
    return CPU_PACKED_GROUP_ROWS % m->cfg.head_dim == 0;
}

/* Row r: RoPE on each query and key head (when the QKV epilogue could not). */
static void rope_row(void *ctx, int r, int thread) {
    (void)thread;
    const epi_ctx *e = ctx;
    int n = e->io->batch * e->io->seq;
    for (int part = 0; part < 2; part++)
        for (int h = 0; h < e->m->cfg.num_attention_heads; h++)
            rope_head(e, qkv_head(e->m, e->qkv, n, part, h, r), r % e->io->seq);
}

/* Softmax of row p (keys klo..klo+nk-1) for query q with what it may not
 * see masked: pad keys and, on local layers, keys outside the band. */
static void masked_softmax(const step_ctx *s, float *p, int b, int q, int klo, int nk,
                           float scale) {
    const modernbert_io *io = s->io;
    int seq = io->seq, global = s->m->cfg.is_global[s->layer], half = s->m->cfg.local_attention / 2;
    float mx = -INFINITY, sum = 0;
    for (int j = 0; j < nk; j++) {
        int k = klo + j;
        int seen = is_real(io, (size_t)b * seq + k) && (global || abs(q - k) <= half);
        p[j] = seen ? p[j] * scale : -INFINITY;
        if (p[j] > mx) mx = p[j];
    }
    for (int j = 0; j < nk; j++) {
        p[j] = p[j] == -INFINITY ? 0.0f : expf(p[j] - mx);
        sum += p[j];
    }
    for (int j = 0; j < nk && sum > 0; j++)
        p[j] /= sum;
}

/* Attention of queries q0..q1-1 (at most MODERNBERT_ATT_QBLOCK) of
 * sequence b and head h, against the keys they may see (all of the sequence on global layers, the
 * band around the block on local ones), on the table's attention kernels:
 * S = Q K^T, each row's softmax over the keys it sees (the band of its own
 * query: a contiguous run, so the vector softmax serves unless the row has
 * pad keys), then O = P V with the head's value rows. Pad keys get
 * probability 0, pad queries a zero output (nothing real reads them, since
 * pad keys are masked). */
static void attend(const step_ctx *s, int b, int h, int q0, int q1, int thread) {
    const modernbert_model *m = s->m;
    const modernbert_config *c = &m->cfg;
    const modernbert_io *io = s->io;
    const modernbert_workspace *w = &m->ws;
    const cpu_attn_kernels *ak = m->kern->attn;
    size_t d = dim(m);
    int hd = c->head_dim, seq = io->seq, nq = q1 - q0;
    int global = c->is_global[s->layer], half = c->local_attention / 2;
    int klo = global || q0 - half < 0 ? 0 : q0 - half;
    int khi = global || q1 - 1 + half > seq - 1 ? seq - 1 : q1 - 1 + half;
    int nk = khi - klo + 1, keys_real = 1;
    for (int k = klo; k <= khi && keys_real; k++)
        keys_real = is_real(io, (size_t)b * seq + k);
    int n = io->batch * seq;
    const float *q = qkv_head(m, s->qkv, n, 0, h, b * seq + q0);
    const float *k = qkv_head(m, s->qkv, n, 1, h, b * seq + klo);
    const float *v = qkv_head(m, s->qkv, n, 2, h, b * seq + klo);
    float *sc = w->scores + (size_t)thread * (size_t)MODERNBERT_ATT_QBLOCK * (size_t)w->seq_cap;
    if (ak->qk)
        ak->qk(q, (size_t)hd, k, (size_t)hd, sc, (size_t)nk, nq, nk, hd);
    else
        m->kern->matmul[CPU_W_F32](k, (size_t)hd, q, (size_t)hd, sc, (size_t)nk, nq, hd, 0, nk);
    float scale = 1.0f / sqrtf((float)hd);
    for (int i = 0; i < nq; i++) {
        float *p = sc + (size_t)i * nk;
        int qi = q0 + i;
        int lo = global || qi - half < klo ? klo : qi - half;
        int hi = global || qi + half > khi ? khi : qi + half;
        if (!is_real(io, (size_t)b * seq + qi)) {
            memset(p, 0, (size_t)nk * sizeof(float));
        } else if (keys_real) {
            ak->softmax(p + (lo - klo), hi - lo + 1, hi - lo + 1, scale);
            memset(p, 0, (size_t)(lo - klo) * sizeof(float));
            memset(p + (hi - klo + 1), 0, (size_t)(khi - hi) * sizeof(float));
        } else {
            masked_softmax(s, p, b, qi, klo, nk, scale);
        }
    }
    float *o = w->att + ((size_t)b * seq + (size_t)q0) * d + (size_t)h * hd;
    for (int i = 0; i < nq; i++)
        memset(o + (size_t)i * d, 0, (size_t)hd * sizeof(float));
    ak->pv[0](sc, (size_t)nk, v, (size_t)hd, o, d, nq, nk, hd);
}

/* One attention task: block task % nqb of queries of head task / nqb %
 * heads of sequence task / (heads * nqb). */
static void attention_block(void *ctx, int task, int thread) {
    const step_ctx *s = ctx;
    int seq = s->io->seq, heads = s->m->cfg.num_attention_heads;
    int nqb = (seq + MODERNBERT_ATT_QBLOCK - 1) / MODERNBERT_ATT_QBLOCK;
    int q0 = task % nqb * MODERNBERT_ATT_QBLOCK;
    attend(s, task / (heads * nqb), task / nqb % heads, q0,
           q0 + MODERNBERT_ATT_QBLOCK < seq ? q0 + MODERNBERT_ATT_QBLOCK : seq, thread);
}

/* Copies rows r0..r1-1 of x to dst, zeroing pad rows. */
static void store_rows(const modernbert_io *io, float *dst, const float *x, size_t r0, size_t r1,
                       size_t d) {
    for (size_t r = r0; r < r1; r++) {
        if (is_real(io, r))
            memcpy(dst + r * d, x + r * d, d * sizeof(float));
        else
            memset(dst + r * d, 0, d * sizeof(float));
    }
}

/* ---- the pass ------------------------------------------------------------- */

nc_status modernbert_embed(modernbert_model *m, const int32_t *ids, int n, float *out,
                           nc_error *err) {
    const modernbert_config *c = &m->cfg;
    size_t d = dim(m), row_bytes = d * cpu_wtype_size(m->embed.type);
    for (int i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= c->vocab_size)
            return nc_fail(err, NC_ERR_INVALID,
                           "token id %d at index %d is outside the vocabulary (size %d)",
                           (int)ids[i], i, c->vocab_size);
        const unsigned char *row =
            (const unsigned char *)m->embed.data + (size_t)ids[i] * row_bytes;
        m->kern->row_to_f32[m->embed.type](row, out + (size_t)i * d, (int)d);
    }
    modernbert_layernorm_rows(m, out, out, m->embed_norm, n);
    return NC_OK;
}

static nc_status check_io(const modernbert_model *m, const modernbert_io *io, nc_error *err) {
    const modernbert_config *c = &m->cfg;
    if (!io->ids || io->batch < 1 || io->seq < 1)
        return nc_fail(err, NC_ERR_INVALID, "ModernBERT forward pass: empty or malformed batch");
    if (io->seq > c->max_position_embeddings)
        return nc_fail(err, NC_ERR_RANGE,
                       "sequence of %d tokens is longer than max_position_embeddings (%d)", io->seq,
                       c->max_position_embeddings);
    for (int b = 0; b < io->batch; b++) {
        int real = 0;
        for (int t = 0; t < io->seq; t++)
            real += is_real(io, (size_t)b * io->seq + t);
        if (!real)
            return nc_fail(err, NC_ERR_INVALID, "ModernBERT forward pass: row %d has no real token", b);
    }
    if ((io->mlm_logits && c->head != MODERNBERT_HEAD_MLM) ||
        (io->cls_logits && c->head != MODERNBERT_HEAD_CLASSIFIER))
        return nc_fail(err, NC_ERR_INVALID, "%s: the model has no %s head", m->dir,
                       io->mlm_logits ? "masked-LM" : "classifier");
    if (io->mlm_rows)
        for (int i = 0; i < io->n_mlm_rows; i++)
            if (io->mlm_rows[i] < 0 || io->mlm_rows[i] >= io->batch * io->seq)
                return nc_fail(err, NC_ERR_INVALID,
                               "ModernBERT forward pass: mlm_rows[%d] = %d is "
                               "outside the batch",
                               i, io->mlm_rows[i]);
    return NC_OK;
}

void modernbert_matmul(modernbert_model *m, const cpu_mat *w, const float *x, size_t ldx, float *y,
                       size_t ldy, int n) {
    cpu_act a = cpu_act_rows(x, ldx, n, w->cols, NULL, NULL);
    if ((size_t)n <= m->ws.rows) cpu_act_attach(&a, &m->ws.prompt);
    cpu_matmul_act(m->pool, m->kern, w, &a, y, ldy);
}

/* Fewer rows than this take the row tiles on the weights as stored (as
 * cpu_matmul.c does): a packed panel pays off over enough rows. */
#define PACKED_MIN_ROWS 8

/* x W^T for n rows, its outputs handed to epi block by block: from the
 * activation tiles when x's producer packed them too (tiles, see
 * takes_tiles; else NULL), on the packed weights when there are, else on
 * AMX tiles into ws.raw, each task's block to epi at once; else (short
 * inputs) computed whole into ws.raw first. */
static void product(modernbert_model *m, const cpu_mat *w, const cpu_packed *p, int parts,
                    const float *x, size_t ldx, const float *tiles, int n, cpu_packed_epilogue epi,
                    epi_ctx *e) {
    if (tiles) {
        cpu_packed_matmul_tiles(m->pool, p, tiles, n, epi, e, m->ws.blocks);
        return;
    }
    if (p->panel && n >= PACKED_MIN_ROWS) {
        cpu_packed_matmul(m->pool, p, x, ldx, n, epi, e, m->ws.blocks);
        return;
    }
    cpu_act a = cpu_act_rows(x, ldx, n, w->cols, NULL, NULL);
    if ((size_t)n <= m->ws.rows) cpu_act_attach(&a, &m->ws.prompt);
    float *raw = m->ws.raw;
    if (cpu_packed_matmul_amx(m->pool, m->kern, w, parts, &a, raw, (size_t)w->rows, epi, e)) return;
    cpu_matmul_act(m->pool, m->kern, w, &a, raw, (size_t)w->rows);
    cpu_packed_epilogue_rows(m->pool, raw, (size_t)w->rows, n, w->rows, parts, epi, e);
}

/* Whether the product p over n rows runs on activation tiles that its
 * producer packs (cpu_packed_tiled). */
static int takes_tiles(const cpu_packed *p, int n) {
    return cpu_packed_tiled(p) && n >= PACKED_MIN_ROWS;
}

/* ws.xn = LayerNorm(x) for the product p, and into ws.tiles as well where
 * p takes tiles: returns those tiles, else NULL. */
static const float *norm_for(modernbert_model *m, const float *x, const float *w, int n,
                             const cpu_packed *p) {
    if (!takes_tiles(p, n)) {
        modernbert_layernorm_rows(m, m->ws.xn, x, w, n);
        return NULL;
    }
    layernorm_to_tiles(m, m->ws.xn, x, w, n, p, m->ws.tiles);
    return m->ws.tiles;
}

static void encoder_layer(modernbert_model *m, const modernbert_io *io, int l, int n) {
    const modernbert_config *c = &m->cfg;
    const modernbert_layer *L = &m->layers[l];
    modernbert_workspace *w = &m->ws;
    size_t d = dim(m), ff = (size_t)c->intermediate_size;
    step_ctx s = {.m = m, .io = io, .layer = l, .qkv = w->qkv[0]};

    /* attention: x += Wo attn(rope(Wqkv norm(x))) */
    const float *a = L->attn_norm ? w->xn : w->x;
    const float *tiles = L->attn_norm ? norm_for(m, w->x, L->attn_norm, n, &L->pqkv) : NULL;
    epi_ctx qkv = {m, io, l, rope_fits(m), NULL, 0, NULL, NULL, w->qkv[0]}; /* by head */
    product(m, &L->wqkv, &L->pqkv, 1, a, d, tiles, n, epi_qkv, &qkv);
    if (!qkv.rope) nc_pool_for(m->pool, n, rope_row, &qkv);
    int nqb = (io->seq + MODERNBERT_ATT_QBLOCK - 1) / MODERNBERT_ATT_QBLOCK;
    nc_pool_for(m->pool, io->batch * c->num_attention_heads * nqb, attention_block, &s);
    epi_ctx resid = {m, io, l, 0, w->x, d, NULL, NULL, NULL};
    product(m, &L->wo, &L->pwo, 1, w->att, d, NULL, n, epi_add, &resid);

    /* MLP: x += Wo(act(input) * gate), input, gate = Wi(norm(x)).chunk(2);
     * the gated blocks go into Wo's tiles too where Wo takes them */
    tiles = norm_for(m, w->x, L->mlp_norm, n, &L->pwi);
    float *gated_tiles = takes_tiles(&L->pwo_mlp, n) ? w->gated_tiles : NULL;
    epi_ctx gated = {m, io, l, 0, w->hb, ff, &L->pwo_mlp, gated_tiles, NULL};
    product(m, &L->wi, &L->pwi, 2, w->xn, d, tiles, n, epi_gated, &gated);
    product(m, &L->wo_mlp, &L->pwo_mlp, 1, w->hb, ff, gated_tiles, n, epi_add, &resid);
}

/* ---- the pass by slabs of tokens ------------------------------------------
 * Every step of a layer but attention works row by row, so each thread can
 * keep a slab of the rows (whole activation tiles) through the layer: its
 * LayerNorm, its products against every weight panel, its epilogues, on
 * rows that stay in its own cache, where the pass above splits each product
 * by output columns and each step reads rows that the other cores wrote.
 * One pool loop per layer instead of 7-8: a slab runs attention on its
 * queries, the rest of the layer, then the next layer up to its Q/K/V
 * (written to the other buffer of ws.qkv, as other slabs may still read
 * this layer's keys); the end of the loop is the one barrier attention
 * needs. Each thread streams every panel, from the L3 when the threads
 * keep step. */

/* Slabs need this many activation tiles per thread (else the column split
 * of the pass above runs). One serves: at 24 tokens on 2 threads (Zen 5,
 * load 12) slabs of one tile took 29-31 ms of CPU per pass against 66-85
 * for the column split, which reads each panel once but waits at 8 loop
 * ends per layer; a single tile stays split by columns, so both cores work
 * on it. */
#define SLAB_MIN_TILES 1
/* Slabs (= pool threads) at most. */
#define SLAB_MAX 64

static int slab_products(const modernbert_layer *L) {
    return cpu_packed_tiled(&L->pqkv) && cpu_packed_tiled(&L->pwo) && cpu_packed_tiled(&L->pwi) &&
           cpu_packed_tiled(&L->pwo_mlp);
}

/* Whether the pass over n rows runs by slabs: every product on packed
 * panels that take activation tiles, and enough tiles per thread. */
static int by_slabs(const modernbert_model *m, int n) {
    int tiles = (n + CPU_BF16W_TB - 1) / CPU_BF16W_TB, threads = nc_pool_threads(m->pool);
    if (tiles < SLAB_MIN_TILES * threads || threads > SLAB_MAX) return 0;
    for (int l = 0; l < m->cfg.num_hidden_layers; l++)
        if (!slab_products(&m->layers[l])) return 0;
    return 1;
}

typedef struct {
    modernbert_model *m;
    const modernbert_io *io;
    int layer; /* the layer whose attention and MLP the loop runs; -1: none */
    int slabs, n;
    atomic_int taken[SLAB_MAX]; /* slab s claimed by a task of this loop */
} slab_job;

/* An epilogue of a product over a slab's rows, whose blocks count rows from
 * the slab's first. */
typedef struct {
    cpu_packed_epilogue epi;
    void *ctx;
    int r0;
} slab_epi;

static void slab_block(void *ctx, const cpu_packed_block *b) {
    const slab_epi *e = ctx;
    cpu_packed_block at = *b;
    at.t0 += e->r0;
    e->epi(e->ctx, &at);
}

/* x W^T for rows r0..r1 from their tiles in xt (r0 a whole tile), on the
 * calling thread: every group of p, blocks to epi. */
static void slab_product(modernbert_model *m, const cpu_packed *p, const float *xt, int r0, int r1,
                         cpu_packed_epilogue epi, void *ctx, int thread) {
    slab_epi e = {epi, ctx, r0};
    cpu_packed_matmul_tiles(NULL, p, xt + (size_t)r0 * (size_t)p->cols, r1 - r0, slab_block, &e,
                            m->ws.blocks + (size_t)thread * CPU_PACKED_SCRATCH_FLOATS);
}

/* Rows r0..r1 of x into the activation tiles of p at ws.tiles, normalized
 * by LayerNorm weight w first (into ws.xn) unless w is NULL. */
static void slab_tiles(modernbert_model *m, const float *x, const float *w, int r0, int r1, int n,
                       const cpu_packed *p) {
    size_t d = dim(m);
    for (int t0 = r0; t0 < r1; t0 += CPU_BF16W_TB) {
        int rows = r1 - t0 < CPU_BF16W_TB ? r1 - t0 : CPU_BF16W_TB;
        if (w) {
            norm_tiles_ctx c = {{.m = m, .w = w, .out = m->ws.xn, .in = x}, p, m->ws.tiles, n};
            layernorm_tile(&c, t0 / CPU_BF16W_TB, 0);
        } else {
            cpu_packed_pack_tile(p, x + (size_t)t0 * d, d, rows, 0, (int)d, m->ws.tiles, t0);
        }
    }
}

/* Layer l's Q/K/V for rows r0..r1, into ws.qkv[l % 2]. */
static void slab_front(modernbert_model *m, const modernbert_io *io, int l, int r0, int r1,
                       int thread) {
    const modernbert_layer *L = &m->layers[l];
    int n = io->batch * io->seq;
    slab_tiles(m, m->ws.x, L->attn_norm, r0, r1, n, &L->pqkv);
    epi_ctx qkv = {m, io, l, rope_fits(m), NULL, 0, NULL, NULL, m->ws.qkv[l % 2]};
    slab_product(m, &L->pqkv, m->ws.tiles, r0, r1, epi_qkv, &qkv, thread);
    for (int r = r0; r < r1 && !qkv.rope; r++)
        rope_row(&qkv, r, thread);
}

/* Layer l from its attention on for rows r0..r1: the queries of those rows
 * against their sequences' keys, x += Wo att, then the MLP. */
static void slab_back(modernbert_model *m, const modernbert_io *io, int l, int r0, int r1,
                      int thread) {
    const modernbert_layer *L = &m->layers[l];
    modernbert_workspace *w = &m->ws;
    int n = io->batch * io->seq, seq = io->seq, heads = m->cfg.num_attention_heads;
    size_t d = dim(m), ff = (size_t)m->cfg.intermediate_size;
    step_ctx s = {.m = m, .io = io, .layer = l, .qkv = w->qkv[l % 2]};
    for (int b = r0 / seq; b * seq < r1; b++) { /* the slab's part of each sequence */
        int q0 = r0 - b * seq > 0 ? r0 - b * seq : 0, q1 = r1 - b * seq < seq ? r1 - b * seq : seq;
        for (int h = 0; h < heads; h++)
            for (int q = q0; q < q1; q += MODERNBERT_ATT_QBLOCK)
                attend(&s, b, h, q,
                       q1 - q < MODERNBERT_ATT_QBLOCK ? q1 : q + MODERNBERT_ATT_QBLOCK, thread);
    }
    slab_tiles(m, w->att, NULL, r0, r1, n, &L->pwo);
    epi_ctx resid = {m, io, l, 0, w->x, d, NULL, NULL, NULL};
    slab_product(m, &L->pwo, w->tiles, r0, r1, epi_add, &resid, thread);
    slab_tiles(m, w->x, L->mlp_norm, r0, r1, n, &L->pwi);
    epi_ctx gated = {m, io, l, 0, w->hb, ff, &L->pwo_mlp, w->gated_tiles, NULL};
    slab_product(m, &L->pwi, w->tiles, r0, r1, epi_gated, &gated, thread);
    slab_product(m, &L->pwo_mlp, w->gated_tiles, r0, r1, epi_add, &resid, thread);
}

/* The slab a task runs: the thread's own (slab i on thread i, so a slab's
 * rows stay in one core's cache from layer to layer), else, where that
 * thread has run it already, the first left. A loop has as many tasks as
 * slabs, so every slab runs once. */
static int slab_claim(slab_job *j, int thread) {
    if (thread < j->slabs && !atomic_exchange(&j->taken[thread], 1)) return thread;
    for (int s = 0; s < j->slabs; s++)
        if (!atomic_exchange(&j->taken[s], 1)) return s;
    return -1; /* not reached */
}

/* A slab: the rest of job->layer, then the next layer up to its Q/K/V. */
static void slab_task(void *ctx, int task, int thread) {
    (void)task;
    slab_job *j = ctx;
    int s = slab_claim(j, thread);
    if (s < 0) return;
    int tiles = (j->n + CPU_BF16W_TB - 1) / CPU_BF16W_TB;
    int r0 = s * tiles / j->slabs * CPU_BF16W_TB, r1 = (s + 1) * tiles / j->slabs * CPU_BF16W_TB;
    if (r1 > j->n) r1 = j->n;
    if (r0 >= r1) return;
    int nl = j->m->cfg.num_hidden_layers;
    if (j->layer >= 0) {
        slab_back(j->m, j->io, j->layer, r0, r1, thread);
        if (j->io->hidden && j->layer < nl - 1) {
            size_t d = dim(j->m), plane = (size_t)j->n * d;
            store_rows(j->io, j->io->hidden + (size_t)(j->layer + 1) * plane, j->m->ws.x,
                       (size_t)r0, (size_t)r1, d);
        }
    }
    if (j->layer + 1 < nl) slab_front(j->m, j->io, j->layer + 1, r0, r1, thread);
}

/* The layers by slabs, a pool loop per layer (and one for layer 0's Q/K/V). */
static void layers_by_slabs(modernbert_model *m, const modernbert_io *io, int n) {
    slab_job j = {.m = m, .io = io, .slabs = nc_pool_threads(m->pool), .n = n};
    for (j.layer = -1; j.layer < m->cfg.num_hidden_layers; j.layer++) {
        for (int s = 0; s < j.slabs; s++)
            atomic_init(&j.taken[s], 0);
        nc_pool_for(m->pool, j.slabs, slab_task, &j);
    }
}

nc_status modernbert_forward(modernbert_model *m, const modernbert_io *io, nc_error *err) {
    NC_TRY(check_io(m, io, err));
    NC_TRY(modernbert_workspace_reserve(m, io->batch, io->seq, err));
    NC_TRY(modernbert_pack_weights(m, err));
    const modernbert_config *c = &m->cfg;
    modernbert_workspace *w = &m->ws;
    int n = io->batch * io->seq, nl = c->num_hidden_layers;
    size_t d = dim(m), plane = (size_t)n * d;

    NC_TRY(modernbert_embed(m, io->ids, n, w->x, err));
    if (io->hidden) store_rows(io, io->hidden, w->x, 0, (size_t)n, d);
    if (by_slabs(m, n)) {
        layers_by_slabs(m, io, n);
    } else {
        for (int l = 0; l < nl; l++) {
            encoder_layer(m, io, l, n);
            if (io->hidden && l < nl - 1)
                store_rows(io, io->hidden + (size_t)(l + 1) * plane, w->x, 0, (size_t)n, d);
        }
    }
    modernbert_layernorm_rows(m, w->x, w->x, m->final_norm, n);
    for (size_t r = 0; r < (size_t)n; r++) /* pad rows hold no meaning: zeros, as documented */
        if (!is_real(io, r)) memset(w->x + r * d, 0, d * sizeof(float));
    if (io->hidden) memcpy(io->hidden + (size_t)nl * plane, w->x, plane * sizeof(float));
    if (io->last) memcpy(io->last, w->x, plane * sizeof(float));
    return modernbert_tail(m, w->x, io, err);
}
