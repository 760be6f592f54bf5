/* modelAttributes JSON -> procedures and their named I/O symbols
 * (ane_attrs.h). The text comes from a private framework whose layout may
 * change between macOS versions, so every key is checked and named in the
 * error rather than trusted. */
#include "ane_host/ane_attrs.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"

#define DESC "ANEFModelDescription"
#define MAX_SYMBOLS 65536
#define MAX_PROCS 4096

void ane_attr_proc_free(ane_attr_proc *p) {
    free(p->in);
    free(p->out);
    p->in = p->out = NULL;
}

void ane_attrs_free(ane_attrs *a) {
    if (!a) return;
    for (int i = 0; a->procs && i < a->n_procs; i++)
        ane_attr_proc_free(&a->procs[i]);
    free(a->procs);
    json_decref((json_t *)a->status);
    memset(a, 0, sizeof *a);
}

static const json_t *get(const json_t *obj, const char *key, json_type type, int required,
                         const char *what, nc_error *err, nc_status *st) {
    const json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v)) {
        if (required)
            *st = nc_fail(err, NC_ERR_NOT_FOUND, "%s: modelAttributes has no '%s'", what, key);
        return NULL;
    }
    if (json_typeof(v) != type) {
        *st = nc_fail(err, NC_ERR_FORMAT, "%s: modelAttributes '%s' has the wrong type", what, key);
        return NULL;
    }
    return v;
}

/* Copies s into dst (ANE_NAME_MAX), removing the "@output" suffix. */
static nc_status copy_name(char *dst, const char *s, const char *what, const char *key,
                           nc_error *err) {
    size_t n = strlen(s), k = strlen(ANE_OUTPUT_SUFFIX);
    if (n > k && strcmp(s + n - k, ANE_OUTPUT_SUFFIX) == 0) n -= k;
    if (n == 0 || n >= ANE_NAME_MAX)
        return nc_fail(err, NC_ERR_RANGE, "%s: '%s' holds a name of %zu bytes (1 to %d allowed)",
                       what, key, n, ANE_NAME_MAX - 1);
    memcpy(dst, s, n);
    dst[n] = '\0';
    return NC_OK;
}

static nc_status check_symbols(const json_t *arr, const char *what, const char *key,
                               nc_error *err) {
    if (json_array_size(arr) > MAX_SYMBOLS)
        return nc_fail(err, NC_ERR_RANGE, "%s: '%s' lists %zu symbols", what, key,
                       json_array_size(arr));
    for (size_t i = 0; i < json_array_size(arr); i++)
        if (!json_is_string(json_array_get(arr, i)))
            return nc_fail(err, NC_ERR_FORMAT, "%s: '%s'[%zu] is not a string", what, key, i);
    return NC_OK;
}

/* The I/O list of one procedure: symbol indices into syms (names), or,
 * when syms is NULL (no output symbol array), names from the live list at
 * the same position. */
static nc_status read_ios(const json_t *idx, const json_t *syms, const json_t *live,
                          const char *what, const char *key, ane_attr_io **out, int *n_out,
                          nc_error *err) {
    size_t n = json_array_size(idx);
    if (n > MAX_SYMBOLS)
        return nc_fail(err, NC_ERR_RANGE, "%s: '%s' lists %zu symbols", what, key, n);
    *out = calloc(n ? n : 1, sizeof **out);
    if (!*out) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    *n_out = (int)n;
    for (size_t i = 0; i < n; i++) {
        const json_t *v = json_array_get(idx, i);
        if (!json_is_integer(v))
            return nc_fail(err, NC_ERR_FORMAT, "%s: '%s'[%zu] is not an integer", what, key, i);
        json_int_t s = json_integer_value(v);
        size_t n_syms = syms ? json_array_size(syms) : json_array_size(live);
        if (s < 0 || (size_t)s >= n_syms || s > MAX_SYMBOLS)
            return nc_fail(err, NC_ERR_RANGE, "%s: '%s'[%zu] = %lld is outside the %zu symbols",
                           what, key, i, (long long)s, n_syms);
        const char *name = NULL;
        if (syms) {
            name = json_string_value(json_array_get(syms, (size_t)s));
        } else {
            const json_t *e = json_array_get(live, i);
            name = json_is_object(e) ? json_string_value(json_object_get(e, "Name")) : NULL;
        }
        if (!name)
            return nc_fail(err, NC_ERR_FORMAT, "%s: '%s'[%zu]: no name for symbol %lld", what, key,
                           i, (long long)s);
        NC_TRY(copy_name((*out)[i].name, name, what, key, err));
        (*out)[i].symbol = (int)s;
        for (size_t j = 0; j < i; j++)
            if (strcmp((*out)[j].name, (*out)[i].name) == 0)
                return nc_fail(err, NC_ERR_FORMAT, "%s: '%s' names '%s' twice", what, key,
                               (*out)[i].name);
    }
    return NC_OK;
}

