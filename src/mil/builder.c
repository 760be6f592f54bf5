/* The MIL builder (see builder.h): appends ops to the open function, infers
 * their types through the op table at once, and moves large constants into
 * the model folder's weights/weight.bin as it goes. */
#include "mil/builder.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/half.h"
#include "mil/mil_blob.h"
#include "mil/ops.h"

#define BLOB_PATH "@model_path/weights/weight.bin"

struct mil_builder {
    mil_program *prog;
    mil_function *fn; /* open function, or NULL */
    char *model_dir;
    mil_blob_writer w;
    int writer_open;
    nc_error err;
    int failed;
    int counter; /* for generated names */
};

static void set_fail(mil_builder *b, const nc_error *e) {
    if (b->failed) return;
    b->err = *e;
    b->failed = 1;
}

static int failf(mil_builder *b, nc_status code, const char *fmt, ...) NC_PRINTF(3, 4);
static int failf(mil_builder *b, nc_status code, const char *fmt, ...) {
    if (b->failed) return 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b->err.msg, sizeof b->err.msg, fmt, ap);
    va_end(ap);
    b->err.code = code;
    b->failed = 1;
    return 0;
}

nc_status mil_builder_new(mil_builder **out, const char *model_dir, nc_error *err) {
    *out = NULL;
    mil_builder *b = calloc(1, sizeof *b);
    if (!b) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    nc_status st = mil_program_new(&b->prog, err);
    if (st == NC_OK && model_dir) {
        b->model_dir = malloc(strlen(model_dir) + 1);
        if (!b->model_dir)
            st = nc_fail(err, NC_ERR_NOMEM, "out of memory");
        else
            strcpy(b->model_dir, model_dir);
        if (st == NC_OK) st = mil_program_set_model_dir(b->prog, model_dir, err);
    }
    static const char *const info[][2] = MIL_BUILD_INFO_DEFAULT;
    for (size_t i = 0; st == NC_OK && i < sizeof info / sizeof info[0]; i++)
        st = mil_builder_build_info(b, info[i][0], info[i][1]);
    if (st != NC_OK) {
        if (err && b->failed) *err = b->err;
        mil_builder_free(b);
        return st;
    }
    *out = b;
    return NC_OK;
}

nc_status mil_builder_build_info(mil_builder *b, const char *key, const char *value) {
    mil_program *p = b->prog;
    const mil_value *old = mil_program_attr(p, "buildInfo");
    size_t n = old ? old->n : 0;
    const mil_type *str = mil_type_scalar(p, MIL_DT_STRING);
    mil_value *d = nc_arena_alloc(&p->arena, sizeof *d);
    const mil_value **items = nc_arena_calloc(&p->arena, 2 * (n + 1), sizeof *items);
    const mil_value *k = mil_value_string(p, key), *v = mil_value_string(p, value);
    if (!str || !d || !items || !k || !v || !(d->type = mil_type_dict(p, str, str))) {
        failf(b, NC_ERR_NOMEM, "out of memory");
        return NC_ERR_NOMEM;
    }
    size_t m = 0;
    int placed = 0;
    for (size_t i = 0; i < n; i++) { /* merge in key order, replacing an equal key */
        const char *ki = mil_value_str(old->items[2 * i]);
        int c = ki ? strcmp(key, ki) : 1;
        if (!placed && c <= 0) {
            items[2 * m] = k;
            items[2 * m++ + 1] = v;
            placed = 1;
            if (c == 0) continue;
        }
        items[2 * m] = old->items[2 * i];
        items[2 * m++ + 1] = old->items[2 * i + 1];
    }
    if (!placed) {
        items[2 * m] = k;
        items[2 * m++ + 1] = v;
    }
    d->kind = MIL_VALUE_DICT;
    d->n = m;
    d->items = items;
    if (old) { /* the attribute array is ours: point it at the new dict */
        for (int i = 0; i < p->n_attrs; i++)
            if (!strcmp(p->attrs[i].name, "buildInfo")) p->attrs[i].value = d;
        return NC_OK;
    }
    mil_attr *attrs = nc_arena_calloc(&p->arena, (size_t)p->n_attrs + 1, sizeof *attrs);
    if (!attrs) {
        failf(b, NC_ERR_NOMEM, "out of memory");
        return NC_ERR_NOMEM;
    }
    if (p->n_attrs) memcpy(attrs, p->attrs, (size_t)p->n_attrs * sizeof *attrs);
    attrs[p->n_attrs].name = "buildInfo";
    attrs[p->n_attrs++].value = d;
    p->attrs = attrs;
    return NC_OK;
}

