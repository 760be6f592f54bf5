/* The per-token request plan (ane_plan.h). A layer's kernels are the
 * functions its program holds for the bucket, in manifest order (4, 3, 2
 * or 1 per layer: docs/lowering.md), bound as a dataflow over names: an
 * input takes the buffer its name holds now (the host's x, rope_cos,
 * rope_sin, attn_mask, kv_write, the layer's current cache, or an earlier
 * kernel's q / k_new / v_new / gate); an output NAME_out writes the other buffer
 * of NAME's pair (x@S <-> x2@S, a cache's or state's .a <-> .b) and NAME
 * holds it from then on; q, k_new, v_new, gate get their shared bucket
 * buffers.
 * A Qwen3.5 mixer (a function with recurrent-state I/O) is chosen by the
 * plan's form from its I/O names and runs on its own x pair between a
 * gather and a scatter host step. A name
 * outside these is an error, so a change in the lowering's I/O cannot slip
 * through as a silently unbound surface. */
#include "ane_host/ane_plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ane_host/ane_layout.h"
#include "bundle/bundle_forms.h"

/* The buffers carried from one token to the next, per layer: NAME is read
 * from "NAME.L.a" and NAME_out written to "NAME.L.b" at parity 0, the
 * other way round at parity 1. The last two are a Qwen3.5 linear layer's
 * recurrent state: the functions that take them are its mixers. */
static const char *const carried[] = {"k_cache", "v_cache", "conv_state", "delta_state"};
#define N_CARRIED 4
#define FIRST_RECURRENT 2

/* What one kernel of a layer passes to a later one within the bucket (the
 * gate: Qwen3.5's gated attention), in shared "NAME@sS" buffers. */
static const char *const passed[] = {"q", "k_new", "v_new", "gate"};
#define N_PASSED 4

/* The names a layer's kernels may pass to each other, and the buffers the
 * host provides. x_out writes x_other, which then becomes x. */
typedef struct layer_flow {
    char x[ANE_NAME_MAX], x_other[ANE_NAME_MAX];
    char state[N_CARRIED][ANE_NAME_MAX];
    char pass[N_PASSED][ANE_NAME_MAX]; /* empty until an earlier kernel writes it */
} layer_flow;

int ane_plan_is_carried(const char *buf) {
    for (int i = 0; i < N_CARRIED; i++) {
        size_t n = strlen(carried[i]);
        if (!strncmp(buf, carried[i], n) && buf[n] == '.') return 1;
    }
    return 0;
}

/* 1 when f takes a recurrent state (a Qwen3.5 mixer). */
static int is_mixer(const lower_fn_info *f) {
    for (int i = FIRST_RECURRENT; i < N_CARRIED; i++)
        if (lower_fn_io(f, carried[i], 0)) return 1;
    return 0;
}

/* The buffer name input `io` of a layer kernel reads (NULL: unknown). */
static const char *input_buf(const ane_plan *p, const layer_flow *f, const char *io, char *buf,
                             size_t cap) {
    /* the _local ones: a sliding-window layer's (Gemma 3, docs/lowering.md) */
    static const char *const host[] = {"rope_cos",       "rope_sin",        "attn_mask",
                                       "valid",          "conv_pick_state", "conv_pick_new",
                                       "rope_cos_local", "rope_sin_local",  "attn_mask_local"};
    if (!strcmp(io, "x")) return f->x;
    for (int i = 0; i < N_CARRIED; i++)
        if (!strcmp(io, carried[i])) return f->state[i];
    for (int i = 0; i < N_PASSED; i++)
        if (!strcmp(io, passed[i])) return f->pass[i][0] ? f->pass[i] : NULL;
    if (!strcmp(io, "kv_write") || !strcmp(io, "kv_write_local")) return io;
    for (size_t i = 0; i < sizeof host / sizeof host[0]; i++)
        if (!strcmp(io, host[i])) {
            snprintf(buf, cap, "%s@s%d", io, p->seq);
            return buf;
        }
    return NULL;
}

