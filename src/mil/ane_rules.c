/* The ANE rules (see ane_rules.h): a table of rows and the checks they
 * name. Each check walks one function and reports with the op's (or the
 * function's) line. Sources: docs/ane-rules.md (the facts, and the same table in
 * prose) and docs/references.md §0, §7, §8. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "mil/ane_rules.h"
#include "mil/ops.h"

static void report_v(mil_ane_ctx *c, mil_severity sev, int line, const char *fmt, va_list ap) {
    char msg[400];
    vsnprintf(msg, sizeof msg, fmt, ap);
    if (c->rule->suggestion)
        mil_diag_add(c->diags, sev, c->rule->id, c->prog->source, line, "%s; %s", msg,
                     c->rule->suggestion);
    else
        mil_diag_add(c->diags, sev, c->rule->id, c->prog->source, line, "%s", msg);
}

void mil_ane_report(mil_ane_ctx *c, int line, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    report_v(c, c->rule->severity, line, fmt, ap);
    va_end(ap);
}

void mil_ane_report_sev(mil_ane_ctx *c, mil_severity sev, int line, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    report_v(c, sev, line, fmt, ap);
    va_end(ap);
}

/* ---- helpers ---- */

static const mil_type *tensor_of(const mil_type *t) {
    if (t && t->kind == MIL_TYPE_STATE && t->n_elems > 0) return t->elems[0];
    return t;
}

static int is_const_var(const mil_var *v) {
    return v->cval || (v->def && v->def->def && (v->def->def->flags & MIL_OP_CONSTEXPR)) ||
           (v->def && !strcmp(v->def->type, "const"));
}

static int is_compile_time_op(const mil_op *op) {
    return !strcmp(op->type, "const") || !strncmp(op->type, "constexpr_", 10);
}

static int is_fn_output(const mil_function *fn, const mil_var *v) {
    for (int i = 0; i < fn->n_outputs; i++)
        if (fn->outputs[i] == v) return 1;
    return 0;
}

static const char *vname(const mil_var *v) {
    return v->name ? v->name : "(literal)";
}

static char *label(const mil_op *op, char *buf, size_t n) {
    return (char *)mil_op_label(op, buf, n);
}

/* Line of the op that defines v, else the function's. */
static int var_line(const mil_function *fn, const mil_var *v) {
    return v->def && v->def->line ? v->def->line : fn->line;
}

/* ---- error rules ---- */

/* fp16 compute: outside compile-time ops and boundary casts, every op result
 * is fp16 (bool and int8/uint8 activations allowed) and no float input is
 * wider than fp16. */
static void r_fp16_compute(mil_ane_ctx *c) {
    const mil_function *fn = c->fn;
    char lb[200];
    for (int k = 0; k < fn->n_ops; k++) {
        const mil_op *op = fn->ops[k];
        if (is_compile_time_op(op)) continue;
        if (!strcmp(op->type, "cast")) {
            const mil_var *x = mil_op_input(op, "x");
            if (!x || op->n_outputs < 1) continue;
            const mil_type *ti = x->type, *to = op->outputs[0]->type;
            mil_dtype di = ti ? ti->dtype : MIL_DT_INVALID, dout = to ? to->dtype : MIL_DT_INVALID;
            int in_ok = di == MIL_DT_FP16 || di == MIL_DT_BOOL || x->is_input || is_const_var(x);
            int out_ok =
                dout == MIL_DT_FP16 || dout == MIL_DT_BOOL || is_fn_output(fn, op->outputs[0]);
            if (!in_ok)
                mil_ane_report(c, op->line,
                               "%s: casts %s '%s' inside the program; %s is allowed only "
                               "at the boundary (a function input cast at once)",
                               label(op, lb, sizeof lb), mil_dtype_name(di), vname(x),
                               mil_dtype_name(di));
            else if (!out_ok)
                mil_ane_report(c, op->line,
                               "%s: produces %s inside the program; %s is allowed only as "
                               "a function output",
                               label(op, lb, sizeof lb), mil_dtype_name(dout),
                               mil_dtype_name(dout));
            continue;
        }
        int reported = 0;
        for (int o = 0; o < op->n_outputs && !reported; o++) {
            const mil_type *t = tensor_of(op->outputs[o]->type);
            if (!t || t->kind != MIL_TYPE_TENSOR) continue;
            mil_dtype dt = t->dtype;
            if (dt == MIL_DT_FP16 || dt == MIL_DT_BOOL || dt == MIL_DT_INT8 || dt == MIL_DT_UINT8)
                continue;
            mil_ane_report(c, op->line,
                           "%s: computes in %s (output '%s'); the ANE computes fp16 only",
                           label(op, lb, sizeof lb), mil_dtype_name(dt), vname(op->outputs[o]));
            reported = 1;
        }
        for (int a = 0; a < op->n_args && !reported; a++)
            for (int j = 0; j < op->args[a].n_items && !reported; j++) {
                const mil_var *v = op->args[a].items[j];
                const mil_type *t = tensor_of(v->type);
                if (!t || t->kind != MIL_TYPE_TENSOR || !mil_dtype_is_float(t->dtype) ||
                    t->dtype == MIL_DT_FP16)
                    continue;
                mil_ane_report(c, op->line, "%s: argument '%s' is %s; the ANE computes fp16 only",
                               label(op, lb, sizeof lb), op->args[a].name,
                               mil_dtype_name(t->dtype));
                reported = 1;
            }
    }
}