mil_program *mil_builder_program(mil_builder *b) {
    return b->prog;
}
const nc_error *mil_builder_error(const mil_builder *b) {
    return &b->err;
}

void mil_builder_free(mil_builder *b) {
    if (!b) return;
    if (b->writer_open) mil_blob_writer_abort(&b->w);
    mil_program_free(b->prog);
    free(b->model_dir);
    free(b);
}

nc_status mil_builder_finish(mil_builder *b, mil_program **out, nc_error *err) {
    *out = NULL;
    if (!b->failed && b->fn)
        failf(b, NC_ERR_INVALID, "function '%s' is still open (call mil_build_done)", b->fn->name);
    if (!b->failed && b->writer_open) {
        nc_error e;
        b->writer_open = 0;
        if (mil_blob_writer_finish(&b->w, &e) != NC_OK) set_fail(b, &e);
    }
    if (b->failed) {
        if (err) *err = b->err;
        nc_status st = b->err.code ? b->err.code : NC_ERR_INVALID;
        mil_builder_free(b);
        return st;
    }
    *out = b->prog;
    b->prog = NULL;
    mil_builder_free(b);
    return NC_OK;
}

/* --- functions ----------------------------------------------------------- */

nc_status mil_build_function(mil_builder *b, const char *name, const char *opset) {
    if (b->failed) return b->err.code;
    if (b->fn) {
        failf(b, NC_ERR_INVALID, "function '%s' is still open", b->fn->name);
        return NC_ERR_INVALID;
    }
    if (mil_program_function(b->prog, name)) {
        failf(b, NC_ERR_INVALID, "function '%s' is already defined", name);
        return NC_ERR_INVALID;
    }
    if (!mil_opset_version(opset)) {
        failf(b, NC_ERR_INVALID, "function '%s': unknown opset '%s'", name, opset);
        return NC_ERR_INVALID;
    }
    nc_error e;
    b->fn = mil_function_add(b->prog, name, opset, &e);
    if (!b->fn) {
        set_fail(b, &e);
        return e.code;
    }
    return NC_OK;
}

static int need_fn(mil_builder *b, const char *what) {
    if (b->failed) return 0;
    if (!b->fn)
        return failf(b, NC_ERR_INVALID, "%s: no open function (call mil_build_function)", what);
    return 1;
}

mil_var *mil_build_input(mil_builder *b, const char *name, const mil_type *type) {
    if (!need_fn(b, "input")) return NULL;
    if (!type) return failf(b, NC_ERR_INVALID, "input '%s': no type", name), NULL;
    if (mil_function_var(b->fn, name))
        return failf(b, NC_ERR_INVALID, "input '%s': name already defined", name), NULL;
    if (b->fn->n_ops)
        return failf(b, NC_ERR_INVALID, "input '%s': inputs must be declared before ops", name),
               NULL;
    nc_error e;
    mil_var *v = mil_var_new(b->fn, name, type, &e);
    mil_var **ins =
        v ? nc_arena_calloc(&b->prog->arena, (size_t)b->fn->n_inputs + 1, sizeof *ins) : NULL;
    if (!ins) return failf(b, NC_ERR_NOMEM, "out of memory"), NULL;
    if (b->fn->n_inputs) memcpy(ins, b->fn->inputs, (size_t)b->fn->n_inputs * sizeof *ins);
    ins[b->fn->n_inputs++] = v;
    b->fn->inputs = ins;
    v->is_input = 1;
    return v;
}

static int in_fn(const mil_function *fn, const mil_var *v) {
    return v && v->id >= 0 && v->id < fn->n_vars && fn->vars[v->id] == v;
}

nc_status mil_build_done(mil_builder *b, mil_var *const *outputs, int n) {
    if (!need_fn(b, "done")) return b->err.code;
    for (int i = 0; i < n; i++)
        if (!in_fn(b->fn, outputs[i]) || !outputs[i]->name) {
            failf(b, NC_ERR_INVALID, "function '%s': output %d is not a variable of this function",
                  b->fn->name, i);
            return NC_ERR_INVALID;
        }
    mil_var **outs = nc_arena_memdup(&b->prog->arena, outputs, (size_t)(n ? n : 1) * sizeof *outs);
    if (!outs) return failf(b, NC_ERR_NOMEM, "out of memory"), NC_ERR_NOMEM;
    b->fn->outputs = outs;
    b->fn->n_outputs = n;
    b->fn = NULL;
    return NC_OK;
}

