/* The request path on a device (ane_runner.h). Everything that can be
 * prepared is prepared at open: models and bindings once per bundle,
 * surfaces and requests once per runner; a run only issues prebuilt
 * requests, which is what keeps the per-dispatch host cost low. Surfaces
 * are shared by name across plans (the KV caches by all buckets and both
 * parities). */
#include "ane_host/ane_runner.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ane_host/ane_bind.h"
#include "ane_host/ane_ladder.h"
#include "ane_host/ane_relower.h"
#include "ane_host/ane_wait.h"
#include "base/log.h"
#include "bundle/modernbert_manifest.h"
#include "mil/interp.h"
#include "mil/parse.h"
#include "mil/print.h"

typedef struct run_buf {
    char name[ANE_NAME_MAX];
    ane_layout layout;
    ane_surface *s;
} run_buf;

typedef struct run_prog {
    ane_model *model;
    ane_attrs attrs;
    int opened, has_attrs;
    ane_binding *binds; /* per manifest function */
    /* The device refused the program: its functions run on the CPU, the
     * MIL interpreter on the same program (one interpreter per function,
     * made on first use), reading and writing the same surfaces. */
    int on_cpu;
    char why[512]; /* the device's refusal */
    mil_program *cpu;
    mil_interp **its;
    /* The next rung of the ladder (ANE_LADDER) for a refused program of
     * several functions: each function compiled as a program of its own;
     * fn_models[f] is its model, NULL where the device refused that too
     * (then it runs on the CPU). */
    ane_model **fn_models;
    ane_attrs *fn_attrs;
    /* The outputs rung: a function of several outputs the device refused
     * alone runs as one program per output (pieces[f], NULL where not). */
    struct run_pieces **pieces;
    /* The relower rung: relowered[f] names the form function f was lowered
     * again into (its model in fn_models[f]), "" where not. */
    char (*relowered)[64];
} run_prog;

typedef struct run_pieces {
    int n;                /* the function's outputs */
    ane_model **models;   /* per output */
    ane_attrs *attrs;
    ane_binding *binds;   /* each: every input, the one output */
} run_pieces;

/* model_open calls (compiles, or loads of a cached compile) of every
 * bundle of the process, refused ones included: the budget is per
 * process (ANE_REPORTED_COMPILE_BUDGET). */
static atomic_long process_opens;

typedef struct run_plan {
    ane_request **reqs; /* per step; NULL for host steps */
    ane_request ***pieces; /* per step of a split function: its requests, one per output */
    int *reg;           /* plan buffer -> registry index */
} run_plan;

struct ane_bundle {
    ane_device dev;
    int is_encoder;
    lower_manifest man; /* Qwen3 */
    mb_manifest enc;    /* encoder */
    int has_man;
    const lower_program_info *programs; /* man.programs, or &enc.program */
    int n_programs;
    run_prog *progs;
    int n_parity; /* 2 with a KV cache (Qwen3), else 1 */
    int n_forms;  /* 2 with recurrent-state functions (Qwen3.5), else 1 */
    int n_plans;  /* shapes x forms x parities: plan i is shape i / (n_forms * n_parity),
                     form i / n_parity % n_forms, parity i % n_parity */
    ane_plan *plans;
    ane_surface_sizes sizes; /* allocation sizes under the device's surface policy */
    int opens;               /* model_open calls for this bundle (device_open) */
    /* the forms a refused program is tried in, in order (data: ane_ladder.h),
     * and what each program met on the way, for the profile */
    ane_ladder ladder;
    ane_ladder_outcome *outcomes;
    /* the compile options the profile suggests for the forms this device
     * refused (ane_ladder_recommend), "" when none */
    char suggest[256];
    /* per layer: a function on the CPU (ane_bundle_layer_on_cpu), and
     * whether the caller runs such layers whole (ane_bundle_set_cpu_layers) */
    unsigned char *layer_cpu;
    int n_layers, cpu_layers;
};

struct ane_runner {
    ane_bundle *b;
    int owns_bundle;
    const ane_device_ops *ops;
    run_buf *bufs;
    int n_bufs, cap_bufs;
    run_plan *plans; /* per bundle plan */
    int parity;
    long issued;
    /* here, not on the stack: after a timeout, late handlers still write it */
    ane_wait wait;
    ane_event *event; /* ANE_RUN_ASYNC_EVENTS: the chain, created on first use */
    unsigned long long ev_value;
    int broken; /* a wait timed out: requests may still be in flight */
    ane_cpu_layer_fn cpu_layer; /* the caller's whole-layer fallback, or NULL */
    void *cpu_layer_user;
};

/* A device that stops calling completion handlers must not hang the host. */
#define ANE_RUN_TIMEOUT_S 60.0

const lower_manifest *ane_runner_manifest(const ane_runner *r) {
    return r->b->is_encoder ? NULL : &r->b->man;
}

/* The bundle plan of shape (batch, seq) and form at KV parity 0, or -1. */
static int plan_index(const ane_bundle *b, int batch, int seq, ane_plan_form form) {
    for (int i = 0; i < b->n_plans; i += b->n_parity)
        if (b->plans[i].batch == batch && b->plans[i].seq == seq && b->plans[i].form == form)
            return i;
    return -1;
}

static int current(const ane_runner *r, int i) {
    return i + (r->b->n_parity > 1 ? r->parity : 0);
}

const ane_plan *ane_runner_plan(const ane_runner *r, int batch, int seq) {
    int i = plan_index(r->b, batch, seq, ANE_FORM_CHUNK);
    return i < 0 ? NULL : &r->b->plans[current(r, i)];
}

static void free_pieces(const ane_device *dev, run_pieces *pc) {
    if (!pc) return;
    for (int k = 0; k < pc->n; k++) {
        if (pc->models && pc->models[k]) dev->ops->model_close(pc->models[k]);
        if (pc->attrs) ane_attrs_free(&pc->attrs[k]);
    }
    free(pc->models);
    free(pc->attrs);
    free(pc->binds);
    free(pc);
}

void ane_bundle_free(ane_bundle *b) {
    if (!b) return;
    for (int i = 0; b->plans && i < b->n_plans; i++)
        ane_plan_free(&b->plans[i]);
    free(b->plans);
    ane_surface_sizes_free(&b->sizes);
    for (int i = 0; b->progs && i < b->n_programs; i++) {
        run_prog *p = &b->progs[i];
        if (p->opened) b->dev.ops->model_close(p->model);
        ane_attrs_free(&p->attrs);
        free(p->binds);
        for (int f = 0; f < b->programs[i].n_fns; f++) {
            if (p->its) mil_interp_free(p->its[f]);
            if (p->fn_models && p->fn_models[f]) b->dev.ops->model_close(p->fn_models[f]);
            if (p->fn_attrs) ane_attrs_free(&p->fn_attrs[f]);
        }
        for (int f = 0; p->pieces && f < b->programs[i].n_fns; f++)
            free_pieces(&b->dev, p->pieces[f]);
        free(p->pieces);
        free(p->relowered);
        free(p->its);
        free(p->fn_models);
        free(p->fn_attrs);
        mil_program_free(p->cpu);
    }
    free(b->progs);
    free(b->layer_cpu);
    free(b->outcomes);
    ane_ladder_close(&b->ladder);
    if (b->has_man) lower_manifest_free(&b->man);
    free(b);
}

void ane_runner_free(ane_runner *r) {
    if (!r) return;
    const ane_device_ops *ops = r->ops;
    for (int i = 0; r->plans && i < r->b->n_plans; i++) {
        run_plan *p = &r->plans[i];
        for (int s = 0; p->reqs && s < r->b->plans[i].n_steps; s++)
            if (p->reqs[s]) ops->request_free(p->reqs[s]);
        for (int s = 0; p->pieces && s < r->b->plans[i].n_steps; s++) {
            for (int k = 0; p->pieces[s] && p->pieces[s][k]; k++)
                ops->request_free(p->pieces[s][k]);
            free(p->pieces[s]);
        }
        free(p->pieces);
        free(p->reqs);
        free(p->reg);
    }
    free(r->plans);
    if (r->event) ops->event_free(r->event);
    for (int i = 0; i < r->n_bufs; i++)
        if (r->bufs[i].s) ops->surface_free(r->bufs[i].s);
    free(r->bufs);
    if (r->owns_bundle) ane_bundle_free(r->b);
    free(r);
}

static nc_status device_open(ane_bundle *b, const char *dir, ane_model **m, nc_error *err) {
    b->opens++;
    atomic_fetch_add(&process_opens, 1);
    return b->dev.ops->model_open(b->dev.impl, dir, m, err);
}

/* Opens program i (in folder dir) on the device and binds every function
 * it holds. */
static nc_status open_on_device(ane_bundle *b, const char *dir, int i, nc_error *err) {
    const lower_program_info *pi = &b->programs[i];
    run_prog *p = &b->progs[i];
    NC_TRY(device_open(b, dir, &p->model, err));
    p->opened = 1;
    const char *json;
    size_t len;
    NC_TRY(b->dev.ops->model_attrs(p->model, &json, &len, err));
    char what[4400];
    snprintf(what, sizeof what, "%s modelAttributes", dir);
    NC_TRY(ane_attrs_parse(json, len, what, &p->attrs, err));
    p->has_attrs = 1;
    p->binds = calloc((size_t)pi->n_fns + 1, sizeof *p->binds);
    if (!p->binds) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    for (int f = 0; f < pi->n_fns; f++)
        if (ane_bind_function(&p->attrs, &pi->fns[f], &p->binds[f], err))
            return nc_fail_prefix(err, "%s", pi->path);
    return NC_OK;
}