/* I/O dtypes: fp16, or fp32/int32 immediately cast (inputs: every use is a
 * cast; outputs: produced by a cast). bool has its own rule. */
static void r_boundary_io(mil_ane_ctx *c) {
    const mil_function *fn = c->fn;
    char lb[200];
    for (int i = 0; i < fn->n_inputs; i++) {
        const mil_var *v = fn->inputs[i];
        const mil_type *t = v->type;
        if (!t || t->kind == MIL_TYPE_STATE) continue;
        mil_dtype dt = t->dtype;
        if (dt == MIL_DT_FP16 || dt == MIL_DT_BOOL) continue;
        if (dt != MIL_DT_FP32 && dt != MIL_DT_INT32) {
            mil_ane_report(c, fn->line,
                           "input '%s' is %s; program inputs must be fp16 (or fp32/int32 "
                           "cast at once)",
                           v->name, mil_dtype_name(dt));
            continue;
        }
        for (int k = 0; k < fn->n_ops; k++) {
            const mil_op *op = fn->ops[k];
            int uses = 0;
            for (int a = 0; a < op->n_args; a++)
                for (int j = 0; j < op->args[a].n_items; j++)
                    if (op->args[a].items[j] == v) uses = 1;
            if (uses && strcmp(op->type, "cast")) {
                mil_ane_report(c, op->line,
                               "input '%s' is %s and used by %s; fp32/int32 inputs must "
                               "be cast to fp16 at once",
                               v->name, mil_dtype_name(dt), label(op, lb, sizeof lb));
                break;
            }
        }
    }
    for (int i = 0; i < fn->n_outputs; i++) {
        const mil_var *v = fn->outputs[i];
        const mil_type *t = v->type;
        if (!t || t->kind != MIL_TYPE_TENSOR || t->dtype == MIL_DT_FP16 || t->dtype == MIL_DT_BOOL)
            continue;
        int cast_out = v->def && !strcmp(v->def->type, "cast") &&
                       (t->dtype == MIL_DT_FP32 || t->dtype == MIL_DT_INT32);
        if (!cast_out)
            mil_ane_report(c, var_line(fn, v),
                           "output '%s' is %s; program outputs must be fp16 (or "
                           "fp32/int32 produced by a final cast)",
                           v->name, mil_dtype_name(t->dtype));
    }
}

static void r_no_bool_io(mil_ane_ctx *c) {
    const mil_function *fn = c->fn;
    for (int i = 0; i < fn->n_inputs; i++) {
        const mil_type *t = tensor_of(fn->inputs[i]->type);
        if (t && t->dtype == MIL_DT_BOOL)
            mil_ane_report(c, fn->line, "input '%s' is bool", fn->inputs[i]->name);
    }
    for (int i = 0; i < fn->n_outputs; i++) {
        const mil_type *t = fn->outputs[i]->type;
        if (t && t->kind == MIL_TYPE_TENSOR && t->dtype == MIL_DT_BOOL)
            mil_ane_report(c, var_line(fn, fn->outputs[i]), "output '%s' is bool",
                           fn->outputs[i]->name);
    }
}

static void io_width(mil_ane_ctx *c, const mil_var *v, const char *what, int line) {
    const mil_type *t = tensor_of(v->type);
    if (!t || (t->kind != MIL_TYPE_TENSOR && t->kind != MIL_TYPE_BUFFER)) return;
    if (t->rank == 0) {
        mil_ane_report(c, line,
                       "%s '%s' is a scalar; its last axis must be >= 32 and a multiple of 32",
                       what, v->name);
        return;
    }
    int64_t w = t->dims[t->rank - 1];
    if (w < 0) return; /* unknown: the static-dims rule reports it */
    if (w < 32 || w % 32)
        mil_ane_report(c, line,
                       "%s '%s' has last axis %lld; it must be >= 32 and a multiple of 32 "
                       "(64-byte rows)",
                       what, v->name, (long long)w);
}

