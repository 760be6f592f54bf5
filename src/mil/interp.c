/* The MIL interpreter's core: prepares a function (value slots, weights
 * loaded and decompressed, constant ops folded), binds inputs, runs the
 * remaining ops in order and applies the fp16 model (one rounding of each
 * fp16 result). Op semantics live in interp_ops*.c, arithmetic in the
 * kernels (interp_math.c, interp_linalg.c, interp_reduce.c, interp_layout.c). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/half.h"
#include "mil/interp_priv.h"
#include "mil/mil_blob.h"

const char *mil_interp_op_label(const mil_op *op, char *buf, size_t size) {
    const char *name = mil_op_name(op);
    const char *src = op->fn && op->fn->prog && op->fn->prog->source ? op->fn->prog->source : NULL;
    char where[300] = "";
    if (op->line > 0) snprintf(where, sizeof where, " (%s:%d)", src ? src : "line", op->line);
    if (name) snprintf(buf, size, "%s '%s'%s", op->type, name, where);
    else snprintf(buf, size, "%s%s", op->type, where);
    return buf;
}

nc_status mil_interp_fail(nc_error *err, nc_status code, const mil_op *op, const char *fmt, ...) {
    char msg[400], label[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return nc_fail(err, code, "%s: %s", mil_interp_op_label(op, label, sizeof label), msg);
}

/* ---- slots ---- */

static const mil_type *tensor_type_of(const mil_type *t) {
    if (t && t->kind == MIL_TYPE_STATE && t->n_elems > 0) return t->elems[0];
    return t;
}

static nc_status slot_reserve(mil_slot *s, size_t n, nc_error *err) {
    if (n == 0) n = 1; /* never a NULL buffer: memcpy/UBSan stay happy */
    if (n <= s->cap) return NC_OK;
    if (n > SIZE_MAX / 4) return nc_fail(err, NC_ERR_NOMEM, "tensor of %zu elements is too large", n);
    void *p = realloc(s->data, n * 4);
    if (!p) return nc_fail(err, NC_ERR_NOMEM, "out of memory for a tensor of %zu elements", n);
    s->data = p;
    s->cap = n;
    return NC_OK;
}

static nc_status slot_set_shape(mil_slot *s, const mil_kshape *shape, nc_error *err) {
    s->shape = *shape;
    return slot_reserve(s, mil_kshape_count(shape), err);
}

mil_slot *mil_interp_slot(mil_interp *it, const mil_var *v) {
    if (!v || v->id < 0 || v->id >= it->n_slots) return NULL;
    return &it->slots[v->id];
}

mil_slot *mil_interp_arg(mil_interp *it, const mil_op *op, const char *name) {
    mil_var *v = mil_op_input(op, name);
    return v ? mil_interp_slot(it, v) : NULL;
}

nc_status mil_interp_need(mil_interp *it, const mil_op *op, const char *name, mil_slot **out,
                          nc_error *err) {
    mil_slot *s = mil_interp_arg(it, op, name);
    if (!s) return mil_interp_fail(err, NC_ERR_FORMAT, op, "missing argument '%s'", name);
    if (!s->has_value)
        return mil_interp_fail(err, NC_ERR_INVALID, op, "argument '%s' has no value", name);
    *out = s;
    return NC_OK;
}

/* Element i of a slot as int64 / float, whatever its storage. */
static int64_t slot_i64(const mil_slot *s, size_t i) {
    if (s->is_int) return ((const int32_t *)s->data)[i];
    float f = ((const float *)s->data)[i];
    return (f != f || f > 9e18f || f < -9e18f) ? 0 : (int64_t)f;
}

static float slot_f32(const mil_slot *s, size_t i) {
    return s->is_int ? (float)((const int32_t *)s->data)[i] : ((const float *)s->data)[i];
}

/* The slot of a one-number argument; *out = NULL when it is absent. */
static nc_status scalar_arg(mil_interp *it, const mil_op *op, const char *name, mil_slot **out,
                            nc_error *err) {
    mil_slot *s = *out = mil_interp_arg(it, op, name);
    if (s && (!s->has_value || mil_kshape_count(&s->shape) < 1))
        return mil_interp_fail(err, NC_ERR_FORMAT, op, "argument '%s' must be one number", name);
    return NC_OK;
}

