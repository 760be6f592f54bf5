/* qwen3-ane and qwen35-ane: a lowered Qwen3 or Qwen3.5 bundle on a Neural
 * Engine device through the ane_host runner -- bundle open, modelAttributes parsing, binding by
 * name, surface layouts, the per-token request plan, asynchronous completion waits. The device is
 * the real ANE (src/ane, macOS) or the fake one backed by the MIL interpreter (ane_fake.h, every
 * OS), chosen by engine_options.ane_device. The bundle's programs are opened (compiled, loaded) on
 * the device once per engine; the KV cache lives in a runner's surfaces, so a sequence is a runner
 * of its own on that shared bundle (surfaces and requests, nothing opened) plus its position; the
 * host side (chunk inputs, the CPU head when the bundle leaves it to the CPU) is shared too
 * (qwen3_bundle_host.h), and for Qwen3.5 the partial RoPE, the prefill chunk's inputs and the
 * replay after a truncation are qwen35-mil's (qwen35_bundle_host.h); the runner's plan gathers each
 * chunk into order for the linear layers' mixers and keeps their states in surfaces. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ane_host/ane_runner.h"
#include "base/log.h"
#include "engine/engine_ane_device.h"
#include "engine/engines.h"
#include "engine/qwen35_bundle_host.h"
#include "lower/qwen35_lower.h"

typedef struct ane_engine {
    qb_host h;
    q35_host q; /* Qwen3.5 */
    int is_q35;
    engine_ane_dev dev;
    ane_bundle *loaded;   /* the programs on the device, shared by every sequence */
    float *x_out;         /* [D][S_max]: the last layer's x, for the CPU head */
    char placement[1280]; /* ane_bundle_placement and the forms: engine.placement */
    char kind[64];        /* e->kind: the row's, with the device */
} ane_engine;

typedef struct ane_seq {
    q35_seq q; /* the position (and for Qwen3.5 the token history); first */
    ane_runner *r;
} ane_seq;

static void ane_close(engine *e) {
    ane_engine *a = e->impl;
    if (!a) return;
    ane_bundle_free(a->loaded);
    engine_ane_device_close(&a->dev);
    qb_host_free(&a->h);
    q35_host_free(&a->q);
    free(a->x_out);
    free(a);
    e->impl = NULL;
}

static nc_status ane_seq_new(engine *e, int ctx, engine_seq **out, nc_error *err) {
    (void)ctx; /* fixed by the bundle */
    ane_engine *a = e->impl;
    ane_seq *s = calloc(1, sizeof *s);
    if (!s) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    qb_seq_init(&s->q.base, &a->h);
    nc_status st = ane_runner_new(a->loaded, &s->r, err);
    if (st == NC_OK && a->is_q35) st = q35_seq_init(&s->q, &a->h, err);
    if (st != NC_OK) {
        ane_runner_free(s->r);
        free(s);
        return st;
    }
    *out = (engine_seq *)s;
    return NC_OK;
}

static void ane_seq_free(engine *e, engine_seq *seq) {
    (void)e;
    ane_seq *s = (ane_seq *)seq;
    ane_runner_free(s->r);
    q35_seq_release(&s->q);
    free(s);
}

static nc_status run_chunk(void *user, engine_seq *seq, int n, int p, int S, float *logits,
                           nc_error *err) {
    ane_engine *a = user;
    ane_runner *r = ((ane_seq *)seq)->r;
    qb_host *h = &a->h;
    const qwen3_config *cfg = &h->man.cfg;
    size_t D = (size_t)cfg->hidden_size, hd = (size_t)cfg->head_dim, ctx = (size_t)h->man.ctx;
    int col = (p + n - 1) % S, head_on_ane = h->man.lm_head_on_ane;
    if (a->is_q35) {
        size_t W = LOWER_STEP_SEQ;
        q35_host_rope(&a->q, h, n, p, S);
        if (n > 1) { /* the chunk mixers' inputs (the one-token mixer has none) */
            q35_host_chunk_picks(&a->q, n, S);
            NC_TRY(ane_runner_write(r, 1, S, "valid", a->q.valid, (size_t)S, err));
            NC_TRY(ane_runner_write(r, 1, S, "conv_pick_state", a->q.pick_state, W * W, err));
            NC_TRY(ane_runner_write(r, 1, S, "conv_pick_new", a->q.pick_new, (size_t)S * W, err));
        }
    }
    NC_TRY(ane_runner_write(r, 1, S, "x", h->x, D * S, err));
    NC_TRY(ane_runner_write(r, 1, S, "rope_cos", h->cs, hd * S, err));
    NC_TRY(ane_runner_write(r, 1, S, "rope_sin", h->sn, hd * S, err));
    NC_TRY(ane_runner_write(r, 1, S, "attn_mask", h->mask, (size_t)S * ctx, err));
    if (ane_runner_has(r, 1, S, "kv_write")) /* --kv-update host: the runner writes the caches */
        NC_TRY(ane_runner_write(r, 1, S, "kv_write", h->wr, ctx, err));
    if (h->W) { /* Gemma 3's sliding layers */
        NC_TRY(ane_runner_write(r, 1, S, "rope_cos_local", h->cs_l, hd * S, err));
        NC_TRY(ane_runner_write(r, 1, S, "rope_sin_local", h->sn_l, hd * S, err));
        NC_TRY(ane_runner_write(r, 1, S, "attn_mask_local", h->mask_l, (size_t)S * h->W, err));
        if (ane_runner_has(r, 1, S, "kv_write_local"))
            NC_TRY(ane_runner_write(r, 1, S, "kv_write_local", h->wr_l, (size_t)h->W, err));
    }
    /* sync unless the chip's probe profile found an async mode faster
     * (ane_device.preferred_mode, docs/ane-bridge.md) */
    NC_TRY(ane_runner_run_chunk(r, S, n, p, logits && head_on_ane ? col : -1,
                                (ane_run_mode)a->dev.dev.preferred_mode, err));
    if (!logits) return NC_OK;
    if (!head_on_ane) {
        NC_TRY(ane_runner_read(r, 1, S, "x", a->x_out, D * S, err));
        qb_host_head_cpu(h, a->x_out, col, S, logits);
        return NC_OK;
    }
    int64_t off = 0;
    for (int i = 0; i < h->man.n_head_chunks; i++) {
        char name[32];
        snprintf(name, sizeof name, "logits_%d", i);
        int64_t rows = h->man.head_rows[i];
        if (off + rows > cfg->vocab_size)
            return nc_fail(err, NC_ERR_FORMAT, "%s: head chunks exceed the vocabulary", h->dir);
        NC_TRY(ane_runner_read_column(r, S, name, 0, logits + off, (size_t)rows, err));
        off += rows;
    }
    if (off != cfg->vocab_size)
        return nc_fail(err, NC_ERR_FORMAT, "%s: head chunks cover %lld of %d rows", h->dir,
                       (long long)off, cfg->vocab_size);
    return NC_OK;
}