/* The CPU's binding of a manifest function: the packed 64-byte-row
 * layouts (a surface the device also binds keeps the device's layout). */
static nc_status bind_on_cpu(const lower_fn_info *f, ane_binding *out, nc_error *err) {
    memset(out, 0, sizeof *out);
    snprintf(out->fn, sizeof out->fn, "%s", f->name);
    out->n_in = f->n_in;
    out->n_out = f->n_out;
    for (int side = 0; side < 2; side++)
        for (int k = 0; k < (side ? f->n_out : f->n_in); k++) {
            const lower_io *io = side ? &f->out[k] : &f->in[k];
            ane_bound_io *b = side ? &out->out[k] : &out->in[k];
            snprintf(b->name, sizeof b->name, "%s", io->name);
            b->symbol = k;
            ane_elem elem = strcmp(io->dtype, "fp32") ? ANE_ELEM_FP16 : ANE_ELEM_FP32;
            NC_TRY(ane_layout_for(io->name, elem, io->rank, io->shape, &b->layout, err));
        }
    return NC_OK;
}

/* Program i refused by the device (the reason in err): its functions on
 * the CPU. */
static nc_status fall_back(ane_bundle *b, const char *dir, int i, const nc_error *why,
                           nc_error *err) {
    const lower_program_info *pi = &b->programs[i];
    run_prog *p = &b->progs[i];
    if (p->opened) b->dev.ops->model_close(p->model);
    p->opened = 0;
    ane_attrs_free(&p->attrs);
    p->has_attrs = 0;
    free(p->binds);
    p->on_cpu = 1;
    snprintf(p->why, sizeof p->why, "%s", why->msg);
    char path[4400];
    snprintf(path, sizeof path, "%s/model.mil", dir);
    NC_TRY(mil_parse_file(path, &p->cpu, err));
    p->binds = calloc((size_t)pi->n_fns + 1, sizeof *p->binds);
    p->its = calloc((size_t)pi->n_fns + 1, sizeof *p->its);
    if (!p->binds || !p->its) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    for (int f = 0; f < pi->n_fns; f++)
        NC_TRY(bind_on_cpu(&pi->fns[f], &p->binds[f], err));
    return NC_OK;
}

/* Function f of program i as the program in folder sub (a ladder rung's),
 * opened and bound on the device by the manifest's I/O. */
static nc_status open_fn_program(ane_bundle *b, const char *sub, int i, int f, nc_error *err) {
    run_prog *p = &b->progs[i];
    char path[4600];
    snprintf(path, sizeof path, "%s/model.mil", sub);
    NC_TRY(device_open(b, sub, &p->fn_models[f], err));
    const char *json;
    size_t len;
    NC_TRY(b->dev.ops->model_attrs(p->fn_models[f], &json, &len, err));
    NC_TRY(ane_attrs_parse(json, len, path, &p->fn_attrs[f], err));
    return ane_bind_function(&p->fn_attrs[f], &b->programs[i].fns[f], &p->binds[f], err);
}

/* Function f of the refused program (parsed in p->cpu, folder dir) as a
 * program of its own in BUNDLE/ladder/<program>_<function>/, opened and
 * bound on the device. */
static nc_status open_function(ane_bundle *b, const char *bundle, const char *dir, int i, int f,
                               nc_error *err) {
    run_prog *p = &b->progs[i];
    const lower_program_info *pi = &b->programs[i];
    char sub[4500];
    const char *prog_name = strrchr(dir, '/') ? strrchr(dir, '/') + 1 : dir;
    snprintf(sub, sizeof sub, "%s/ladder/%s_%s", bundle, prog_name, pi->fns[f].name);
    const char *one = pi->fns[f].name;
    NC_TRY(ane_ladder_write_view(p->cpu, &one, 1, dir, sub, err));
    return open_fn_program(b, sub, i, f, err);
}

/* The function rung: each function of refused program i on the device as
 * a program of its own; what the device refuses again (or refused on an
 * earlier run, o->fns_refused) stays on the CPU. */
static nc_status split_functions(ane_bundle *b, const char *bundle, const char *dir, int i,
                                 ane_ladder_outcome *o, nc_error *err) {
    run_prog *p = &b->progs[i];
    const lower_program_info *pi = &b->programs[i];
    int n = pi->n_fns;
    p->fn_models = calloc((size_t)n + 1, sizeof *p->fn_models);
    p->fn_attrs = calloc((size_t)n + 1, sizeof *p->fn_attrs);
    if (!p->fn_models || !p->fn_attrs) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    char known[sizeof o->fns_refused];
    snprintf(known, sizeof known, "%s", o->fns_refused);
    o->fns_refused[0] = '\0';
    o->n_fns = n;
    o->n_fns_refused = 0;
    size_t used = 0;
    for (int f = 0; f < n; f++) {
        nc_error e = {0};
        const lower_fn_info *first = lower_manifest_fn(pi, pi->fns[f].name);
        if (ane_ladder_listed(known, pi->fns[f].name))
            snprintf(e.msg, sizeof e.msg, "refused on an earlier run (the profile)");
        else if (first != &pi->fns[f] && !p->fn_models[first - pi->fns]) /* enumerated */
            snprintf(e.msg, sizeof e.msg, "refused as the entry of another bucket");
        else if (open_function(b, bundle, dir, i, f, &e) == NC_OK)
            continue;
        if (p->fn_models[f]) b->dev.ops->model_close(p->fn_models[f]);
        p->fn_models[f] = NULL;
        ane_attrs_free(&p->fn_attrs[f]);
        NC_TRY(bind_on_cpu(&pi->fns[f], &p->binds[f], err));
        if (!o->n_fns_refused++)
            snprintf(o->error[ANE_RUNG_FUNCTION], sizeof o->error[0], "%s", e.msg);
        if (f < LOWER_MAX_FUNCS) snprintf(o->fn_error[f], sizeof o->fn_error[f], "%s", e.msg);
        int k = snprintf(o->fns_refused + used, sizeof o->fns_refused - used, "%s%s",
                         used ? "," : "", pi->fns[f].name);
        if (k > 0 && used + (size_t)k < sizeof o->fns_refused) used += (size_t)k;
    }
    o->ok[ANE_RUNG_FUNCTION] = o->n_fns_refused == 0;
    return NC_OK;
}

static ane_model *model_of(const ane_bundle *b, int i, int f);
static const struct run_pieces *pieces_of(const ane_bundle *b, int i, int f);

static int same_layout(const ane_layout *a, const ane_layout *b) {
    return a->rows == b->rows && a->width == b->width && a->row_bytes == b->row_bytes &&
           a->elem == b->elem;
}

/* Function f of program i as one program per output, written from the
 * parsed program src (folder src_dir) into <prefix><function>__<output>/,
 * each opened and bound: a piece binds only the inputs its model reports
 * (a device may drop those its output does not read). p->binds[f] gets the
 * device's layouts of every I/O: an input that pieces bind with different
 * layouts, or that no piece binds, fails (one surface serves them all). */
static nc_status open_pieces(ane_bundle *b, const mil_program *src, const char *src_dir,
                             const char *prefix, int i, int f, nc_error *err) {
    run_prog *p = &b->progs[i];
    const lower_fn_info *fi = &b->programs[i].fns[f];
    run_pieces *pc = calloc(1, sizeof *pc);
    if (!pc) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    p->pieces[f] = pc;
    pc->n = fi->n_out;
    pc->models = calloc((size_t)pc->n, sizeof *pc->models);
    pc->attrs = calloc((size_t)pc->n, sizeof *pc->attrs);
    pc->binds = calloc((size_t)pc->n, sizeof *pc->binds);
    if (!pc->models || !pc->attrs || !pc->binds) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    for (int k = 0; k < pc->n; k++) {
        char piece[128], sub[4600], path[4700];
        snprintf(piece, sizeof piece, "%s__%s", fi->name, fi->out[k].name);
        snprintf(sub, sizeof sub, "%s%s", prefix, piece);
        NC_TRY(ane_ladder_write_output_view(src, fi->name, k, piece, src_dir, sub, err));
        NC_TRY(device_open(b, sub, &pc->models[k], err));
        const char *json;
        size_t len;
        NC_TRY(b->dev.ops->model_attrs(pc->models[k], &json, &len, err));
        snprintf(path, sizeof path, "%s/model.mil", sub);
        NC_TRY(ane_attrs_parse(json, len, path, &pc->attrs[k], err));
        lower_fn_info one = *fi;
        snprintf(one.name, sizeof one.name, "%s", piece);
        one.n_out = 1;
        one.out[0] = fi->out[k];
        const ane_attr_proc *ap = ane_attrs_proc(&pc->attrs[k], piece);
        one.n_in = 0;
        for (int j = 0; j < fi->n_in; j++)
            if (!ap || ane_attrs_io(ap, fi->in[j].name, 0)) one.in[one.n_in++] = fi->in[j];
        NC_TRY(ane_bind_function(&pc->attrs[k], &one, &pc->binds[k], err));
    }
    ane_binding *all = &p->binds[f]; /* the layouts the plan's surfaces take */
    memset(all, 0, sizeof *all);
    snprintf(all->fn, sizeof all->fn, "%s", fi->name);
    all->proc_id = pc->binds[0].proc_id;
    all->n_in = fi->n_in;
    for (int j = 0; j < fi->n_in; j++) {
        const ane_bound_io *first = NULL;
        for (int k = 0; k < pc->n; k++) {
            const ane_bound_io *io = ane_binding_io(&pc->binds[k], fi->in[j].name, 0);
            if (!io) continue;
            if (!first) first = io;
            if (!same_layout(&first->layout, &io->layout))
                return nc_fail(err, NC_ERR_FORMAT,
                               "%s: its pieces bind input %s with different layouts (%zu and %zu "
                               "bytes per row)",
                               fi->name, fi->in[j].name, first->layout.row_bytes,
                               io->layout.row_bytes);
        }
        if (!first)
            return nc_fail(err, NC_ERR_FORMAT, "%s: no piece binds input %s", fi->name,
                           fi->in[j].name);
        all->in[j] = *first;
    }
    all->n_out = pc->n;
    for (int k = 0; k < pc->n; k++)
        all->out[k] = pc->binds[k].out[0];
    return NC_OK;
}