mil_var *mil_build_var(mil_builder *b, const char *name) {
    if (!need_fn(b, "lookup")) return NULL;
    mil_var *v = mil_function_var(b->fn, name);
    if (!v) failf(b, NC_ERR_NOT_FOUND, "function '%s': no variable '%s'", b->fn->name, name);
    return v;
}

/* --- generic ops --------------------------------------------------------- */

static const char *pick_name(mil_builder *b, const char *type, const char *name, char *buf,
                             size_t size) {
    if (name) return name;
    snprintf(buf, size, "%s_%d", type, b->counter++);
    return buf;
}

nc_status mil_build_op_n(mil_builder *b, const char *type, const char *name,
                         const mil_build_arg *args, int n_args, mil_var **outs, int max_outs,
                         int *n_outs) {
    char gen[128], label[200];
    nc_error e;
    *n_outs = 0;
    if (!need_fn(b, type)) return b->err.code;
    name = pick_name(b, type, name, gen, sizeof gen);
    snprintf(label, sizeof label, "%s '%s'", type, name);
    mil_function *fn = b->fn;
    nc_arena *a = &b->prog->arena;
    mil_arg *margs = nc_arena_calloc(a, (size_t)(n_args ? n_args : 1), sizeof *margs);
    mil_attr *attrs = nc_arena_alloc(a, sizeof *attrs);
    const mil_value *name_val = mil_value_string(b->prog, name);
    if (!margs || !attrs || !name_val) return failf(b, NC_ERR_NOMEM, "out of memory"), NC_ERR_NOMEM;
    for (int i = 0; i < n_args; i++) {
        const mil_build_arg *in = &args[i];
        mil_arg *m = &margs[i];
        m->name = in->name;
        if (!in->name)
            return failf(b, NC_ERR_INVALID, "%s: argument %d has no name", label, i),
                   NC_ERR_INVALID;
        if (in->tuple) {
            m->is_tuple = 1;
            m->n_items = in->n_tuple;
            m->items = nc_arena_memdup(a, in->tuple,
                                       (size_t)(in->n_tuple ? in->n_tuple : 1) * sizeof *in->tuple);
            if (!m->items) return failf(b, NC_ERR_NOMEM, "out of memory"), NC_ERR_NOMEM;
        } else {
            mil_var *v = in->var;
            if (!v && in->ref) {
                v = mil_function_var(fn, in->ref);
                if (!v)
                    return failf(b, NC_ERR_NOT_FOUND,
                                 "%s: argument '%s' refers to unknown variable '%s'", label,
                                 in->name, in->ref),
                           NC_ERR_NOT_FOUND;
            }
            mil_var **items = nc_arena_alloc(a, sizeof *items);
            if (!items) return failf(b, NC_ERR_NOMEM, "out of memory"), NC_ERR_NOMEM;
            items[0] = v;
            m->n_items = 1;
            m->items = items;
        }
        for (int j = 0; j < m->n_items; j++)
            if (!in_fn(fn, m->items[j]))
                return failf(b, NC_ERR_INVALID,
                             "%s: argument '%s' is not a variable of function '%s'", label,
                             in->name, fn->name),
                       NC_ERR_INVALID;
    }
    if (mil_function_var(fn, name))
        return failf(b, NC_ERR_INVALID, "%s: name '%s' is already defined", label, name),
               NC_ERR_INVALID;
    mil_op *op = mil_op_append(fn, type, NULL, &e);
    if (!op) return set_fail(b, &e), e.code;
    op->args = margs;
    op->n_args = n_args;
    attrs[0].name = "name";
    attrs[0].value = name_val;
    op->attrs = attrs;
    op->n_attrs = 1;
    mil_infer_out *inf = malloc(sizeof *inf);
    if (!inf) {
        fn->n_ops--;
        return failf(b, NC_ERR_NOMEM, "out of memory"), NC_ERR_NOMEM;
    }
    nc_status st = mil_op_infer(b->prog, op, inf, &e);
    if (st == NC_OK && inf->n > max_outs)
        st =
            nc_fail(&e, NC_ERR_INVALID, "%s: has %d outputs, room for %d", label, inf->n, max_outs);
    if (st != NC_OK) {
        fn->n_ops--; /* the op never happened */
        free(inf);
        set_fail(b, &e);
        return st;
    }
    op->n_outputs = inf->n;
    op->outputs = nc_arena_calloc(a, (size_t)(inf->n ? inf->n : 1), sizeof *op->outputs);
    for (int i = 0; op->outputs && i < inf->n; i++) {
        char oname[160];
        if (inf->n == 1)
            snprintf(oname, sizeof oname, "%s", name);
        else
            snprintf(oname, sizeof oname, "%s_%d", name, i);
        if (inf->n > 1 && mil_function_var(fn, oname)) {
            free(inf);
            return failf(b, NC_ERR_INVALID, "%s: output name '%s' is already defined", label,
                         oname),
                   NC_ERR_INVALID;
        }
        mil_var *v = mil_var_new(fn, oname, inf->types[i], &e);
        if (!v) {
            free(inf);
            return set_fail(b, &e), e.code;
        }
        v->def = op;
        v->def_output = i;
        op->outputs[i] = outs[i] = v;
    }
    free(inf);
    if (!op->outputs) return failf(b, NC_ERR_NOMEM, "out of memory"), NC_ERR_NOMEM;
    *n_outs = op->n_outputs;
    return NC_OK;
}

