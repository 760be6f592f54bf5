/* The fake device (ane_fake.h): one interpreter per MIL function, prepared
 * when a request for it is built; a FIFO worker thread for submitted
 * requests. Symbols are per procedure, as the real modelAttributes show
 * (two procedures taking "x" get two symbols both named "x"). */
#include "ane_host/ane_fake.h"

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ane_host/ane_attrs.h"
#include "ane_host/ane_layout.h"
#include "base/alloc.h"
#include "mil/interp.h"
#include "mil/parse.h"

struct ane_event {
    atomic_ullong value;
};

typedef struct fake_job {
    ane_request *req;
    ane_done_fn done;
    void *user;
    ane_event *ev; /* NULL: a plain submit */
    unsigned long long wait, signal;
    struct fake_job *next;
} fake_job;

/* Every fake device's model_open calls (a program compiled and loaded),
 * process-wide: the test that sequences share a loaded bundle reads it
 * through an engine, which keeps its device to itself. */
static atomic_long models_opened;
static atomic_long compiles; /* model_open calls, refused ones included */

typedef struct fake_dev {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    fake_job *head, *tail;
    int stop, paused;
    atomic_long evals;
    atomic_long fail_at; /* evaluation number that fails; 0: none */
    ane_fake_options opt;
    /* under mu: submitted and not yet reported, and the model of the last */
    int outstanding;
    const struct ane_model *last_model;
} fake_dev;

typedef struct fake_fn {
    int proc_id;
    int *in_sym, *out_sym; /* per declared input/output: its symbol */
    ane_layout *in_l, *out_l;
    mil_interp *it;
} fake_fn;

struct ane_model {
    fake_dev *dev;
    mil_program *prog;
    int n_fns;
    fake_fn *fns;
    char *json;
};

struct ane_surface {
    size_t bytes;
    void *data;
    atomic_int locks; /* host locks held: a request must not run under one */
};

struct ane_request {
    ane_model *m;
    int fn;
    int n_in, n_out;
    ane_surface **in, **out;
    int *in_idx, *out_idx;
};

/* --- surfaces ------------------------------------------------------------- */

static nc_status fake_surface_new(void *dev, size_t bytes, ane_surface **out, nc_error *err) {
    (void)dev;
    ane_surface *s = calloc(1, sizeof *s);
    if (s) s->data = nc_alloc_aligned(bytes ? bytes : 64);
    if (!s || !s->data) {
        free(s);
        return nc_fail(err, NC_ERR_NOMEM, "fake device: out of memory for a %zu-byte surface",
                       bytes);
    }
    memset(s->data, 0, bytes);
    s->bytes = bytes;
    atomic_init(&s->locks, 0);
    *out = s;
    return NC_OK;
}

static void *fake_surface_lock(ane_surface *s, int read_only, nc_error *err) {
    (void)read_only;
    (void)err;
    atomic_fetch_add(&s->locks, 1);
    return s->data;
}

static void fake_surface_unlock(ane_surface *s, int read_only) {
    (void)read_only;
    atomic_fetch_sub(&s->locks, 1);
}

static void fake_surface_free(ane_surface *s) {
    if (!s) return;
    nc_free_aligned(s->data);
    free(s);
}

/* --- models --------------------------------------------------------------- */

static nc_status io_layout(const mil_var *v, const char *fn, ane_layout *l, nc_error *err) {
    const mil_type *t = v->type;
    char what[160];
    snprintf(what, sizeof what, "fake device: %s: '%s'", fn, v->name);
    if (t->kind != MIL_TYPE_TENSOR || (t->dtype != MIL_DT_FP16 && t->dtype != MIL_DT_FP32))
        return nc_fail(err, NC_ERR_UNSUPPORTED, "%s: only fp16/fp32 tensors cross the ANE boundary",
                       what);
    for (int i = 0; i < t->rank; i++)
        if (t->dims[i] == MIL_DIM_UNKNOWN)
            return nc_fail(err, NC_ERR_UNSUPPORTED, "%s: shapes must be static", what);
    return ane_layout_for(what, t->dtype == MIL_DT_FP16 ? ANE_ELEM_FP16 : ANE_ELEM_FP32, t->rank,
                          t->dims, l, err);
}