/* The buffer output `io` writes; updates the flow (NULL: unknown). */
static const char *output_buf(const ane_plan *p, layer_flow *f, int layer, const char *io,
                              char *buf, size_t cap) {
    if (!strcmp(io, "x_out")) {
        char t[ANE_NAME_MAX];
        memcpy(t, f->x, sizeof t);
        memcpy(f->x, f->x_other, sizeof t);
        memcpy(f->x_other, t, sizeof t);
        return f->x;
    }
    for (int i = 0; i < N_CARRIED; i++) {
        size_t n = strlen(carried[i]);
        if (!strncmp(io, carried[i], n) && !strcmp(io + n, "_out")) {
            snprintf(f->state[i], ANE_NAME_MAX, "%s.%d.%c", carried[i], layer,
                     p->parity ? 'a' : 'b');
            return f->state[i];
        }
    }
    for (int i = 0; i < N_PASSED; i++)
        if (!strcmp(io, passed[i])) {
            snprintf(f->pass[i], ANE_NAME_MAX, "%s@s%d", io, p->seq);
            snprintf(buf, cap, "%s", f->pass[i]);
            return buf;
        }
    return NULL;
}

void ane_plan_free(ane_plan *p) {
    if (!p) return;
    free(p->bufs);
    free(p->steps);
    memset(p, 0, sizeof *p);
}

int ane_plan_find_buf(const ane_plan *p, const char *name) {
    for (int i = 0; i < p->n_bufs; i++)
        if (strcmp(p->bufs[i].name, name) == 0) return i;
    return -1;
}

/* The buffer `name` with io's shape: found (shapes must agree) or added. */
static nc_status use_buf(ane_plan *p, int cap, const char *name, const lower_io *io, const char *fn,
                         int *out, nc_error *err) {
    int b = ane_plan_find_buf(p, name);
    if (b >= 0) {
        const ane_plan_buf *x = &p->bufs[b];
        int same = x->rank == io->rank && strcmp(x->dtype, io->dtype) == 0;
        for (int i = 0; same && i < io->rank; i++)
            same = x->shape[i] == io->shape[i];
        if (!same)
            return nc_fail(err, NC_ERR_FORMAT,
                           "%s: '%s' is bound to buffer %s, whose shape or dtype differs", fn,
                           io->name, name);
        *out = b;
        return NC_OK;
    }
    if (p->n_bufs >= cap) return nc_fail(err, NC_ERR_INTERNAL, "plan: more than %d buffers", cap);
    ane_plan_buf *x = &p->bufs[p->n_bufs];
    snprintf(x->name, sizeof x->name, "%s", name);
    snprintf(x->dtype, sizeof x->dtype, "%s", io->dtype);
    x->rank = io->rank;
    memcpy(x->shape, io->shape, sizeof x->shape);
    *out = p->n_bufs++;
    return NC_OK;
}

/* One request for function f of program prog; flow NULL: the head (its x
 * is head_x, its outputs keep their names). */