mil_var *mil_build_op(mil_builder *b, const char *type, const char *name, const mil_build_arg *args,
                      int n_args) {
    mil_var *out[1];
    int n;
    if (mil_build_op_n(b, type, name, args, n_args, out, 1, &n) != NC_OK) return NULL;
    if (n != 1) return failf(b, NC_ERR_INVALID, "%s: has %d outputs, expected one", type, n), NULL;
    return out[0];
}

/* --- constants ----------------------------------------------------------- */

/* Creates model_dir/weights and opens weight.bin on first use. */
static int open_writer(mil_builder *b) {
    if (b->writer_open) return 1;
    char path[4096];
    snprintf(path, sizeof path, "%s", b->model_dir);
    if (mkdir(path, 0777) != 0 && errno != EEXIST)
        return failf(b, NC_ERR_IO, "%s: cannot create folder: %s", path, strerror(errno));
    snprintf(path, sizeof path, "%s/weights", b->model_dir);
    if (mkdir(path, 0777) != 0 && errno != EEXIST)
        return failf(b, NC_ERR_IO, "%s: cannot create folder: %s", path, strerror(errno));
    snprintf(path, sizeof path, "%s/weights/weight.bin", b->model_dir);
    nc_error e;
    if (mil_blob_writer_open(&b->w, path, &e) != NC_OK) return set_fail(b, &e), 0;
    b->writer_open = 1;
    return 1;
}

/* Moves a large inline tensor into weight.bin; returns the value to use. */
static const mil_value *maybe_to_blob(mil_builder *b, const mil_value *val) {
    if (val->kind != MIL_VALUE_TENSOR || !b->model_dir || val->n <= MIL_BUILD_INLINE_MAX ||
        !mil_dtype_blob_code(val->type->dtype))
        return val;
    if (!open_writer(b)) return NULL;
    const uint8_t *bytes;
    size_t nb;
    uint64_t off;
    nc_error e;
    if (mil_value_bytes(b->prog, val, &bytes, &nb, &e) != NC_OK ||
        mil_blob_writer_add(&b->w, val->type->dtype, val->n, bytes, &off, &e) != NC_OK) {
        set_fail(b, &e);
        return NULL;
    }
    const mil_value *blob = mil_value_blob(b->prog, val->type, BLOB_PATH, off);
    if (!blob) failf(b, NC_ERR_NOMEM, "out of memory");
    return blob;
}

mil_var *mil_build_const(mil_builder *b, const char *name, const mil_value *val) {
    char gen[128];
    if (!need_fn(b, "const")) return NULL;
    if (!val) return failf(b, NC_ERR_INVALID, "const '%s': no value", name ? name : "?"), NULL;
    name = pick_name(b, "const", name, gen, sizeof gen);
    if (mil_function_var(b->fn, name))
        return failf(b, NC_ERR_INVALID, "const '%s': name is already defined", name), NULL;
    val = maybe_to_blob(b, val);
    if (!val) return NULL;
    nc_error e;
    mil_attr *attrs = nc_arena_calloc(&b->prog->arena, 2, sizeof *attrs);
    const mil_value *nv = mil_value_string(b->prog, name);
    if (!attrs || !nv) return failf(b, NC_ERR_NOMEM, "out of memory"), NULL;
    mil_op *op = mil_op_append(b->fn, "const", NULL, &e);
    mil_var **outs = nc_arena_alloc(&b->prog->arena, sizeof *outs);
    mil_var *v = op && outs ? mil_var_new(b->fn, name, val->type, &e) : NULL;
    if (!v) return set_fail(b, &e), NULL;
    attrs[0].name = "name";
    attrs[0].value = nv;
    attrs[1].name = "val";
    attrs[1].value = val;
    op->attrs = attrs;
    op->n_attrs = 2;
    outs[0] = v;
    op->outputs = outs;
    op->n_outputs = 1;
    v->def = op;
    v->cval = val;
    return v;
}