/* The outputs rung: each function of program i still on the CPU that has
 * several outputs, as one program per output (a device that refuses
 * multi-output procedures). A function this rung could not place on an
 * earlier run (the profile) is not tried again. *placed: how many it placed. */
static nc_status split_outputs(ane_bundle *b, const char *bundle, const char *dir, int i,
                               ane_ladder_outcome *o, int *placed, nc_error *err) {
    run_prog *p = &b->progs[i];
    const lower_program_info *pi = &b->programs[i];
    *placed = 0;
    if (!p->pieces) p->pieces = calloc((size_t)pi->n_fns + 1, sizeof *p->pieces);
    if (!p->pieces) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    char known[sizeof o->fns_split];
    snprintf(known, sizeof known, "%s", o->fns_split);
    o->fns_split[0] = '\0';
    int tried = 0;
    size_t used = 0;
    for (int f = 0; f < pi->n_fns; f++) {
        const char *name = pi->fns[f].name;
        if (model_of(b, i, f) || pi->fns[f].n_out < 2) continue;
        if (o->outputs_known && !ane_ladder_listed(known, name)) continue; /* refused before */
        tried++;
        nc_error e = {0};
        char prefix[4400];
        snprintf(prefix, sizeof prefix, "%s/ladder/%s_", bundle,
                 strrchr(dir, '/') ? strrchr(dir, '/') + 1 : dir);
        if (open_pieces(b, p->cpu, dir, prefix, i, f, &e) == NC_OK) {
            (*placed)++;
            int k = snprintf(o->fns_split + used, sizeof o->fns_split - used, "%s%s",
                             used ? "," : "", name);
            if (k > 0 && used + (size_t)k < sizeof o->fns_split) used += (size_t)k;
            continue;
        }
        free_pieces(&b->dev, p->pieces[f]);
        p->pieces[f] = NULL;
        NC_TRY(bind_on_cpu(&pi->fns[f], &p->binds[f], err));
        if (!o->error[ANE_RUNG_OUTPUTS][0])
            snprintf(o->error[ANE_RUNG_OUTPUTS], sizeof o->error[0], "%s", e.msg);
    }
    o->tried[ANE_RUNG_OUTPUTS] = 1;
    o->ok[ANE_RUNG_OUTPUTS] = tried > 0 && *placed == tried;
    return NC_OK;
}

/* Appends name to the list (cap bytes) of items joined by sep, once. */
static void list_add(char *list, size_t cap, const char *name, const char *sep) {
    size_t used = strlen(list), n = strlen(name), k = strlen(sep);
    for (const char *p = list; p && *p;) { /* already listed? */
        const char *end = strstr(p, sep);
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && !strncmp(p, name, n)) return;
        p = end ? end + k : NULL;
    }
    snprintf(list + used, cap - used, "%s%s", used ? sep : "", name);
}

/* Closes what a relower candidate of function f of program i opened. */
static void close_fn_program(ane_bundle *b, int i, int f) {
    run_prog *p = &b->progs[i];
    if (p->fn_models[f]) b->dev.ops->model_close(p->fn_models[f]);
    p->fn_models[f] = NULL;
    ane_attrs_free(&p->fn_attrs[f]);
    if (p->pieces) free_pieces(&b->dev, p->pieces[f]);
    if (p->pieces) p->pieces[f] = NULL;
}

/* 1 when the ladder's order has the outputs rung. */
static int outputs_in_order(const ane_bundle *b) {
    for (int r = 0; r < b->ladder.n_order; r++)
        if (b->ladder.order[r] == ANE_RUNG_OUTPUTS) return 1;
    return 0;
}

/* Function f of program i re-lowered into folder sub and refused there
 * too, as one program per output of the re-lowered program
 * (<sub>__<function>__<output>/): the two rungs composed. */
static nc_status relowered_pieces(ane_bundle *b, const char *sub, int i, int f, nc_error *err) {
    run_prog *p = &b->progs[i];
    if (p->fn_models[f]) b->dev.ops->model_close(p->fn_models[f]);
    p->fn_models[f] = NULL;
    ane_attrs_free(&p->fn_attrs[f]);
    if (!p->pieces) p->pieces = calloc((size_t)b->programs[i].n_fns + 1, sizeof *p->pieces);
    if (!p->pieces) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    char path[4600], prefix[4600];
    snprintf(path, sizeof path, "%s/model.mil", sub);
    snprintf(prefix, sizeof prefix, "%s__", sub);
    mil_program *prog = NULL;
    NC_TRY(mil_parse_file(path, &prog, err));
    nc_status st = open_pieces(b, prog, sub, prefix, i, f, err);
    mil_program_free(prog);
    return st;
}

/* The relower rung: each function of program i still on the CPU, lowered
 * again by the engine's hook (ane_relower.h) into a form that avoids what
 * it holds, from the bundle alone, written to
 * BUNDLE/ladder/<program>_<function>_relowered/, opened and bound by the
 * manifest's I/O (the plan and the host are unchanged). A function this
 * rung could not place on an earlier run (the profile) is not tried
 * again. *placed: how many it placed. */
static nc_status relower_functions(ane_bundle *b, const char *bundle, const char *dir, int i,
                                   ane_ladder_outcome *o, int *placed, nc_error *err) {
    run_prog *p = &b->progs[i];
    const lower_program_info *pi = &b->programs[i];
    int n = pi->n_fns;
    *placed = 0;
    if (!b->dev.relower || !b->has_man) return NC_OK; /* no hook: the rung is skipped */
    if (!p->fn_models) p->fn_models = calloc((size_t)n + 1, sizeof *p->fn_models);
    if (!p->fn_attrs) p->fn_attrs = calloc((size_t)n + 1, sizeof *p->fn_attrs);
    if (!p->relowered) p->relowered = calloc((size_t)n + 1, sizeof *p->relowered);
    if (!p->fn_models || !p->fn_attrs || !p->relowered)
        return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    char known[sizeof o->fns_relowered];
    snprintf(known, sizeof known, "%s", o->fns_relowered);
    char attempts[sizeof o->relowered_attempts];
    snprintf(attempts, sizeof attempts, "%s", o->relowered_attempts);
    o->fns_relowered[0] = o->relowered_forms[0] = o->relowered_attempts[0] = '\0';
    const char *prog_name = strrchr(dir, '/') ? strrchr(dir, '/') + 1 : dir;
    int tried = 0;
    for (int f = 0; f < n; f++) {
        const char *name = pi->fns[f].name;
        if (model_of(b, i, f) || pieces_of(b, i, f)) continue;       /* on the device */
        if (lower_manifest_fn(pi, name) != &pi->fns[f]) continue;    /* enumerated: one entry */
        if (o->relower_known && !ane_ladder_listed(known, name)) continue; /* refused before */
        tried++;
        char sub[4500], form[64] = "";
        snprintf(sub, sizeof sub, "%s/ladder/%s_%s_relowered", bundle, prog_name, name);
        const char *why = f < LOWER_MAX_FUNCS && o->fn_error[f][0] ? o->fn_error[f] : p->why;
        /* the candidate that placed it on an earlier run first (the profile) */
        ane_relower_ask ask = {bundle, &b->man, i, dir, p->cpu, name, why, sub,
                               ane_ladder_relower_attempt(known, attempts, name)};
        nc_error e = {0}, first = {0};
        nc_status st = NC_ERR_UNSUPPORTED;
        for (; ask.attempt < 8; ask.attempt++) { /* each candidate form in turn */
            memset(&e, 0, sizeof e);
            st = b->dev.relower(b->dev.relower_user, &ask, form, sizeof form, &e);
            if (st) break; /* no more candidates */
            st = open_fn_program(b, sub, i, f, &e);
            if (st && pi->fns[f].n_out > 1 && outputs_in_order(b))
                st = relowered_pieces(b, sub, i, f, &e); /* refused again: the outputs rung */
            if (!st) break;
            if (!first.msg[0]) first = e;
            close_fn_program(b, i, f);
        }
        if (st && first.msg[0]) e = first; /* the first candidate's refusal */
        if (st == NC_OK) {
            (*placed)++;
            snprintf(p->relowered[f], sizeof p->relowered[f], "%s", form[0] ? form : "?");
            list_add(o->fns_relowered, sizeof o->fns_relowered, name, ",");
            size_t used = strlen(o->relowered_attempts);
            snprintf(o->relowered_attempts + used, sizeof o->relowered_attempts - used, "%s%d",
                     used ? "," : "", ask.attempt);
            list_add(o->relowered_forms, sizeof o->relowered_forms, p->relowered[f], ", ");
            continue;
        }
        NC_TRY(bind_on_cpu(&pi->fns[f], &p->binds[f], err));
        if (!o->error[ANE_RUNG_RELOWER][0])
            snprintf(o->error[ANE_RUNG_RELOWER], sizeof o->error[0], "%s: %s", name, e.msg);
    }
    o->tried[ANE_RUNG_RELOWER] = 1;
    o->ok[ANE_RUNG_RELOWER] = tried > 0 && *placed == tried;
    return NC_OK;
}