static nc_status add_kernel(ane_plan *p, int cap, int prog, int layer, const lower_fn_info *f,
                            layer_flow *flow, nc_error *err) {
    ane_plan_step *s = &p->steps[p->n_steps++];
    s->kind = ANE_STEP_KERNEL;
    s->program = prog;
    s->layer = layer;
    snprintf(s->fn, sizeof s->fn, "%s", f->name);
    s->n_in = f->n_in;
    s->n_out = f->n_out;
    for (int side = 0; side < 2; side++) {
        int n = side ? f->n_out : f->n_in;
        for (int i = 0; i < n; i++) {
            const lower_io *io = side ? &f->out[i] : &f->in[i];
            char buf[ANE_NAME_MAX];
            const char *name;
            if (!flow)
                name = side ? (strncmp(io->name, "logits_", 7) ? NULL : io->name)
                            : (strcmp(io->name, "x") ? NULL : "head_x");
            else if (side)
                name = output_buf(p, flow, layer, io->name, buf, sizeof buf);
            else
                name = input_buf(p, flow, io->name, buf, sizeof buf);
            if (!name)
                return nc_fail(err, NC_ERR_UNSUPPORTED, "plan: %s %s '%s' has no buffer rule",
                               f->name, side ? "output" : "input", io->name);
            ane_plan_io *pio = side ? &s->out[i] : &s->in[i];
            snprintf(pio->name, sizeof pio->name, "%s", io->name);
            NC_TRY(use_buf(p, cap, name, io, f->name, &pio->buf, err));
        }
    }
    p->n_requests++;
    return NC_OK;
}

/* A host step moving columns of buffer in_buf into out_buf. */
static void add_host(ane_plan *p, ane_step_kind kind, int layer, const char *what, int in_buf,
                     int out_buf) {
    ane_plan_step *s = &p->steps[p->n_steps++];
    s->kind = kind;
    s->program = -1;
    s->layer = layer;
    snprintf(s->fn, sizeof s->fn, "host:%s", what);
    s->n_in = s->n_out = 1;
    snprintf(s->in[0].name, sizeof s->in[0].name, "x");
    s->in[0].buf = in_buf;
    snprintf(s->out[0].name, sizeof s->out[0].name, "x");
    s->out[0].buf = out_buf;
}

/* --kv-update host: after the kernel that makes k_new and v_new, a host
 * step per cache writes the chunk's columns into the layer's cache (its
 * buffer as the layer's kernel that reads it declares it). */
static nc_status add_host_kv(const lower_manifest *m, ane_plan *p, int cap, int layer,
                             const lower_fn_info *fn, const layer_flow *f, nc_error *err) {
    static const char *const news[2] = {"k_new", "v_new"};
    for (int i = 0; i < 2; i++) {
        if (!lower_fn_io(fn, news[i], 1)) return NC_OK;
        const lower_io *cache = NULL;
        for (int prog = 0; prog < m->n_programs && !cache; prog++)
            for (int k = 0; m->programs[prog].layer == layer && k < m->programs[prog].n_fns; k++)
                if (m->programs[prog].fns[k].seq == p->seq && !cache)
                    cache = lower_fn_io(&m->programs[prog].fns[k], carried[i], 0);
        int src = ane_plan_find_buf(p, f->pass[1 + i]), dst = 0;
        if (!cache || src < 0)
            return nc_fail(err, NC_ERR_FORMAT, "plan: layer %d: no %s for the host's %s update",
                           layer, cache ? news[i] : carried[i], news[i]);
        NC_TRY(use_buf(p, cap, f->state[i], cache, fn->name, &dst, err));
        add_host(p, ANE_STEP_KV, layer, i ? "v" : "k", src, dst);
    }
    return NC_OK;
}

/* The mixer of program pi for the plan's form, NULL when pi has none (a
 * full-attention or Qwen3 layer). */
static nc_status find_mixer(const ane_plan *p, const lower_program_info *pi,
                            const lower_fn_info **out, nc_error *err) {
    int any = 0;
    *out = NULL;
    for (int k = 0; k < pi->n_fns; k++) {
        const lower_fn_info *f = &pi->fns[k];
        if (!is_mixer(f)) continue;
        any = 1;
        int chunk = lower_fn_io(f, "valid", 0) != NULL;
        if (p->form == ANE_FORM_CHUNK ? !chunk || f->seq != p->seq : chunk) continue;
        if (*out)
            return nc_fail(err, NC_ERR_FORMAT, "plan: %s has two %s functions with state: %s, %s",
                           pi->path, chunk ? "chunk" : "one-token", (*out)->name, f->name);
        *out = f;
    }
    if (any && !*out)
        return nc_fail(err, NC_ERR_NOT_FOUND,
                       "plan: %s has no %s function with state for bucket %d", pi->path,
                       p->form == ANE_FORM_CHUNK ? "chunk" : "one-token", p->seq);
    return NC_OK;
}