nc_status mil_interp_int(mil_interp *it, const mil_op *op, const char *name, int64_t dflt,
                         int64_t *out, nc_error *err) {
    mil_slot *s;
    NC_TRY(scalar_arg(it, op, name, &s, err));
    *out = s ? slot_i64(s, 0) : dflt;
    return NC_OK;
}

nc_status mil_interp_float(mil_interp *it, const mil_op *op, const char *name, float dflt,
                           float *out, nc_error *err) {
    mil_slot *s;
    NC_TRY(scalar_arg(it, op, name, &s, err));
    *out = s ? slot_f32(s, 0) : dflt;
    return NC_OK;
}

nc_status mil_interp_ints(mil_interp *it, const mil_op *op, const char *name, int64_t *vals,
                          int max, int *n, nc_error *err) {
    mil_slot *s = mil_interp_arg(it, op, name);
    *n = -1;
    if (!s) return NC_OK;
    size_t c = mil_kshape_count(&s->shape);
    if (!s->has_value || s->shape.rank > 1 || c > (size_t)max)
        return mil_interp_fail(err, NC_ERR_FORMAT, op,
                               "argument '%s' must be a vector of at most %d numbers", name, max);
    for (size_t i = 0; i < c; i++) vals[i] = slot_i64(s, i);
    *n = (int)c;
    return NC_OK;
}

const char *mil_interp_str(mil_interp *it, const mil_op *op, const char *name, const char *dflt) {
    mil_slot *s = mil_interp_arg(it, op, name);
    if (s && s->str) return s->str;
    const mil_value *a = mil_op_attr(op, name); /* constexpr attribute form */
    const char *v = a ? mil_value_str(a) : NULL;
    return v ? v : dflt;
}

nc_status mil_interp_out(mil_interp *it, const mil_op *op, int k, const mil_kshape *shape,
                         mil_slot **out, nc_error *err) {
    if (k >= op->n_outputs)
        return mil_interp_fail(err, NC_ERR_FORMAT, op, "declares %d outputs, needs at least %d",
                               op->n_outputs, k + 1);
    mil_slot *s = mil_interp_slot(it, op->outputs[k]);
    if (shape->rank > MIL_K_MAX_RANK)
        return mil_interp_fail(err, NC_ERR_UNSUPPORTED, op, "rank %d is above %d", shape->rank,
                               MIL_K_MAX_RANK);
    if (it->max_elements && mil_kshape_count(shape) > it->max_elements)
        return mil_interp_fail(err, NC_ERR_RANGE, op, "output of %zu elements is above the limit %zu",
                               mil_kshape_count(shape), it->max_elements);
    NC_TRY(slot_set_shape(s, shape, err));
    s->has_value = 1;
    *out = s;
    return NC_OK;
}

nc_status mil_interp_scratch(op_plan *p, int i, size_t n, void **out, nc_error *err) {
    if (n == 0) n = 1;
    if (n > p->scratch_cap[i]) {
        void *q = realloc(p->scratch[i], n * 4);
        if (!q) return nc_fail(err, NC_ERR_NOMEM, "out of memory (%zu scratch elements)", n);
        p->scratch[i] = q;
        p->scratch_cap[i] = n;
    }
    *out = p->scratch[i];
    return NC_OK;
}

/* ---- loading compile-time values ---- */

/* Converts n elements of `src` stored as `dt` (weight.bin layout: sub-byte
 * packed LSB first, bool one byte) into slot storage. */
