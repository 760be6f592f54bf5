/* The per-token request plan (ane_plan.h). Which buffer a function's I/O
 * binds to is a table row per (kernel, I/O name); a name the table does not
 * know is an error, so a change in the lowering's I/O cannot slip through
 * as a silently unbound surface. Patterns: %S the bucket, %L the layer,
 * %C / %N the KV buffer holding the current / next cache. */
#include "ane_host/ane_plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ane_host/ane_layout.h"

typedef struct io_rule {
    const char *kernel, *io;
    int is_output;
    const char *buf; /* "*": the I/O's own name (prefix rows, io ends in '*') */
} io_rule;

static const io_rule rules[] = {
    {"qkv", "x", 0, "x@s%S"},
    {"qkv", "rope_cos", 0, "rope_cos@s%S"},
    {"qkv", "rope_sin", 0, "rope_sin@s%S"},
    {"qkv", "q", 1, "q@s%S"},
    {"qkv", "k_new", 1, "k_new@s%S"},
    {"qkv", "v_new", 1, "v_new@s%S"},
    {"kv", "k_cache", 0, "k_cache.%L.%C"},
    {"kv", "v_cache", 0, "v_cache.%L.%C"},
    {"kv", "k_new", 0, "k_new@s%S"},
    {"kv", "v_new", 0, "v_new@s%S"},
    {"kv", "kv_write", 0, "kv_write"},
    {"kv", "k_cache_out", 1, "k_cache.%L.%N"},
    {"kv", "v_cache_out", 1, "v_cache.%L.%N"},
    {"attn", "x", 0, "x@s%S"},
    {"attn", "q", 0, "q@s%S"},
    {"attn", "k_cache", 0, "k_cache.%L.%N"},
    {"attn", "v_cache", 0, "v_cache.%L.%N"},
    {"attn", "attn_mask", 0, "attn_mask@s%S"},
    {"attn", "x_out", 1, "x2@s%S"},
    {"mlp", "x", 0, "x2@s%S"},
    {"mlp", "x_out", 1, "x@s%S"},
    {"head", "x", 0, "head_x"},
    {"head", "logits_*", 1, "*"},
};

static const io_rule *find_rule(const char *kernel, const char *io, int is_output) {
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
        const io_rule *r = &rules[i];
        size_t n = strlen(r->io);
        int match = r->io[n - 1] == '*' ? strncmp(r->io, io, n - 1) == 0 : strcmp(r->io, io) == 0;
        if (match && r->is_output == is_output && strcmp(r->kernel, kernel) == 0) return r;
    }
    return NULL;
}

