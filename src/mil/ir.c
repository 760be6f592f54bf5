/* The MIL IR (see ir.h): program lifetime, functions, variables and ops,
 * type and literal constructors, lookups. All memory comes from the
 * program's arena except the weight-file maps (blob_cache.c). */
#include "mil/ir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/half.h"
#include "mil/blob_cache.h"
#include "mil/ops.h"

/* --- program ------------------------------------------------------------- */

nc_status mil_program_new(mil_program **out, nc_error *err) {
    *out = NULL;
    mil_program *p = calloc(1, sizeof *p);
    if (!p) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    p->version = nc_arena_strdup(&p->arena, "1.3");
    p->blobs = mil_blob_cache_new();
    if (!p->version || !p->blobs) {
        mil_program_free(p);
        return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    }
    *out = p;
    return NC_OK;
}

void mil_program_free(mil_program *prog) {
    if (!prog) return;
    for (int i = 0; i < prog->n_functions; i++) {
        mil_function *fn = prog->functions[i];
        free(fn->ops);
        free(fn->vars);
        free(fn->index);
    }
    free(prog->functions);
    mil_blob_cache_free(prog->blobs);
    nc_arena_free(&prog->arena);
    free(prog);
}

nc_status mil_program_set_model_dir(mil_program *prog, const char *dir, nc_error *err) {
    prog->model_dir = nc_arena_strdup(&prog->arena, dir);
    return prog->model_dir ? NC_OK : nc_fail(err, NC_ERR_NOMEM, "out of memory");
}

static int grow(void **arr, int *cap, int need, size_t elem) {
    if (need <= *cap) return 1;
    int nc = *cap ? *cap * 2 : 16;
    while (nc < need)
        nc *= 2;
    void *p = realloc(*arr, (size_t)nc * elem);
    if (!p) return 0;
    *arr = p;
    *cap = nc;
    return 1;
}

mil_function *mil_function_add(mil_program *prog, const char *name, const char *opset,
                               nc_error *err) {
    mil_function *fn = nc_arena_alloc(&prog->arena, sizeof *fn);
    if (!fn || !grow((void **)&prog->functions, &prog->cap_functions, prog->n_functions + 1,
                     sizeof *prog->functions)) {
        nc_fail(err, NC_ERR_NOMEM, "out of memory");
        return NULL;
    }
    fn->name = nc_arena_strdup(&prog->arena, name);
    fn->opset = nc_arena_strdup(&prog->arena, opset);
    fn->prog = prog;
    if (!fn->name || !fn->opset) {
        nc_fail(err, NC_ERR_NOMEM, "out of memory");
        return NULL;
    }
    prog->functions[prog->n_functions++] = fn;
    return fn;
}

/* --- variable index: open addressing on the name hash -------------------- */

struct mil_var_index {
    int cap;   /* power of two */
    int named; /* variables inserted (kept under half of cap) */
    mil_var *slots[];
};