/* gather -> mixer (on the xs@sN pair) -> scatter; the layer flow's x stays. */
static nc_status add_mixer(ane_plan *p, int cap, int prog, int layer, const lower_fn_info *fn,
                           layer_flow *f, nc_error *err) {
    const lower_io *xio = lower_fn_io(fn, "x", 0);
    if (!xio || xio->rank < 1)
        return nc_fail(err, NC_ERR_FORMAT, "plan: %s has no input 'x'", fn->name);
    lower_io xs = *xio; /* the bucket's x: the mixer's with S columns */
    xs.shape[xs.rank - 1] = p->seq;
    layer_flow mf = *f;
    snprintf(mf.x, sizeof mf.x, "xs@s%d", fn->seq);
    snprintf(mf.x_other, sizeof mf.x_other, "xs2@s%d", fn->seq);
    int bx = 0, bin = 0, bout = 0;
    NC_TRY(use_buf(p, cap, f->x, &xs, fn->name, &bx, err));
    NC_TRY(use_buf(p, cap, mf.x, xio, fn->name, &bin, err));
    add_host(p, ANE_STEP_GATHER, layer, "gather", bx, bin);
    NC_TRY(add_kernel(p, cap, prog, layer, fn, &mf, err));
    NC_TRY(use_buf(p, cap, mf.x, xio, fn->name, &bout, err));
    add_host(p, ANE_STEP_SCATTER, layer, "scatter", bout, bx);
    memcpy(f->state, mf.state, sizeof f->state);
    return NC_OK;
}