/* Program i down the ladder (b->ladder.order), from where the profile says
 * it ended last time on this device: on the device as compiled; where the
 * device refuses it (to compile, load, or describe it in a way the host
 * can bind), each of its functions as a program of its own; what is still
 * refused, on the CPU. */
static nc_status open_program(ane_bundle *b, const char *bundle, int i, nc_error *err) {
    char dir[4300];
    snprintf(dir, sizeof dir, "%s/%s", bundle, b->programs[i].path);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0'; /* the folder of model.mil */
    ane_ladder_outcome *o = &b->outcomes[i];
    snprintf(o->path, sizeof o->path, "%s", b->programs[i].path);
    NC_TRY(ane_ladder_program_key(dir, o->key, err));
    int start = ane_ladder_start(&b->ladder, o);
    nc_error why = {0};
    for (int r = 0; r < start; r++)
        if (o->error[b->ladder.order[r]][0])
            snprintf(why.msg, sizeof why.msg, "%s (as recorded in the profile)",
                     o->error[b->ladder.order[r]]);
    run_prog *p = &b->progs[i];
    ane_rung stay = ANE_RUNG_CPU; /* the first rung that placed a function: the next start */
    for (int r = start; r < b->ladder.n_order; r++) {
        ane_rung rung = b->ladder.order[r];
        o->start = rung;
        int placed = 0;
        switch (rung) {
        case ANE_RUNG_PROGRAM:
            o->tried[rung] = 1;
            if (open_on_device(b, dir, i, &why) == NC_OK) {
                o->ok[rung] = 1;
                return NC_OK;
            }
            snprintf(o->error[rung], sizeof o->error[rung], "%s", why.msg);
            NC_TRY(fall_back(b, dir, i, &why, err)); /* every function on the CPU so far */
            break;
        case ANE_RUNG_FUNCTION:
            if (b->programs[i].n_fns < 2) break; /* the same as the program rung */
            if (!p->on_cpu) NC_TRY(fall_back(b, dir, i, &why, err));
            o->tried[rung] = 1;
            NC_TRY(split_functions(b, bundle, dir, i, o, err));
            if (o->n_fns_refused < o->n_fns && stay == ANE_RUNG_CPU) stay = rung;
            if (!o->n_fns_refused) return NC_OK;
            break;
        case ANE_RUNG_OUTPUTS:
            if (!p->on_cpu) NC_TRY(fall_back(b, dir, i, &why, err));
            NC_TRY(split_outputs(b, bundle, dir, i, o, &placed, err));
            if (placed && stay == ANE_RUNG_CPU) stay = rung;
            break;
        case ANE_RUNG_RELOWER:
            if (!p->on_cpu) NC_TRY(fall_back(b, dir, i, &why, err));
            NC_TRY(relower_functions(b, bundle, dir, i, o, &placed, err));
            if (placed && stay == ANE_RUNG_CPU) stay = rung;
            break;
        case ANE_RUNG_CPU:
        case ANE_N_RUNGS:
            break;
        }
        if (rung == ANE_RUNG_CPU) break;
    }
    if (stay != ANE_RUNG_CPU) { /* some functions on the device, the rest on the CPU */
        o->start = stay;
        return NC_OK;
    }
    /* the CPU: the last rung, whether the order names it or not */
    o->start = ANE_RUNG_CPU;
    o->tried[ANE_RUNG_CPU] = o->ok[ANE_RUNG_CPU] = 1;
    if (!p->on_cpu) NC_TRY(fall_back(b, dir, i, &why, err));
    return NC_OK;
}

/* The manifest and the plans of every shape (and KV parity). */
static nc_status read_plans(ane_bundle *b, const char *dir, nc_error *err) {
    b->is_encoder = mb_manifest_is_encoder(dir);
    if (b->is_encoder) {
        NC_TRY(mb_manifest_read(dir, &b->enc, err));
        b->programs = &b->enc.program;
        b->n_programs = 1;
        b->n_parity = 1;
        b->n_forms = 1;
        b->n_plans = b->enc.n_seqs * b->enc.n_batches;
    } else {
        NC_TRY(lower_manifest_read(dir, &b->man, err));
        b->has_man = 1;
        b->programs = b->man.programs;
        b->n_programs = b->man.n_programs;
        b->n_parity = 2;
        b->n_forms = ane_plan_n_forms(&b->man);
        b->n_plans = 2 * b->n_forms * b->man.n_seqs;
    }
    b->progs = calloc((size_t)b->n_programs + 1, sizeof *b->progs);
    b->outcomes = calloc((size_t)b->n_programs + 1, sizeof *b->outcomes);
    b->plans = calloc((size_t)b->n_plans + 1, sizeof *b->plans);
    if (!b->progs || !b->outcomes || !b->plans) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    for (int i = 0; i < b->n_plans; i++) {
        if (b->is_encoder)
            NC_TRY(ane_plan_encoder(&b->enc.program, b->enc.batches[i % b->enc.n_batches],
                                    b->enc.seqs[i / b->enc.n_batches], &b->plans[i], err));
        else
            NC_TRY(ane_plan_qwen3(&b->man, b->man.seqs[i / (2 * b->n_forms)],
                                  (ane_plan_form)(i / 2 % b->n_forms), i % 2, &b->plans[i], err));
    }
    return NC_OK;
}

static const ane_binding *binding_of(const ane_bundle *b, const ane_plan_step *s);
static const char *relowered_of(const ane_bundle *b, int i, int f);

/* The form key a part of a relower rung's form names ("attention grouped":
 * the key's name with spaces, then its value), or -1. */
static int form_part_key(const char *part, const char **value) {
    for (int k = 0; k < LOWER_N_FORM_KEYS; k++) {
        char name[64];
        snprintf(name, sizeof name, "%s", lower_form_key_name((lower_form_key)k));
        for (char *c = name; *c; c++)
            if (*c == '_') *c = ' ';
        size_t n = strlen(name);
        if (!strncmp(part, name, n) && part[n] == ' ') {
            *value = part + n + 1;
            return k;
        }
    }
    return -1;
}

/* The forms the relower rung placed kernels in, as accepted in the
 * profile's "forms" (what `nectar compile --ane-profile` reads): per form
 * part ("kv update onehot" of "kv update onehot + attention grouped"), the
 * kernels it placed. */
static void put_relowered_forms(ane_bundle *b) {
    char done[1024] = "";
    for (int i = 0; i < b->n_programs; i++)
        for (int f = 0; f < b->programs[i].n_fns; f++) {
            const char *form = relowered_of(b, i, f);
            for (const char *p = form; p && *p;) {
                const char *end = strstr(p, " + ");
                char part[64];
                snprintf(part, sizeof part, "%.*s", (int)(end ? end - p : (long)strlen(p)), p);
                p = end ? end + 3 : NULL;
                const char *v;
                int k = form_part_key(part, &v);
                if (k < 0 || strstr(done, part)) continue;
                list_add(done, sizeof done, part, "|");
                lower_forms_tally t;
                lower_forms_tally_init(&t, &b->man);
                memset(t.key, 0, sizeof t.key);
                if (lower_form_set(&t.of, (lower_form_key)k, v) < 0) continue;
                for (int i2 = 0; i2 < b->n_programs; i2++) /* every kernel placed in it */
                    for (int f2 = 0; f2 < b->programs[i2].n_fns; f2++) {
                        const char *g = relowered_of(b, i2, f2);
                        t.key[k].ok += g && strstr(g, part) != NULL;
                    }
                ane_ladder_put_forms(&b->ladder, &t);
            }
        }
}

/* ane_bound_bytes_fn: the bytes the binding of a step's I/O needs. */
static size_t bound_bytes(void *user, const ane_plan_step *s, const char *io, int is_output) {
    const ane_binding *bd = binding_of(user, s);
    const ane_bound_io *bio = bd ? ane_binding_io(bd, io, is_output) : NULL;
    return bio ? bio->layout.bytes : 0;
}

static int fn_on_device(const ane_bundle *b, int i, int f);

/* The layers with a function on the CPU after the ladder. */
static nc_status mark_cpu_layers(ane_bundle *b, nc_error *err) {
    b->n_layers = b->man.cfg.num_hidden_layers;
    b->layer_cpu = calloc((size_t)b->n_layers + 1, 1);
    if (!b->layer_cpu) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    for (int i = 0; i < b->n_programs; i++) {
        int l = b->programs[i].layer;
        for (int f = 0; l >= 0 && l < b->n_layers && f < b->programs[i].n_fns; f++)
            if (!fn_on_device(b, i, f)) b->layer_cpu[l] = 1;
    }
    return NC_OK;
}