static int by_name_desc(const void *a, const void *b) {
    return -strcmp((*(mil_var *const *)a)->name, (*(mil_var *const *)b)->name);
}

/* NCHW as the runtime reports it: the declared dims right-aligned. */
static json_t *live_entry(const mil_var *v, const ane_layout *l, int is_output, int named) {
    int64_t d[4] = {1, 1, 1, 1};
    const mil_type *t = v->type;
    for (int i = 0; i < t->rank && i < 4; i++)
        d[4 - t->rank + i] = t->dims[i];
    for (int i = 0; i < t->rank - 4; i++)
        d[0] *= t->dims[i]; /* rank 5: fold the front */
    char name[ANE_NAME_MAX];
    snprintf(name, sizeof name, "%s%s", v->name, is_output ? "@output" : "");
    json_int_t plane = (json_int_t)(d[2] * (int64_t)l->row_bytes);
    json_t *e =
        json_pack("{s:s, s:s, s:I, s:I, s:i, s:I, s:I, s:I, s:I, s:I}", "Name", name, "Type",
                  t->dtype == MIL_DT_FP16 ? "Float16" : "Float32", "Batches", (json_int_t)d[0],
                  "Channels", (json_int_t)d[1], "Depth", 1, "Height", (json_int_t)d[2], "Width",
                  (json_int_t)d[3], "RowStride", (json_int_t)l->row_bytes, "PlaneStride", plane,
                  "BatchStride", plane * (json_int_t)d[1]);
    if (e && !named) json_object_del(e, "Name"); /* fake:nameless-status */
    return e;
}