static uint32_t hash_str(const char *s) {
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

static int index_insert(struct mil_var_index *ix, mil_var *v) {
    uint32_t i = hash_str(v->name) & (uint32_t)(ix->cap - 1);
    while (ix->slots[i]) {
        if (!strcmp(ix->slots[i]->name, v->name)) {
            ix->slots[i] = v; /* a redefinition shadows (the checker reports it) */
            return 0;
        }
        i = (i + 1) & (uint32_t)(ix->cap - 1);
    }
    ix->slots[i] = v;
    return 1;
}

static int index_add(mil_function *fn, mil_var *v) {
    struct mil_var_index *ix = fn->index;
    if (!ix || (ix->named + 1) * 2 >= ix->cap) {
        int cap = ix ? ix->cap * 2 : 64;
        struct mil_var_index *nx = calloc(1, sizeof *nx + (size_t)cap * sizeof(mil_var *));
        if (!nx) return 0;
        nx->cap = cap;
        for (int i = 0; i < fn->n_vars; i++)
            if (fn->vars[i]->name && fn->vars[i] != v) nx->named += index_insert(nx, fn->vars[i]);
        free(ix);
        fn->index = ix = nx;
    }
    ix->named += index_insert(ix, v);
    return 1;
}

mil_var *mil_function_var(const mil_function *fn, const char *name) {
    const struct mil_var_index *ix = fn->index;
    if (!ix || !name) return NULL;
    uint32_t i = hash_str(name) & (uint32_t)(ix->cap - 1);
    while (ix->slots[i]) {
        if (!strcmp(ix->slots[i]->name, name)) return ix->slots[i];
        i = (i + 1) & (uint32_t)(ix->cap - 1);
    }
    return NULL;
}

mil_var *mil_var_new(mil_function *fn, const char *name, const mil_type *type, nc_error *err) {
    nc_arena *a = &fn->prog->arena;
    mil_var *v = nc_arena_alloc(a, sizeof *v);
    if (!v || !grow((void **)&fn->vars, &fn->cap_vars, fn->n_vars + 1, sizeof *fn->vars)) {
        nc_fail(err, NC_ERR_NOMEM, "out of memory");
        return NULL;
    }
    if (name && !(v->name = nc_arena_strdup(a, name))) {
        nc_fail(err, NC_ERR_NOMEM, "out of memory");
        return NULL;
    }
    v->type = type;
    v->id = fn->n_vars;
    fn->vars[fn->n_vars++] = v;
    if (name && !index_add(fn, v)) {
        nc_fail(err, NC_ERR_NOMEM, "out of memory");
        return NULL;
    }
    return v;
}

mil_var *mil_var_literal(mil_function *fn, const mil_value *val, nc_error *err) {
    mil_var *v = mil_var_new(fn, NULL, val->type, err);
    if (v) v->cval = val;
    return v;
}

mil_op *mil_op_append(mil_function *fn, const char *type, const char *opset, nc_error *err) {
    nc_arena *a = &fn->prog->arena;
    mil_op *op = nc_arena_alloc(a, sizeof *op);
    if (!op || !grow((void **)&fn->ops, &fn->cap_ops, fn->n_ops + 1, sizeof *fn->ops) ||
        !(op->type = nc_arena_strdup(a, type)) ||
        (opset && !(op->opset = nc_arena_strdup(a, opset)))) {
        nc_fail(err, NC_ERR_NOMEM, "out of memory");
        return NULL;
    }
    op->fn = fn;
    fn->ops[fn->n_ops++] = op;
    op->def = mil_op_lookup(type, mil_op_opset_version(op));
    return op;
}

/* --- lookups ------------------------------------------------------------- */

mil_function *mil_program_function(const mil_program *prog, const char *name) {
    for (int i = 0; i < prog->n_functions; i++)
        if (!strcmp(prog->functions[i]->name, name)) return prog->functions[i];
    return NULL;
}

static const mil_value *find_attr(const mil_attr *attrs, int n, const char *name) {
    for (int i = 0; i < n; i++)
        if (!strcmp(attrs[i].name, name)) return attrs[i].value;
    return NULL;
}

const mil_value *mil_program_attr(const mil_program *p, const char *name) {
    return find_attr(p->attrs, p->n_attrs, name);
}
const mil_value *mil_function_attr(const mil_function *fn, const char *name) {
    return find_attr(fn->attrs, fn->n_attrs, name);
}
const mil_value *mil_op_attr(const mil_op *op, const char *name) {
    return find_attr(op->attrs, op->n_attrs, name);
}

const mil_arg *mil_op_arg(const mil_op *op, const char *name) {
    for (int i = 0; i < op->n_args; i++)
        if (!strcmp(op->args[i].name, name)) return &op->args[i];
    return NULL;
}

mil_var *mil_op_input(const mil_op *op, const char *name) {
    const mil_arg *a = mil_op_arg(op, name);
    return a && !a->is_tuple && a->n_items == 1 ? a->items[0] : NULL;
}

const char *mil_op_name(const mil_op *op) {
    return mil_value_str(mil_op_attr(op, "name"));
}

int mil_opset_version(const char *opset) {
    if (!opset) return 0;
    int v = 0;
    if (!strncmp(opset, "ios", 3)) {
        v = atoi(opset + 3);
        return v >= 13 && v <= 99 ? v : 0;
    }
    if (!strncmp(opset, "CoreML", 6)) {
        /* coremltools: CoreML5 = iOS15 ... CoreML8 = iOS18, CoreML9 = iOS26 */
        static const int map[] = {15, 16, 17, 18, 26};
        v = atoi(opset + 6);
        return v >= 5 && v <= 9 ? map[v - 5] : 0;
    }
    return 0;
}

int mil_op_opset_version(const mil_op *op) {
    int v = mil_opset_version(op->opset);
    if (!v && op->fn) v = mil_opset_version(op->fn->opset);
    return v;
}

/* --- types --------------------------------------------------------------- */

static mil_type *new_type(mil_program *p, mil_type_kind kind) {
    mil_type *t = nc_arena_alloc(&p->arena, sizeof *t);
    if (t) t->kind = kind;
    return t;
}

const mil_type *mil_type_tensor(mil_program *p, mil_dtype dt, int rank, const int64_t *dims) {
    if (rank < 0) return NULL;
    mil_type *t = new_type(p, MIL_TYPE_TENSOR);
    if (!t) return NULL;
    t->dtype = dt;
    t->rank = rank;
    if (rank) {
        int64_t *d = nc_arena_calloc(&p->arena, (size_t)rank, sizeof *d);
        if (!d) return NULL;
        if (dims) memcpy(d, dims, (size_t)rank * sizeof *d);
        t->dims = d;
    }
    return t;
}

const mil_type *mil_type_scalar(mil_program *p, mil_dtype dt) {
    return mil_type_tensor(p, dt, 0, NULL);
}

static const mil_type *type_with_elems(mil_program *p, mil_type_kind kind, int n,
                                       const mil_type *const *elems) {
    mil_type *t = new_type(p, kind);
    const mil_type **e = nc_arena_calloc(&p->arena, (size_t)(n ? n : 1), sizeof *e);
    if (!t || !e) return NULL;
    for (int i = 0; i < n; i++)
        e[i] = elems[i];
    t->n_elems = n;
    t->elems = e;
    return t;
}

const mil_type *mil_type_list(mil_program *p, const mil_type *elem, int64_t len) {
    mil_type *t = (mil_type *)type_with_elems(p, MIL_TYPE_LIST, 1, &elem);
    if (t) t->list_len = len;
    return t;
}
const mil_type *mil_type_tuple(mil_program *p, int n, const mil_type *const *elems) {
    return type_with_elems(p, MIL_TYPE_TUPLE, n, elems);
}
const mil_type *mil_type_dict(mil_program *p, const mil_type *key, const mil_type *val) {
    const mil_type *kv[2] = {key, val};
    return type_with_elems(p, MIL_TYPE_DICT, 2, kv);
}
const mil_type *mil_type_state(mil_program *p, const mil_type *tensor) {
    return type_with_elems(p, MIL_TYPE_STATE, 1, &tensor);
}

int mil_type_is_tensor(const mil_type *t) {
    return t && t->kind == MIL_TYPE_TENSOR;
}
int mil_type_is_scalar(const mil_type *t) {
    return t && t->kind == MIL_TYPE_TENSOR && t->rank == 0;
}

int64_t mil_type_numel(const mil_type *t) {
    if (!t || (t->kind != MIL_TYPE_TENSOR && t->kind != MIL_TYPE_BUFFER)) return -1;
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++) {
        if (t->dims[i] < 0) return -1;
        if (t->dims[i] && n > INT64_MAX / t->dims[i]) return -1;
        n *= t->dims[i];
    }
    return n;
}