mil_var *mil_build_const_tensor(mil_builder *b, const char *name, mil_dtype dt, int rank,
                                const int64_t *dims, const void *data) {
    if (b->failed) return NULL;
    const mil_type *t = mil_type_tensor(b->prog, dt, rank, dims);
    int64_t n = mil_type_numel(t);
    if (!t || n < 0 || dt == MIL_DT_STRING)
        return failf(b, NC_ERR_INVALID, "const '%s': invalid tensor type", name ? name : "?"), NULL;
    if (b->model_dir && n > MIL_BUILD_INLINE_MAX && mil_dtype_blob_code(dt)) {
        /* Headed for weight.bin: write straight from the caller's data, so
         * a model's weights are never also copied into the arena. The
         * temporary value does not outlive this call (it becomes a BLOB). */
        mil_value tmp = {.type = t, .kind = MIL_VALUE_TENSOR, .n = (size_t)n, .data = data};
        return mil_build_const(b, name, &tmp);
    }
    const mil_value *v = mil_value_tensor(b->prog, t, (size_t)n, data);
    if (!v) return failf(b, NC_ERR_NOMEM, "out of memory"), NULL;
    return mil_build_const(b, name, v);
}

mil_var *mil_build_const_fp16(mil_builder *b, const char *name, int rank, const int64_t *dims,
                              const float *values) {
    if (b->failed) return NULL;
    int64_t n = 1;
    for (int i = 0; i < rank; i++) {
        if (dims[i] < 0 || (dims[i] && n > INT64_MAX / dims[i]))
            return failf(b, NC_ERR_INVALID, "const '%s': invalid shape", name ? name : "?"), NULL;
        n *= dims[i];
    }
    uint16_t *h = malloc((size_t)(n ? n : 1) * sizeof *h);
    if (!h) return failf(b, NC_ERR_NOMEM, "out of memory"), NULL;
    nc_f32_to_fp16_n(values, h, (size_t)n);
    mil_var *v = mil_build_const_tensor(b, name, MIL_DT_FP16, rank, dims, h);
    free(h);
    return v;
}

mil_var *mil_build_const_i32(mil_builder *b, const char *name, int32_t v) {
    return b->failed ? NULL : mil_build_const(b, name, mil_value_i32(b->prog, v));
}
mil_var *mil_build_const_i32s(mil_builder *b, const char *name, int n, const int32_t *v) {
    int64_t d = n;
    return mil_build_const_tensor(b, name, MIL_DT_INT32, 1, &d, v);
}
mil_var *mil_build_const_bool(mil_builder *b, const char *name, int v) {
    return b->failed ? NULL : mil_build_const(b, name, mil_value_bool(b->prog, v));
}
mil_var *mil_build_const_str(mil_builder *b, const char *name, const char *s) {
    return b->failed ? NULL : mil_build_const(b, name, mil_value_string(b->prog, s));
}
mil_var *mil_build_const_scalar(mil_builder *b, const char *name, mil_dtype dt, double v) {
    if (b->failed) return NULL;
    const mil_value *val = mil_value_f32(b->prog, dt, v);
    if (!val)
        return failf(b, NC_ERR_INVALID, "const '%s': %s is not a float dtype", name ? name : "?",
                     mil_dtype_name(dt)),
               NULL;
    return mil_build_const(b, name, val);
}

/* --- helpers ------------------------------------------------------------- */

/* "<op>_<param>" for a helper's parameter const. */
static const char *param_name(char *buf, size_t size, const char *op, const char *param) {
    snprintf(buf, size, "%s_%s", op, param);
    return buf;
}

/* Fixes a helper op's name up front so its parameter consts can use it. */
static const char *helper_name(mil_builder *b, const char *type, const char *name, char *buf,
                               size_t size) {
    return pick_name(b, type, name, buf, size);
}

#define ARG(n, v)                                                                                  \
    { .name = (n), .var = (v) }

mil_var *mil_build_binary(mil_builder *b, const char *type, const char *name, mil_var *x,
                          mil_var *y) {
    mil_build_arg a[] = {ARG("x", x), ARG("y", y)};
    return mil_build_op(b, type, name, a, 2);
}
mil_var *mil_build_unary(mil_builder *b, const char *type, const char *name, mil_var *x) {
    mil_build_arg a[] = {ARG("x", x)};
    return mil_build_op(b, type, name, a, 1);
}
mil_var *mil_build_add(mil_builder *b, const char *name, mil_var *x, mil_var *y) {
    return mil_build_binary(b, "add", name, x, y);
}
mil_var *mil_build_mul(mil_builder *b, const char *name, mil_var *x, mil_var *y) {
    return mil_build_binary(b, "mul", name, x, y);
}