static nc_status live_int(const json_t *e, const char *key, int64_t *out, int required,
                          const char *what, nc_error *err) {
    *out = 0;
    NC_TRY(nc_json_int(e, key, out, required, what, err));
    if (*out < 0 || *out > ((int64_t)1 << 40))
        return nc_fail(err, NC_ERR_RANGE, "%s: '%s' = %lld", what, key, (long long)*out);
    return NC_OK;
}

/* Shapes and strides from a live list, matched to ios by name, or by
 * symbol index; an entry with neither is taken to describe the I/O at its
 * position in the procedure's symbol index array (the list must then
 * have one entry per I/O). */
static nc_status read_live(const json_t *live, ane_attr_io *ios, int n, const char *what,
                           const char *key, nc_error *err) {
    if (!json_is_array(live))
        return nc_fail(err, NC_ERR_FORMAT, "%s: NetworkStatusList '%s' is not an array", what, key);
    if (!ios) return nc_fail(err, NC_ERR_INTERNAL, "%s: '%s' read before the symbols", what, key);
    if (json_array_size(live) > (size_t)n)
        return nc_fail(err, NC_ERR_FORMAT, "%s: '%s' describes %zu I/O, the procedure has %d", what,
                       key, json_array_size(live), n);
    for (size_t i = 0; i < json_array_size(live); i++) {
        const json_t *e = json_array_get(live, i);
        const char *name = NULL;
        char clean[ANE_NAME_MAX], ctx[ANE_NAME_MAX + 160];
        if (!json_is_object(e))
            return nc_fail(err, NC_ERR_FORMAT, "%s: '%s'[%zu] is not an object", what, key, i);
        snprintf(ctx, sizeof ctx, "%s: %s[%zu]", what, key, i);
        /* by Name; dumps of some versions also carry the symbol index */
        NC_TRY(nc_json_str(e, "Name", &name, 0, ctx, err));
        int64_t sym = -1;
        if (!name) NC_TRY(nc_json_int(e, "Symbol", &sym, 0, ctx, err));
        int by_position = !name && sym < 0;
        if (by_position && json_array_size(live) != (size_t)n)
            return nc_fail(err, NC_ERR_FORMAT,
                           "%s has neither 'Name' nor 'Symbol', and the list does not describe "
                           "every I/O in order",
                           ctx);
        if (name)
            NC_TRY(copy_name(clean, name, what, key, err));
        else
            snprintf(clean, sizeof clean, "symbol %lld", (long long)sym);
        ane_attr_io *io = by_position ? &ios[i] : NULL;
        for (int k = 0; !by_position && k < n; k++)
            if (name ? strcmp(ios[k].name, clean) == 0 : ios[k].symbol == sym) io = &ios[k];
        if (!io)
            return nc_fail(err, NC_ERR_FORMAT,
                           "%s: '%s' describes '%s', which the procedure does not list", what, key,
                           clean);
        const char *type = "";
        NC_TRY(nc_json_str(e, "Type", &type, 1, ctx, err));
        snprintf(io->type, sizeof io->type, "%s", type);
        NC_TRY(live_int(e, "Batches", &io->batches, 1, ctx, err));
        NC_TRY(live_int(e, "Channels", &io->channels, 1, ctx, err));
        NC_TRY(live_int(e, "Height", &io->height, 1, ctx, err));
        NC_TRY(live_int(e, "Width", &io->width, 1, ctx, err));
        NC_TRY(live_int(e, "Depth", &io->depth, 0, ctx, err));
        if (!io->depth) io->depth = 1;
        NC_TRY(live_int(e, "RowStride", &io->row_stride, 0, ctx, err));
        NC_TRY(live_int(e, "PlaneStride", &io->plane_stride, 0, ctx, err));
        NC_TRY(live_int(e, "BatchStride", &io->batch_stride, 0, ctx, err));
        io->has_shape = 1;
    }
    return NC_OK;
}

static void clear_shapes(ane_attr_proc *p) {
    for (int k = 0; k < p->n_in + p->n_out; k++) {
        ane_attr_io *io = k < p->n_in ? &p->in[k] : &p->out[k - p->n_in];
        char name[ANE_NAME_MAX];
        int sym = io->symbol;
        memcpy(name, io->name, sizeof name);
        memset(io, 0, sizeof *io);
        memcpy(io->name, name, sizeof name);
        io->symbol = sym;
    }
}