static void r_io_width(mil_ane_ctx *c) {
    const mil_function *fn = c->fn;
    for (int i = 0; i < fn->n_inputs; i++)
        io_width(c, fn->inputs[i], "input", fn->line);
    for (int i = 0; i < fn->n_outputs; i++)
        io_width(c, fn->outputs[i], "output", var_line(fn, fn->outputs[i]));
}

static void report_op_types(mil_ane_ctx *c, const char *const *types, const char *why) {
    char lb[200];
    for (int k = 0; k < c->fn->n_ops; k++)
        for (int i = 0; types[i]; i++)
            if (!strcmp(c->fn->ops[k]->type, types[i]))
                mil_ane_report(c, c->fn->ops[k]->line, "%s: %s",
                               label(c->fn->ops[k], lb, sizeof lb), why);
}

static void r_no_scatter(mil_ane_ctx *c) {
    static const char *const types[] = {"scatter", "scatter_along_axis", "scatter_nd",
                                        "slice_update", NULL};
    report_op_types(c, types, "rejected by the ANE compiler");
}

static void r_no_state(mil_ane_ctx *c) {
    static const char *const types[] = {"read_state", "write_state", NULL};
    for (int i = 0; i < c->fn->n_inputs; i++)
        if (c->fn->inputs[i]->type && c->fn->inputs[i]->type->kind == MIL_TYPE_STATE)
            mil_ane_report(c, c->fn->line, "input '%s' is a state", c->fn->inputs[i]->name);
    report_op_types(c, types, "stateful programs are rejected on this path");
}

/* 1 when the value tree holds the string s. */
static int value_has_string(const mil_value *v, const char *s, int depth) {
    if (!v || depth > 16) return 0;
    const char *str = mil_value_str(v);
    if (str && !strcmp(str, s)) return 1;
    if (v->kind == MIL_VALUE_TENSOR && v->strs)
        for (size_t i = 0; i < v->n; i++)
            if (v->strs[i] && !strcmp(v->strs[i], s)) return 1;
    size_t n = v->kind == MIL_VALUE_DICT ? 2 * v->n : v->n;
    if (v->kind == MIL_VALUE_LIST || v->kind == MIL_VALUE_TUPLE || v->kind == MIL_VALUE_DICT)
        for (size_t i = 0; i < n; i++)
            if (value_has_string(v->items[i], s, depth + 1)) return 1;
    return 0;
}

static void r_no_range_dims(mil_ane_ctx *c) {
    const mil_value *f = mil_function_attr(c->fn, "FlexibleShapeInformation");
    if (value_has_string(f, "RangeDims", 0))
        mil_ane_report(c, c->fn->line, "function '%s' has RangeDims flexible shapes", c->fn->name);
}

static int has_unknown_dim(const mil_type *t) {
    t = tensor_of(t);
    if (!t || (t->kind != MIL_TYPE_TENSOR && t->kind != MIL_TYPE_BUFFER)) return 0;
    for (int i = 0; i < t->rank; i++)
        if (t->dims[i] < 0) return 1;
    return 0;
}

static void r_static_dims(mil_ane_ctx *c) {
    const mil_function *fn = c->fn;
    char lb[200];
    /* EnumeratedShapes programs declare `?` on purpose; the ANE takes them */
    if (value_has_string(mil_function_attr(fn, "FlexibleShapeInformation"), "EnumeratedShapes", 0))
        return;
    for (int i = 0; i < fn->n_inputs; i++)
        if (has_unknown_dim(fn->inputs[i]->type))
            mil_ane_report(c, fn->line, "input '%s' has a `?` dimension", fn->inputs[i]->name);
    for (int k = 0; k < fn->n_ops; k++)
        for (int o = 0; o < fn->ops[k]->n_outputs; o++)
            if (has_unknown_dim(fn->ops[k]->outputs[o]->type)) {
                mil_ane_report(c, fn->ops[k]->line, "%s: output '%s' has a `?` dimension",
                               label(fn->ops[k], lb, sizeof lb), vname(fn->ops[k]->outputs[o]));
                break;
            }
}