static nc_status convert_in(mil_dtype dt, const uint8_t *src, size_t n, int is_int, void *dst,
                            nc_error *err) {
    float *f = dst;
    int32_t *q = dst;
    for (size_t i = 0; i < n; i++) {
        double d = 0;
        int64_t v = 0;
        int src_float = 1;
        switch (dt) {
        case MIL_DT_FP16: { uint16_t h; memcpy(&h, src + 2 * i, 2); d = nc_fp16_to_f32(h); break; }
        case MIL_DT_BF16: { uint16_t h; memcpy(&h, src + 2 * i, 2); d = nc_bf16_to_f32(h); break; }
        case MIL_DT_FP32: { float x; memcpy(&x, src + 4 * i, 4); d = x; break; }
        case MIL_DT_FP64: memcpy(&d, src + 8 * i, 8); break;
        default: src_float = 0; break;
        }
        if (!src_float) {
            switch (dt) {
            case MIL_DT_INT8: v = (int8_t)src[i]; break;
            case MIL_DT_UINT8: v = src[i]; break;
            case MIL_DT_BOOL: v = src[i] != 0; break;
            case MIL_DT_INT16: { int16_t x; memcpy(&x, src + 2 * i, 2); v = x; break; }
            case MIL_DT_UINT16: { uint16_t x; memcpy(&x, src + 2 * i, 2); v = x; break; }
            case MIL_DT_INT32: { int32_t x; memcpy(&x, src + 4 * i, 4); v = x; break; }
            case MIL_DT_UINT32: { uint32_t x; memcpy(&x, src + 4 * i, 4); v = x; break; }
            case MIL_DT_INT64: memcpy(&v, src + 8 * i, 8); break;
            case MIL_DT_UINT64: { uint64_t x; memcpy(&x, src + 8 * i, 8); v = (int64_t)x; break; }
            default:
                if (!mil_dtype_is_sub_byte(dt))
                    return nc_fail(err, NC_ERR_UNSUPPORTED, "dtype %s cannot be interpreted",
                                   mil_dtype_name(dt));
                {
                    int bits = mil_dtype_bits(dt);
                    unsigned u = mil_unpack_sub_byte(src, i, bits);
                    v = (dt == MIL_DT_INT4 && (u & 8)) ? (int64_t)u - 16 : (int64_t)u;
                }
                break;
            }
            d = (double)v;
        }
        if (is_int) {
            if (src_float) v = (d != d || d > 2147483647.0 || d < -2147483648.0) ? 0 : (int64_t)d;
            q[i] = (int32_t)(uint32_t)(uint64_t)v;
        } else {
            f[i] = (float)d;
        }
    }
    return NC_OK;
}

static void shape_from_type(const mil_type *t, mil_kshape *s) {
    s->rank = t->rank;
    for (int i = 0; i < t->rank && i < MIL_K_MAX_RANK; i++)
        s->d[i] = t->dims[i] < 0 ? 0 : t->dims[i];
}

nc_status mil_interp_load_value(mil_interp *it, const mil_value *v, mil_slot *s, nc_error *err) {
    const mil_type *t = v->type;
    if (!t || t->kind != MIL_TYPE_TENSOR) return NC_OK; /* lists, dicts: not data */
    if (t->dtype == MIL_DT_STRING) {
        s->str = mil_value_str(v);
        s->has_value = 1;
        s->is_const = 1;
        return NC_OK;
    }
    if (t->rank > MIL_K_MAX_RANK)
        return nc_fail(err, NC_ERR_UNSUPPORTED, "a constant of rank %d (above %d)", t->rank,
                       MIL_K_MAX_RANK);
    mil_kshape shape;
    shape_from_type(t, &shape);
    int64_t numel = mil_type_numel(t);
    if (it->max_elements && numel > (int64_t)it->max_elements)
        return nc_fail(err, NC_ERR_RANGE, "a constant of %lld elements is above the limit %zu",
                       (long long)numel, it->max_elements);
    if (numel < 0) { /* `?` dims in a literal: take it as a vector */
        shape.rank = 1;
        shape.d[0] = (int64_t)v->n;
        numel = (int64_t)v->n;
    }
    const uint8_t *bytes;
    size_t nb;
    NC_TRY(mil_value_bytes(it->prog, v, &bytes, &nb, err));
    size_t need_bits = (size_t)numel * (size_t)mil_dtype_bits(t->dtype);
    size_t have = v->kind == MIL_VALUE_TENSOR ? v->n : (size_t)numel;
    if (nb * 8 < need_bits || have != (size_t)numel) {
        if (have == 1 && numel > 1 && v->kind == MIL_VALUE_TENSOR) {
            /* a one-element literal for a larger tensor (dialect C `tensor<int32, [1]>(1)`
             * style): broadcast it */
            NC_TRY(slot_set_shape(s, &shape, err));
            NC_TRY(convert_in(t->dtype, bytes, 1, s->is_int, s->data, err));
            for (int64_t i = 1; i < numel; i++) ((uint32_t *)s->data)[i] = ((uint32_t *)s->data)[0];
            s->has_value = s->is_const = 1;
            return NC_OK;
        }
        return nc_fail(err, NC_ERR_FORMAT, "constant holds %zu bytes, its type needs %zu bits", nb,
                       need_bits);
    }
    NC_TRY(slot_set_shape(s, &shape, err));
    NC_TRY(convert_in(t->dtype, bytes, (size_t)numel, s->is_int, s->data, err));
    s->has_value = 1;
    s->is_const = 1;
    return NC_OK;
}

