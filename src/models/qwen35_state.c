/* One Qwen3.5 sequence: the full-attention layers' KV cache, the linear
 * layers' conv windows and delta-rule states, the tokens so far, and one
 * snapshot of the linear states. A KV cache can be cut at any position; a
 * recurrent state cannot, so truncating below the current position restores
 * the snapshot (or the empty state) and marks the tokens between it and the
 * kept position for replay by the next forward (docs/qwen35.md). */
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/half.h"
#include "models/dec_kv.h"
#include "models/qwen35_impl.h"

static size_t lin_conv_bytes(const qwen35_state *s) {
    return (size_t)s->n_lin * qwen35_conv_floats(&s->m->cfg) * sizeof(float);
}
static size_t lin_rec_bytes(const qwen35_state *s) {
    return (size_t)s->n_lin * qwen35_rec_floats(&s->m->cfg) * sizeof(float);
}
static size_t kv_bytes(const qwen35_state *s, int *ovf) {
    const qwen35_config *c = &s->m->cfg;
    size_t kvd = (size_t)c->num_key_value_heads * c->head_dim;
    return nc_mul_size(nc_mul_size((size_t)s->n_kv * (size_t)s->ctx, kvd, ovf),
                       s->m->b.kv_f16 ? sizeof(nc_fp16) : sizeof(float), ovf);
}

nc_status qwen35_state_new(const qwen35_model *m, int ctx, qwen35_state **out, nc_error *err) {
    return qwen35_state_new_layers(m, ctx, NULL, out, err);
}

nc_status qwen35_state_new_layers(const qwen35_model *m, int ctx, const unsigned char *layers,
                                  qwen35_state **out, nc_error *err) {
    *out = NULL;
    const qwen35_config *c = &m->cfg;
    if (ctx <= 0 || ctx > c->max_position_embeddings) ctx = c->max_position_embeddings;
    qwen35_state *s = calloc(1, sizeof *s);
    if (!s) return nc_fail(err, NC_ERR_NOMEM, "Qwen3.5 state: out of memory");
    s->m = m;
    s->ctx = ctx;
    s->snap_pos = -1;
    s->snap_at = -1;
    s->n_kv = c->n_full;
    s->n_lin = m->n_linear;
    if (layers) { /* a layer state: the marked layers only */
        s->slot = malloc((size_t)c->num_hidden_layers * sizeof *s->slot);
        if (!s->slot) {
            free(s);
            return nc_fail(err, NC_ERR_NOMEM, "Qwen3.5 state: out of memory");
        }
        s->n_kv = s->n_lin = 0;
        for (int l = 0; l < c->num_hidden_layers; l++)
            s->slot[l] = !layers[l] ? -1 : m->layers[l].is_full ? s->n_kv++ : s->n_lin++;
    }
    int ovf = 0;
    size_t kvb = kv_bytes(s, &ovf);
    /* calloc: large zeroed blocks become resident only as they are written */
    if (!ovf && kvb) {
        s->k_cache = calloc(1, kvb);
        s->v_cache = calloc(1, kvb);
    }
    s->tokens = calloc((size_t)ctx, sizeof *s->tokens);
    s->conv = calloc(1, lin_conv_bytes(s) + 1);
    s->rec = calloc(1, lin_rec_bytes(s) + 1);
    s->snap_conv = calloc(1, lin_conv_bytes(s) + 1);
    s->snap_rec = calloc(1, lin_rec_bytes(s) + 1);
    if ((kvb && (!s->k_cache || !s->v_cache)) || ovf || !s->tokens || !s->conv || !s->rec ||
        !s->snap_conv || !s->snap_rec) {
        qwen35_state_free(s);
        return nc_fail(err, NC_ERR_NOMEM,
                       "Qwen3.5 state: out of memory for a context of %d tokens (%zu MiB of KV "
                       "cache, %zu MiB of recurrent state)",
                       ctx, ovf ? (size_t)-1 : 2 * kvb >> 20,
                       2 * (lin_conv_bytes(s) + lin_rec_bytes(s)) >> 20);
    }
    *out = s;
    return NC_OK;
}