/* Symbols, procedure ids, layouts and the modelAttributes JSON. */
static nc_status describe(ane_model *m, nc_error *err) {
    json_t *in_syms = json_array(), *out_syms = json_array(), *names = json_object();
    json_t *procs = json_array(), *status = json_array();
    nc_status st = NC_OK;
    int n = m->n_fns;
    for (int id = 0; id < n && !st; id++) {
        int f = n - 1 - id; /* ids in reverse declaration order */
        const mil_function *fn = m->prog->functions[f];
        fake_fn *ff = &m->fns[f];
        ff->proc_id = id;
        int n_io = fn->n_inputs + fn->n_outputs;
        ff->in_sym = calloc((size_t)n_io + 1, sizeof(int));
        ff->in_l = calloc((size_t)n_io + 1, sizeof(ane_layout));
        mil_var **sorted = calloc((size_t)n_io + 1, sizeof *sorted);
        if (!ff->in_sym || !ff->in_l || !sorted) {
            free(sorted);
            st = nc_fail(err, NC_ERR_NOMEM, "out of memory");
            break;
        }
        ff->out_sym = ff->in_sym + fn->n_inputs;
        ff->out_l = ff->in_l + fn->n_inputs;
        json_t *ii = json_array(), *oi = json_array(), *li = json_array(), *lo = json_array();
        for (int side = 0; side < 2 && !st; side++) {
            int cnt = side ? fn->n_outputs : fn->n_inputs;
            mil_var **vars = side ? fn->outputs : fn->inputs;
            memcpy(sorted, vars, (size_t)cnt * sizeof *sorted);
            qsort(sorted, (size_t)cnt, sizeof *sorted, by_name_desc);
            for (int k = 0; k < cnt && !st; k++) {
                int decl = 0;
                while (vars[decl] != sorted[k])
                    decl++;
                ane_layout *l = side ? &ff->out_l[decl] : &ff->in_l[decl];
                st = io_layout(sorted[k], fn->name, l, err);
                if (!st && m->dev->opt.behave.padded_strides)
                    st = ane_layout_from_strides(fn->name, l->elem, l->rows, l->width,
                                                 l->row_bytes + ANE_ROW_ALIGN_BYTES, l, err);
                if (st) break;
                json_t *syms = side ? out_syms : in_syms;
                int sym = (int)json_array_size(syms);
                char nm[ANE_NAME_MAX];
                snprintf(nm, sizeof nm, "%s%s", sorted[k]->name, side ? "@output" : "");
                json_array_append_new(syms, json_string(nm));
                json_array_append_new(side ? oi : ii, json_integer(sym));
                json_array_append_new(
                    side ? lo : li,
                    live_entry(sorted[k], l, side, !m->dev->opt.behave.nameless_status));
                (side ? ff->out_sym : ff->in_sym)[decl] = sym;
            }
        }
        free(sorted);
        json_object_set_new(names, fn->name, json_integer(id));
        json_array_append_new(procs, json_pack("{s:i, s:o, s:o}", "ANEFModelProcedureID", id,
                                               "ANEFModelInputSymbolIndexArray", ii,
                                               "ANEFModelOutputSymbolIndexArray", oi));
        json_array_append_new(status,
                              json_pack("{s:o, s:o}", "LiveInputList", li, "LiveOutputList", lo));
    }
    if (m->dev->opt.behave.shuffle_status) /* fake:shuffle-status: reversed */
        for (size_t i = 0, n_st = json_array_size(status); n_st > 1 && i < n_st; i++) {
            json_t *e = json_incref(json_array_get(status, n_st - 1));
            json_array_remove(status, n_st - 1);
            json_array_insert_new(status, i, e);
        }
    json_t *root = json_pack(
        "{s:{s:o, s:o, s:o, s:o}, s:o}", "ANEFModelDescription", "kANEFModelInputSymbolsArrayKey",
        in_syms, "kANEFModelOutputSymbolsArrayKey", out_syms, "kANEFModelProcedureNameToIDMapKey",
        names, "ANEFModelProcedures", procs, "NetworkStatusList", status);
    if (!st) {
        m->json = root ? json_dumps(root, JSON_INDENT(1)) : NULL;
        if (!m->json)
            st = nc_fail(err, NC_ERR_NOMEM, "fake device: could not write modelAttributes");
    }
    json_decref(root);
    return st;
}

static void fake_model_close(ane_model *m) {
    if (!m) return;
    for (int f = 0; m->fns && f < m->n_fns; f++) {
        mil_interp_free(m->fns[f].it);
        free(m->fns[f].in_sym);
        free(m->fns[f].in_l);
    }
    free(m->fns);
    mil_program_free(m->prog);
    free(m->json);
    free(m);
}

static nc_status fake_model_open(void *dev, const char *dir, ane_model **out, nc_error *err) {
    ane_model *m = calloc(1, sizeof *m);
    if (!m) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    m->dev = dev;
    char path[4200];
    snprintf(path, sizeof path, "%s/model.mil", dir);
    nc_status st = mil_parse_file(path, &m->prog, err);
    atomic_fetch_add(&compiles, 1);
    if (!st) st = ane_fake_check_program(m->prog, m->dev->opt.behave.reject, err);
    if (!st) {
        m->n_fns = m->prog->n_functions;
        m->fns = calloc((size_t)m->n_fns + 1, sizeof *m->fns);
        if (!m->fns) st = nc_fail(err, NC_ERR_NOMEM, "out of memory");
    }
    if (!st) st = describe(m, err);
    if (st) {
        fake_model_close(m);
        return st;
    }
    atomic_fetch_add(&models_opened, 1);
    *out = m;
    return NC_OK;
}

static nc_status fake_model_attrs(ane_model *m, const char **json, size_t *len, nc_error *err) {
    (void)err;
    *json = m->json;
    *len = strlen(m->json);
    return NC_OK;
}

/* --- requests ------------------------------------------------------------- */