nc_status ane_bundle_open(const ane_device *dev, const char *bundle_dir, ane_bundle **out,
                          nc_error *err) {
    ane_bundle *b = calloc(1, sizeof *b);
    if (!b) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    b->dev = *dev;
    nc_status st = ane_ladder_open(&b->ladder, dev->ladder_profile, dev->ladder_device, err);
    if (!st) st = read_plans(b, bundle_dir, err);
    for (int i = 0; !st && i < b->n_programs; i++)
        st = open_program(b, bundle_dir, i, err);
    if (!st && !b->is_encoder) st = mark_cpu_layers(b, err);
    if (!st && !b->is_encoder) {
        /* the forms' outcomes beside the programs', and what they suggest */
        lower_forms_tally t;
        lower_forms_tally_init(&t, &b->man);
        for (int i = 0; i < b->n_programs; i++)
            ane_ladder_tally(&t, &b->programs[i], &b->outcomes[i]);
        ane_ladder_put_forms(&b->ladder, &t);
        put_relowered_forms(b);
        lower_all_forms next;
        char why[1024];
        ane_ladder_recommend(&b->ladder, &t.of, &next, why, sizeof why, b->suggest,
                             sizeof b->suggest);
    }
    if (!st) {
        /* a profile that cannot be written costs the next run its head start, not this run */
        nc_error e = {0};
        if (ane_ladder_record(&b->ladder, b->outcomes, b->n_programs, &e))
            nc_log(NC_LOG_WARN, "ane: the ladder's outcomes were not recorded: %s", e.msg);
    }
    /* every plan first: the surface sizes depend on all of them */
    const ane_plan **all = st ? NULL : calloc((size_t)b->n_plans + 1, sizeof *all);
    if (!st && !all) st = nc_fail(err, NC_ERR_NOMEM, "out of memory");
    for (int i = 0; !st && i < b->n_plans; i++)
        all[i] = &b->plans[i];
    if (!st)
        st = ane_plan_surface_sizes_bound(all, b->n_plans, &b->dev.surfaces, bound_bytes, b,
                                          &b->sizes, err);
    free(all);
    if (st) {
        ane_bundle_free(b);
        return st;
    }
    *out = b;
    return NC_OK;
}

/* The registry entry for buffer `name` with layout l: found (layouts must
 * agree; with `adopt`, a CPU step's, only the logical shape: it reads the
 * surface by whatever strides the device asked for) or created with a
 * zeroed surface. */
static nc_status reg_buf(ane_runner *r, const char *name, const ane_layout *l, int adopt, int *out,
                         nc_error *err) {
    for (int i = 0; i < r->n_bufs; i++) {
        if (strcmp(r->bufs[i].name, name) != 0) continue;
        const ane_layout *x = &r->bufs[i].layout;
        if (x->rows != l->rows || x->width != l->width ||
            (!adopt && x->row_bytes != l->row_bytes) || x->elem != l->elem)
            return nc_fail(err, NC_ERR_FORMAT,
                           "buffer %s: two functions bind it with different layouts", name);
        *out = i;
        return NC_OK;
    }
    if (r->n_bufs == r->cap_bufs) {
        int cap = r->cap_bufs ? 2 * r->cap_bufs : 64;
        run_buf *nb = realloc(r->bufs, (size_t)cap * sizeof *nb);
        if (!nb) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
        r->bufs = nb;
        r->cap_bufs = cap;
    }
    run_buf *b = &r->bufs[r->n_bufs];
    memset(b, 0, sizeof *b);
    snprintf(b->name, sizeof b->name, "%s", name);
    b->layout = *l;
    NC_TRY(r->ops->surface_new(r->b->dev.impl, ane_surface_size(&r->b->sizes, name, l->bytes),
                               &b->s, err));
    *out = r->n_bufs++;
    void *base = r->ops->surface_lock(b->s, 0, err);
    if (!base) return nc_fail_prefix(err, "buffer %s", name);
    memset(base, 0, l->bytes);
    r->ops->surface_unlock(b->s, 0);
    return NC_OK;
}

static const ane_binding *binding_of(const ane_bundle *b, const ane_plan_step *s) {
    const lower_program_info *pi = &b->programs[s->program];
    for (int f = 0; f < pi->n_fns; f++)
        if (strcmp(pi->fns[f].name, s->fn) == 0) return &b->progs[s->program].binds[f];
    return NULL;
}

static int fn_index(const ane_bundle *b, int program, const char *fn) {
    const lower_program_info *pi = &b->programs[program];
    for (int f = 0; f < pi->n_fns; f++)
        if (strcmp(pi->fns[f].name, fn) == 0) return f;
    return -1;
}

/* The model that runs function f of program i: the program's, or (the
 * function rung) the function's own; NULL: the CPU. */
static ane_model *model_of(const ane_bundle *b, int i, int f) {
    const run_prog *p = &b->progs[i];
    if (!p->on_cpu) return p->model;
    return p->fn_models && f >= 0 ? p->fn_models[f] : NULL;
}

/* The pieces of function f of program i (the outputs rung), or NULL. */
static const run_pieces *pieces_of(const ane_bundle *b, int i, int f) {
    const run_prog *p = &b->progs[i];
    return p->pieces && f >= 0 ? p->pieces[f] : NULL;
}

/* The form function f of program i was re-lowered into (the relower
 * rung), or NULL. */
static const char *relowered_of(const ane_bundle *b, int i, int f) {
    const run_prog *p = &b->progs[i];
    return p->relowered && f >= 0 && p->relowered[f][0] &&
                   (p->fn_models[f] || (p->pieces && p->pieces[f]))
               ? p->relowered[f]
               : NULL;
}

static int fn_on_device(const ane_bundle *b, int i, int f) {
    return model_of(b, i, f) != NULL || pieces_of(b, i, f) != NULL;
}

static int step_on_cpu(const ane_bundle *b, const ane_plan_step *s) {
    return s->kind == ANE_STEP_KERNEL && !fn_on_device(b, s->program, fn_index(b, s->program, s->fn));
}

/* The requests of a step whose function runs as one program per output
 * (the outputs rung): piece k reads the inputs it binds (every one, unless
 * its device dropped some its output does not read) and writes output k,
 * by its own model's symbols; *out is NULL-terminated. */
static nc_status piece_requests(ane_runner *r, const ane_plan_step *s, const run_pieces *pc,
                                ane_surface *const *in, ane_surface *const *out,
                                ane_request ***reqs, nc_error *err) {
    *reqs = calloc((size_t)pc->n + 1, sizeof **reqs);
    if (!*reqs) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    for (int k = 0; k < pc->n; k++) {
        const ane_binding *pb = &pc->binds[k];
        int in_idx[LOWER_MAX_IO] = {0}, out_idx = pb->out[0].symbol, o = -1, n_in = 0;
        ane_surface *ins[LOWER_MAX_IO] = {0};
        for (int j = 0; j < s->n_in; j++) { /* the inputs this piece binds */
            const ane_bound_io *bio = ane_binding_io(pb, s->in[j].name, 0);
            if (!bio) continue;
            ins[n_in] = in[j];
            in_idx[n_in++] = bio->symbol;
        }
        if (n_in != pb->n_in)
            return nc_fail(err, NC_ERR_INTERNAL, "%s: binds %d inputs, the plan step has %d of them",
                           pb->fn, pb->n_in, n_in);
        for (int j = 0; j < s->n_out; j++)
            if (!strcmp(s->out[j].name, pb->out[0].name)) o = j;
        if (o < 0) return nc_fail(err, NC_ERR_INTERNAL, "%s: no plan output %s", pb->fn, pb->out[0].name);
        if (r->ops->request_new(pc->models[k], pb->proc_id, n_in, ins, in_idx, 1, &out[o],
                                &out_idx, &(*reqs)[k], err))
            return nc_fail_prefix(err, "request for %s", pb->fn);
    }
    return NC_OK;
}

/* Surfaces and prebuilt requests of one plan: pass 0, the device's steps
 * (their layouts are the device's); pass 1, the CPU's (adopting those
 * layouts for the surfaces they share), and the check that every buffer
 * has a surface. */
static nc_status prepare_plan(ane_runner *r, const ane_plan *p, run_plan *rp, int pass,
                              nc_error *err) {
    if (pass == 0) {
        rp->reqs = calloc((size_t)p->n_steps + 1, sizeof *rp->reqs);
        rp->pieces = calloc((size_t)p->n_steps + 1, sizeof *rp->pieces);
        rp->reg = malloc(((size_t)p->n_bufs + 1) * sizeof *rp->reg);
        if (!rp->reqs || !rp->pieces || !rp->reg)
            return nc_fail(err, NC_ERR_NOMEM, "out of memory");
        for (int i = 0; i < p->n_bufs; i++)
            rp->reg[i] = -1;
    }
    /* layouts come from the bindings of the kernels that use each buffer */
    for (int i = 0; i < p->n_steps; i++) {
        const ane_plan_step *s = &p->steps[i];
        if (s->kind != ANE_STEP_KERNEL || step_on_cpu(r->b, s) != pass) continue;
        const ane_binding *b = binding_of(r->b, s);
        if (!b) return nc_fail(err, NC_ERR_INTERNAL, "plan step %s has no binding", s->fn);
        ane_surface *in[LOWER_MAX_IO] = {0}, *out[LOWER_MAX_IO] = {0};
        int in_idx[LOWER_MAX_IO] = {0}, out_idx[LOWER_MAX_IO] = {0};
        for (int side = 0; side < 2; side++) {
            int n = side ? s->n_out : s->n_in;
            ane_surface **surf = side ? out : in;
            int *idx = side ? out_idx : in_idx;
            for (int k = 0; k < n; k++) {
                const ane_plan_io *pio = side ? &s->out[k] : &s->in[k];
                const ane_bound_io *bio = ane_binding_io(b, pio->name, side);
                if (!bio)
                    return nc_fail(err, NC_ERR_INTERNAL, "%s: '%s' is not bound", s->fn, pio->name);
                int reg = 0;
                NC_TRY(reg_buf(r, p->bufs[pio->buf].name, &bio->layout, pass, &reg, err));
                rp->reg[pio->buf] = reg;
                surf[k] = r->bufs[reg].s;
                idx[k] = bio->symbol;
            }
        }
        const run_pieces *pc = pieces_of(r->b, s->program, fn_index(r->b, s->program, s->fn));
        if (pass == 0 && pc) {
            NC_TRY(piece_requests(r, s, pc, in, out, &rp->pieces[i], err));
            continue;
        }
        if (pass == 0 &&
            r->ops->request_new(model_of(r->b, s->program, fn_index(r->b, s->program, s->fn)),
                                b->proc_id, s->n_in, in, in_idx, s->n_out, out, out_idx,
                                &rp->reqs[i], err))
            return nc_fail_prefix(err, "request for %s", s->fn);
    }
    if (pass == 0) return NC_OK;
    for (int i = 0; i < p->n_bufs; i++)
        if (rp->reg[i] < 0)
            return nc_fail(err, NC_ERR_INTERNAL, "buffer %s has no surface", p->bufs[i].name);
    return NC_OK;
}