/* ---- fp16 model ---- */

static void round_fp16(float *x, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] = nc_round_fp16(x[i]);
}

/* Declared output types are part of the program: a computed shape that
 * disagrees is an error (the checker reports the same statically). */
static nc_status check_declared(const mil_op *op, int k, const mil_slot *s, nc_error *err) {
    const mil_type *t = tensor_type_of(op->outputs[k]->type);
    if (!t || (t->kind != MIL_TYPE_TENSOR && t->kind != MIL_TYPE_BUFFER)) return NC_OK;
    int ok = t->rank == s->shape.rank;
    for (int i = 0; ok && i < t->rank; i++)
        if (t->dims[i] >= 0 && t->dims[i] != s->shape.d[i]) ok = 0;
    if (ok) return NC_OK;
    char decl[200], got[200] = "[";
    mil_type_str(t, decl, sizeof decl);
    for (int i = 0; i < s->shape.rank; i++) {
        size_t l = strlen(got);
        snprintf(got + l, sizeof got - l, "%s%lld", i ? ", " : "", (long long)s->shape.d[i]);
    }
    strncat(got, "]", sizeof got - strlen(got) - 1);
    return mil_interp_fail(err, NC_ERR_FORMAT, op, "output '%s' computes shape %s but is declared %s",
                           op->outputs[k]->name ? op->outputs[k]->name : "?", got, decl);
}

/* One trace line for output k of op: range and non-finite counts. */
static void trace_output(FILE *f, const mil_op *op, int k, const mil_slot *s) {
    size_t n = mil_kshape_count(&s->shape), n_inf = 0, n_nan = 0;
    double lo = 0, hi = 0;
    int first = 1;
    for (size_t i = 0; i < n; i++) {
        double v = s->is_int ? ((const int32_t *)s->data)[i] : ((const float *)s->data)[i];
        if (v != v) n_nan++;
        else if (v > 3.4e38 || v < -3.4e38) n_inf++;
        else {
            lo = first || v < lo ? v : lo;
            hi = first || v > hi ? v : hi;
            first = 0;
        }
    }
    char label[400];
    fprintf(f, "%s -> %s %s [", mil_interp_op_label(op, label, sizeof label),
            op->outputs[k]->name ? op->outputs[k]->name : "?", mil_dtype_name(s->dtype));
    for (int i = 0; i < s->shape.rank; i++) fprintf(f, "%s%lld", i ? ", " : "", (long long)s->shape.d[i]);
    if (first) fprintf(f, "] no finite value, %zu inf, %zu nan\n", n_inf, n_nan);
    else fprintf(f, "] %.6g .. %.6g, %zu inf, %zu nan\n", lo, hi, n_inf, n_nan);
}

static nc_status exec_plan(mil_interp *it, op_plan *p, nc_error *err) {
    NC_TRY(p->fn(it, p, err));
    for (int k = 0; k < p->op->n_outputs; k++) {
        mil_slot *s = mil_interp_slot(it, p->op->outputs[k]);
        if (!s->has_value) continue;
        NC_TRY(check_declared(p->op, k, s, err));
        if (it->mode == MIL_INTERP_FP16 && s->dtype == MIL_DT_FP16)
            round_fp16(s->data, mil_kshape_count(&s->shape));
        if (it->trace && !s->str) trace_output(it->trace, p->op, k, s);
    }
    return NC_OK;
}

/* ---- prepare ---- */

static int is_stateful(const mil_op *op) {
    return !strcmp(op->type, "read_state") || !strcmp(op->type, "write_state");
}

/* All argument variables are compile-time constants (attribute-form
 * constexpr ops have none). */
static int inputs_all_const(mil_interp *it, const mil_op *op) {
    for (int a = 0; a < op->n_args; a++)
        for (int j = 0; j < op->args[a].n_items; j++) {
            const mil_slot *s = mil_interp_slot(it, op->args[a].items[j]);
            if (!s || !s->is_const) return 0;
        }
    return 1;
}

/* Constants that only fed constant-folded constexpr ops (a palettized
 * weight's indices and tables once expanded) are never read again: their
 * storage goes, so a function holds each weight once, expanded. An op whose
 * outputs are constant was folded; any other use keeps a value. */