static nc_status reset_states(void *user, engine_seq *seq, nc_error *err) {
    (void)user;
    return ane_runner_reset(((ane_seq *)seq)->r, err);
}

/* Sequence after sequence (each has its own runner and surfaces). */
static nc_status ane_step(engine *e, engine_step_item *items, int n_items, nc_error *err) {
    (void)err;
    ane_engine *a = e->impl;
    if (a->is_q35) return q35_host_step(&a->q, &a->h, items, n_items, run_chunk, reset_states, a);
    return qb_host_step(&a->h, items, n_items, run_chunk, a);
}

static const engine_ops ane_ops = {
    .seq_new = ane_seq_new,
    .seq_free = ane_seq_free,
    .seq_pos = qb_seq_pos,
    .seq_truncate = qb_seq_truncate,
    .step = ane_step,
    .close = ane_close,
};

/* Qwen3.5: a truncation resets the recurrent states (q35_seq_truncate) */
static const engine_ops ane35_ops = {
    .seq_new = ane_seq_new,
    .seq_free = ane_seq_free,
    .seq_pos = qb_seq_pos,
    .seq_truncate = q35_seq_truncate,
    .step = ane_step,
    .close = ane_close,
};

static nc_status open_ane(const char *dir, const engine_options *opt, engine *e, int is_q35,
                          nc_error *err) {
    ane_engine *a = calloc(1, sizeof *a);
    if (!a) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    e->impl = a;
    e->ops = is_q35 ? &ane35_ops : &ane_ops;
    a->is_q35 = is_q35;
    NC_TRY(engine_ane_device_open(opt, &a->dev, err));
    NC_TRY(qb_host_open(&a->h, dir, opt->n_threads, err));
    if (is_q35) NC_TRY(q35_host_open(&a->q, dir, &a->h, err));
    NC_TRY(ane_bundle_open(&a->dev.dev, dir, &a->loaded, err));
    /* where each kernel runs: programs the device refused run on the CPU */
    const lower_manifest *man = &a->h.man;
    char where[900];
    ane_bundle_placement(a->loaded, where, sizeof where);
    const lower_forms *f = &man->forms;
    snprintf(a->placement, sizeof a->placement,
             "%s: %s; forms: %d kernels per layer, program split %s, kv update %s, rope %s, "
             "attention %s, head %s",
             a->dev.is_fake ? "ane (fake device)" : "ane", where, man->kernels_per_layer,
             lower_program_split_name(f->program_split), lower_kv_update_name(f->kv_update),
             lower_rope_form_name(f->rope), lower_attention_form_name(f->attention),
             man->lm_head_on_ane ? lower_head_split_name(f->head_split) : "on the CPU");
    e->placement = a->placement;
    nc_log(NC_LOG_INFO, "%s", a->placement);
    a->x_out = malloc((size_t)man->cfg.hidden_size * a->h.S_max * sizeof(float));
    if (!a->x_out) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    NC_TRY(engine_bundle_fill(e, dir, man, opt, err));
    if (is_q35) {
        e->kv_bytes_per_token = q35_host_kv_bytes_per_token(&a->q);
        e->dims = qwen35_dims(&a->q.cfg);
    }
    /* the row's kind (qwen3-ane, llama-ane, qwen35-ane), and which device */
    snprintf(a->kind, sizeof a->kind, "%s%s", e->kind, a->dev.is_fake ? " (fake device)" : "");
    e->kind = a->kind;
    return NC_OK;
}

nc_status engine_open_qwen3_ane(const char *dir, const engine_options *opt, engine *e,
                                nc_error *err) {
    return open_ane(dir, opt, e, 0, err);
}

nc_status engine_open_qwen35_ane(const char *dir, const engine_options *opt, engine *e,
                                 nc_error *err) {
    return open_ane(dir, opt, e, 1, err);
}