static int streq_null(const char *a, const char *b) {
    return a == b || (a && b && !strcmp(a, b));
}

static int type_cmp(const mil_type *a, const mil_type *b, int loose) {
    if (a == b) return 1;
    if (!a || !b || a->kind != b->kind || a->dtype != b->dtype || a->rank != b->rank ||
        a->n_elems != b->n_elems || a->n_params != b->n_params)
        return 0;
    for (int i = 0; i < a->rank; i++) {
        int unk_a = a->dims[i] < 0, unk_b = b->dims[i] < 0;
        if (loose && (unk_a || unk_b)) continue;
        if (a->dims[i] != b->dims[i]) return 0;
        const char *sa = a->dim_syms ? a->dim_syms[i] : NULL;
        const char *sb = b->dim_syms ? b->dim_syms[i] : NULL;
        if (!loose && !streq_null(sa, sb)) return 0;
    }
    if (a->kind == MIL_TYPE_LIST && a->list_len != b->list_len &&
        !(loose && (a->list_len < 0 || b->list_len < 0)))
        return 0;
    for (int i = 0; i < a->n_elems; i++)
        if (!type_cmp(a->elems[i], b->elems[i], loose)) return 0;
    for (int i = 0; i < a->n_params; i++) {
        if (strcmp(a->param_names[i], b->param_names[i]) || a->param_lens[i] != b->param_lens[i])
            return 0;
        for (int j = 0; j < a->param_lens[i]; j++)
            if (a->param_vals[i][j] != b->param_vals[i][j]) return 0;
    }
    return 1;
}