static void release_folded_inputs(mil_interp *it) {
    const mil_function *fn = it->fn;
    char *use = calloc((size_t)(fn->n_vars ? fn->n_vars : 1), 1); /* 1 needed, 2 only folded */
    if (!use) return;                                             /* keeping them is only a waste */
    for (int k = 0; k < fn->n_ops; k++) {
        const mil_op *op = fn->ops[k];
        const mil_slot *o = op->n_outputs > 0 ? mil_interp_slot(it, op->outputs[0]) : NULL;
        int folded = o && o->is_const, cx = folded && !strncmp(op->type, "constexpr_", 10);
        for (int a = 0; a < op->n_args; a++)
            for (int j = 0; j < op->args[a].n_items; j++) {
                const mil_slot *s = mil_interp_slot(it, op->args[a].items[j]);
                if (s && !folded)
                    use[s - it->slots] = 1;
                else if (s && cx && !use[s - it->slots])
                    use[s - it->slots] = 2;
            }
    }
    for (int i = 0; i < fn->n_outputs; i++) {
        const mil_slot *s = mil_interp_slot(it, fn->outputs[i]);
        if (s) use[s - it->slots] = 1;
    }
    for (int i = 0; i < it->n_slots; i++)
        if (use[i] == 2) {
            free(it->slots[i].data);
            it->slots[i].data = NULL;
            it->slots[i].cap = 0;
            it->slots[i].has_value = 0;
        }
    free(use);
}

static nc_status prepare(mil_interp *it, nc_error *err) {
    const mil_function *fn = it->fn;
    it->n_slots = fn->n_vars;
    it->slots = calloc((size_t)(fn->n_vars ? fn->n_vars : 1), sizeof *it->slots);
    it->plans = calloc((size_t)(fn->n_ops ? fn->n_ops : 1), sizeof *it->plans);
    if (!it->slots || !it->plans) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    for (int i = 0; i < fn->n_vars; i++) {
        const mil_var *v = fn->vars[i];
        mil_slot *s = &it->slots[i];
        const mil_type *t = tensor_type_of(v->type);
        s->dtype = t && (t->kind == MIL_TYPE_TENSOR || t->kind == MIL_TYPE_BUFFER) ? t->dtype
                                                                                   : MIL_DT_INVALID;
        s->is_int = !mil_dtype_is_float(s->dtype);
        if (v->cval) {
            nc_status st = mil_interp_load_value(it, v->cval, s, err);
            if (st != NC_OK) {
                if (v->def) {
                    char label[400];
                    return nc_fail_prefix(err, "%s", mil_interp_op_label(v->def, label, sizeof label));
                }
                return nc_fail_prefix(err, "%s: literal", fn->name);
            }
            if (it->mode == MIL_INTERP_FP16 && s->dtype == MIL_DT_FP16 && !s->str)
                round_fp16(s->data, mil_kshape_count(&s->shape));
        } else if (v->is_input && v->type && v->type->kind == MIL_TYPE_STATE && t &&
                   t->kind == MIL_TYPE_TENSOR && t->rank <= MIL_K_MAX_RANK && mil_type_numel(t) >= 0 &&
                   (!it->max_elements || mil_type_numel(t) <= (int64_t)it->max_elements)) {
            /* states start at zero until bound */
            mil_kshape shape;
            shape_from_type(t, &shape);
            NC_TRY(slot_set_shape(s, &shape, err));
            memset(s->data, 0, mil_kshape_count(&shape) * 4);
            s->has_value = 1;
        }
    }
    for (int k = 0; k < fn->n_ops; k++) {
        const mil_op *op = fn->ops[k];
        if (!strcmp(op->type, "const")) {
            for (int o = 0; o < op->n_outputs; o++) {
                mil_slot *s = mil_interp_slot(it, op->outputs[o]);
                const mil_value *val = mil_op_attr(op, "val");
                if (!s->has_value && val) {
                    nc_status st = mil_interp_load_value(it, val, s, err);
                    if (st != NC_OK) {
                        char label[400];
                        return nc_fail_prefix(err, "%s", mil_interp_op_label(op, label, sizeof label));
                    }
                }
                if (!s->has_value)
                    return mil_interp_fail(err, NC_ERR_FORMAT, op, "const without a value");
            }
            continue;
        }
        op_plan p = {op, mil_interp_lookup(op->type), -1, {NULL, NULL, NULL}, {0, 0, 0}};
        if (!p.fn) return mil_interp_fail(err, NC_ERR_UNSUPPORTED, op, "op type not supported by the interpreter");
        if (!is_stateful(op) && op->n_outputs > 0 && inputs_all_const(it, op)) {
            /* constant folding: computed once here, never again */
            nc_status st = exec_plan(it, &p, err);
            for (int s = 0; s < 3; s++) free(p.scratch[s]);
            if (st != NC_OK) return st;
            for (int o = 0; o < op->n_outputs; o++) mil_interp_slot(it, op->outputs[o])->is_const = 1;
            continue;
        }
        it->plans[it->n_plans++] = p;
    }
    release_folded_inputs(it);
    return NC_OK;
}