/* A float scalar parameter in x's dtype (fp16 or fp32). */
static mil_var *float_param(mil_builder *b, const char *op, const char *param, mil_var *x,
                            double v) {
    char pn[160];
    mil_dtype dt = x && x->type && x->type->kind == MIL_TYPE_TENSOR && x->type->dtype == MIL_DT_FP32
                       ? MIL_DT_FP32
                       : MIL_DT_FP16;
    return mil_build_const_scalar(b, param_name(pn, sizeof pn, op, param), dt, v);
}

mil_var *mil_build_rsqrt(mil_builder *b, const char *name, mil_var *x, double epsilon) {
    char nb[128];
    name = helper_name(b, "rsqrt", name, nb, sizeof nb);
    mil_build_arg a[] = {ARG("x", x), ARG("epsilon", float_param(b, name, "epsilon", x, epsilon))};
    return b->failed ? NULL : mil_build_op(b, "rsqrt", name, a, 2);
}

mil_var *mil_build_gelu(mil_builder *b, const char *name, mil_var *x, const char *mode) {
    char nb[128], pn[160];
    name = helper_name(b, "gelu", name, nb, sizeof nb);
    mil_build_arg a[] = {
        ARG("x", x),
        ARG("mode", mil_build_const_str(b, param_name(pn, sizeof pn, name, "mode"), mode))};
    return b->failed ? NULL : mil_build_op(b, "gelu", name, a, 2);
}

mil_var *mil_build_softmax(mil_builder *b, const char *name, mil_var *x, int axis) {
    char nb[128], pn[160];
    name = helper_name(b, "softmax", name, nb, sizeof nb);
    mil_build_arg a[] = {
        ARG("x", x),
        ARG("axis", mil_build_const_i32(b, param_name(pn, sizeof pn, name, "axis"), axis))};
    return b->failed ? NULL : mil_build_op(b, "softmax", name, a, 2);
}

/* conv's fixed parameters as coremlc writes them: unit strides and
 * dilations, valid padding, the given groups. */
static mil_var *conv_with(mil_builder *b, const char *name, mil_var *x, mil_var *w, mil_var *bias,
                          int groups) {
    char pn[160];
    int ns = w && w->type && w->type->rank >= 3 ? w->type->rank - 2 : 2;
    int32_t ones[8] = {1, 1, 1, 1, 1, 1, 1, 1}, zeros[16] = {0};
    if (ns > 8) return failf(b, NC_ERR_INVALID, "conv '%s': too many spatial dims", name), NULL;
    mil_var *strides =
        mil_build_const_i32s(b, param_name(pn, sizeof pn, name, "strides"), ns, ones);
    mil_var *pad_type =
        mil_build_const_str(b, param_name(pn, sizeof pn, name, "pad_type"), "valid");
    mil_var *pad = mil_build_const_i32s(b, param_name(pn, sizeof pn, name, "pad"), 2 * ns, zeros);
    mil_var *dil = mil_build_const_i32s(b, param_name(pn, sizeof pn, name, "dilations"), ns, ones);
    mil_var *grp = mil_build_const_i32(b, param_name(pn, sizeof pn, name, "groups"), groups);
    if (b->failed) return NULL;
    mil_build_arg a[8] = {
        ARG("x", x),     ARG("weight", w),      ARG("strides", strides), ARG("pad_type", pad_type),
        ARG("pad", pad), ARG("dilations", dil), ARG("groups", grp)};
    int n = 7;
    if (bias) a[n++] = (mil_build_arg)ARG("bias", bias);
    return mil_build_op(b, "conv", name, a, n);
}

mil_var *mil_build_conv(mil_builder *b, const char *name, mil_var *x, mil_var *weight,
                        mil_var *bias, int groups) {
    char nb[128];
    name = helper_name(b, "conv", name, nb, sizeof nb);
    return conv_with(b, name, x, weight, bias, groups);
}