static nc_status parse_root(const json_t *root, const char *what, ane_attrs *a, nc_error *err) {
    nc_status st = NC_OK;
    if (!json_is_object(root))
        return nc_fail(err, NC_ERR_FORMAT, "%s: modelAttributes is not a dictionary", what);
    const json_t *desc = get(root, DESC, JSON_OBJECT, 1, what, err, &st);
    if (!desc) return st;
    const json_t *in_syms =
        get(desc, "kANEFModelInputSymbolsArrayKey", JSON_ARRAY, 1, what, err, &st);
    const json_t *out_syms =
        in_syms ? get(desc, "kANEFModelOutputSymbolsArrayKey", JSON_ARRAY, 0, what, err, &st)
                : NULL;
    const json_t *names =
        st ? NULL : get(desc, "kANEFModelProcedureNameToIDMapKey", JSON_OBJECT, 1, what, err, &st);
    const json_t *procs =
        st ? NULL : get(desc, "ANEFModelProcedures", JSON_ARRAY, 1, what, err, &st);
    const json_t *status =
        st ? NULL : get(root, "NetworkStatusList", JSON_ARRAY, 0, what, err, &st);
    if (st) return st;
    NC_TRY(check_symbols(in_syms, what, "kANEFModelInputSymbolsArrayKey", err));
    if (out_syms) NC_TRY(check_symbols(out_syms, what, "kANEFModelOutputSymbolsArrayKey", err));
    size_t n = json_array_size(procs);
    if (n == 0 || n > MAX_PROCS)
        return nc_fail(err, NC_ERR_RANGE, "%s: 'ANEFModelProcedures' lists %zu procedures", what,
                       n);
    if (json_object_size(names) != n)
        return nc_fail(err, NC_ERR_FORMAT,
                       "%s: %zu procedures but %zu names in kANEFModelProcedureNameToIDMapKey",
                       what, n, json_object_size(names));
    if (status && json_array_size(status) != n)
        return nc_fail(err, NC_ERR_FORMAT,
                       "%s: NetworkStatusList has %zu entries for %zu procedures", what,
                       json_array_size(status), n);
    if (!out_syms && !status)
        return nc_fail(
            err, NC_ERR_NOT_FOUND,
            "%s: neither kANEFModelOutputSymbolsArrayKey nor NetworkStatusList names the outputs",
            what);
    a->procs = calloc(n, sizeof *a->procs);
    if (!a->procs) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    if (status) a->status = json_incref((json_t *)status);
    a->n_status = status ? (int)json_array_size(status) : 0;
    a->n_procs = (int)n;
    a->n_in_symbols = (int)json_array_size(in_syms);
    a->n_out_symbols = out_syms ? (int)json_array_size(out_syms) : 0;
    for (size_t i = 0; i < n; i++) {
        ane_attr_proc *p = &a->procs[i];
        const json_t *e = json_array_get(procs, i);
        char ctx[128];
        snprintf(ctx, sizeof ctx, "%s: ANEFModelProcedures[%zu]", what, i);
        if (!json_is_object(e)) return nc_fail(err, NC_ERR_FORMAT, "%s is not a dictionary", ctx);
        int64_t id = -1;
        NC_TRY(nc_json_int(e, "ANEFModelProcedureID", &id, 1, ctx, err));
        if (id < 0 || id >= MAX_PROCS)
            return nc_fail(err, NC_ERR_RANGE, "%s: procedure id %lld", ctx, (long long)id);
        p->id = (int)id;
        const char *key;
        const json_t *v;
        int found = 0;
        json_object_foreach((json_t *)names, key, v) {
            if (json_is_integer(v) && json_integer_value(v) == id) {
                NC_TRY(copy_name(p->name, key, what, "kANEFModelProcedureNameToIDMapKey", err));
                found++;
            }
        }
        if (found != 1)
            return nc_fail(
                err, NC_ERR_FORMAT,
                "%s: procedure id %lld has %d names in kANEFModelProcedureNameToIDMapKey", ctx,
                (long long)id, found);
        const json_t *ii = get(e, "ANEFModelInputSymbolIndexArray", JSON_ARRAY, 1, ctx, err, &st);
        const json_t *oi =
            ii ? get(e, "ANEFModelOutputSymbolIndexArray", JSON_ARRAY, 1, ctx, err, &st) : NULL;
        if (st) return st;
        const json_t *live = status ? json_array_get(status, i) : NULL;
        if (status && !json_is_object(live))
            return nc_fail(err, NC_ERR_FORMAT, "%s: NetworkStatusList[%zu] is not a dictionary",
                           what, i);
        const json_t *live_in = live ? json_object_get(live, "LiveInputList") : NULL;
        const json_t *live_out = live ? json_object_get(live, "LiveOutputList") : NULL;
        if (!out_syms && !json_is_array(live_out))
            return nc_fail(err, NC_ERR_NOT_FOUND,
                           "%s: NetworkStatusList[%zu] has no LiveOutputList", what, i);
        NC_TRY(read_ios(ii, in_syms, NULL, ctx, "ANEFModelInputSymbolIndexArray", &p->in, &p->n_in,
                        err));
        NC_TRY(read_ios(oi, out_syms, live_out, ctx, "ANEFModelOutputSymbolIndexArray", &p->out,
                        &p->n_out, err));
        /* the entry at the same position, when it describes this
         * procedure; else the binder looks through the others */
        p->status_fit = live ? 1 : 0;
        nc_error skip = {0};
        if (live_in && read_live(live_in, p->in, p->n_in, ctx, "LiveInputList", &skip))
            p->status_fit = 0;
        if (live_out && read_live(live_out, p->out, p->n_out, ctx, "LiveOutputList", &skip))
            p->status_fit = 0;
        if (!p->status_fit) clear_shapes(p);
        for (size_t j = 0; j < i; j++) {
            if (a->procs[j].id == p->id)
                return nc_fail(err, NC_ERR_FORMAT, "%s: procedure id %d appears twice", what,
                               p->id);
        }
    }
    return NC_OK;
}