nc_status mil_interp_new(const mil_program *prog, const char *fn_name, mil_interp_mode mode,
                         mil_interp **out, nc_error *err) {
    return mil_interp_new_limited(prog, fn_name, mode, 0, out, err);
}

nc_status mil_interp_new_limited(const mil_program *prog, const char *fn_name,
                                 mil_interp_mode mode, size_t max_elements, mil_interp **out,
                                 nc_error *err) {
    *out = NULL;
    const mil_function *fn = NULL;
    if (fn_name) fn = mil_program_function(prog, fn_name);
    else {
        fn = mil_program_function(prog, "main");
        if (!fn && prog->n_functions == 1) fn = prog->functions[0];
    }
    if (!fn)
        return nc_fail(err, NC_ERR_NOT_FOUND, "%s: no function '%s'",
                       prog->source ? prog->source : "program", fn_name ? fn_name : "main");
    mil_interp *it = calloc(1, sizeof *it);
    if (!it) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    it->prog = prog;
    it->fn = fn;
    it->mode = mode;
    it->max_elements = max_elements;
    nc_status st = prepare(it, err);
    if (st != NC_OK) {
        mil_interp_free(it);
        return st;
    }
    *out = it;
    return NC_OK;
}

void mil_interp_free(mil_interp *it) {
    if (!it) return;
    for (int i = 0; i < it->n_slots; i++) free(it->slots[i].data);
    for (int i = 0; i < it->n_plans; i++)
        for (int s = 0; s < 3; s++) free(it->plans[i].scratch[s]);
    free(it->slots);
    free(it->plans);
    free(it);
}

const mil_function *mil_interp_function(const mil_interp *it) { return it->fn; }
mil_interp_mode mil_interp_get_mode(const mil_interp *it) { return it->mode; }
void mil_interp_set_pool(mil_interp *it, nc_pool *pool) { it->pool = pool; }
void mil_interp_set_trace(mil_interp *it, FILE *f) { it->trace = f; }

/* ---- inputs and outputs ---- */

static size_t dtype_bytes_in(mil_dtype dt) {
    switch (dt) {
    case MIL_DT_FP16: case MIL_DT_INT16: case MIL_DT_UINT16: case MIL_DT_BF16: return 2;
    case MIL_DT_FP32: case MIL_DT_INT32: case MIL_DT_UINT32: return 4;
    case MIL_DT_FP64: case MIL_DT_INT64: case MIL_DT_UINT64: return 8;
    case MIL_DT_INT8: case MIL_DT_UINT8: case MIL_DT_BOOL: return 1;
    default: return 0;
    }
}