nc_status ane_runner_new(ane_bundle *b, ane_runner **out, nc_error *err) {
    ane_runner *r = calloc(1, sizeof *r);
    if (!r) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    r->b = b;
    r->ops = b->dev.ops;
    r->plans = calloc((size_t)b->n_plans + 1, sizeof *r->plans);
    nc_status st = r->plans ? NC_OK : nc_fail(err, NC_ERR_NOMEM, "out of memory");
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; !st && i < b->n_plans; i++)
            st = prepare_plan(r, &b->plans[i], &r->plans[i], pass, err);
    if (st) {
        ane_runner_free(r);
        return st;
    }
    *out = r;
    return NC_OK;
}

nc_status ane_runner_open(const ane_device *dev, const char *bundle_dir, ane_runner **out,
                          nc_error *err) {
    ane_bundle *b = NULL;
    NC_TRY(ane_bundle_open(dev, bundle_dir, &b, err));
    nc_status st = ane_runner_new(b, out, err);
    if (st) {
        ane_bundle_free(b);
        return st;
    }
    (*out)->owns_bundle = 1;
    return NC_OK;
}

static run_buf *find(const ane_runner *r, const char *name) {
    for (int i = 0; i < r->n_bufs; i++)
        if (strcmp(r->bufs[i].name, name) == 0) return &r->bufs[i];
    return NULL;
}

/* The shape's own buffer of that name, else the shared one. */
static run_buf *lookup(const ane_runner *r, int batch, int seq, const char *name) {
    char full[ANE_NAME_MAX + 32];
    ane_plan_buf_name(full, sizeof full, name, batch, seq);
    run_buf *b = find(r, full);
    return b ? b : find(r, name);
}

static run_buf *lookup_or_fail(ane_runner *r, int batch, int seq, const char *name, nc_error *err) {
    run_buf *b = lookup(r, batch, seq, name);
    if (!b)
        nc_fail(err, NC_ERR_NOT_FOUND, "the bundle's plans have no buffer '%s' for shape %dx%d",
                name, batch, seq);
    return b;
}

int ane_runner_has(const ane_runner *r, int batch, int seq, const char *name) {
    return lookup(r, batch, seq, name) != NULL;
}

static nc_status transfer(ane_runner *r, int batch, int seq, const char *name, float *data,
                          size_t count, int is_write, nc_error *err) {
    run_buf *b = lookup_or_fail(r, batch, seq, name, err);
    if (!b) return NC_ERR_NOT_FOUND;
    size_t n = (size_t)(b->layout.rows * b->layout.width);
    if (n != count)
        return nc_fail(err, NC_ERR_INVALID, "buffer %s holds %zu values, the host passed %zu",
                       b->name, n, count);
    void *base = r->ops->surface_lock(b->s, !is_write, err);
    if (!base) return nc_fail_prefix(err, "buffer %s", b->name);
    if (is_write)
        ane_pad_f32(&b->layout, data, base);
    else
        ane_unpad_f32(&b->layout, base, data);
    r->ops->surface_unlock(b->s, !is_write);
    return NC_OK;
}

nc_status ane_runner_write(ane_runner *r, int batch, int seq, const char *name, const float *data,
                           size_t count, nc_error *err) {
    return transfer(r, batch, seq, name, (float *)data, count, 1, err);
}

nc_status ane_runner_read(ane_runner *r, int batch, int seq, const char *name, float *data,
                          size_t count, nc_error *err) {
    /* "x" read back is the last layer's activation: x2@S when an odd number
     * of kernels write it (one kernel per layer, odd layer count) */
    const ane_plan *p = ane_runner_plan(r, batch, seq);
    if (p && !strcmp(name, "x") && p->x_final >= 0) name = p->bufs[p->x_final].name;
    return transfer(r, batch, seq, name, data, count, 0, err);
}

nc_status ane_runner_read_column(ane_runner *r, int seq, const char *name, int col, float *data,
                                 size_t count, nc_error *err) {
    run_buf *b = lookup_or_fail(r, 1, seq, name, err);
    if (!b) return NC_ERR_NOT_FOUND;
    if ((size_t)b->layout.rows != count || col < 0 || col >= b->layout.width)
        return nc_fail(err, NC_ERR_INVALID,
                       "buffer %s: column %d of %lld rows x %lld, the host asked for %zu values",
                       b->name, col, (long long)b->layout.rows, (long long)b->layout.width, count);
    void *base = r->ops->surface_lock(b->s, 1, err);
    if (!base) return nc_fail_prefix(err, "buffer %s", b->name);
    ane_unpad_column_f32(&b->layout, base, col, data);
    r->ops->surface_unlock(b->s, 1);
    return NC_OK;
}

/* A host step: the columns of its input buffer into its output (the head's
 * last token, a chunk gathered into order for a mixer or scattered back),
 * for the chunk of n tokens at position p. */
static nc_status host_columns(ane_runner *r, const run_plan *rp, const ane_plan *plan,
                              const ane_plan_step *s, int n, int p, int head_col, nc_error *err) {
    run_buf *src = &r->bufs[rp->reg[s->in[0].buf]], *dst = &r->bufs[rp->reg[s->out[0].buf]];
    const ane_device_ops *ops = r->ops;
    void *a = ops->surface_lock(src->s, 1, err);
    if (!a) return nc_fail_prefix(err, "buffer %s", src->name);
    void *b = ops->surface_lock(dst->s, 0, err);
    if (!b) {
        ops->surface_unlock(src->s, 1);
        return nc_fail_prefix(err, "buffer %s", dst->name);
    }
    int col = p % plan->seq;
    nc_status st =
        s->kind == ANE_STEP_HEAD_COLUMN
            ? ane_copy_columns_fp16(&src->layout, a, head_col, &dst->layout, b, 0, 1, 1, err)
        : s->kind == ANE_STEP_GATHER
            ? ane_copy_columns_fp16(&src->layout, a, col, &dst->layout, b, 0, n, 1, err)
        : s->kind == ANE_STEP_KV /* cache[:, p + i] = new[:, (p + i) mod S] */
            ? ane_copy_columns_fp16(&src->layout, a, col, &dst->layout, b,
                                    p % dst->layout.width, n, 0, err)
            : ane_copy_columns_fp16(&src->layout, a, 0, &dst->layout, b, col, n, 0, err);
    ops->surface_unlock(dst->s, 0);
    ops->surface_unlock(src->s, 1);
    return st;
}

/* A kernel of a program the device refused: its function on the MIL
 * interpreter, inputs read from and outputs written to the surfaces the
 * device's kernels use, by their layouts. */
static nc_status cpu_kernel(ane_runner *r, const run_plan *rp, const ane_plan_step *s,
                            nc_error *err) {
    run_prog *p = &r->b->progs[s->program];
    const lower_program_info *pi = &r->b->programs[s->program];
    int f = 0;
    while (f < pi->n_fns && strcmp(pi->fns[f].name, s->fn))
        f++;
    if (f == pi->n_fns) return nc_fail(err, NC_ERR_INTERNAL, "plan step %s has no function", s->fn);
    const lower_fn_info *fi = &pi->fns[f];
    if (!p->its[f]) NC_TRY(mil_interp_new(p->cpu, s->fn, MIL_INTERP_FP16, &p->its[f], err));
    mil_interp *it = p->its[f];
    size_t max = 1;
    for (int k = 0; k < s->n_in + s->n_out; k++) {
        const run_buf *b = &r->bufs[rp->reg[(k < s->n_in ? s->in[k] : s->out[k - s->n_in]).buf]];
        size_t n = (size_t)(b->layout.rows * b->layout.width);
        if (n > max) max = n;
    }
    float *tmp = malloc(max * sizeof *tmp);
    if (!tmp) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    nc_status st = NC_OK;
    for (int k = 0; k < s->n_in && !st; k++) {
        const run_buf *b = &r->bufs[rp->reg[s->in[k].buf]];
        const lower_io *io = lower_fn_io(fi, s->in[k].name, 0);
        void *base = io ? r->ops->surface_lock(b->s, 1, err) : NULL;
        if (!base) {
            st = io ? nc_fail_prefix(err, "buffer %s", b->name)
                    : nc_fail(err, NC_ERR_INTERNAL, "%s has no input %s", s->fn, s->in[k].name);
            break;
        }
        ane_unpad_f32(&b->layout, base, tmp);
        r->ops->surface_unlock(b->s, 1);
        st = mil_interp_set_input(it, io->name, MIL_DT_FP32, io->rank, io->shape, tmp, err);
    }
    if (!st) st = mil_interp_run(it, err);
    for (int k = 0; k < s->n_out && !st; k++) {
        const run_buf *b = &r->bufs[rp->reg[s->out[k].buf]];
        st = mil_interp_copy_out(it, s->out[k].name, MIL_DT_FP32, tmp,
                                 (size_t)(b->layout.rows * b->layout.width), err);
        void *base = st ? NULL : r->ops->surface_lock(b->s, 0, err);
        if (!st && !base) st = nc_fail_prefix(err, "buffer %s", b->name);
        if (st) break;
        ane_pad_f32(&b->layout, tmp, base);
        r->ops->surface_unlock(b->s, 0);
    }
    free(tmp);
    return st ? nc_fail_prefix(err, "%s on the CPU", s->fn) : NC_OK;
}