static nc_status build(const lower_manifest *m, ane_plan *p, int cap, int cap_steps,
                       nc_error *err) {
    int L = m->cfg.num_hidden_layers, head = -1;
    char x[ANE_NAME_MAX];
    snprintf(x, sizeof x, "x@s%d", p->seq); /* the host writes the embeddings here */
    for (int l = 0; l < L; l++) {
        layer_flow f = {0};
        snprintf(f.x, sizeof f.x, "%s", x);
        snprintf(f.x_other, sizeof f.x_other, "%s%s", strncmp(x, "x@", 2) ? "x" : "x2",
                 strchr(x, '@'));
        /* --kv-update host: no kernel writes a cache, the host writes the
         * chunk's columns into it in place (past the position, so a failed
         * token leaves nothing a later one reads): one cache, no ping-pong */
        int host_kv = m->forms.kv_update == LOWER_KV_HOST;
        for (int i = 0; i < N_CARRIED; i++)
            snprintf(f.state[i], sizeof f.state[i], "%s.%d.%c", carried[i], l,
                     p->parity && !(host_kv && i < FIRST_RECURRENT) ? 'b' : 'a');
        /* the layer's programs in manifest order: one, or one per kernel
         * or function (the program split) */
        int n = 0, n_progs = 0;
        for (int prog = 0; prog < m->n_programs; prog++) {
            const lower_program_info *pi = &m->programs[prog];
            if (pi->layer != l) continue;
            n_progs++;
            const lower_fn_info *mixer = NULL;
            NC_TRY(find_mixer(p, pi, &mixer, err));
            if (mixer) {
                if (p->n_steps + 5 >= cap_steps)
                    return nc_fail(err, NC_ERR_INTERNAL, "plan: more than %d steps", cap_steps);
                NC_TRY(add_mixer(p, cap, prog, l, mixer, &f, err));
            }
            for (int k = 0; k < pi->n_fns; k++) {
                if (pi->fns[k].seq != p->seq || is_mixer(&pi->fns[k])) continue;
                if (p->n_steps + 2 >= cap_steps)
                    return nc_fail(err, NC_ERR_INTERNAL, "plan: more than %d steps", cap_steps);
                NC_TRY(add_kernel(p, cap, prog, l, &pi->fns[k], &f, err));
                n++;
                if (host_kv) NC_TRY(add_host_kv(m, p, cap, l, &pi->fns[k], &f, err));
            }
        }
        if (!n_progs)
            return nc_fail(err, NC_ERR_NOT_FOUND, "plan: the manifest has no program for layer %d",
                           l);
        if (!n)
            return nc_fail(err, NC_ERR_NOT_FOUND, "plan: layer %d has no function for bucket %d", l,
                           p->seq);
        snprintf(x, sizeof x, "%s", f.x);
    }
    p->x_final = ane_plan_find_buf(p, x);
    if (!m->lm_head_on_ane) return NC_OK;
    /* the head: one program, or one per LM-head chunk, all reading head_x */
    char fn[ANE_NAME_MAX];
    snprintf(fn, sizeof fn, "head_s%d", LOWER_HEAD_SEQ);
    int xb = ane_plan_find_buf(p, x); /* the last layer's output */
    for (int i = 0; i < m->n_programs; i++) {
        if (m->programs[i].layer >= 0) continue;
        const lower_fn_info *f = lower_manifest_fn(&m->programs[i], fn);
        const lower_io *hx = f ? lower_fn_io(f, "x", 0) : NULL;
        if (!hx || xb < 0)
            return nc_fail(err, NC_ERR_NOT_FOUND, "plan: %s %s has no input 'x'",
                           m->programs[i].path, fn);
        if (p->n_steps + 2 >= cap_steps)
            return nc_fail(err, NC_ERR_INTERNAL, "plan: more than %d steps", cap_steps);
        if (head < 0) {
            int hb = 0;
            NC_TRY(use_buf(p, cap, "head_x", hx, fn, &hb, err));
            add_host(p, ANE_STEP_HEAD_COLUMN, -1, "last-column", xb, hb);
        }
        head = i;
        NC_TRY(add_kernel(p, cap, head, -1, f, NULL, err));
    }
    if (head < 0)
        return nc_fail(err, NC_ERR_NOT_FOUND,
                       "plan: the LM head is on the ANE but no program holds it");
    return NC_OK;
}

int ane_plan_n_forms(const lower_manifest *m) {
    for (int i = 0; i < m->n_programs; i++)
        for (int k = 0; k < m->programs[i].n_fns; k++)
            if (is_mixer(&m->programs[i].fns[k])) return 2;
    return 1;
}

nc_status ane_plan_qwen3(const lower_manifest *m, int seq, ane_plan_form form, int parity,
                         ane_plan *out, nc_error *err) {
    memset(out, 0, sizeof *out);
    int known = 0;
    for (int i = 0; i < m->n_seqs; i++)
        known |= m->seqs[i] == seq;
    if (!known)
        return nc_fail(err, NC_ERR_INVALID, "plan: %d is not one of the bundle's sequence buckets",
                       seq);
    out->batch = 1;
    out->seq = seq;
    out->form = form;
    out->parity = parity & 1;
    int L = m->cfg.num_hidden_layers;
    int cap_steps = 6 * L + 4 + m->n_programs;
    int cap_bufs = 16 + 8 * L + LOWER_MAX_IO + LOWER_MAX_HEAD_CHUNKS;
    out->steps = calloc((size_t)cap_steps, sizeof *out->steps);
    out->bufs = calloc((size_t)cap_bufs, sizeof *out->bufs);
    if (!out->steps || !out->bufs) {
        ane_plan_free(out);
        return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    }
    nc_status st = build(m, out, cap_bufs, cap_steps, err);
    if (st) ane_plan_free(out);
    return st;
}