nc_status mil_interp_set_input(mil_interp *it, const char *name, mil_dtype dtype, int rank,
                               const int64_t *shape, const void *data, nc_error *err) {
    const mil_var *v = NULL;
    for (int i = 0; i < it->fn->n_inputs; i++)
        if (!strcmp(it->fn->inputs[i]->name, name)) v = it->fn->inputs[i];
    if (!v) return nc_fail(err, NC_ERR_NOT_FOUND, "function '%s' has no input '%s'", it->fn->name, name);
    const mil_type *t = tensor_type_of(v->type);
    if (!t || (t->kind != MIL_TYPE_TENSOR && t->kind != MIL_TYPE_BUFFER))
        return nc_fail(err, NC_ERR_UNSUPPORTED, "input '%s': only tensor inputs can be bound", name);
    if (dtype_bytes_in(dtype) == 0)
        return nc_fail(err, NC_ERR_UNSUPPORTED, "input '%s': data of dtype %s", name, mil_dtype_name(dtype));
    if (mil_dtype_is_float(t->dtype) != mil_dtype_is_float(dtype) && t->dtype != MIL_DT_BOOL)
        return nc_fail(err, NC_ERR_INVALID, "input '%s' is %s, data is %s", name,
                       mil_dtype_name(t->dtype), mil_dtype_name(dtype));
    int ok = rank == t->rank && rank <= MIL_K_MAX_RANK;
    for (int i = 0; ok && i < rank; i++)
        if (shape[i] < 0 || (t->dims[i] >= 0 && t->dims[i] != shape[i])) ok = 0;
    if (!ok) {
        char decl[200];
        return nc_fail(err, NC_ERR_INVALID, "input '%s': data of rank %d does not fit type %s", name,
                       rank, mil_type_str(t, decl, sizeof decl));
    }
    mil_slot *s = mil_interp_slot(it, v);
    mil_kshape ks = {rank, {0}};
    for (int i = 0; i < rank; i++) ks.d[i] = shape[i];
    if (it->max_elements && mil_kshape_count(&ks) > it->max_elements)
        return nc_fail(err, NC_ERR_RANGE, "input '%s' is above the limit of %zu elements", name,
                       it->max_elements);
    NC_TRY(slot_set_shape(s, &ks, err));
    size_t n = mil_kshape_count(&ks);
    NC_TRY(convert_in(dtype, data, n, s->is_int, s->data, err));
    if (it->mode == MIL_INTERP_FP16 && s->dtype == MIL_DT_FP16) round_fp16(s->data, n);
    s->has_value = 1;
    return NC_OK;
}

nc_status mil_interp_run(mil_interp *it, nc_error *err) {
    for (int i = 0; i < it->fn->n_inputs; i++) {
        const mil_var *v = it->fn->inputs[i];
        if (!it->slots[v->id].has_value)
            return nc_fail(err, NC_ERR_INVALID, "input '%s' of function '%s' is not set", v->name,
                           it->fn->name);
    }
    for (int k = 0; k < it->n_plans; k++) NC_TRY(exec_plan(it, &it->plans[k], err));
    return NC_OK;
}

nc_status mil_interp_get(const mil_interp *it, const char *name, mil_interp_view *out,
                         nc_error *err) {
    const mil_var *v = mil_function_var(it->fn, name);
    if (!v) return nc_fail(err, NC_ERR_NOT_FOUND, "function '%s' has no variable '%s'", it->fn->name, name);
    const mil_slot *s = &it->slots[v->id];
    if (!s->has_value || s->str)
        return nc_fail(err, NC_ERR_INVALID, "variable '%s' holds no tensor (not run yet?)", name);
    memset(out, 0, sizeof *out);
    out->dtype = s->dtype;
    out->rank = s->shape.rank;
    for (int i = 0; i < s->shape.rank; i++) out->shape[i] = s->shape.d[i];
    out->count = mil_kshape_count(&s->shape);
    if (s->is_int) out->i32 = s->data;
    else out->f32 = s->data;
    return NC_OK;
}

nc_status mil_interp_copy_out(const mil_interp *it, const char *name, mil_dtype dtype, void *dst,
                              size_t max_count, nc_error *err) {
    mil_interp_view v;
    NC_TRY(mil_interp_get(it, name, &v, err));
    if (v.count > max_count)
        return nc_fail(err, NC_ERR_RANGE, "output '%s' has %zu elements, room for %zu", name, v.count,
                       max_count);
    for (size_t i = 0; i < v.count; i++) {
        float f = v.f32 ? v.f32[i] : (float)v.i32[i];
        int32_t q = v.i32 ? v.i32[i] : (f != f || f >= 2147483648.0f || f < -2147483648.0f) ? 0 : (int32_t)f;
        switch (dtype) {
        case MIL_DT_FP16: ((uint16_t *)dst)[i] = nc_f32_to_fp16(f); break;
        case MIL_DT_FP32: ((float *)dst)[i] = f; break;
        case MIL_DT_INT32: ((int32_t *)dst)[i] = q; break;
        case MIL_DT_BOOL: ((uint8_t *)dst)[i] = v.f32 ? f != 0 : q != 0; break;
        default:
            return nc_fail(err, NC_ERR_UNSUPPORTED, "output '%s': copy to %s", name, mil_dtype_name(dtype));
        }
    }
    return NC_OK;
}

mil_exec_fn mil_interp_lookup(const char *type) {
    mil_exec_fn f = mil_interp_lookup_math(type);
    if (!f) f = mil_interp_lookup_layout(type);
    if (!f) f = mil_interp_lookup_const(type);
    return f;
}