/* Buffer index of step s's input (is_output 0) or output named `io`, or -1. */
static int step_buf(const ane_plan_step *s, const char *io, int is_output) {
    for (int k = 0; k < (is_output ? s->n_out : s->n_in); k++)
        if (!strcmp((is_output ? s->out : s->in)[k].name, io))
            return (is_output ? s->out : s->in)[k].buf;
    return -1;
}

/* Steps first..last (one layer) as one host step: the layer's x in (the
 * buffer its first step reads) through the caller's CPU layer into the
 * buffer its last x_out names (a mixer's own xs pair and the gather and
 * scatter around it are inside the layer); the chunk's columns only, the
 * others copied. */
static nc_status cpu_layer_step(ane_runner *r, const run_plan *rp, const ane_plan *plan,
                                int first, int last, int n, int p, nc_error *err) {
    const ane_plan_step *s0 = &plan->steps[first];
    int in = s0->kind == ANE_STEP_GATHER ? s0->in[0].buf : step_buf(s0, "x", 0), cur = in;
    for (int i = first; i <= last; i++) {
        const ane_plan_step *s = &plan->steps[i];
        int xo = s->kind == ANE_STEP_KERNEL ? step_buf(s, "x_out", 1) : -1;
        if (xo >= 0 && step_buf(s, "x", 0) == cur) cur = xo;
    }
    if (in < 0)
        return nc_fail(err, NC_ERR_INTERNAL, "layer %d: its first step reads no x", s0->layer);
    run_buf *bi = &r->bufs[rp->reg[in]], *bo = &r->bufs[rp->reg[cur]];
    size_t D = (size_t)bi->layout.rows, S = (size_t)bi->layout.width;
    if (bo->layout.rows != bi->layout.rows || bo->layout.width != bi->layout.width ||
        S != (size_t)plan->seq || n > plan->seq)
        return nc_fail(err, NC_ERR_INTERNAL, "layer %d: x buffers %s and %s differ", s0->layer,
                       bi->name, bo->name);
    float *x = malloc((D * S + (size_t)n * D) * sizeof *x), *rows = x + D * S;
    if (!x) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    nc_status st = NC_OK;
    void *base = r->ops->surface_lock(bi->s, 1, err);
    if (!base) st = nc_fail_prefix(err, "buffer %s", bi->name);
    if (!st) {
        ane_unpad_f32(&bi->layout, base, x);
        r->ops->surface_unlock(bi->s, 1);
        for (int i = 0; i < n; i++) /* token i sits in column (p + i) mod S */
            for (size_t d = 0; d < D; d++)
                rows[(size_t)i * D + d] = x[d * S + (size_t)(p + i) % S];
        st = r->cpu_layer(r->cpu_layer_user, s0->layer, rows, n, p, err);
    }
    if (!st) {
        for (int i = 0; i < n; i++)
            for (size_t d = 0; d < D; d++)
                x[d * S + (size_t)(p + i) % S] = rows[(size_t)i * D + d];
        base = r->ops->surface_lock(bo->s, 0, err);
        if (!base) st = nc_fail_prefix(err, "buffer %s", bo->name);
    }
    if (!st) {
        ane_pad_f32(&bo->layout, x, base); /* rounded to fp16, as a kernel writes it */
        r->ops->surface_unlock(bo->s, 0);
    }
    free(x);
    return st ? nc_fail_prefix(err, "layer %d on the CPU engine's kernels", s0->layer) : NC_OK;
}

/* Issues plan pi (at parity 0) over a chunk of n tokens at position p. */
static nc_status issue_plan(ane_runner *r, int pi, int n, int p, int head_col, ane_run_mode mode,
                            nc_error *err) {
    if (r->broken)
        return nc_fail(err, NC_ERR_IO,
                       "an earlier run timed out with requests in flight; reopen the runner");
    pi = current(r, pi);
    const run_plan *rp = &r->plans[pi];
    const ane_plan *plan = &r->b->plans[pi];
    const ane_device *dev = &r->b->dev;
    const ane_device_ops *ops = r->ops;
    ane_wait *w = &r->wait;
    ane_wait_init(w);
    nc_status st = NC_OK;
    int events = mode == ANE_RUN_ASYNC_EVENTS;
    const ane_model *prev_model = NULL;
    int max = dev->max_in_flight > 0 ? dev->max_in_flight : ANE_MAX_IN_FLIGHT;
    if (events && !r->event) {
        if (!ops->event_new)
            return nc_fail(err, NC_ERR_UNSUPPORTED, "device %s has no shared events", ops->name);
        NC_TRY(ops->event_new(dev->impl, &r->event, err));
        r->ev_value = 0;
    }
    for (int i = 0; i < plan->n_steps && !st; i++) {
        const ane_plan_step *s = &plan->steps[i];
        if (r->cpu_layer && s->layer >= 0 && r->b->layer_cpu && r->b->layer_cpu[s->layer]) {
            /* the whole layer on the caller's kernels, after the device's requests it reads */
            if (mode != ANE_RUN_SYNC) st = ane_wait_all(w, ANE_RUN_TIMEOUT_S, err);
            int last = i;
            while (last + 1 < plan->n_steps && plan->steps[last + 1].layer == s->layer)
                last++;
            if (!st) st = cpu_layer_step(r, rp, plan, i, last, n, p, err);
            prev_model = NULL;
            i = last;
            continue;
        }
        if (s->kind != ANE_STEP_KERNEL) {
            if (s->kind == ANE_STEP_HEAD_COLUMN && head_col < 0) break; /* the plan's tail */
            if (mode != ANE_RUN_SYNC) st = ane_wait_all(w, ANE_RUN_TIMEOUT_S, err);
            if (!st) st = host_columns(r, rp, plan, s, n, p, head_col, err);
            continue;
        }
        if (s->layer < 0 && head_col < 0) break;
        if (step_on_cpu(r->b, s)) { /* after the device's requests it reads */
            if (mode != ANE_RUN_SYNC) st = ane_wait_all(w, ANE_RUN_TIMEOUT_S, err);
            if (!st) st = cpu_kernel(r, rp, s, err);
            prev_model = NULL;
            continue;
        }
        /* the step's requests: one, or one per output (the outputs rung) */
        int f = fn_index(r->b, s->program, s->fn);
        const run_pieces *pc = pieces_of(r->b, s->program, f);
        for (int k = 0; k < (pc ? pc->n : 1) && !st; k++) {
            ane_request *req = pc ? rp->pieces[i][k] : rp->reqs[i];
            r->issued++;
            if (mode == ANE_RUN_SYNC) {
                if (ops->evaluate(req, err)) st = nc_fail_prefix(err, "%s", s->fn);
                continue;
            }
            /* Nothing documents that requests of different models run in
             * submission order: without events, the previous model's requests
             * finish first; at most max are outstanding (the framework's
             * semaphore per QoS) */
            const ane_model *model = pc ? pc->models[k] : model_of(r->b, s->program, f);
            if (!events && prev_model && model != prev_model)
                st = ane_wait_all(w, ANE_RUN_TIMEOUT_S, err);
            if (!st) st = ane_wait_below(w, max, ANE_RUN_TIMEOUT_S, err);
            if (st) break;
            prev_model = model;
            ane_wait_add(w, 1);
            nc_status sst = events ? ops->submit_event(req, r->event, r->ev_value,
                                                       r->ev_value + 1, ane_wait_done, w, err)
                                   : ops->submit(req, ane_wait_done, w, err);
            if (sst) {
                ane_wait_done(w, NC_OK, NULL); /* never submitted: not pending */
                st = nc_fail_prefix(err, "%s", s->fn);
            } else if (events) {
                r->ev_value++;
            }
        }
    }
    /* always drain before the buffers are touched again */
    if (mode != ANE_RUN_SYNC) {
        nc_error e2 = {0};
        nc_status st2 = ane_wait_all(w, ANE_RUN_TIMEOUT_S, &e2);
        if (st2 && atomic_load(&w->pending) > 0) r->broken = 1;
        if (!st && st2) {
            if (err) *err = e2;
            st = st2;
        }
    }
    if (!st && r->b->n_parity > 1) r->parity ^= 1;
    if (st && events && r->event && !r->broken) { /* a broken chain: start a new one */
        ops->event_free(r->event);
        r->event = NULL;
    }
    return st;
}

nc_status ane_runner_run(ane_runner *r, int batch, int seq, int head_col, ane_run_mode mode,
                         nc_error *err) {
    int pi = plan_index(r->b, batch, seq, ANE_FORM_CHUNK);
    if (pi < 0)
        return nc_fail(err, NC_ERR_INVALID, "%dx%d is not one of the bundle's shapes", batch, seq);
    if (head_col >= seq)
        return nc_fail(err, NC_ERR_RANGE, "head column %d outside bucket %d", head_col, seq);
    return issue_plan(r, pi, seq, 0, head_col, mode, err);
}