static void r_gather_indices(mil_ane_ctx *c) {
    char lb[200];
    for (int k = 0; k < c->fn->n_ops; k++) {
        const mil_op *op = c->fn->ops[k];
        if (strcmp(op->type, "gather") && strcmp(op->type, "gather_along_axis") &&
            strcmp(op->type, "gather_nd"))
            continue;
        const mil_var *ix = mil_op_input(op, "indices"), *x = mil_op_input(op, "x");
        if (!ix || !ix->type) continue;
        mil_dtype dt = ix->type->dtype;
        /* The ANE compiler's own words for int32 indices, constant or not:
         * "Unsupported tensor data type: int32" (the ANECCompile debug log in
         * the reverse-engineering article); int32 is for shapes only. */
        if (dt == MIL_DT_INT32 || dt == MIL_DT_UINT32 || dt == MIL_DT_INT64) {
            mil_ane_report(c, op->line,
                           "%s: %s indices ('%s', %s); the ANE compiler refuses them "
                           "(\"Unsupported tensor data type: int32\"): use uint16 (axes up to "
                           "65,536) or int16",
                           label(op, lb, sizeof lb), mil_dtype_name(dt), vname(ix),
                           is_const_var(ix) ? "a constant"
                           : ix->is_input   ? "an input"
                                            : "computed");
            continue;
        }
        /* a chip whose probe found 16-bit indices failing */
        const char *probe = dt == MIL_DT_UINT16  ? "gather_uint16"
                            : dt == MIL_DT_INT16 ? "gather_int16"
                                                 : NULL;
        if (probe && mil_ane_profile_verdict(c->profile, probe) == MIL_PROBE_FAILED) {
            mil_ane_report(c, op->line, "%s: %s indices failed on this chip (probe case %s)",
                           label(op, lb, sizeof lb), mil_dtype_name(dt), probe);
            continue;
        }
        int64_t reach = dt == MIL_DT_UINT16  ? 65536
                        : dt == MIL_DT_INT16 ? 32768
                        : dt == MIL_DT_UINT8 ? 256
                        : dt == MIL_DT_INT8  ? 128
                                             : 0;
        int64_t axis = 0;
        const mil_var *av = mil_op_input(op, "axis");
        if (av && av->cval) mil_value_to_i64(c->prog, av->cval, 0, &axis, NULL);
        const mil_type *xt = x ? x->type : NULL;
        if (!reach || !xt || xt->kind != MIL_TYPE_TENSOR || xt->rank == 0) continue;
        if (axis < 0) axis += xt->rank;
        if (axis < 0 || axis >= xt->rank) continue;
        if (xt->dims[axis] > reach)
            mil_ane_report(c, op->line, "%s: %s indices cannot address axis %lld of size %lld",
                           label(op, lb, sizeof lb), mil_dtype_name(dt), (long long)axis,
                           (long long)xt->dims[axis]);
    }
}

static void r_conv_kernel_width(mil_ane_ctx *c) {
    char lb[200];
    for (int k = 0; k < c->fn->n_ops; k++) {
        const mil_op *op = c->fn->ops[k];
        if (strcmp(op->type, "conv")) continue;
        const mil_var *w = mil_op_input(op, "weight");
        if (!w || !w->type || w->type->kind != MIL_TYPE_TENSOR || w->type->rank < 3) continue;
        int64_t kw = w->type->dims[w->type->rank - 1];
        if (kw > 15)
            mil_ane_report(c, op->line, "%s: kernel width %lld is above 15",
                           label(op, lb, sizeof lb), (long long)kw);
    }
}

/* Weights baked at compile time: a conv's weight comes from a const (or
 * constexpr); runtime weights compile but are ignored. */
static void r_conv_const_weight(mil_ane_ctx *c) {
    char lb[200];
    for (int k = 0; k < c->fn->n_ops; k++) {
        const mil_op *op = c->fn->ops[k];
        if (strcmp(op->type, "conv")) continue;
        const mil_var *w = mil_op_input(op, "weight");
        if (w && !is_const_var(w))
            mil_ane_report(c, op->line,
                           "%s: weight '%s' is computed at run time; the ANE uses weights "
                           "baked in at compile time and ignores these",
                           label(op, lb, sizeof lb), vname(w));
    }
}

/* Palettized weights (constexpr_lut_to_dense): fp16 tables of scalar
 * entries indexed by 1/2/4/6/8-bit indices are what coremltools' ANE
 * palettization writes (the compiled conformer in docs/ane-rules.md:
 * uint4 into fp16 [64, 1, 16, 1]). An fp32 table expands to fp32 weights
 * (error); uint3 indices, int8/uint8 tables (iOS18 joint compression) and
 * vector entries are valid MIL that no ANE program we know uses (warning). */