void ane_plan_buf_name(char *buf, size_t cap, const char *io, int batch, int seq) {
    if (batch > 1)
        snprintf(buf, cap, "%s@b%ds%d", io, batch, seq);
    else
        snprintf(buf, cap, "%s@s%d", io, seq);
}

nc_status ane_plan_encoder(const lower_program_info *prog, int batch, int seq, ane_plan *out,
                           nc_error *err) {
    memset(out, 0, sizeof *out);
    char fn[ANE_NAME_MAX];
    mb_lower_fn_name(fn, sizeof fn, batch, seq);
    const lower_fn_info *f = lower_manifest_fn(prog, fn);
    if (!f) return nc_fail(err, NC_ERR_NOT_FOUND, "plan: %s has no function %s", prog->path, fn);
    out->batch = batch;
    out->seq = seq;
    out->x_final = -1;
    int cap = f->n_in + f->n_out;
    out->steps = calloc(1, sizeof *out->steps);
    out->bufs = calloc((size_t)cap + 1, sizeof *out->bufs);
    if (!out->steps || !out->bufs) {
        ane_plan_free(out);
        return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    }
    ane_plan_step *s = &out->steps[out->n_steps++];
    s->kind = ANE_STEP_KERNEL;
    s->program = 0;
    s->layer = 0; /* every layer (-1 is the head) */
    snprintf(s->fn, sizeof s->fn, "%s", f->name);
    s->n_in = f->n_in;
    s->n_out = f->n_out;
    nc_status st = NC_OK;
    for (int i = 0; i < cap && !st; i++) {
        int side = i >= f->n_in;
        const lower_io *io = side ? &f->out[i - f->n_in] : &f->in[i];
        ane_plan_io *pio = side ? &s->out[i - f->n_in] : &s->in[i];
        char name[ANE_NAME_MAX];
        ane_plan_buf_name(name, sizeof name, io->name, batch, seq);
        snprintf(pio->name, sizeof pio->name, "%s", io->name);
        st = use_buf(out, cap, name, io, f->name, &pio->buf, err);
        if (!st && side && !strcmp(io->name, "hidden")) out->x_final = pio->buf;
    }
    out->n_requests = 1;
    if (st) ane_plan_free(out);
    return st;
}

nc_status ane_plan_entries(const ane_plan *p, int *entries, nc_error *err) {
    unsigned char *written = calloc((size_t)p->n_bufs + 1, 1);
    if (!written) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    memset(entries, 0, (size_t)p->n_bufs * sizeof *entries);
    nc_status st = NC_OK;
    for (int i = 0; i < p->n_steps && !st; i++) {
        const ane_plan_step *s = &p->steps[i];
        for (int a = 0; a < s->n_in && !st; a++) {
            int b = s->in[a].buf;
            for (int o = 0; o < s->n_out; o++)
                if (s->out[o].buf == b)
                    st = nc_fail(err, NC_ERR_INTERNAL,
                                 "plan: step %d (%s) reads and writes buffer %s", i, s->fn,
                                 p->bufs[b].name);
            if (!written[b]) entries[b] = 1;
        }
        for (int o = 0; o < s->n_out; o++)
            written[s->out[o].buf] = 1;
    }
    free(written);
    return st;
}

/* --- surface allocation sizes --------------------------------------------- */

static int size_index(const ane_surface_sizes *s, const char *name) {
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->names[i], name) == 0) return i;
    return -1;
}

static int uf_root(int *parent, int i) {
    while (parent[i] != i)
        i = parent[i] = parent[parent[i]];
    return i;
}

nc_status ane_plan_surface_sizes(const ane_plan *const *plans, int n_plans,
                                 const ane_surface_policy *policy, ane_surface_sizes *out,
                                 nc_error *err) {
    return ane_plan_surface_sizes_bound(plans, n_plans, policy, NULL, NULL, out, err);
}