nc_status ane_runner_run_chunk(ane_runner *r, int seq, int n, int p, int head_col,
                               ane_run_mode mode, nc_error *err) {
    ane_plan_form form = n == 1 && r->b->n_forms > 1 ? ANE_FORM_TOKEN : ANE_FORM_CHUNK;
    int pi = plan_index(r->b, 1, seq, form);
    if (pi < 0) return nc_fail(err, NC_ERR_INVALID, "%d is not one of the bundle's buckets", seq);
    if (n < 1 || n > seq || p < 0 || head_col >= seq)
        return nc_fail(err, NC_ERR_RANGE,
                       "chunk of %d tokens at %d (head column %d) outside bucket %d", n, p,
                       head_col, seq);
    return issue_plan(r, pi, n, p, head_col, mode, err);
}

nc_status ane_runner_reset(ane_runner *r, nc_error *err) {
    for (int i = 0; i < r->n_bufs; i++) {
        if (!ane_plan_is_carried(r->bufs[i].name)) continue;
        void *base = r->ops->surface_lock(r->bufs[i].s, 0, err);
        if (!base) return nc_fail_prefix(err, "buffer %s", r->bufs[i].name);
        memset(base, 0, r->bufs[i].layout.bytes);
        r->ops->surface_unlock(r->bufs[i].s, 0);
    }
    r->parity = 0;
    return NC_OK;
}

void ane_runner_set_cpu_layer(ane_runner *r, ane_cpu_layer_fn fn, void *user) {
    r->cpu_layer = fn;
    r->cpu_layer_user = user;
}

int ane_bundle_layer_on_cpu(const ane_bundle *b, int layer, const char **why) {
    if (!b->layer_cpu || layer < 0 || layer >= b->n_layers || !b->layer_cpu[layer]) return 0;
    for (int i = 0; why && i < b->n_programs; i++)
        if (b->programs[i].layer == layer && b->progs[i].on_cpu) {
            *why = b->progs[i].why;
            break;
        }
    return 1;
}

void ane_bundle_set_cpu_layers(ane_bundle *b, int on) {
    b->cpu_layers = on;
}

long ane_runner_requests_issued(const ane_runner *r) {
    return r->issued;
}

nc_status ane_runner_model_attrs(const ane_runner *r, int program, const char **json, size_t *len,
                                 nc_error *err) {
    const ane_bundle *b = r->b;
    if (program < 0 || program >= b->n_programs)
        return nc_fail(err, NC_ERR_RANGE, "no program %d (the bundle has %d)", program,
                       b->n_programs);
    if (b->progs[program].on_cpu)
        return nc_fail(err, NC_ERR_UNSUPPORTED, "%s runs on the CPU: the device refused it: %s",
                       b->programs[program].path, b->progs[program].why);
    return r->ops->model_attrs(b->progs[program].model, json, len, err);
}

int ane_bundle_on_cpu(const ane_bundle *b, int program, const char **why) {
    if (program < 0 || program >= b->n_programs || !b->progs[program].on_cpu) return 0;
    if (why) *why = b->progs[program].why;
    return 1;
}

/* Appends to buf (cap bytes, *len used). */
static void put(char *buf, size_t cap, size_t *len, const char *fmt, ...) NC_PRINTF(4, 5);
static void put(char *buf, size_t cap, size_t *len, const char *fmt, ...) {
    if (*len + 1 >= cap) return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(buf + *len, cap - *len, fmt, ap);
    va_end(ap);
    if (k > 0) *len = *len + (size_t)k < cap ? *len + (size_t)k : cap - 1;
}

/* Layer l runs whole on the caller's kernels. */
static int whole_on_cpu(const ane_bundle *b, int l) {
    return b->cpu_layers && b->layer_cpu && l >= 0 && l < b->n_layers && b->layer_cpu[l];
}

/* "layer 3", "layers 0-4" or "layers 0-2, 5, 7-9": the layers whose
 * whole_on_cpu is `cpu`. */
static void put_layers(const ane_bundle *b, int cpu, char *buf, size_t cap, size_t *len) {
    int count = 0, runs = 0;
    for (int l = 0; l < b->n_layers; l++)
        count += whole_on_cpu(b, l) == cpu;
    put(buf, cap, len, "layer%s ", count > 1 ? "s" : "");
    for (int l = 0; l < b->n_layers; l++) {
        if (whole_on_cpu(b, l) != cpu) continue;
        int e = l;
        while (e + 1 < b->n_layers && whole_on_cpu(b, e + 1) == cpu)
            e++;
        put(buf, cap, len, e > l ? "%s%d-%d" : "%s%d", runs++ ? ", " : "", l, e);
        l = e;
    }
}

/* One group of programs (the layers, or the head) into buf at *len. */
static void place_group(const ane_bundle *b, int head, char *buf, size_t cap, size_t *len) {
    int lo = -1, hi = -1, fns = 0, on_ane = 0, own = 0, split = 0, first_cpu = -1, re = 0;
    int whole = -1;       /* the first program of a layer run whole on the caller's kernels */
    char forms[256] = ""; /* the relower rung's forms */
    for (int i = 0; i < b->n_programs; i++) {
        const lower_program_info *pi = &b->programs[i];
        if ((pi->layer < 0) != head) continue;
        if (whole_on_cpu(b, pi->layer)) { /* said apart, below */
            if (whole < 0 && b->progs[i].on_cpu) whole = i;
            continue;
        }
        if (lo < 0) lo = pi->layer;
        hi = pi->layer;
        fns += pi->n_fns;
        for (int f = 0; f < pi->n_fns; f++) {
            int dev = fn_on_device(b, i, f), pieces = pieces_of(b, i, f) != NULL;
            const char *form = relowered_of(b, i, f);
            on_ane += dev;
            own += dev && !pieces && !form && b->progs[i].on_cpu; /* the function rung */
            split += pieces;                                      /* the outputs rung */
            re += form != NULL;                                   /* the relower rung */
            if (form) list_add(forms, sizeof forms, form, ", ");
        }
        if (b->progs[i].on_cpu && first_cpu < 0) first_cpu = i;
    }
    if (fns) {
        if (*len) put(buf, cap, len, "; ");
        if (head)
            put(buf, cap, len, "%s: ", b->is_encoder ? "encoder" : "head");
        else if (whole >= 0)
            put_layers(b, 0, buf, cap, len), put(buf, cap, len, ": ");
        else
            put(buf, cap, len, "layers %d-%d: ", lo, hi);
        put(buf, cap, len, "%d/%d kernels on the ANE", on_ane, fns);
        if (own) put(buf, cap, len, " (%d as programs of their own)", own);
        if (split) put(buf, cap, len, " (%d as a program per output)", split);
        if (re) put(buf, cap, len, " (%d re-lowered: %s)", re, forms);
        if (first_cpu >= 0 && on_ane < fns) put(buf, cap, len, ", %d on the CPU", fns - on_ane);
        if (first_cpu >= 0)
            put(buf, cap, len, " (%s refused: %.240s)", b->programs[first_cpu].path,
                b->progs[first_cpu].why);
    }
    if (whole < 0) return;
    if (*len) put(buf, cap, len, "; ");
    put_layers(b, 1, buf, cap, len);
    put(buf, cap, len, ": CPU engine kernels (%s refused: %.240s)", b->programs[whole].path,
        b->progs[whole].why);
}

void ane_bundle_placement(const ane_bundle *b, char *buf, size_t cap) {
    size_t len = 0;
    if (!cap) return;
    buf[0] = '\0';
    place_group(b, 0, buf, cap, &len);
    place_group(b, 1, buf, cap, &len);
    long all = atomic_load(&process_opens);
    put(buf, cap, &len, "; %d programs compiled or loaded (%ld in this process%s)", b->opens, all,
        all > ANE_REPORTED_COMPILE_BUDGET
            ? ": above the ~119 per process public projects report before compiles fail; "
              "--program-split layer and --head-split one need fewer"
            : "");
    if (b->suggest[0])
        put(buf, cap, &len, "; the probe profile suggests compiling with %s", b->suggest);
}

static void describe_io(FILE *f, const char *side, const ane_bound_io *io) {
    fprintf(f, "    %s %-12s symbol %3d  %lld x %lld, %zu bytes per row\n", side, io->name,
            io->symbol, (long long)io->layout.rows, (long long)io->layout.width,
            io->layout.row_bytes);
}

void ane_runner_describe(const ane_runner *r, FILE *f) {
    const ane_bundle *bu = r->b;
    fprintf(f, "device %s, %d programs, %d surfaces\n", r->ops->name, bu->n_programs, r->n_bufs);
    for (int i = 0; i < bu->n_programs; i++) {
        const lower_program_info *pi = &bu->programs[i];
        fprintf(f, "%s%s%s\n", pi->path, bu->progs[i].on_cpu ? ": on the CPU, refused: " : "",
                bu->progs[i].on_cpu ? bu->progs[i].why : "");
        for (int k = 0; k < pi->n_fns; k++) {
            const ane_binding *b = &bu->progs[i].binds[k];
            fprintf(f, "  %s: procedure %d\n", b->fn, b->proc_id);
            for (int j = 0; j < b->n_in; j++)
                describe_io(f, "in ", &b->in[j]);
            for (int j = 0; j < b->n_out; j++)
                describe_io(f, "out", &b->out[j]);
        }
    }
}