static void fake_request_free(ane_request *r) {
    if (!r) return;
    free(r->in);
    free(r->in_idx);
    free(r);
}

static nc_status fake_request_new(ane_model *m, int proc_id, int n_in, ane_surface *const *in,
                                  const int *in_idx, int n_out, ane_surface *const *out,
                                  const int *out_idx, ane_request **req, nc_error *err) {
    int f = -1;
    for (int i = 0; i < m->n_fns; i++)
        if (m->fns[i].proc_id == proc_id) f = i;
    if (f < 0)
        return nc_fail(err, NC_ERR_NOT_FOUND, "fake device: the model has no procedure %d",
                       proc_id);
    if (n_in < 0 || n_out < 0)
        return nc_fail(err, NC_ERR_INVALID, "fake device: negative I/O count");
    if (!m->fns[f].it)
        NC_TRY(mil_interp_new(m->prog, m->prog->functions[f]->name, MIL_INTERP_FP16, &m->fns[f].it,
                              err));
    ane_request *r = calloc(1, sizeof *r);
    int n = n_in + n_out;
    if (r) {
        r->in = calloc((size_t)n + 1, sizeof *r->in);
        r->in_idx = calloc((size_t)n + 1, sizeof *r->in_idx);
    }
    if (!r || !r->in || !r->in_idx) {
        fake_request_free(r);
        return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    }
    r->m = m;
    r->fn = f;
    r->n_in = n_in;
    r->n_out = n_out;
    r->out = r->in + n_in;
    r->out_idx = r->in_idx + n_in;
    if (n_in) memcpy(r->in, in, (size_t)n_in * sizeof *in);
    if (n_in) memcpy(r->in_idx, in_idx, (size_t)n_in * sizeof *in_idx);
    if (n_out) memcpy(r->out, out, (size_t)n_out * sizeof *out);
    if (n_out) memcpy(r->out_idx, out_idx, (size_t)n_out * sizeof *out_idx);
    *req = r;
    return NC_OK;
}

/* Which declared I/O symbol `sym` is, or -1. */
static int decl_of(const int *syms, int n, int sym) {
    for (int k = 0; k < n; k++)
        if (syms[k] == sym) return k;
    return -1;
}

/* The request's surfaces against the procedure: each symbol once, all of
 * them, each surface large enough (the ANE answers such a request with
 * status 0x1d at evaluation). */
static nc_status check_binding(const ane_request *r, int side, nc_error *err) {
    const fake_fn *ff = &r->m->fns[r->fn];
    const mil_function *fn = r->m->prog->functions[r->fn];
    int n_decl = side ? fn->n_outputs : fn->n_inputs, n = side ? r->n_out : r->n_in;
    const int *syms = side ? ff->out_sym : ff->in_sym, *idx = side ? r->out_idx : r->in_idx;
    ane_surface *const *s = side ? r->out : r->in;
    const ane_layout *ls = side ? ff->out_l : ff->in_l;
    const char *what = side ? "output" : "input";
    if (n != n_decl)
        return nc_fail(err, NC_ERR_INVALID,
                       "fake device: procedure %d (%s) takes %d %ss, the request binds %d",
                       ff->proc_id, fn->name, n_decl, what, n);
    for (int i = 0; i < n; i++) {
        int k = decl_of(syms, n_decl, idx[i]);
        if (k < 0)
            return nc_fail(err, NC_ERR_INVALID,
                           "fake device: procedure %d (%s) has no %s symbol %d", ff->proc_id,
                           fn->name, what, idx[i]);
        for (int j = 0; j < i; j++)
            if (idx[j] == idx[i])
                return nc_fail(err, NC_ERR_INVALID, "fake device: %s symbol %d bound twice", what,
                               idx[i]);
        if (!s[i] || s[i]->bytes < ls[k].bytes)
            return nc_fail(err, NC_ERR_INVALID,
                           "fake device: %s '%s' of %s needs %zu bytes, the surface has %zu", what,
                           (side ? fn->outputs : fn->inputs)[k]->name, fn->name, ls[k].bytes,
                           s[i] ? s[i]->bytes : 0);
    }
    return NC_OK;
}