nc_status ane_plan_surface_sizes_bound(const ane_plan *const *plans, int n_plans,
                                       const ane_surface_policy *policy, ane_bound_bytes_fn bound,
                                       void *user, ane_surface_sizes *out, nc_error *err) {
    memset(out, 0, sizeof *out);
    int cap = 0;
    for (int p = 0; p < n_plans; p++)
        cap += plans[p]->n_bufs;
    out->names = calloc((size_t)cap + 1, sizeof *out->names);
    out->bytes = calloc((size_t)cap + 1, sizeof *out->bytes);
    int *parent = calloc((size_t)cap + 1, sizeof *parent);
    nc_status st =
        out->names && out->bytes && parent ? NC_OK : nc_fail(err, NC_ERR_NOMEM, "out of memory");
    for (int p = 0; p < n_plans && !st; p++)
        for (int b = 0; b < plans[p]->n_bufs && !st; b++) {
            const ane_plan_buf *pb = &plans[p]->bufs[b];
            ane_layout l;
            ane_elem el = strcmp(pb->dtype, "fp32") == 0 ? ANE_ELEM_FP32 : ANE_ELEM_FP16;
            st = ane_layout_for(pb->name, el, pb->rank, pb->shape, &l, err);
            if (st) break;
            int i = size_index(out, pb->name);
            if (i < 0) {
                i = out->n++;
                snprintf(out->names[i], ANE_NAME_MAX, "%s", pb->name);
                parent[i] = i;
            }
            size_t need = l.bytes > policy->min_bytes ? l.bytes : policy->min_bytes;
            if (need > out->bytes[i]) out->bytes[i] = need;
        }
    /* what the device asked for (strides wider than packed) */
    for (int p = 0; p < n_plans && !st && bound; p++)
        for (int k = 0; k < plans[p]->n_steps; k++) {
            const ane_plan_step *sp = &plans[p]->steps[k];
            if (sp->kind != ANE_STEP_KERNEL) continue;
            for (int j = 0; j < sp->n_in + sp->n_out; j++) {
                const ane_plan_io *io = j < sp->n_in ? &sp->in[j] : &sp->out[j - sp->n_in];
                int i = size_index(out, plans[p]->bufs[io->buf].name);
                size_t b = bound(user, sp, io->name, j >= sp->n_in);
                if (i >= 0 && b > out->bytes[i]) out->bytes[i] = b;
            }
        }
    /* the "same request" groups: union every step's buffers */
    for (int p = 0; p < n_plans && !st && policy->uniform; p++)
        for (int k = 0; k < plans[p]->n_steps; k++) {
            const ane_plan_step *sp = &plans[p]->steps[k];
            if (sp->kind != ANE_STEP_KERNEL) continue;
            int first = -1;
            for (int j = 0; j < sp->n_in + sp->n_out; j++) {
                const ane_plan_io *io = j < sp->n_in ? &sp->in[j] : &sp->out[j - sp->n_in];
                int i = size_index(out, plans[p]->bufs[io->buf].name);
                if (first < 0)
                    first = i;
                else
                    parent[uf_root(parent, i)] = uf_root(parent, first);
            }
        }
    if (!st && policy->uniform) {
        for (int i = 0; i < out->n; i++) {
            int r = uf_root(parent, i);
            if (out->bytes[i] > out->bytes[r]) out->bytes[r] = out->bytes[i];
        }
        for (int i = 0; i < out->n; i++)
            out->bytes[i] = out->bytes[uf_root(parent, i)];
    }
    free(parent);
    if (st) ane_surface_sizes_free(out);
    return st;
}

size_t ane_surface_size(const ane_surface_sizes *s, const char *name, size_t need) {
    int i = s ? size_index(s, name) : -1;
    return i >= 0 && s->bytes[i] > need ? s->bytes[i] : need;
}

void ane_surface_sizes_free(ane_surface_sizes *s) {
    free(s->names);
    free(s->bytes);
    memset(s, 0, sizeof *s);
}