mil_var *mil_build_conv1x1(mil_builder *b, const char *name, mil_var *x, int64_t cout, int64_t cin,
                           const float *weight, const float *bias) {
    char nb[128], pn[160];
    name = helper_name(b, "conv", name, nb, sizeof nb);
    int64_t wd[4] = {cout, cin, 1, 1};
    mil_var *w = mil_build_const_fp16(b, param_name(pn, sizeof pn, name, "weight"), 4, wd, weight);
    mil_var *bv =
        bias ? mil_build_const_fp16(b, param_name(pn, sizeof pn, name, "bias"), 1, &cout, bias)
             : NULL;
    if (b->failed) return NULL;
    return conv_with(b, name, x, w, bv, 1);
}

mil_var *mil_build_matmul(mil_builder *b, const char *name, mil_var *x, mil_var *y, int transpose_x,
                          int transpose_y) {
    char nb[128], pn[160];
    name = helper_name(b, "matmul", name, nb, sizeof nb);
    mil_var *tx =
        mil_build_const_bool(b, param_name(pn, sizeof pn, name, "transpose_x"), transpose_x);
    mil_var *ty =
        mil_build_const_bool(b, param_name(pn, sizeof pn, name, "transpose_y"), transpose_y);
    mil_build_arg a[] = {ARG("x", x), ARG("y", y), ARG("transpose_x", tx), ARG("transpose_y", ty)};
    return b->failed ? NULL : mil_build_op(b, "matmul", name, a, 4);
}

/* op(x, <param> = int32 vector) */
static mil_var *with_ints(mil_builder *b, const char *type, const char *name, mil_var *x,
                          const char *param, int n, const int32_t *v) {
    char nb[128], pn[160];
    name = helper_name(b, type, name, nb, sizeof nb);
    mil_var *p = mil_build_const_i32s(b, param_name(pn, sizeof pn, name, param), n, v);
    mil_build_arg a[] = {ARG("x", x), ARG(param, p)};
    return b->failed ? NULL : mil_build_op(b, type, name, a, 2);
}

mil_var *mil_build_reshape(mil_builder *b, const char *name, mil_var *x, int rank,
                           const int32_t *shape) {
    return with_ints(b, "reshape", name, x, "shape", rank, shape);
}
mil_var *mil_build_transpose(mil_builder *b, const char *name, mil_var *x, int rank,
                             const int32_t *perm) {
    return with_ints(b, "transpose", name, x, "perm", rank, perm);
}
mil_var *mil_build_expand_dims(mil_builder *b, const char *name, mil_var *x, int n_axes,
                               const int32_t *axes) {
    return with_ints(b, "expand_dims", name, x, "axes", n_axes, axes);
}
mil_var *mil_build_squeeze(mil_builder *b, const char *name, mil_var *x, int n_axes,
                           const int32_t *axes) {
    if (!axes) return mil_build_unary(b, "squeeze", name, x);
    return with_ints(b, "squeeze", name, x, "axes", n_axes, axes);
}

mil_var *mil_build_slice_by_size(mil_builder *b, const char *name, mil_var *x, int rank,
                                 const int32_t *begin, const int32_t *size) {
    char nb[128], pn[160];
    name = helper_name(b, "slice_by_size", name, nb, sizeof nb);
    mil_var *bv = mil_build_const_i32s(b, param_name(pn, sizeof pn, name, "begin"), rank, begin);
    mil_var *sv = mil_build_const_i32s(b, param_name(pn, sizeof pn, name, "size"), rank, size);
    mil_build_arg a[] = {ARG("x", x), ARG("begin", bv), ARG("size", sv)};
    return b->failed ? NULL : mil_build_op(b, "slice_by_size", name, a, 3);
}

mil_var *mil_build_slice_by_index(mil_builder *b, const char *name, mil_var *x, int rank,
                                  const int32_t *begin, const int32_t *end, const int32_t *stride) {
    char nb[128], pn[160];
    name = helper_name(b, "slice_by_index", name, nb, sizeof nb);
    mil_var *bv = mil_build_const_i32s(b, param_name(pn, sizeof pn, name, "begin"), rank, begin);
    mil_var *ev = mil_build_const_i32s(b, param_name(pn, sizeof pn, name, "end"), rank, end);
    mil_build_arg a[4] = {ARG("x", x), ARG("begin", bv), ARG("end", ev)};
    int n = 3;
    if (stride)
        a[n++] = (mil_build_arg)ARG(
            "stride",
            mil_build_const_i32s(b, param_name(pn, sizeof pn, name, "stride"), rank, stride));
    return b->failed ? NULL : mil_build_op(b, "slice_by_index", name, a, n);
}

