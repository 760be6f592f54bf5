/* The ane engine of every decoder family (qwen3-ane, llama-ane,
 * gemma3-ane, qwen35-ane): a lowered bundle on a Neural Engine device
 * through the ane_host runner -- bundle open, modelAttributes parsing,
 * binding by name, surface layouts, the per-token request plan,
 * asynchronous completion waits. The device is the real ANE (src/ane,
 * macOS) or the fake one backed by the MIL interpreter (ane_fake.h, every
 * OS), chosen by engine_options.ane_device. The bundle's programs are
 * opened (compiled, loaded) on the device once per engine; what each layer
 * carries (KV caches, a recurrent layer's conv window and delta state)
 * lives in a runner's surfaces, so a sequence is a runner of its own on
 * that shared bundle (surfaces and requests, nothing opened) plus its
 * position. The host side (chunk inputs, the CPU head when the bundle
 * leaves it to the CPU, the reset and replay of recurrent states after a
 * truncation) is the mil engine's (decoder_bundle_host.h); the runner's
 * plan gathers each chunk into order for the recurrent layers' mixers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ane_host/ane_runner.h"
#include "base/log.h"
#include "engine/bundle_cpu_layer.h"
#include "engine/bundle_relower.h"
#include "engine/decoder_bundle_host.h"
#include "engine/engine_ane_device.h"
#include "engine/engines.h"
#include "lower/qwen35_lower.h"

typedef struct ane_engine {
    db_host h;
    engine_ane_dev dev;
    ane_bundle *loaded;   /* the programs on the device, shared by every sequence */
    float *x_out;         /* [D][S_max]: the last layer's x, for the CPU head */
    char placement[1280]; /* ane_bundle_placement and the forms: engine.placement */
    char kind[64];        /* e->kind: the row's, with the device */
    bundle_cpu_layers cpu; /* the refused layers on the CPU decoder (cpu.open), docs/engine.md */
    engine_layer_hook hook; /* --dump-layers: every layer on the CPU decoder */
    void *hook_user;
} ane_engine;

typedef struct ane_seq {
    db_seq base; /* the position (and with recurrent layers the token history); first */
    ane_runner *r;
    bundle_cpu_seq cpu; /* its refused layers' state, with cpu.open */
} ane_seq;

static void ane_close(engine *e) {
    ane_engine *a = e->impl;
    if (!a) return;
    ane_bundle_free(a->loaded);
    bundle_cpu_layers_close(&a->cpu);
    engine_ane_device_close(&a->dev);
    db_host_free(&a->h);
    free(a->x_out);
    free(a);
    e->impl = NULL;
}

static void ane_seq_free(engine *e, engine_seq *seq) {
    (void)e;
    ane_seq *s = (ane_seq *)seq;
    ane_runner_free(s->r);
    bundle_cpu_seq_release(&s->cpu);
    db_seq_release(&s->base);
    free(s);
}

static nc_status ane_seq_new(engine *e, int ctx, engine_seq **out, nc_error *err) {
    (void)ctx; /* fixed by the bundle */
    ane_engine *a = e->impl;
    ane_seq *s = calloc(1, sizeof *s);
    if (!s) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    nc_status st = ane_runner_new(a->loaded, &s->r, err);
    if (st == NC_OK) st = db_seq_init(&s->base, &a->h, err);
    if (st == NC_OK && a->cpu.open) {
        st = bundle_cpu_seq_init(&s->cpu, &a->cpu, err);
        s->cpu.hook = a->hook;
        s->cpu.hook_user = a->hook_user;
        ane_runner_set_cpu_layer(s->r, bundle_cpu_layer_run, &s->cpu);
    }
    if (st != NC_OK) {
        ane_seq_free(e, (engine_seq *)s);
        return st;
    }
    *out = (engine_seq *)s;
    return NC_OK;
}