/* The surface policy the device was opened with, as the ANE would answer
 * a request that breaks it: status 0x1d at evaluation (Orion #2, #4, #12). */
static nc_status check_policy(const ane_request *r, const ane_surface_policy *p, nc_error *err) {
    const mil_function *fn = r->m->prog->functions[r->fn];
    size_t first = r->n_in + r->n_out ? (r->n_in ? r->in[0] : r->out[0])->bytes : 0;
    for (int i = 0; i < r->n_in + r->n_out; i++) {
        const ane_surface *x = i < r->n_in ? r->in[i] : r->out[i - r->n_in];
        if (p->min_bytes && x->bytes < p->min_bytes)
            return nc_fail(err, NC_ERR_IO,
                           "fake device: %s: status 0x1d: a %zu-byte surface is below the "
                           "%zu-byte minimum of this device's policy",
                           fn->name, x->bytes, p->min_bytes);
        if (p->uniform && x->bytes != first)
            return nc_fail(err, NC_ERR_IO,
                           "fake device: %s: status 0x1d: the request's surfaces differ in "
                           "allocation size (%zu and %zu bytes) under the uniform policy",
                           fn->name, first, x->bytes);
    }
    return NC_OK;
}

static nc_status fake_evaluate(ane_request *r, nc_error *err) {
    ane_model *m = r->m;
    fake_fn *ff = &m->fns[r->fn];
    const mil_function *fn = m->prog->functions[r->fn];
    long k = atomic_fetch_add(&m->dev->evals, 1) + 1;
    long fail_at = atomic_load(&m->dev->fail_at);
    if (fail_at && k == fail_at)
        return nc_fail(err, NC_ERR_IO, "fake device: evaluation %ld of %s failed (injected)", k,
                       fn->name);
    NC_TRY(check_binding(r, 0, err));
    NC_TRY(check_binding(r, 1, err));
    NC_TRY(check_policy(r, &m->dev->opt.surfaces, err));
    /* the host must have unlocked (flushed) every surface before the
     * request runs: IOSurfaceUnlock is what makes its writes visible */
    for (int i = 0; i < r->n_in + r->n_out; i++) {
        ane_surface *x = i < r->n_in ? r->in[i] : r->out[i - r->n_in];
        if (atomic_load(&x->locks) != 0)
            return nc_fail(err, NC_ERR_INVALID,
                           "fake device: %s ran while the host held a surface lock", fn->name);
    }
    /* what the hardware does with a surface read and written by one request
     * is unknown; the host's plan never asks for it, and the fake says so */
    for (int i = 0; i < r->n_in; i++)
        for (int o = 0; o < r->n_out; o++)
            if (r->in[i] == r->out[o])
                return nc_fail(
                    err, NC_ERR_INVALID,
                    "fake device: %s reads and writes one surface (input symbol %d, output "
                    "symbol %d)",
                    fn->name, r->in_idx[i], r->out_idx[o]);
    size_t max_vals = 0;
    for (int i = 0; i < fn->n_inputs + fn->n_outputs; i++) {
        size_t v = (size_t)(ff->in_l[i].rows * ff->in_l[i].width);
        if (v > max_vals) max_vals = v;
    }
    float *tmp = malloc((max_vals ? max_vals : 1) * sizeof(float));
    if (!tmp) return nc_fail(err, NC_ERR_NOMEM, "fake device: out of memory");
    nc_status st = NC_OK;
    for (int i = 0; i < r->n_in && !st; i++) {
        int d = decl_of(ff->in_sym, fn->n_inputs, r->in_idx[i]);
        const mil_var *v = fn->inputs[d];
        ane_unpad_f32(&ff->in_l[d], r->in[i]->data, tmp);
        st = mil_interp_set_input(ff->it, v->name, MIL_DT_FP32, v->type->rank, v->type->dims, tmp,
                                  err);
    }
    if (!st) st = mil_interp_run(ff->it, err);
    for (int i = 0; i < r->n_out && !st; i++) {
        int d = decl_of(ff->out_sym, fn->n_outputs, r->out_idx[i]);
        const ane_layout *l = &ff->out_l[d];
        st = mil_interp_copy_out(ff->it, fn->outputs[d]->name, MIL_DT_FP32, tmp,
                                 (size_t)(l->rows * l->width), err);
        if (!st) ane_pad_f32(l, tmp, r->out[i]->data);
    }
    free(tmp);
    return st;
}

