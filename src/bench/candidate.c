/* Candidate specs, the builtin spin candidate, and workload files. */
#include "bench/candidate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mmap.h"
#include "bench/numarg.h"
#include "bench/sha256.h"

nc_status nc_candidate_open(const char *spec, double timeout_s, nc_candidate **out, nc_error *err) {
    *out = NULL;
    const char *colon = spec ? strchr(spec, ':') : NULL;
    if (!colon || colon == spec)
        return nc_fail(err, NC_ERR_INVALID,
                       "candidate '%s': expected KIND:ARG (cmd:, pipe:, spin:, cpu:, mil:, decide:)",
                       spec ? spec : "");
    if (strlen(spec) >= sizeof((nc_candidate *)0)->spec)
        return nc_fail(err, NC_ERR_RANGE, "candidate spec longer than %zu bytes",
                       sizeof((nc_candidate *)0)->spec - 1);
    nc_candidate *c = calloc(1, sizeof *c);
    if (!c) return nc_fail(err, NC_ERR_NOMEM, "candidate: out of memory");
    size_t k = (size_t)(colon - spec);
    snprintf(c->kind, sizeof c->kind, "%.*s", (int)(k < sizeof c->kind ? k : sizeof c->kind - 1),
             spec);
    snprintf(c->spec, sizeof c->spec, "%s", spec);
    c->timeout_s = timeout_s > 0 ? timeout_s : 60;
    const char *arg = colon + 1;
    nc_status st;
    if (!strcmp(c->kind, "cmd"))
        st = nc_candidate_cmd_init(c, arg, 0, err);
    else if (!strcmp(c->kind, "pipe"))
        st = nc_candidate_cmd_init(c, arg, 1, err);
    else if (!strcmp(c->kind, "spin"))
        st = nc_candidate_spin_init(c, arg, err);
    else if (!strcmp(c->kind, "cpu") || !strcmp(c->kind, "mil"))
        st = nc_candidate_nectar_init(c, c->kind, arg, err);
    else if (!strcmp(c->kind, "decide"))
        st = nc_candidate_decide_init(c, arg, err);
    else
        st = nc_fail(err, NC_ERR_INVALID,
                     "candidate '%s': unknown kind '%s' (cmd, pipe, spin, cpu, mil, decide)", spec,
                     c->kind);
    if (st != NC_OK) {
        if (c->ops && c->ops->unload) c->ops->unload(c);
        free(c);
        return st;
    }
    *out = c;
    return NC_OK;
}

nc_status nc_candidate_set_model(nc_candidate *c, const char *path, nc_error *err) {
    if (strlen(path) >= sizeof c->model_path)
        return nc_fail(err, NC_ERR_RANGE, "model path too long: %s", path);
    NC_TRY(nc_sha256_path(path, c->model_sha256, err));
    snprintf(c->model_path, sizeof c->model_path, "%s", path);
    return NC_OK;
}

void nc_candidate_close(nc_candidate *c) {
    if (!c) return;
    if (c->ops && c->ops->unload) c->ops->unload(c);
    free(c);
}

/* --- spin:N -------------------------------------------------------------- */

unsigned long long nc_spin(unsigned long long rounds) {
    /* xorshift steps: a dependency chain the compiler cannot shorten */
    volatile unsigned long long sink;
    unsigned long long x = 0x9e3779b97f4a7c15ull;
    for (unsigned long long i = 0; i < rounds; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    sink = x;
    return sink;
}

typedef struct spin_impl {
    unsigned long long rounds;
} spin_impl;

static nc_status spin_load(nc_candidate *c, nc_error *err) {
    (void)c;
    (void)err;
    return NC_OK;
}

static nc_status spin_run(nc_candidate *c, const nc_bench_item *item, nc_error *err) {
    (void)item;
    (void)err;
    nc_spin(((spin_impl *)c->impl)->rounds);
    return NC_OK;
}

static void spin_unload(nc_candidate *c) {
    free(c->impl);
    c->impl = NULL;
}

static const nc_candidate_ops spin_ops = {spin_load, NULL, spin_run, spin_unload};

nc_status nc_candidate_spin_init(nc_candidate *c, const char *arg, nc_error *err) {
    int64_t n;
    NC_TRY(nc_parse_int64(arg, "spin:N", 0, INT64_MAX, &n, err));
    spin_impl *s = malloc(sizeof *s);
    if (!s) return nc_fail(err, NC_ERR_NOMEM, "spin: out of memory");
    s->rounds = (unsigned long long)n;
    c->impl = s;
    c->ops = &spin_ops;
    return NC_OK;
}

/* --- workloads ------------------------------------------------------------ */

nc_status nc_workload_load(const char *kind, const char *path, nc_bench_workload *out,
                           nc_error *err) {
    memset(out, 0, sizeof *out);
    if (!path) {
        out->items = calloc(1, sizeof *out->items);
        if (!out->items) return nc_fail(err, NC_ERR_NOMEM, "workload: out of memory");
        out->items[0].data = "";
        out->n_items = 1;
        snprintf(out->kind, sizeof out->kind, "none");
        nc_sha256_hex("", 0, out->sha256);
        return NC_OK;
    }
    if (strlen(path) >= sizeof out->path)
        return nc_fail(err, NC_ERR_RANGE, "workload path too long: %s", path);
    size_t len;
    NC_TRY(nc_read_file(path, &out->storage, &len, err));
    snprintf(out->path, sizeof out->path, "%s", path);
    snprintf(out->kind, sizeof out->kind, "%s", kind);
    nc_sha256_hex(out->storage, len, out->sha256);
    if (!strcmp(kind, "input")) {
        out->items = calloc(1, sizeof *out->items);
        if (!out->items) {
            nc_workload_free(out);
            return nc_fail(err, NC_ERR_NOMEM, "workload: out of memory");
        }
        out->items[0].data = out->storage;
        out->items[0].len = len;
        out->n_items = 1;
        return NC_OK;
    }
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        n += out->storage[i] == '\n';
    out->items = calloc(n + 1, sizeof *out->items);
    if (!out->items) {
        nc_workload_free(out);
        return nc_fail(err, NC_ERR_NOMEM, "workload: out of memory");
    }
    char *p = out->storage, *end = out->storage + len;
    while (p < end) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        char *stop = nl ? nl : end;
        size_t l = (size_t)(stop - p);
        if (l && p[l - 1] == '\r') l--;
        if (l) {
            p[l] = '\0';
            out->items[out->n_items].data = p;
            out->items[out->n_items].len = l;
            out->n_items++;
        }
        p = stop + 1;
    }
    if (out->n_items == 0) {
        nc_workload_free(out);
        return nc_fail(err, NC_ERR_FORMAT, "%s: no prompts (one per non-empty line)", path);
    }
    return NC_OK;
}

void nc_workload_free(nc_bench_workload *w) {
    free(w->items);
    free(w->storage);
    memset(w, 0, sizeof *w);
}