static void r_lut(mil_ane_ctx *c) {
    char lb[200];
    for (int k = 0; k < c->fn->n_ops; k++) {
        const mil_op *op = c->fn->ops[k];
        if (strcmp(op->type, "constexpr_lut_to_dense")) continue;
        const mil_var *iv = mil_op_input(op, "indices"), *lv = mil_op_input(op, "lut");
        const mil_value *ia = mil_op_attr(op, "indices"), *la = mil_op_attr(op, "lut");
        const mil_type *it = iv ? iv->type : ia ? ia->type : NULL;
        const mil_type *lt = lv ? lv->type : la ? la->type : NULL;
        if (!it || !lt || lt->kind != MIL_TYPE_TENSOR) continue;
        mil_dtype ld = lt->dtype, id = it->dtype;
        if (mil_dtype_is_float(ld) && ld != MIL_DT_FP16) {
            mil_ane_report(c, op->line, "%s: %s look-up table expands to %s weights",
                           label(op, lb, sizeof lb), mil_dtype_name(ld), mil_dtype_name(ld));
            continue;
        }
        if (ld != MIL_DT_FP16)
            mil_ane_report_sev(c, MIL_SEV_WARNING, op->line,
                               "%s: %s look-up table (joint compression) is unverified on the ANE",
                               label(op, lb, sizeof lb), mil_dtype_name(ld));
        /* the probe case of this palette size, where the chip's profile has it failing */
        int64_t npal = lt->rank >= 2 ? lt->dims[lt->rank - 2] : lt->rank == 1 ? lt->dims[0] : 0;
        const char *probe = npal == 16 ? "palettized" : npal == 64 ? "palettized6_grouped"
                            : npal == 256 ? "palettized8_grouped" : NULL;
        if (probe && mil_ane_profile_verdict(c->profile, probe) == MIL_PROBE_FAILED)
            mil_ane_report(c, op->line,
                           "%s: %lld-entry palettized weights failed on this chip (probe case %s)",
                           label(op, lb, sizeof lb), (long long)npal, probe);
        if (iv && id == MIL_DT_UINT3) /* iOS18 form: typed indices */
            mil_ane_report_sev(c, MIL_SEV_WARNING, op->line,
                               "%s: 3-bit indices are unverified on the ANE",
                               label(op, lb, sizeof lb));
        if (iv && lt->rank >= 2 && lt->dims[lt->rank - 1] > 1)
            mil_ane_report_sev(c, MIL_SEV_WARNING, op->line,
                               "%s: vector palettization (entries of %lld values) is unverified "
                               "on the ANE",
                               label(op, lb, sizeof lb), (long long)lt->dims[lt->rank - 1]);
    }
}

/* matmul's inner (contracted) dimension, from the operands' declared types. */
static void r_matmul_inner(mil_ane_ctx *c) {
    char lb[200];
    for (int k = 0; k < c->fn->n_ops; k++) {
        const mil_op *op = c->fn->ops[k];
        if (strcmp(op->type, "matmul")) continue;
        const mil_var *x = mil_op_input(op, "x"), *tx = mil_op_input(op, "transpose_x");
        if (!x || !x->type || x->type->kind != MIL_TYPE_TENSOR || x->type->rank < 1) continue;
        int64_t t = 0;
        if (tx && tx->cval) mil_value_to_i64(c->prog, tx->cval, 0, &t, NULL);
        int r = x->type->rank;
        int64_t inner = (t && r >= 2) ? x->type->dims[r - 2] : x->type->dims[r - 1];
        if (inner > 0 && inner % 32)
            mil_ane_report(c, op->line,
                           "%s: inner dimension %lld is not a multiple of 32 (reported to "
                           "give zeros)",
                           label(op, lb, sizeof lb), (long long)inner);
    }
}

static int64_t max_dim(const mil_type *t) {
    t = tensor_of(t);
    int64_t m = 0;
    if (!t || (t->kind != MIL_TYPE_TENSOR && t->kind != MIL_TYPE_BUFFER)) return 0;
    for (int i = 0; i < t->rank; i++)
        if (t->dims[i] > m) m = t->dims[i];
    return m;
}

#define ANE_MAX_DIM 65536