int mil_type_equal(const mil_type *a, const mil_type *b) {
    return type_cmp(a, b, 0);
}
int mil_type_compatible(const mil_type *a, const mil_type *b) {
    return type_cmp(a, b, 1);
}

/* Appends to a bounded buffer; *pos may pass size (output truncated). */
static void put(char *buf, size_t size, size_t *pos, const char *fmt, const char *s, long long v) {
    if (*pos >= size) return;
    int n =
        s ? snprintf(buf + *pos, size - *pos, fmt, s) : snprintf(buf + *pos, size - *pos, fmt, v);
    if (n > 0) *pos += (size_t)n;
}

static void type_str(const mil_type *t, char *buf, size_t size, size_t *pos) {
    if (!t) {
        put(buf, size, pos, "%s", "?", 0);
        return;
    }
    switch (t->kind) {
    case MIL_TYPE_TENSOR:
        if (t->rank == 0) {
            put(buf, size, pos, "%s", mil_dtype_name(t->dtype), 0);
            return;
        }
        put(buf, size, pos, "tensor<%s, [", mil_dtype_name(t->dtype), 0);
        for (int i = 0; i < t->rank; i++) {
            if (i) put(buf, size, pos, "%s", ", ", 0);
            if (t->dim_syms && t->dim_syms[i])
                put(buf, size, pos, "%s", t->dim_syms[i], 0);
            else if (t->dims[i] < 0)
                put(buf, size, pos, "%s", "?", 0);
            else
                put(buf, size, pos, "%lld", NULL, (long long)t->dims[i]);
        }
        put(buf, size, pos, "%s", "]>", 0);
        return;
    case MIL_TYPE_BUFFER:
        put(buf, size, pos, "tensor_buffer<%s", mil_dtype_name(t->dtype), 0);
        for (int i = 0; i < t->n_params; i++) {
            put(buf, size, pos, ", %s=[", t->param_names[i], 0);
            for (int j = 0; j < t->param_lens[i]; j++)
                put(buf, size, pos, j ? ", %lld" : "%lld", NULL, (long long)t->param_vals[i][j]);
            put(buf, size, pos, "%s", "]", 0);
        }
        put(buf, size, pos, "%s", ">", 0);
        return;
    case MIL_TYPE_LIST:
        put(buf, size, pos, "%s", "list<", 0);
        type_str(t->elems[0], buf, size, pos);
        if (t->list_len < 0)
            put(buf, size, pos, "%s", ", ?>", 0);
        else
            put(buf, size, pos, ", %lld>", NULL, (long long)t->list_len);
        return;
    case MIL_TYPE_TUPLE:
    case MIL_TYPE_DICT:
    case MIL_TYPE_STATE:
        put(buf, size, pos, "%s",
            t->kind == MIL_TYPE_TUPLE  ? "tuple<"
            : t->kind == MIL_TYPE_DICT ? "dict<"
                                       : "state<",
            0);
        for (int i = 0; i < t->n_elems; i++) {
            if (i) put(buf, size, pos, "%s", ", ", 0);
            type_str(t->elems[i], buf, size, pos);
        }
        put(buf, size, pos, "%s", ">", 0);
        return;
    }
}