/* --- the worker ----------------------------------------------------------- */

static void *worker(void *arg) {
    fake_dev *d = arg;
    for (;;) {
        pthread_mutex_lock(&d->mu);
        while ((!d->head || d->paused) && !d->stop)
            pthread_cond_wait(&d->cv, &d->mu);
        fake_job *j = d->head;
        if (j) {
            d->head = j->next;
            if (!d->head) d->tail = NULL;
        }
        pthread_mutex_unlock(&d->mu);
        if (!j) return NULL; /* stopping and drained */
        nc_error e = {0};
        nc_status st = NC_OK;
        unsigned long long at = j->ev ? atomic_load(&j->ev->value) : 0;
        /* jobs run in order here, so a wait not yet met would never be met:
         * on the ANE the request would hang; the fake says so */
        if (j->ev && at < j->wait)
            st = nc_fail(&e, NC_ERR_IO,
                         "fake device: %s waits for event value %llu, the event is at %llu "
                         "(no earlier request signals it)",
                         j->req->m->prog->functions[j->req->fn]->name, j->wait, at);
        if (!st) st = fake_evaluate(j->req, &e);
        if (d->opt.submit_delay_us > 0) {
            struct timespec ts = {0, (long)d->opt.submit_delay_us * 1000L};
            nanosleep(&ts, NULL);
        }
        if (!st && j->ev) atomic_store(&j->ev->value, j->signal);
        pthread_mutex_lock(&d->mu);
        d->outstanding--; /* before the report: the host may submit again at once */
        pthread_mutex_unlock(&d->mu);
        j->done(j->user, st, st ? e.msg : NULL);
        free(j);
    }
}

/* Queues a job, refusing what the real framework gives no guarantee for:
 * more than max_in_flight outstanding, or a plain submit while another
 * model's requests are in flight (no event orders them). */
static nc_status enqueue(ane_request *r, ane_event *ev, unsigned long long wait,
                         unsigned long long signal, ane_done_fn done, void *user, nc_error *err) {
    fake_job *j = calloc(1, sizeof *j);
    if (!j) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    *j = (fake_job){r, done, user, ev, wait, signal, NULL};
    fake_dev *d = r->m->dev;
    const char *fn = r->m->prog->functions[r->fn]->name;
    int max = d->opt.max_in_flight > 0 ? d->opt.max_in_flight : ANE_MAX_IN_FLIGHT;
    pthread_mutex_lock(&d->mu);
    nc_status st = NC_OK;
    if (d->outstanding >= max)
        st = nc_fail(err, NC_ERR_INVALID,
                     "fake device: %s submitted while %d requests are outstanding (the "
                     "framework allows %d per QoS)",
                     fn, d->outstanding, max);
    else if (!ev && d->outstanding > 0 && d->last_model != r->m)
        st = nc_fail(err, NC_ERR_INVALID,
                     "fake device: %s submitted while another model's requests are in flight, "
                     "with no shared event to order them",
                     fn);
    if (!st) {
        d->outstanding++;
        d->last_model = r->m;
        if (d->tail)
            d->tail->next = j;
        else
            d->head = j;
        d->tail = j;
        pthread_cond_signal(&d->cv);
    }
    pthread_mutex_unlock(&d->mu);
    if (st) free(j);
    return st;
}