/* Every NetworkStatusList entry describes some procedure: else the error
 * of matching it to the procedure at its position. */
static nc_status check_status(const ane_attrs *a, const char *what, nc_error *err) {
    for (int j = 0; j < a->n_status; j++) {
        int fits = 0;
        for (int i = 0; i < a->n_procs && !fits; i++) {
            ane_attr_proc q;
            nc_error skip = {0};
            fits = ane_attrs_proc_with_status(a, &a->procs[i], j, &q, &skip) == NC_OK;
            ane_attr_proc_free(&q);
        }
        if (fits) continue;
        ane_attr_proc q; /* fails, as no procedure fits: its message */
        ane_attrs_proc_with_status(a, &a->procs[j < a->n_procs ? j : 0], j, &q, err);
        return nc_fail_prefix(err, "%s", what);
    }
    return NC_OK;
}

nc_status ane_attrs_parse(const char *text, size_t len, const char *what, ane_attrs *out,
                          nc_error *err) {
    memset(out, 0, sizeof *out);
    json_t *root = NULL;
    NC_TRY(nc_json_parse(text, len, what, &root, err));
    nc_status st = parse_root(root, what, out, err);
    if (!st) st = check_status(out, what, err);
    json_decref(root);
    if (st) ane_attrs_free(out);
    return st;
}

nc_status ane_attrs_proc_with_status(const ane_attrs *a, const ane_attr_proc *p, int j,
                                     ane_attr_proc *out, nc_error *err) {
    memset(out, 0, sizeof *out);
    if (j < 0 || j >= a->n_status)
        return nc_fail(err, NC_ERR_RANGE, "NetworkStatusList has no entry %d", j);
    *out = *p;
    out->in = calloc((size_t)p->n_in + 1, sizeof *out->in);
    out->out = calloc((size_t)p->n_out + 1, sizeof *out->out);
    if (!out->in || !out->out) {
        ane_attr_proc_free(out);
        return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    }
    memcpy(out->in, p->in, (size_t)p->n_in * sizeof *p->in);
    memcpy(out->out, p->out, (size_t)p->n_out * sizeof *p->out);
    clear_shapes(out);
    const json_t *live = json_array_get((const json_t *)a->status, (size_t)j);
    const json_t *li = json_is_object(live) ? json_object_get(live, "LiveInputList") : NULL;
    const json_t *lo = json_is_object(live) ? json_object_get(live, "LiveOutputList") : NULL;
    char ctx[96];
    snprintf(ctx, sizeof ctx, "NetworkStatusList[%d]", j);
    nc_status st = li ? read_live(li, out->in, out->n_in, ctx, "LiveInputList", err) : NC_OK;
    if (!st && lo) st = read_live(lo, out->out, out->n_out, ctx, "LiveOutputList", err);
    if (st) ane_attr_proc_free(out);
    out->status_fit = !st;
    return st;
}

const ane_attr_proc *ane_attrs_proc(const ane_attrs *a, const char *name) {
    for (int i = 0; i < a->n_procs; i++)
        if (strcmp(a->procs[i].name, name) == 0) return &a->procs[i];
    return NULL;
}

const ane_attr_io *ane_attrs_io(const ane_attr_proc *p, const char *name, int is_output) {
    int n = is_output ? p->n_out : p->n_in;
    const ane_attr_io *ios = is_output ? p->out : p->in;
    for (int i = 0; i < n; i++)
        if (strcmp(ios[i].name, name) == 0) return &ios[i];
    return NULL;
}