static void expand(const io_rule *r, const char *io, int seq, int layer, int parity, char *out,
                   size_t cap) {
    if (strcmp(r->buf, "*") == 0) {
        snprintf(out, cap, "%s", io);
        return;
    }
    size_t o = 0;
    for (const char *s = r->buf; *s && o + 16 < cap; s++) {
        if (*s != '%') {
            out[o++] = *s;
            continue;
        }
        s++;
        if (*s == 'S')
            o += (size_t)snprintf(out + o, cap - o, "%d", seq);
        else if (*s == 'L')
            o += (size_t)snprintf(out + o, cap - o, "%d", layer);
        else if (*s == 'C')
            out[o++] = parity ? 'b' : 'a';
        else if (*s == 'N')
            out[o++] = parity ? 'a' : 'b';
    }
    out[o] = '\0';
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

static nc_status add_kernel(ane_plan *p, int cap, const lower_manifest *m, int prog, int layer,
                            const char *kernel, int fn_seq, nc_error *err) {
    char fn[ANE_NAME_MAX];
    snprintf(fn, sizeof fn, "%s_s%d", kernel, fn_seq);
    const lower_fn_info *f = lower_manifest_fn(&m->programs[prog], fn);
    if (!f)
        return nc_fail(err, NC_ERR_NOT_FOUND, "plan: %s has no function %s", m->programs[prog].path,
                       fn);
    ane_plan_step *s = &p->steps[p->n_steps++];
    s->kind = ANE_STEP_KERNEL;
    s->program = prog;
    s->layer = layer;
    snprintf(s->fn, sizeof s->fn, "%s", fn);
    s->n_in = f->n_in;
    s->n_out = f->n_out;
    for (int side = 0; side < 2; side++) {
        int n = side ? f->n_out : f->n_in;
        for (int i = 0; i < n; i++) {
            const lower_io *io = side ? &f->out[i] : &f->in[i];
            const io_rule *r = find_rule(kernel, io->name, side);
            if (!r)
                return nc_fail(err, NC_ERR_UNSUPPORTED, "plan: %s %s '%s' has no buffer rule", fn,
                               side ? "output" : "input", io->name);
            char name[ANE_NAME_MAX];
            expand(r, io->name, p->seq, layer, p->parity, name, sizeof name);
            ane_plan_io *pio = side ? &s->out[i] : &s->in[i];
            snprintf(pio->name, sizeof pio->name, "%s", io->name);
            NC_TRY(use_buf(p, cap, name, io, fn, &pio->buf, err));
        }
    }
    p->n_requests++;
    return NC_OK;
}

static nc_status build(const lower_manifest *m, ane_plan *p, int cap, nc_error *err) {
    int L = m->cfg.num_hidden_layers, head = -1;
    for (int l = 0; l < L; l++) {
        int prog = -1;
        for (int i = 0; i < m->n_programs; i++)
            if (m->programs[i].layer == l) prog = i;
        if (prog < 0)
            return nc_fail(err, NC_ERR_NOT_FOUND, "plan: the manifest has no program for layer %d",
                           l);
        for (int k = 0; k < LOWER_N_KERNELS; k++)
            NC_TRY(add_kernel(p, cap, m, prog, l, lower_kernel_name((lower_kernel)k), p->seq, err));
    }
    if (!m->lm_head_on_ane) return NC_OK;
    for (int i = 0; i < m->n_programs; i++)
        if (m->programs[i].layer < 0) head = i;
    if (head < 0)
        return nc_fail(err, NC_ERR_NOT_FOUND,
                       "plan: the LM head is on the ANE but no program holds it");
    char fn[ANE_NAME_MAX];
    snprintf(fn, sizeof fn, "head_s%d", LOWER_HEAD_SEQ);
    const lower_fn_info *f = lower_manifest_fn(&m->programs[head], fn);
    const lower_io *hx = f ? lower_fn_io(f, "x", 0) : NULL;
    char xname[ANE_NAME_MAX];
    snprintf(xname, sizeof xname, "x@s%d", p->seq);
    int xb = ane_plan_find_buf(p, xname);
    if (!hx || xb < 0) return nc_fail(err, NC_ERR_NOT_FOUND, "plan: %s has no input 'x'", fn);
    ane_plan_step *s = &p->steps[p->n_steps++];
    s->kind = ANE_STEP_HEAD_COLUMN;
    s->program = -1;
    s->layer = -1;
    snprintf(s->fn, sizeof s->fn, "host:last-column");
    s->n_in = s->n_out = 1;
    snprintf(s->in[0].name, sizeof s->in[0].name, "x");
    s->in[0].buf = xb;
    snprintf(s->out[0].name, sizeof s->out[0].name, "x");
    NC_TRY(use_buf(p, cap, "head_x", hx, fn, &s->out[0].buf, err));
    return add_kernel(p, cap, m, head, -1, "head", LOWER_HEAD_SEQ, err);
}

nc_status ane_plan_qwen3(const lower_manifest *m, int seq, int parity, ane_plan *out,
                         nc_error *err) {
    memset(out, 0, sizeof *out);
    int known = 0;
    for (int i = 0; i < m->n_seqs; i++)
        known |= m->seqs[i] == seq;
    if (!known)
        return nc_fail(err, NC_ERR_INVALID, "plan: %d is not one of the bundle's sequence buckets",
                       seq);
    out->seq = seq;
    out->parity = parity & 1;
    int L = m->cfg.num_hidden_layers;
    int cap_steps = LOWER_N_KERNELS * L + 2;
    int cap_bufs = 16 + 4 * L + LOWER_MAX_IO;
    out->steps = calloc((size_t)cap_steps, sizeof *out->steps);
    out->bufs = calloc((size_t)cap_bufs, sizeof *out->bufs);
    if (!out->steps || !out->bufs) {
        ane_plan_free(out);
        return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    }
    nc_status st = build(m, out, cap_bufs, err);
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