static nc_status fake_submit(ane_request *r, ane_done_fn done, void *user, nc_error *err) {
    return enqueue(r, NULL, 0, 0, done, user, err);
}

static nc_status fake_submit_event(ane_request *r, ane_event *e, unsigned long long wait,
                                   unsigned long long signal, ane_done_fn done, void *user,
                                   nc_error *err) {
    if (!e) return nc_fail(err, NC_ERR_INVALID, "fake device: submit_event without an event");
    return enqueue(r, e, wait, signal, done, user, err);
}

static nc_status fake_event_new(void *dev, ane_event **out, nc_error *err) {
    (void)dev;
    ane_event *e = calloc(1, sizeof *e);
    if (!e) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    atomic_init(&e->value, 0);
    *out = e;
    return NC_OK;
}

static void fake_event_free(ane_event *e) {
    free(e);
}

static const ane_device_ops fake_ops = {
    "fake",           fake_model_open,   fake_model_attrs,    fake_model_close,
    fake_surface_new, fake_surface_lock, fake_surface_unlock, fake_surface_free,
    fake_request_new, fake_request_free, fake_evaluate,       fake_submit,
    fake_event_new,   fake_event_free,   fake_submit_event,
};

nc_status ane_fake_new(ane_device *out, nc_error *err) {
    ane_fake_options o = {ANE_SURFACE_POLICY_DEFAULT, ANE_MAX_IN_FLIGHT, 0, {0}};
    return ane_fake_new_with(&o, out, err);
}

nc_status ane_fake_new_with(const ane_fake_options *o, ane_device *out, nc_error *err) {
    fake_dev *d = calloc(1, sizeof *d);
    if (!d) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    d->opt = *o;
    if (d->opt.max_in_flight <= 0) d->opt.max_in_flight = ANE_MAX_IN_FLIGHT;
    atomic_init(&d->evals, 0);
    atomic_init(&d->fail_at, 0);
    pthread_mutex_init(&d->mu, NULL);
    pthread_cond_init(&d->cv, NULL);
    if (pthread_create(&d->thread, NULL, worker, d) != 0) {
        pthread_mutex_destroy(&d->mu);
        pthread_cond_destroy(&d->cv);
        free(d);
        return nc_fail(err, NC_ERR_IO, "fake device: could not start its thread");
    }
    memset(out, 0, sizeof *out); /* no ladder profile until the caller names one */
    out->ops = &fake_ops;
    out->impl = d;
    out->surfaces = d->opt.surfaces;
    out->max_in_flight = d->opt.max_in_flight;
    return NC_OK;
}

void ane_fake_free(ane_device *dev) {
    fake_dev *d = dev ? dev->impl : NULL;
    if (!d) return;
    pthread_mutex_lock(&d->mu);
    d->stop = 1;
    pthread_cond_signal(&d->cv);
    pthread_mutex_unlock(&d->mu);
    pthread_join(d->thread, NULL);
    pthread_mutex_destroy(&d->mu);
    pthread_cond_destroy(&d->cv);
    free(d);
    dev->impl = NULL;
}

void ane_fake_pause(ane_device *dev, int paused) {
    fake_dev *d = dev->impl;
    pthread_mutex_lock(&d->mu);
    d->paused = paused;
    pthread_cond_signal(&d->cv);
    pthread_mutex_unlock(&d->mu);
}

void ane_fake_fail_at(ane_device *dev, int n) {
    fake_dev *d = dev->impl;
    atomic_store(&d->fail_at, n > 0 ? atomic_load(&d->evals) + n : 0);
}

long ane_fake_evaluations(const ane_device *dev) {
    fake_dev *d = dev->impl;
    return atomic_load(&d->evals);
}

long ane_fake_compiles(void) {
    return atomic_load(&compiles);
}

long ane_fake_models_opened(void) {
    return atomic_load(&models_opened);
}