static nc_status run_chunk(void *user, engine_seq *seq, int n, int p, int S, float *logits,
                           nc_error *err) {
    ane_engine *a = user;
    ane_runner *r = ((ane_seq *)seq)->r;
    db_host *h = &a->h;
    const qwen3_config *cfg = &h->man.cfg;
    size_t D = (size_t)cfg->hidden_size, hd = (size_t)cfg->head_dim, ctx = (size_t)h->man.ctx;
    int col = (p + n - 1) % S, head_on_ane = h->man.lm_head_on_ane;
    if (h->n_recurrent && n > 1) { /* the chunk mixers' inputs (the one-token mixer has none) */
        size_t W = LOWER_STEP_SEQ;
        NC_TRY(ane_runner_write(r, 1, S, "valid", h->valid, (size_t)S, err));
        NC_TRY(ane_runner_write(r, 1, S, "conv_pick_state", h->pick_state, W * W, err));
        NC_TRY(ane_runner_write(r, 1, S, "conv_pick_new", h->pick_new, (size_t)S * W, err));
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
        db_host_head_cpu(h, a->x_out, col, S, logits);
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
    return db_host_step(&a->h, items, n_items, run_chunk, reset_states, a);
}

/* Sequences made from now on report their layers (every layer is on the
 * CPU decoder: ane_ops_layers). */
static void ane_set_layer_hook(engine *e, engine_layer_hook hook, void *user) {
    ane_engine *a = e->impl;
    a->hook = hook;
    a->hook_user = user;
}

static const engine_ops ane_ops = {
    .seq_new = ane_seq_new,
    .seq_free = ane_seq_free,
    .seq_pos = db_seq_pos,
    .seq_truncate = db_seq_truncate,
    .step = ane_step,
    .close = ane_close,
};

/* The same where every layer runs on the CPU decoder, which can report
 * them (--dump-layers); the device's layers cannot. */
static const engine_ops ane_ops_layers = {
    .seq_new = ane_seq_new,
    .seq_free = ane_seq_free,
    .seq_pos = db_seq_pos,
    .seq_truncate = db_seq_truncate,
    .step = ane_step,
    .set_layer_hook = ane_set_layer_hook,
    .close = ane_close,
};

/* The layers the device refused at every rung, on the family's CPU
 * decoder (unless opt says the interpreter); where that decoder cannot
 * open, the interpreter keeps them, with a warning. */
static nc_status open_cpu_layers(ane_engine *a, engine *e, const engine_options *opt,
                                 nc_error *err) {
    int L = a->h.man.cfg.num_hidden_layers, n = 0;
    unsigned char *mark = calloc((size_t)L + 1, 1);
    if (!mark) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    for (int l = 0; l < L; l++)
        n += mark[l] = (unsigned char)ane_bundle_layer_on_cpu(a->loaded, l, NULL);
    if (n && opt->ane_cpu == ENGINE_ANE_CPU_KERNELS) {
        nc_error e2 = {0};
        if (bundle_cpu_layers_open(&a->cpu, &a->h, e->family, mark, opt->n_threads, &e2)) {
            nc_log(NC_LOG_WARN,
                   "ane: the refused layers stay on the MIL interpreter: the CPU engine's "
                   "kernels cannot run them: %s",
                   e2.msg);
            bundle_cpu_layers_close(&a->cpu);
        } else {
            ane_bundle_set_cpu_layers(a->loaded, 1);
            if (n == L) e->ops = &ane_ops_layers;
        }
    }
    free(mark);
    return NC_OK;
}

nc_status engine_open_bundle_ane(const char *dir, const engine_options *opt, engine *e,
                                 nc_error *err) {
    ane_engine *a = calloc(1, sizeof *a);
    if (!a) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    e->impl = a;
    e->ops = &ane_ops;
    NC_TRY(engine_ane_device_open(opt, &a->dev, err));
    NC_TRY(db_host_open(&a->h, dir, e->family, opt->n_threads, err));
    a->dev.dev.relower = engine_bundle_relower; /* the ladder's relower rung */
    NC_TRY(ane_bundle_open(&a->dev.dev, dir, &a->loaded, err));
    NC_TRY(open_cpu_layers(a, e, opt, err));
    /* where each kernel runs: programs the device refused run on the CPU */
    const lower_manifest *man = &a->h.man;
    char where[900];
    ane_bundle_placement(a->loaded, where, sizeof where);
    const lower_forms *f = &man->forms;
    char from[96] = "";
    if (a->cpu.open) snprintf(from, sizeof from, "; CPU engine kernels on %s", a->cpu.source);
    snprintf(a->placement, sizeof a->placement,
             "%s: %s%s; forms: %d kernels per layer, program split %s, kv update %s, rope %s, "
             "attention %s, head %s",
             a->dev.is_fake ? "ane (fake device)" : "ane", where, from, man->kernels_per_layer,
             lower_program_split_name(f->program_split), lower_kv_update_name(f->kv_update),
             lower_rope_form_name(f->rope), lower_attention_form_name(f->attention),
             man->lm_head_on_ane ? lower_head_split_name(f->head_split) : "on the CPU");
    e->placement = a->placement;
    nc_log(NC_LOG_INFO, "%s", a->placement);
    a->x_out = malloc((size_t)man->cfg.hidden_size * a->h.S_max * sizeof(float));
    if (!a->x_out) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    NC_TRY(db_host_fill_engine(&a->h, e, opt, 1, err)); /* fp16 surfaces */
    /* the row's kind (qwen3-ane, llama-ane, qwen35-ane), and which device */
    snprintf(a->kind, sizeof a->kind, "%s%s", e->kind, a->dev.is_fake ? " (fake device)" : "");
    e->kind = a->kind;
    return NC_OK;
}