void qwen35_state_free(qwen35_state *s) {
    if (!s) return;
    free(s->k_cache);
    free(s->v_cache);
    free(s->tokens);
    free(s->conv);
    free(s->rec);
    free(s->snap_conv);
    free(s->snap_rec);
    free(s->slot);
    free(s);
}

int qwen35_state_pos(const qwen35_state *s) {
    return s->pos;
}
int qwen35_state_ctx(const qwen35_state *s) {
    return s->ctx;
}

int qwen35_state_truncate(qwen35_state *s, int n_keep) {
    if (n_keep < 0) n_keep = 0;
    if (n_keep >= s->pos) return s->pos;
    s->pos = n_keep;
    if (s->snap_pos > n_keep) s->snap_pos = -1; /* of a history being dropped */
    if (s->snap_at > n_keep) s->snap_at = -1;
    if (s->lin_pos <= n_keep) return n_keep;    /* a replay is already pending below it */
    if (s->snap_pos >= 0 && s->snap_pos <= n_keep) {
        memcpy(s->conv, s->snap_conv, lin_conv_bytes(s));
        memcpy(s->rec, s->snap_rec, lin_rec_bytes(s));
        s->lin_pos = s->snap_pos;
    } else {
        memset(s->conv, 0, lin_conv_bytes(s));
        memset(s->rec, 0, lin_rec_bytes(s));
        s->lin_pos = 0;
    }
    return n_keep;
}

/* After a multi-token forward: the state at its end is the likeliest
 * prefix of the next request (a chat's history before the reply). */
void qwen35_state_snapshot(qwen35_state *s) {
    memcpy(s->snap_conv, s->conv, lin_conv_bytes(s));
    memcpy(s->snap_rec, s->rec, lin_rec_bytes(s));
    s->snap_pos = s->lin_pos;
}

void qwen35_state_checkpoint(qwen35_state *s) {
    if (s->lin_pos == s->pos) {
        qwen35_state_snapshot(s);
        s->snap_at = s->pos; /* reached: the next forward only keeps it */
    } else {
        s->snap_at = s->pos;
    }
}

nc_status qwen35_state_copy(qwen35_state *dst, const qwen35_state *src, nc_error *err) {
    if (dst->m != src->m || dst->ctx < src->pos || dst->slot || src->slot)
        return nc_fail(err, NC_ERR_INVALID,
                       "Qwen3.5 state copy: the states belong to different models or the "
                       "destination's context (%d) is shorter than the source's %d tokens",
                       dst->ctx, src->pos);
    const qwen35_model *m = src->m;
    const qwen35_config *c = &m->cfg;
    size_t kvd = (size_t)c->num_key_value_heads * c->head_dim;
    dec_kv from = {kvd, c->head_dim, src->ctx, m->b.kv_f16}, to = from;
    to.ctx = dst->ctx;
    dec_kv_copy(&to, dst->k_cache, &from, src->k_cache, c->n_full, src->pos);
    dec_kv_copy(&to, dst->v_cache, &from, src->v_cache, c->n_full, src->pos);
    memcpy(dst->tokens, src->tokens, (size_t)src->pos * sizeof *src->tokens);
    memcpy(dst->conv, src->conv, lin_conv_bytes(src));
    memcpy(dst->rec, src->rec, lin_rec_bytes(src));
    memcpy(dst->snap_conv, src->snap_conv, lin_conv_bytes(src));
    memcpy(dst->snap_rec, src->snap_rec, lin_rec_bytes(src));
    dst->pos = src->pos;
    dst->lin_pos = src->lin_pos;
    dst->snap_pos = src->snap_pos;
    dst->snap_at = src->snap_at;
    return NC_OK;
}