static void r_max_dim(mil_ane_ctx *c) {
    const mil_function *fn = c->fn;
    char lb[200];
    for (int i = 0; i < fn->n_inputs; i++)
        if (max_dim(fn->inputs[i]->type) > ANE_MAX_DIM)
            mil_ane_report(c, fn->line, "input '%s' has a dimension of %lld (above %d)",
                           fn->inputs[i]->name, (long long)max_dim(fn->inputs[i]->type),
                           ANE_MAX_DIM);
    for (int k = 0; k < fn->n_ops; k++)
        for (int o = 0; o < fn->ops[k]->n_outputs; o++) {
            int64_t m = max_dim(fn->ops[k]->outputs[o]->type);
            if (m > ANE_MAX_DIM) {
                mil_ane_report(c, fn->ops[k]->line,
                               "%s: output '%s' has a dimension of %lld (above %d)",
                               label(fn->ops[k], lb, sizeof lb), vname(fn->ops[k]->outputs[o]),
                               (long long)m, ANE_MAX_DIM);
                break;
            }
        }
}

static void r_sdpa_mask(mil_ane_ctx *c) {
    char lb[200];
    for (int k = 0; k < c->fn->n_ops; k++) {
        const mil_op *op = c->fn->ops[k];
        if (!strcmp(op->type, "scaled_dot_product_attention") && mil_op_arg(op, "attn_mask"))
            mil_ane_report(c, op->line,
                           "%s: the ANE ignores attn_mask and returns unmasked attention",
                           label(op, lb, sizeof lb));
    }
}

/* ---- warning rules: one op type each ---- */

static void r_op_gelu(mil_ane_ctx *c) {
    static const char *const t[] = {"gelu", NULL};
    report_op_types(c, t, "gelu fails to compile on some chips");
}
static void r_op_tile(mil_ane_ctx *c) {
    static const char *const t[] = {"tile", NULL};
    report_op_types(c, t, "tile is reported to corrupt ANE state until the process exits");
}
static void r_op_reduce_mean(mil_ane_ctx *c) {
    static const char *const t[] = {"reduce_mean", NULL};
    report_op_types(c, t, "reduce_mean compiles but fails at dispatch on some chips");
}
static void r_op_concat(mil_ane_ctx *c) {
    static const char *const t[] = {"concat", NULL};
    report_op_types(c, t, "sources disagree on concat (rejected in one, used widely in another)");
}
static void r_op_exp(mil_ane_ctx *c) {
    static const char *const t[] = {"exp", NULL};
    report_op_types(c, t,
                    "sources disagree on exp (\"no transcendentals\" vs used in working programs)");
}
static void r_op_sqrt(mil_ane_ctx *c) {
    static const char *const t[] = {"sqrt", NULL};
    report_op_types(c, t, "sources disagree on sqrt (\"no transcendentals\")");
}

/* The chip-dependent rules below report an error where the chip's probe
 * profile says the case failed, nothing where it passed, and their own
 * severity (a warning) without a profile. Returns the severity, or -1. */
static int profile_sev(const mil_ane_ctx *c, const char *probe) {
    mil_probe_verdict v = mil_ane_profile_verdict(c->profile, probe);
    return v == MIL_PROBE_OK       ? -1
           : v == MIL_PROBE_FAILED ? (int)MIL_SEV_ERROR
                                   : (int)c->rule->severity;
}

static void r_softmax_npot(mil_ane_ctx *c) {
    char lb[200];
    int sev = profile_sev(c, "softmax96");
    for (int k = 0; sev >= 0 && k < c->fn->n_ops; k++) {
        const mil_op *op = c->fn->ops[k];
        const mil_var *x = mil_op_input(op, "x");
        if (strcmp(op->type, "softmax") || !x || !x->type || x->type->kind != MIL_TYPE_TENSOR ||
            x->type->rank == 0)
            continue;
        int64_t axis = -1;
        const mil_var *av = mil_op_input(op, "axis");
        if (av && av->cval) mil_value_to_i64(c->prog, av->cval, 0, &axis, NULL);
        if (axis < 0) axis += x->type->rank;
        if (axis < 0 || axis >= x->type->rank) continue;
        int64_t d = x->type->dims[axis];
        if (d > 0 && (d & (d - 1)))
            mil_ane_report_sev(c, (mil_severity)sev, op->line,
                               "%s: softmax over %lld values, not a power of two",
                               label(op, lb, sizeof lb), (long long)d);
    }
}

int mil_function_is_elementwise_only(const mil_function *fn) {
    static const char *const anchors[] = {"conv", "matmul", "linear", "einsum", "conv_transpose"};
    for (int k = 0; k < fn->n_ops; k++)
        for (size_t a = 0; a < sizeof anchors / sizeof anchors[0]; a++)
            if (!strcmp(fn->ops[k]->type, anchors[a])) return 0;
    return fn->n_ops > 0;
}