char *mil_type_str(const mil_type *t, char *buf, size_t size) {
    size_t pos = 0;
    if (!size) return buf;
    buf[0] = 0;
    type_str(t, buf, size, &pos);
    return buf;
}

/* --- literal values ------------------------------------------------------ */

const mil_value *mil_value_tensor(mil_program *p, const mil_type *type, size_t n,
                                  const void *data) {
    if (!type || type->kind != MIL_TYPE_TENSOR || type->dtype == MIL_DT_STRING) return NULL;
    int64_t numel = mil_type_numel(type);
    if (numel >= 0 && (uint64_t)numel != n) return NULL;
    mil_value *v = nc_arena_alloc(&p->arena, sizeof *v);
    if (!v) return NULL;
    v->type = type;
    v->kind = MIL_VALUE_TENSOR;
    v->n = n;
    size_t eb = mil_dtype_storage_bytes(type->dtype);
    if (eb && n > SIZE_MAX / eb) return NULL;
    v->data = nc_arena_memdup(&p->arena, data, n * eb);
    return v->data ? v : NULL;
}

const mil_value *mil_value_string(mil_program *p, const char *s) {
    mil_value *v = nc_arena_alloc(&p->arena, sizeof *v);
    const char **strs = nc_arena_alloc(&p->arena, sizeof *strs);
    if (!v || !strs || !(strs[0] = nc_arena_strdup(&p->arena, s)) ||
        !(v->type = mil_type_scalar(p, MIL_DT_STRING)))
        return NULL;
    v->kind = MIL_VALUE_TENSOR;
    v->n = 1;
    v->strs = strs;
    return v;
}

const mil_value *mil_value_i32(mil_program *p, int32_t x) {
    return mil_value_tensor(p, mil_type_scalar(p, MIL_DT_INT32), 1, &x);
}

const mil_value *mil_value_bool(mil_program *p, int b) {
    uint8_t x = b != 0;
    return mil_value_tensor(p, mil_type_scalar(p, MIL_DT_BOOL), 1, &x);
}

const mil_value *mil_value_f32(mil_program *p, mil_dtype dt, double x) {
    uint8_t buf[8];
    if (dt == MIL_DT_FP16) {
        uint16_t h = nc_f32_to_fp16((float)x);
        memcpy(buf, &h, 2);
    } else if (dt == MIL_DT_FP32) {
        float f = (float)x;
        memcpy(buf, &f, 4);
    } else if (dt == MIL_DT_FP64) {
        memcpy(buf, &x, 8);
    } else {
        return NULL;
    }
    return mil_value_tensor(p, mil_type_scalar(p, dt), 1, buf);
}

const mil_value *mil_value_blob(mil_program *p, const mil_type *type, const char *path,
                                uint64_t offset) {
    mil_value *v = nc_arena_alloc(&p->arena, sizeof *v);
    if (!v || !(v->blob_path = nc_arena_strdup(&p->arena, path))) return NULL;
    v->type = type;
    v->kind = MIL_VALUE_BLOB;
    v->blob_offset = offset;
    int64_t n = mil_type_numel(type);
    v->n = n > 0 ? (size_t)n : 0;
    return v;
}

const char *mil_value_str(const mil_value *v) {
    if (!v || v->kind != MIL_VALUE_TENSOR || !v->type || v->type->dtype != MIL_DT_STRING ||
        v->n != 1 || !v->strs)
        return NULL;
    return v->strs[0];
}