mil_var *mil_build_concat(mil_builder *b, const char *name, mil_var *const *values, int n,
                          int axis) {
    char nb[128], pn[160];
    name = helper_name(b, "concat", name, nb, sizeof nb);
    mil_var *ax = mil_build_const_i32(b, param_name(pn, sizeof pn, name, "axis"), axis);
    mil_var *il = mil_build_const_bool(b, param_name(pn, sizeof pn, name, "interleave"), 0);
    mil_build_arg a[] = {
        {.name = "values", .tuple = values, .n_tuple = n}, ARG("axis", ax), ARG("interleave", il)};
    return b->failed ? NULL : mil_build_op(b, "concat", name, a, 3);
}

int mil_build_split(mil_builder *b, const char *name, mil_var *x, int axis, int num_splits,
                    const int32_t *split_sizes, mil_var **outs, int max_outs) {
    char nb[128], pn[160];
    int n_out;
    name = helper_name(b, "split", name, nb, sizeof nb);
    mil_var *ax = mil_build_const_i32(b, param_name(pn, sizeof pn, name, "axis"), axis);
    mil_build_arg a[3] = {ARG("x", x), ARG("axis", ax)};
    if (split_sizes)
        a[2] = (mil_build_arg)ARG(
            "split_sizes", mil_build_const_i32s(b, param_name(pn, sizeof pn, name, "split_sizes"),
                                                num_splits, split_sizes));
    else
        a[2] = (mil_build_arg)ARG(
            "num_splits",
            mil_build_const_i32(b, param_name(pn, sizeof pn, name, "num_splits"), num_splits));
    if (b->failed) return -1;
    return mil_build_op_n(b, "split", name, a, 3, outs, max_outs, &n_out) == NC_OK ? n_out : -1;
}

mil_var *mil_build_cast(mil_builder *b, const char *name, mil_var *x, mil_dtype dt) {
    char nb[128], pn[160];
    name = helper_name(b, "cast", name, nb, sizeof nb);
    mil_var *d =
        mil_build_const_str(b, param_name(pn, sizeof pn, name, "dtype"), mil_dtype_name(dt));
    mil_build_arg a[] = {ARG("x", x), ARG("dtype", d)};
    return b->failed ? NULL : mil_build_op(b, "cast", name, a, 2);
}

mil_var *mil_build_reduce(mil_builder *b, const char *type, const char *name, mil_var *x,
                          int n_axes, const int32_t *axes, int keep_dims) {
    char nb[128], pn[160];
    name = helper_name(b, type, name, nb, sizeof nb);
    mil_var *av = mil_build_const_i32s(b, param_name(pn, sizeof pn, name, "axes"), n_axes, axes);
    mil_var *kd = mil_build_const_bool(b, param_name(pn, sizeof pn, name, "keep_dims"), keep_dims);
    mil_build_arg a[] = {ARG("x", x), ARG("axes", av), ARG("keep_dims", kd)};
    return b->failed ? NULL : mil_build_op(b, type, name, a, 3);
}

mil_var *mil_build_layer_norm(mil_builder *b, const char *name, mil_var *x, int n_axes,
                              const int32_t *axes, mil_var *gamma, mil_var *beta, double eps) {
    char nb[128], pn[160];
    name = helper_name(b, "layer_norm", name, nb, sizeof nb);
    mil_var *av = mil_build_const_i32s(b, param_name(pn, sizeof pn, name, "axes"), n_axes, axes);
    mil_var *ev = float_param(b, name, "epsilon", x, eps);
    mil_build_arg a[5] = {ARG("x", x), ARG("axes", av), ARG("epsilon", ev)};
    int n = 3;
    if (gamma) a[n++] = (mil_build_arg)ARG("gamma", gamma);
    if (beta) a[n++] = (mil_build_arg)ARG("beta", beta);
    return b->failed ? NULL : mil_build_op(b, "layer_norm", name, a, n);
}

mil_var *mil_build_select(mil_builder *b, const char *name, mil_var *cond, mil_var *a_,
                          mil_var *c) {
    mil_build_arg a[] = {ARG("cond", cond), ARG("a", a_), ARG("b", c)};
    return mil_build_op(b, "select", name, a, 3);
}

mil_var *mil_build_gather(mil_builder *b, const char *name, mil_var *x, mil_var *indices,
                          int axis) {
    char nb[128], pn[160];
    name = helper_name(b, "gather", name, nb, sizeof nb);
    mil_var *ax = mil_build_const_i32(b, param_name(pn, sizeof pn, name, "axis"), axis);
    mil_build_arg a[] = {ARG("x", x), ARG("indices", indices), ARG("axis", ax)};
    return b->failed ? NULL : mil_build_op(b, "gather", name, a, 3);
}