/* A function with no conv/matmul/linear computes elementwise only. */
static void r_elementwise_only(mil_ane_ctx *c) {
    if (!mil_function_is_elementwise_only(c->fn)) return;
    int sev = profile_sev(c, "elementwise_only");
    if (sev >= 0)
        mil_ane_report_sev(c, (mil_severity)sev, c->fn->line,
                           "function '%s' is elementwise only (no conv or matmul)", c->fn->name);
}

static void r_silu(mil_ane_ctx *c) {
    char lb[200];
    if (mil_ane_profile_verdict(c->profile, "silu") != MIL_PROBE_FAILED) return;
    for (int k = 0; k < c->fn->n_ops; k++)
        if (!strcmp(c->fn->ops[k]->type, "silu"))
            mil_ane_report(c, c->fn->ops[k]->line, "%s: silu failed on this chip (probe case silu)",
                           label(c->fn->ops[k], lb, sizeof lb));
}

static const mil_ane_rule RULES[] = {
    {"ane-fp16-compute", MIL_SEV_ERROR,
     "every op computes in fp16; fp32/int32 appear only at the boundary, cast at once",
     r_fp16_compute, NULL,
     "docs/ane-rules.md; ane-bridge-rs (\"fp32 arithmetic is rejected\"), docs/references.md §8"},
    {"ane-boundary-io", MIL_SEV_ERROR,
     "program inputs/outputs are fp16, or fp32/int32 immediately cast", r_boundary_io,
     "cast fp32/int32 inputs to fp16 first and outputs back last",
     "docs/ane-rules.md; docs/references.md §0.5"},
    {"ane-no-bool-io", MIL_SEV_ERROR, "no bool program inputs or outputs", r_no_bool_io,
     "pass masks as fp16 0/1 and compare inside",
     "docs/ane-rules.md; MIL cheat sheet quoted in docs/references.md §4"},
    {"ane-io-width", MIL_SEV_ERROR, "every input/output's last axis is >= 32 and a multiple of 32",
     r_io_width, "pad the last axis (a logical [256, 1] occupies [256, 32])",
     "docs/ane-rules.md; ane-bridge-rs WIDTH_ALIGN = 32, docs/references.md §7"},
    {"ane-no-scatter", MIL_SEV_ERROR, "no scatter, scatter_along_axis, scatter_nd or slice_update",
     r_no_scatter, "update a KV cache with gather + select on a bool mask (docs/ane-rules.md)",
     "docs/ane-rules.md"},
    {"ane-no-state", MIL_SEV_ERROR, "no state inputs, read_state or write_state", r_no_state,
     "make the state an explicit input and output owned by the host",
     "docs/ane-rules.md; ane-bridge-rs (docs/references.md §8)"},
    {"ane-no-range-dims", MIL_SEV_ERROR, "no RangeDims flexible shapes", r_no_range_dims,
     "use EnumeratedShapes or one program per shape", "docs/ane-rules.md"},
    {"ane-static-dims", MIL_SEV_ERROR,
     "no `?` dimensions (unless the function has EnumeratedShapes)", r_static_dims,
     "give every dimension a size",
     "docs/ane-rules.md; \"any ? dimension yields InvalidMILProgram\" (docs/references.md §8)"},
    {"ane-gather-indices", MIL_SEV_ERROR,
     "gather indices are never int32 (constant or not); 16/8-bit indices must reach the whole axis",
     r_gather_indices,
     "uint16 indices (the KV spread), or keep the lookup (e.g. token embeddings) on the CPU",
     "docs/ane-rules.md; the article's ANECCompile log \"Unsupported tensor data type: int32\" "
     "(docs/ane-rules.md)"},
    {"ane-conv-kernel-width", MIL_SEV_ERROR, "conv kernel width <= 15", r_conv_kernel_width,
     "split the kernel into several convs added together",
     "docs/ane-rules.md; docs/references.md §8"},
    {"ane-conv-const-weight", MIL_SEV_ERROR, "conv weights are compile-time constants",
     r_conv_const_weight, "pass runtime weights to matmul instead (the \"dynamic\" pipeline)",
     "docs/ane-rules.md (weights as runtime inputs work only with matmul); skyfallsin "
     "(docs/references.md §8)"},
    {"ane-lut", MIL_SEV_ERROR,
     "palettized weights: fp16 tables of scalar entries (fp32 tables are errors; uint3 indices, "
     "int8/uint8 tables and vector entries warnings)",
     r_lut, "palettize with --palettize 8|6|4 (fp16 tables, scalar entries)",
     "docs/ane-rules.md; coremltools palettize_weights (nbits 1, 2, 4, 6, 8); a coremlc-compiled "
     "conformer encoder (uint4 indices, fp16 [64, 1, 16, 1] tables)"},
    {"ane-max-dim", MIL_SEV_ERROR, "no dimension above 65,536", r_max_dim,
     "split the tensor (e.g. the LM head into 16 vocabulary chunks)",
     "docs/ane-rules.md; maderix/ANE PR #26"},
    {"ane-sdpa-mask", MIL_SEV_ERROR, "scaled_dot_product_attention has no attn_mask", r_sdpa_mask,
     "write attention as matmul, add mask, softmax, matmul",
     "docs/ane-rules.md (the built-in SDPA ignores its mask)"},
    {"ane-matmul-inner", MIL_SEV_WARNING, "matmul inner dimension is a multiple of 32",
     r_matmul_inner, "pad the contracted axis to a multiple of 32 with zeros",
     "imperatormk in maderix/ANE #47 (docs/references.md §7), one report"},
    {"ane-gelu", MIL_SEV_WARNING, "gelu is reported to fail on some chips", r_op_gelu,
     "write it out: 0.5*x*(1+tanh(0.79788456*(x+0.044715*x^3))) with mul/add/tanh (keep EXACT "
     "behind a switch)",
     "docs/ane-rules.md; Orion constraint #10"},
    {"ane-tile", MIL_SEV_WARNING, "tile is reported to corrupt ANE state", r_op_tile,
     "broadcast instead (mul by ones, or concat copies)",
     "docs/ane-rules.md; skyfallsin field guide"},
    {"ane-reduce-mean", MIL_SEV_WARNING, "reduce_mean is reported to fail at dispatch",
     r_op_reduce_mean, "use reduce_sum then mul by 1/N",
     "docs/ane-rules.md; ane-bridge-rs, Espresso (hollance #44)"},
    {"ane-concat", MIL_SEV_WARNING, "concat: sources disagree", r_op_concat,
     "keep concat behind a switch; alternatives: separate outputs, or matmul with a placement "
     "matrix",
     "docs/ane-rules.md; Orion #1 vs maderix"},
    {"ane-exp", MIL_SEV_WARNING, "exp: sources disagree", r_op_exp,
     "keep exp behind a switch and subtract the max first (fp16 exp overflows above ~11)",
     "docs/ane-rules.md; ane-bridge-rs vs turbocider, Anemll"},
    {"ane-sqrt", MIL_SEV_WARNING, "sqrt: sources disagree", r_op_sqrt,
     "keep sqrt behind a switch; pow(x, 0.5) or rsqrt then mul are the alternatives",
     "docs/ane-rules.md; ane-bridge-rs vs maderix (pow)"},
    {"ane-softmax-npot", MIL_SEV_WARNING,
     "softmax over a length that is not a power of two (a probe profile settles it)",
     r_softmax_npot, "pad the axis to a power of two with -1e4 logits",
     "docs/ane-rules.md; Espresso in hollance/neural-engine #44; probe case softmax96"},
    {"ane-elementwise-only", MIL_SEV_WARNING,
     "a function with no conv or matmul (a probe profile settles it)", r_elementwise_only,
     "merge it into a neighbouring kernel (kv into attn), or anchor it with a conv",
     "docs/ane-rules.md; ane-bridge-rs: refused at load or left on the CPU; probe case "
     "elementwise_only"},
    {"ane-silu", MIL_SEV_ERROR, "silu, where the chip's probe profile found it failing", r_silu,
     "write it as sigmoid(x) * x", "docs/ane-rules.md; probe cases silu and sigmoid_mul"},
};

const mil_ane_rule *mil_ane_rules(int *n) {
    *n = (int)(sizeof RULES / sizeof RULES[0]);
    return RULES;
}

void mil_ane_check_function(const mil_program *prog, const mil_function *fn, const char *skip,
                            const mil_ane_profile *profile, mil_diagnostics *diags) {
    int n;
    const mil_ane_rule *rules = mil_ane_rules(&n);
    for (int i = 0; i < n; i++) {
        if (mil_check_rule_listed(skip, rules[i].id)) continue;
        mil_ane_ctx c = {prog, fn, &rules[i], diags, profile};
        rules[i].check(&c);
    }
}
