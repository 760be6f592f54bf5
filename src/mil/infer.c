/* Type and shape inference for every op in the table (see infer.h). Rules
 * follow coremltools' type_inference() of each op: NumPy broadcasting,
 * negative axes counted from the end, conv output sizes from
 * pad/stride/dilation, reshape's -1 and 0, split into several outputs. */
#include "mil/infer.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define MAXR 64 /* rank limit of inferred shapes */
#define UNK MIL_DIM_UNKNOWN

static nc_status fail(const mil_op *op, nc_error *err, const char *fmt, ...) NC_PRINTF(3, 4);
static nc_status fail(const mil_op *op, nc_error *err, const char *fmt, ...) {
    char label[160], msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return nc_fail(err, NC_ERR_INVALID, "%s: %s", mil_op_label(op, label, sizeof label), msg);
}

static nc_status emit(mil_program *prog, mil_infer_out *out, mil_dtype dt, int rank,
                      const int64_t *dims, nc_error *err) {
    const mil_type *t = mil_type_tensor(prog, dt, rank, dims);
    if (!t) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    if (out->n >= MIL_MAX_OUTPUTS) return nc_fail(err, NC_ERR_RANGE, "too many outputs");
    out->types[out->n++] = t;
    return NC_OK;
}

static nc_status emit_type(mil_infer_out *out, const mil_type *t) {
    out->types[out->n++] = t;
    return NC_OK;
}

/* The tensor type of a parameter (argument or constexpr attribute). */
static const mil_type *tensor_of(const mil_op *op, const char *name) {
    const mil_type *t = mil_op_operand_type(op, name);
    return t && t->kind == MIL_TYPE_TENSOR ? t : NULL;
}

static nc_status need_tensor(const mil_op *op, const char *name, int min_rank, const mil_type **t,
                             nc_error *err) {
    *t = tensor_of(op, name);
    if (!*t) return fail(op, err, "argument '%s' must be a tensor", name);
    if ((*t)->rank < min_rank)
        return fail(op, err, "argument '%s' must have rank >= %d, has %d", name, min_rank,
                    (*t)->rank);
    if ((*t)->rank > MAXR) return fail(op, err, "argument '%s' has too many dims", name);
    return NC_OK;
}

/* Reads an integer vector parameter. Returns 1 if known (values in v, count
 * in *n), 0 if absent, -1 if present but not a compile-time value. */
static int ints_of(const mil_program *prog, const mil_op *op, const char *name, int64_t *v, int max,
                   int *n) {
    const mil_value *val = mil_op_operand(op, name);
    *n = 0;
    if (!val) return mil_op_operand_type(op, name) ? -1 : 0;
    if (val->kind != MIL_VALUE_TENSOR && val->kind != MIL_VALUE_BLOB) return -1;
    if (val->n > (size_t)max) return -1;
    for (size_t i = 0; i < val->n; i++)
        if (mil_value_to_i64(prog, val, i, &v[i], NULL) != NC_OK) return -1;
    *n = (int)val->n;
    return 1;
}

static int int_of(const mil_program *prog, const mil_op *op, const char *name, int64_t def,
                  int64_t *out) {
    int64_t v[1];
    int n;
    int k = ints_of(prog, op, name, v, 1, &n);
    *out = def;
    if (k == 1 && n == 1) *out = v[0];
    return k;
}

static int bool_of(const mil_program *prog, const mil_op *op, const char *name, int def) {
    int64_t v;
    int k = int_of(prog, op, name, def, &v);
    return k == 1 ? v != 0 : def;
}

static const char *str_of(const mil_op *op, const char *name) {
    return mil_value_str(mil_op_operand(op, name));
}

/* Normalises axis a for a given rank; 0 if out of range. */
static int norm_axis(int64_t a, int rank, int64_t *out) {
    if (a < -rank || a >= rank) return 0;
    *out = a < 0 ? a + rank : a;
    return 1;
}

/* Overflow-safe arithmetic on dims: any operand unknown (< 0) or a result
 * past 2^62 gives UNK, so hostile files cannot trigger signed overflow. */
#define DIM_LIMIT ((int64_t)1 << 62)
static int64_t dim_add(int64_t a, int64_t b) {
    return a < 0 || b < 0 || a > DIM_LIMIT - b ? UNK : a + b;
}
static int64_t dim_mul(int64_t a, int64_t b) {
    return a < 0 || b < 0 || (b && a > DIM_LIMIT / b) ? UNK : a * b;
}

/* --- simple families ----------------------------------------------------- */

MIL_INFER_FN(mil_infer_const) {
    (void)prog;
    const mil_value *v = mil_op_attr(op, "val");
    if (!v) return fail(op, err, "missing attribute 'val'");
    return emit_type(out, v->type);
}

MIL_INFER_FN(mil_infer_none) {
    (void)prog, (void)op, (void)err;
    out->n = 0;
    return NC_OK;
}

static nc_status same_as(mil_program *prog, const mil_op *op, const char *name, mil_infer_out *out,
                         nc_error *err) {
    const mil_type *x;
    (void)prog;
    NC_TRY(need_tensor(op, name, 0, &x, err));
    return emit_type(out, x);
}

MIL_INFER_FN(mil_infer_same_as_x) {
    return same_as(prog, op, "x", out, err);
}
MIL_INFER_FN(mil_infer_same_as_data) {
    return same_as(prog, op, "data", out, err);
}

MIL_INFER_FN(mil_infer_softmax) {
    const mil_type *x;
    int64_t axis, a;
    NC_TRY(need_tensor(op, "x", 1, &x, err));
    int_of(prog, op, "axis", -1, &axis);
    if (!norm_axis(axis, x->rank, &a))
        return fail(op, err, "axis %lld is out of range for rank %d", (long long)axis, x->rank);
    return emit_type(out, x);
}

MIL_INFER_FN(mil_infer_layer_norm) {
    const mil_type *x;
    int64_t axes[MAXR], a = 0;
    int n;
    NC_TRY(need_tensor(op, "x", 0, &x, err));
    if (ints_of(prog, op, "axes", axes, MAXR, &n) == 1)
        for (int i = 0; i < n; i++)
            if (!norm_axis(axes[i], x->rank, &a))
                return fail(op, err, "axes[%d] = %lld is out of range for rank %d", i,
                            (long long)axes[i], x->rank);
    const mil_type *g = tensor_of(op, "gamma");
    if (g && n > 0 && mil_type_numel(g) >= 0) {
        int64_t want = 1;
        for (int i = 0; i < n; i++) {
            norm_axis(axes[i], x->rank, &a);
            want = dim_mul(want, x->dims[a]);
        }
        if (want >= 0 && mil_type_numel(g) != want)
            return fail(op, err, "gamma has %lld elements, the normalised axes hold %lld",
                        (long long)mil_type_numel(g), (long long)want);
    }
    return emit_type(out, x);
}

/* NumPy broadcasting of two shapes into dims/rank. */
static nc_status broadcast2(const mil_op *op, const mil_type *a, const mil_type *b, int64_t *dims,
                            int *rank, const char *na, const char *nb, nc_error *err) {
    int r = a->rank > b->rank ? a->rank : b->rank;
    for (int i = 0; i < r; i++) {
        int ia = i - (r - a->rank), ib = i - (r - b->rank);
        int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
        if (da == db)
            dims[i] = da;
        else if (da == 1)
            dims[i] = db;
        else if (db == 1)
            dims[i] = da;
        else if (da < 0)
            dims[i] = db;
        else if (db < 0)
            dims[i] = da;
        else {
            char sa[256], sb[256];
            return fail(op, err, "cannot broadcast '%s' %s with '%s' %s", na,
                        mil_type_str(a, sa, sizeof sa), nb, mil_type_str(b, sb, sizeof sb));
        }
    }
    *rank = r;
    return NC_OK;
}

static nc_status binary(mil_program *prog, const mil_op *op, mil_infer_out *out, int is_bool,
                        nc_error *err) {
    const mil_type *x, *y;
    int64_t dims[MAXR];
    int rank;
    NC_TRY(need_tensor(op, "x", 0, &x, err));
    NC_TRY(need_tensor(op, "y", 0, &y, err));
    NC_TRY(broadcast2(op, x, y, dims, &rank, "x", "y", err));
    return emit(prog, out, is_bool ? MIL_DT_BOOL : x->dtype, rank, dims, err);
}

MIL_INFER_FN(mil_infer_broadcast) {
    return binary(prog, op, out, 0, err);
}
MIL_INFER_FN(mil_infer_compare) {
    return binary(prog, op, out, 1, err);
}

MIL_INFER_FN(mil_infer_select) {
    const mil_type *c, *a, *b;
    int64_t d1[MAXR], d2[MAXR];
    int r1, r2;
    NC_TRY(need_tensor(op, "cond", 0, &c, err));
    NC_TRY(need_tensor(op, "a", 0, &a, err));
    NC_TRY(need_tensor(op, "b", 0, &b, err));
    NC_TRY(broadcast2(op, a, b, d1, &r1, "a", "b", err));
    mil_type ab = {.kind = MIL_TYPE_TENSOR, .dtype = a->dtype, .rank = r1, .dims = d1};
    NC_TRY(broadcast2(op, c, &ab, d2, &r2, "cond", "a/b", err));
    return emit(prog, out, a->dtype, r2, d2, err);
}

/* --- linear algebra ------------------------------------------------------ */

MIL_INFER_FN(mil_infer_conv) {
    const mil_type *x, *w;
    NC_TRY(need_tensor(op, "x", 3, &x, err));
    NC_TRY(need_tensor(op, "weight", 3, &w, err));
    int ns = x->rank - 2;
    if (w->rank != x->rank)
        return fail(op, err, "weight has rank %d, x has rank %d (they must match)", w->rank,
                    x->rank);
    int64_t groups, strides[MAXR], dil[MAXR], pad[2 * MAXR];
    int n;
    int_of(prog, op, "groups", 1, &groups);
    if (groups < 1) return fail(op, err, "groups must be >= 1, is %lld", (long long)groups);
    for (int i = 0; i < ns; i++)
        strides[i] = dil[i] = 1;
    if (ints_of(prog, op, "strides", strides, MAXR, &n) == 1 && n != ns)
        return fail(op, err, "strides has %d entries, expected %d", n, ns);
    if (ints_of(prog, op, "dilations", dil, MAXR, &n) == 1 && n != ns)
        return fail(op, err, "dilations has %d entries, expected %d", n, ns);
    for (int i = 0; i < ns; i++)
        if (strides[i] < 1 || dil[i] < 1)
            return fail(op, err, "strides and dilations must be >= 1");
    const char *pad_type = str_of(op, "pad_type");
    if (!pad_type) pad_type = "valid";
    memset(pad, 0, sizeof pad);
    if (!strcmp(pad_type, "custom")) {
        if (ints_of(prog, op, "pad", pad, 2 * MAXR, &n) == 1 && n != 2 * ns)
            return fail(op, err, "pad has %d entries, expected %d", n, 2 * ns);
    } else if (strcmp(pad_type, "valid") && strcmp(pad_type, "same") &&
               strcmp(pad_type, "same_lower")) {
        return fail(op, err, "pad_type '%s' is not valid, same, same_lower or custom", pad_type);
    }
    int64_t cin = x->dims[1], wcin = w->dims[1];
    if (cin >= 0 && wcin >= 0 && cin != dim_mul(wcin, groups))
        return fail(op, err, "x has %lld channels but weight expects %lld x %lld groups",
                    (long long)cin, (long long)wcin, (long long)groups);
    if (w->dims[0] >= 0 && w->dims[0] % groups)
        return fail(op, err, "weight's %lld output channels are not divisible by groups %lld",
                    (long long)w->dims[0], (long long)groups);
    const mil_type *b = tensor_of(op, "bias");
    if (b && (b->rank != 1 || (b->dims[0] >= 0 && w->dims[0] >= 0 && b->dims[0] != w->dims[0])))
        return fail(op, err, "bias must be [%lld]", (long long)w->dims[0]);
    int64_t dims[MAXR];
    dims[0] = x->dims[0];
    dims[1] = w->dims[0];
    for (int i = 0; i < ns; i++) {
        int64_t in = x->dims[2 + i], k = w->dims[2 + i];
        if (in < 0 || k < 0) {
            dims[2 + i] = UNK;
            continue;
        }
        int64_t ek = dim_add(dim_mul(dil[i], k - 1 < 0 ? 0 : k - 1), 1);
        if (!strcmp(pad_type, "same") || !strcmp(pad_type, "same_lower")) {
            dims[2 + i] = in / strides[i] + (in % strides[i] != 0);
            continue;
        }
        if (pad[2 * i] < 0 || pad[2 * i + 1] < 0) return fail(op, err, "pad amounts must be >= 0");
        int64_t padded = dim_add(dim_add(in, pad[2 * i]), pad[2 * i + 1]);
        if (padded < 0 || ek < 0) {
            dims[2 + i] = UNK;
            continue;
        }
        if (padded < ek)
            return fail(
                op, err,
                "spatial dim %d: input %lld (padded) is smaller than the kernel extent %lld", i,
                (long long)padded, (long long)ek);
        dims[2 + i] = (padded - ek) / strides[i] + 1;
    }
    return emit(prog, out, x->dtype, x->rank, dims, err);
}

MIL_INFER_FN(mil_infer_matmul) {
    const mil_type *x, *y;
    NC_TRY(need_tensor(op, "x", 1, &x, err));
    NC_TRY(need_tensor(op, "y", 1, &y, err));
    int tx = bool_of(prog, op, "transpose_x", 0), ty = bool_of(prog, op, "transpose_y", 0);
    int64_t xd[MAXR], yd[MAXR];
    int xr = x->rank, yr = y->rank;
    memcpy(xd, x->dims, (size_t)xr * sizeof *xd);
    memcpy(yd, y->dims, (size_t)yr * sizeof *yd);
    int x_vec = xr == 1, y_vec = yr == 1;
    if (x_vec) { /* 1-D x is a row vector [1, K] */
        xd[1] = xd[0];
        xd[0] = 1;
        xr = 2;
        tx = 0;
    }
    if (y_vec) { /* 1-D y is a column vector [K, 1] */
        yd[1] = 1;
        yr = 2;
        ty = 0;
    }
    if (tx) {
        int64_t t = xd[xr - 1];
        xd[xr - 1] = xd[xr - 2];
        xd[xr - 2] = t;
    }
    if (ty) {
        int64_t t = yd[yr - 1];
        yd[yr - 1] = yd[yr - 2];
        yd[yr - 2] = t;
    }
    int64_t kx = xd[xr - 1], ky = yd[yr - 2];
    if (kx >= 0 && ky >= 0 && kx != ky)
        return fail(op, err, "inner dimensions differ: x gives %lld, y gives %lld", (long long)kx,
                    (long long)ky);
    mil_type bx = {.kind = MIL_TYPE_TENSOR, .rank = xr - 2, .dims = xd};
    mil_type by = {.kind = MIL_TYPE_TENSOR, .rank = yr - 2, .dims = yd};
    int64_t dims[MAXR];
    int rank;
    NC_TRY(broadcast2(op, &bx, &by, dims, &rank, "x batch dims", "y batch dims", err));
    if (!x_vec) dims[rank++] = xd[xr - 2];
    if (!y_vec) dims[rank++] = yd[yr - 1];
    return emit(prog, out, x->dtype, rank, dims, err);
}

MIL_INFER_FN(mil_infer_linear) {
    const mil_type *x, *w;
    NC_TRY(need_tensor(op, "x", 1, &x, err));
    NC_TRY(need_tensor(op, "weight", 2, &w, err));
    if (w->rank != 2) return fail(op, err, "weight must be [D_out, D_in], has rank %d", w->rank);
    int64_t din = x->dims[x->rank - 1];
    if (din >= 0 && w->dims[1] >= 0 && din != w->dims[1])
        return fail(op, err, "x's last dim %lld differs from weight's D_in %lld", (long long)din,
                    (long long)w->dims[1]);
    const mil_type *b = tensor_of(op, "bias");
    if (b && (b->rank != 1 || (b->dims[0] >= 0 && w->dims[0] >= 0 && b->dims[0] != w->dims[0])))
        return fail(op, err, "bias must be [%lld]", (long long)w->dims[0]);
    int64_t dims[MAXR];
    memcpy(dims, x->dims, (size_t)x->rank * sizeof *dims);
    dims[x->rank - 1] = w->dims[0];
    return emit(prog, out, x->dtype, x->rank, dims, err);
}

MIL_INFER_FN(mil_infer_sdpa) {
    const mil_type *q, *k, *v;
    NC_TRY(need_tensor(op, "query", 3, &q, err));
    NC_TRY(need_tensor(op, "key", 3, &k, err));
    NC_TRY(need_tensor(op, "value", 3, &v, err));
    int64_t e = q->dims[q->rank - 1], ek = k->dims[k->rank - 1];
    if (e >= 0 && ek >= 0 && e != ek) return fail(op, err, "query and key embedding sizes differ");
    int64_t dims[MAXR];
    memcpy(dims, q->dims, (size_t)q->rank * sizeof *dims);
    dims[q->rank - 1] = v->dims[v->rank - 1];
    return emit(prog, out, q->dtype, q->rank, dims, err);
}

/* --- reductions ---------------------------------------------------------- */

static nc_status reduce_shape(mil_program *prog, const mil_op *op, const mil_type *x,
                              const int64_t *axes, int n_axes, int all, int keep, mil_dtype dt,
                              mil_infer_out *out, nc_error *err) {
    int reduced[MAXR] = {0};
    for (int i = 0; i < n_axes; i++) {
        int64_t a;
        if (!norm_axis(axes[i], x->rank, &a))
            return fail(op, err, "axis %lld is out of range for rank %d", (long long)axes[i],
                        x->rank);
        reduced[a] = 1;
    }
    int64_t dims[MAXR];
    int rank = 0;
    for (int i = 0; i < x->rank; i++) {
        if (all || reduced[i]) {
            if (keep) dims[rank++] = 1;
        } else {
            dims[rank++] = x->dims[i];
        }
    }
    return emit(prog, out, dt, rank, dims, err);
}

MIL_INFER_FN(mil_infer_reduce) {
    const mil_type *x;
    int64_t axes[MAXR];
    int n;
    NC_TRY(need_tensor(op, "x", 0, &x, err));
    int k = ints_of(prog, op, "axes", axes, MAXR, &n);
    int keep = bool_of(prog, op, "keep_dims", 0);
    if (k == -1) {
        int64_t dims[MAXR];
        for (int i = 0; i < x->rank; i++)
            dims[i] = UNK;
        return emit(prog, out, x->dtype, keep ? x->rank : 0, dims,
                    err); /* rank unknown: best effort */
    }
    return reduce_shape(prog, op, x, axes, n, k == 0, keep, x->dtype, out, err);
}

MIL_INFER_FN(mil_infer_argreduce) {
    const mil_type *x;
    int64_t axis;
    NC_TRY(need_tensor(op, "x", 1, &x, err));
    int_of(prog, op, "axis", -1, &axis);
    const char *name = str_of(op, "output_dtype"); /* iOS17+: int32 (default) or uint16 */
    mil_dtype dt = name ? mil_dtype_from_name(name) : MIL_DT_INT32;
    if (dt != MIL_DT_INT32 && dt != MIL_DT_UINT16)
        return fail(op, err, "output_dtype '%s' is not int32 or uint16", name);
    return reduce_shape(prog, op, x, &axis, 1, 0, bool_of(prog, op, "keep_dims", 0), dt, out, err);
}

/* --- shape and data movement --------------------------------------------- */

MIL_INFER_FN(mil_infer_transpose) {
    const mil_type *x;
    int64_t perm[MAXR], dims[MAXR];
    int n, seen[MAXR] = {0};
    NC_TRY(need_tensor(op, "x", 0, &x, err));
    if (ints_of(prog, op, "perm", perm, MAXR, &n) != 1)
        return fail(op, err, "perm must be a constant");
    if (n != x->rank) return fail(op, err, "perm has %d entries, x has rank %d", n, x->rank);
    for (int i = 0; i < n; i++) {
        int64_t a;
        if (!norm_axis(perm[i], x->rank, &a) || seen[a]++)
            return fail(op, err, "perm is not a permutation of 0..%d", x->rank - 1);
        dims[i] = x->dims[a];
    }
    return emit(prog, out, x->dtype, n, dims, err);
}

MIL_INFER_FN(mil_infer_reshape) {
    const mil_type *x, *s;
    int64_t shape[MAXR];
    int n;
    NC_TRY(need_tensor(op, "x", 0, &x, err));
    NC_TRY(need_tensor(op, "shape", 1, &s, err));
    if (s->rank != 1) return fail(op, err, "shape must be 1-D");
    if (ints_of(prog, op, "shape", shape, MAXR, &n) != 1) {
        /* a runtime shape: rank known from its length, dims not */
        int64_t dims[MAXR];
        if (s->dims[0] < 0 || s->dims[0] > MAXR) return fail(op, err, "shape has unknown length");
        for (int i = 0; i < s->dims[0]; i++)
            dims[i] = UNK;
        return emit(prog, out, x->dtype, (int)s->dims[0], dims, err);
    }
    int ios17 = mil_op_opset_version(op) >= 17;
    int64_t known = 1;
    int neg = -1, any_unknown = 0;
    for (int i = 0; i < n; i++) {
        if (shape[i] == 0) {
            /* iOS15: copy x's dim i (only when ranks match); iOS17: right-aligned copy, 1 when out
             * of range */
            int src = ios17 ? x->rank - n + i : i;
            if (!ios17 && n != x->rank)
                return fail(op, err, "shape uses 0 but its length differs from x's rank");
            shape[i] = src >= 0 && src < x->rank ? x->dims[src] : 1;
            if (shape[i] == UNK) {
                any_unknown = 1;
                continue;
            }
        } else if (shape[i] == -1) {
            if (neg >= 0) return fail(op, err, "shape has more than one -1");
            neg = i;
            continue;
        }
        if (shape[i] < 0)
            return fail(op, err, "shape[%d] = %lld is invalid", i, (long long)shape[i]);
        known = dim_mul(known, shape[i]);
        if (known < 0) return fail(op, err, "shape is too large");
    }
    int64_t total = mil_type_numel(x);
    if (neg >= 0) {
        if (total < 0 || any_unknown)
            shape[neg] = UNK;
        else if (known == 0 || total % known)
            return fail(op, err, "cannot infer -1: %lld elements do not divide by %lld",
                        (long long)total, (long long)known);
        else
            shape[neg] = total / known;
    } else if (total >= 0 && !any_unknown && known != total) {
        char sx[256];
        return fail(op, err, "cannot reshape %s (%lld elements) to %lld elements",
                    mil_type_str(x, sx, sizeof sx), (long long)total, (long long)known);
    }
    return emit(prog, out, x->dtype, n, shape, err);
}

MIL_INFER_FN(mil_infer_expand_dims) {
    const mil_type *x;
    int64_t axes[MAXR], dims[MAXR];
    int n, is_new[MAXR] = {0};
    NC_TRY(need_tensor(op, "x", 0, &x, err));
    if (ints_of(prog, op, "axes", axes, MAXR, &n) != 1 || n == 0)
        return fail(op, err, "axes must be a non-empty constant");
    int rank = x->rank + n;
    if (rank > MAXR) return fail(op, err, "result rank too large");
    for (int i = 0; i < n; i++) {
        int64_t a;
        if (!norm_axis(axes[i], rank, &a) || is_new[a]++)
            return fail(op, err, "axes[%d] = %lld is out of range or repeated for result rank %d",
                        i, (long long)axes[i], rank);
    }
    for (int i = 0, j = 0; i < rank; i++)
        dims[i] = is_new[i] ? 1 : x->dims[j++];
    return emit(prog, out, x->dtype, rank, dims, err);
}

MIL_INFER_FN(mil_infer_squeeze) {
    const mil_type *x;
    int64_t axes[MAXR], dims[MAXR];
    int n, drop[MAXR] = {0}, rank = 0;
    NC_TRY(need_tensor(op, "x", 0, &x, err));
    int k = ints_of(prog, op, "axes", axes, MAXR, &n);
    if (k == 1) {
        for (int i = 0; i < n; i++) {
            int64_t a;
            if (!norm_axis(axes[i], x->rank, &a))
                return fail(op, err, "axes[%d] = %lld is out of range", i, (long long)axes[i]);
            if (x->dims[a] > 1)
                return fail(op, err, "cannot squeeze axis %lld of size %lld", (long long)a,
                            (long long)x->dims[a]);
            drop[a] = 1;
        }
    } else {
        for (int i = 0; i < x->rank; i++)
            drop[i] = x->dims[i] == 1;
    }
    for (int i = 0; i < x->rank; i++)
        if (!drop[i]) dims[rank++] = x->dims[i];
    return emit(prog, out, x->dtype, rank, dims, err);
}

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) {
    return v < lo ? lo : v > hi ? hi : v;
}

MIL_INFER_FN(mil_infer_slice_by_index) {
    const mil_type *x;
    int64_t b[MAXR], e[MAXR], s[MAXR], bm[MAXR] = {0}, em[MAXR] = {0}, sm[MAXR] = {0}, dims[MAXR];
    int nb, ne, n;
    NC_TRY(need_tensor(op, "x", 1, &x, err));
    int r = x->rank;
    int kb = ints_of(prog, op, "begin", b, MAXR, &nb), ke = ints_of(prog, op, "end", e, MAXR, &ne);
    for (int i = 0; i < r; i++)
        s[i] = 1;
    if (ints_of(prog, op, "stride", s, MAXR, &n) == 1 && n != r)
        return fail(op, err, "stride must have %d entries", r);
    if (ints_of(prog, op, "begin_mask", bm, MAXR, &n) == 1 && n != r)
        return fail(op, err, "begin_mask must have %d entries", r);
    if (ints_of(prog, op, "end_mask", em, MAXR, &n) == 1 && n != r)
        return fail(op, err, "end_mask must have %d entries", r);
    if (ints_of(prog, op, "squeeze_mask", sm, MAXR, &n) == 1 && n != r)
        return fail(op, err, "squeeze_mask must have %d entries", r);
    if ((kb == 1 && nb != r) || (ke == 1 && ne != r))
        return fail(op, err, "begin and end must have %d entries", r);
    int rank = 0;
    for (int i = 0; i < r; i++) {
        if (s[i] == 0 || s[i] == INT64_MIN) return fail(op, err, "stride[%d] is invalid", i);
        if (sm[i]) continue;
        int64_t d = x->dims[i];
        if (d < 0 || kb != 1 || ke != 1) {
            dims[rank++] = UNK;
            continue;
        }
        int64_t lo, hi, cnt;
        if (s[i] > 0) {
            lo = bm[i] ? 0 : clamp64(b[i] < 0 ? b[i] + d : b[i], 0, d);
            hi = em[i] ? d : clamp64(e[i] < 0 ? e[i] + d : e[i], 0, d);
            cnt = hi > lo ? (hi - lo - 1) / s[i] + 1 : 0;
        } else {
            lo = bm[i] ? d - 1 : clamp64(b[i] < 0 ? b[i] + d : b[i], -1, d - 1);
            hi = em[i] ? -1 : clamp64(e[i] < 0 ? e[i] + d : e[i], -1, d - 1);
            cnt = lo > hi ? (lo - hi - 1) / -s[i] + 1 : 0;
        }
        dims[rank++] = cnt;
    }
    return emit(prog, out, x->dtype, rank, dims, err);
}

MIL_INFER_FN(mil_infer_slice_by_size) {
    const mil_type *x;
    int64_t b[MAXR], sz[MAXR], dims[MAXR];
    int nb, ns;
    NC_TRY(need_tensor(op, "x", 1, &x, err));
    int kb = ints_of(prog, op, "begin", b, MAXR, &nb);
    if (ints_of(prog, op, "size", sz, MAXR, &ns) != 1) { /* runtime size: rank only */
        for (int i = 0; i < x->rank; i++)
            dims[i] = UNK;
        return emit(prog, out, x->dtype, x->rank, dims, err);
    }
    if (ns != x->rank || (kb == 1 && nb != x->rank))
        return fail(op, err, "begin and size must have %d entries", x->rank);
    for (int i = 0; i < x->rank; i++) {
        int64_t d = x->dims[i];
        if (sz[i] >= 0) {
            if (kb == 1 && d >= 0) {
                int64_t lo = b[i] < 0 ? b[i] + d : b[i];
                if (lo < 0 || lo > d || sz[i] > d - lo)
                    return fail(op, err, "dim %d: slice [%lld, +%lld) exceeds size %lld", i,
                                (long long)b[i], (long long)sz[i], (long long)d);
            }
            dims[i] = sz[i];
        } else if (sz[i] == -1) {
            dims[i] = UNK;
            if (kb == 1 && d >= 0) {
                int64_t lo = b[i] < 0 ? b[i] + d : b[i];
                if (lo < 0 || lo > d) return fail(op, err, "dim %d: begin is out of range", i);
                dims[i] = d - lo;
            }
        } else {
            return fail(op, err, "size[%d] = %lld is invalid", i, (long long)sz[i]);
        }
    }
    return emit(prog, out, x->dtype, x->rank, dims, err);
}

MIL_INFER_FN(mil_infer_concat) {
    const mil_arg *vals = mil_op_arg(op, "values");
    int64_t axis, a, dims[MAXR];
    if (!vals || vals->n_items < 1) return fail(op, err, "values must be a non-empty tuple");
    const mil_type *t0 = vals->items[0]->type;
    if (!mil_type_is_tensor(t0) || t0->rank < 1 || t0->rank > MAXR)
        return fail(op, err, "values must be tensors of rank >= 1");
    if (int_of(prog, op, "axis", 0, &axis) != 1) return fail(op, err, "axis must be a constant");
    if (!norm_axis(axis, t0->rank, &a))
        return fail(op, err, "axis %lld is out of range for rank %d", (long long)axis, t0->rank);
    memcpy(dims, t0->dims, (size_t)t0->rank * sizeof *dims);
    for (int i = 1; i < vals->n_items; i++) {
        const mil_type *t = vals->items[i]->type;
        if (!mil_type_is_tensor(t) || t->rank != t0->rank)
            return fail(op, err, "values[%d] has a different rank", i);
        for (int d = 0; d < t->rank; d++) {
            if (d == a) {
                dims[d] = dim_add(dims[d], t->dims[d]);
            } else if (t->dims[d] >= 0 && dims[d] >= 0 && t->dims[d] != dims[d]) {
                return fail(op, err, "values[%d] has size %lld on axis %d, values[0] has %lld", i,
                            (long long)t->dims[d], d, (long long)dims[d]);
            } else if (dims[d] < 0) {
                dims[d] = t->dims[d];
            }
        }
    }
    return emit(prog, out, t0->dtype, t0->rank, dims, err);
}

MIL_INFER_FN(mil_infer_split) {
    const mil_type *x;
    int64_t axis, a, num, sizes[MIL_MAX_OUTPUTS];
    int n = 0;
    NC_TRY(need_tensor(op, "x", 1, &x, err));
    if (int_of(prog, op, "axis", 0, &axis) != 1) return fail(op, err, "axis must be a constant");
    if (!norm_axis(axis, x->rank, &a))
        return fail(op, err, "axis %lld is out of range for rank %d", (long long)axis, x->rank);
    int64_t d = x->dims[a];
    int ks = ints_of(prog, op, "split_sizes", sizes, MIL_MAX_OUTPUTS, &n);
    int kn = int_of(prog, op, "num_splits", 0, &num);
    if (ks == 1) {
        int64_t sum = 0;
        for (int i = 0; i < n; i++) {
            if (sizes[i] < 0) return fail(op, err, "split_sizes[%d] is negative", i);
            sum = dim_add(sum, sizes[i]);
            if (sum < 0) return fail(op, err, "split_sizes are too large");
        }
        if (d >= 0 && sum != d)
            return fail(op, err, "split_sizes sum to %lld, axis has %lld", (long long)sum,
                        (long long)d);
        if (kn == 1 && num != n)
            return fail(op, err, "num_splits %lld disagrees with %d split_sizes", (long long)num,
                        n);
    } else if (kn == 1) {
        if (num < 1 || num > MIL_MAX_OUTPUTS)
            return fail(op, err, "num_splits %lld is out of range", (long long)num);
        if (d >= 0 && d % num)
            return fail(op, err, "axis size %lld is not divisible by num_splits %lld", (long long)d,
                        (long long)num);
        n = (int)num;
        for (int i = 0; i < n; i++)
            sizes[i] = d >= 0 ? d / num : UNK;
    } else {
        return fail(op, err, "needs num_splits or split_sizes");
    }
    for (int i = 0; i < n; i++) {
        int64_t dims[MAXR];
        memcpy(dims, x->dims, (size_t)x->rank * sizeof *dims);
        dims[a] = sizes[i];
        NC_TRY(emit(prog, out, x->dtype, x->rank, dims, err));
    }
    return NC_OK;
}

MIL_INFER_FN(mil_infer_tile) {
    const mil_type *x;
    int64_t reps[MAXR], dims[MAXR];
    int n;
    NC_TRY(need_tensor(op, "x", 0, &x, err));
    int k = ints_of(prog, op, "reps", reps, MAXR, &n);
    if (k == 1 && n != x->rank)
        return fail(op, err, "reps has %d entries, x has rank %d", n, x->rank);
    for (int i = 0; i < x->rank; i++) {
        if (k == 1 && reps[i] < 0) return fail(op, err, "reps[%d] is negative", i);
        dims[i] = k != 1 ? UNK : dim_mul(x->dims[i], reps[i]);
    }
    return emit(prog, out, x->dtype, x->rank, dims, err);
}

MIL_INFER_FN(mil_infer_pad) {
    const mil_type *x;
    int64_t pad[2 * MAXR], dims[MAXR];
    int n;
    NC_TRY(need_tensor(op, "x", 0, &x, err));
    int k = ints_of(prog, op, "pad", pad, 2 * MAXR, &n);
    const char *mode = str_of(op, "mode");
    if (mode && strcmp(mode, "constant") && strcmp(mode, "reflect") && strcmp(mode, "replicate"))
        return fail(op, err, "mode '%s' is not constant, reflect or replicate", mode);
    if (k == 1 && (n % 2 || n / 2 > x->rank))
        return fail(op, err, "pad has %d entries for rank %d", n, x->rank);
    if (x->rank) memcpy(dims, x->dims, (size_t)x->rank * sizeof *dims);
    if (k == 1) {
        int first = x->rank - n / 2; /* pad covers the last n/2 dims */
        for (int i = 0; i < n / 2; i++) {
            if (pad[2 * i] < 0 || pad[2 * i + 1] < 0)
                return fail(op, err, "pad amounts must be >= 0");
            int64_t *d = &dims[first + i];
            *d = dim_add(*d, dim_add(pad[2 * i], pad[2 * i + 1]));
        }
    } else {
        for (int i = 0; i < x->rank; i++)
            dims[i] = UNK;
    }
    return emit(prog, out, x->dtype, x->rank, dims, err);
}

MIL_INFER_FN(mil_infer_fill) {
    const mil_type *s;
    int64_t shape[MAXR];
    int n;
    NC_TRY(need_tensor(op, "shape", 1, &s, err));
    const mil_type *v = tensor_of(op, "value");
    mil_dtype dt = v ? v->dtype : MIL_DT_FP32;
    if (ints_of(prog, op, "shape", shape, MAXR, &n) != 1) {
        if (s->dims[0] < 0 || s->dims[0] > MAXR) return fail(op, err, "shape has unknown length");
        n = (int)s->dims[0];
        for (int i = 0; i < n; i++)
            shape[i] = UNK;
    }
    for (int i = 0; i < n; i++)
        if (shape[i] < 0 && shape[i] != UNK) return fail(op, err, "shape[%d] is negative", i);
    return emit(prog, out, dt, n, shape, err);
}

MIL_INFER_FN(mil_infer_cast) {
    const mil_type *x;
    NC_TRY(need_tensor(op, "x", 0, &x, err));
    const char *name = str_of(op, "dtype");
    mil_dtype dt = name ? mil_dtype_from_name(name) : MIL_DT_INVALID;
    static const mil_dtype ok[] = {MIL_DT_FP16, MIL_DT_FP32,  MIL_DT_INT32, MIL_DT_BOOL,
                                   MIL_DT_INT8, MIL_DT_UINT8, MIL_DT_INT16, MIL_DT_UINT16,
                                   MIL_DT_FP64, MIL_DT_INT64};
    int allowed = 0;
    int n_ok = mil_op_opset_version(op) >= 17 ? 10 : 4;
    for (int i = 0; i < n_ok; i++)
        allowed |= ok[i] == dt;
    if (!allowed)
        return fail(op, err, "dtype '%s' is not a cast target at this opset", name ? name : "?");
    return emit(prog, out, dt, x->rank, x->dims, err);
}

MIL_INFER_FN(mil_infer_shape_op) {
    const mil_type *x;
    NC_TRY(need_tensor(op, "x", 0, &x, err));
    int64_t d = x->rank;
    return emit(prog, out, MIL_DT_INT32, 1, &d, err);
}

/* --- gathers ------------------------------------------------------------- */

MIL_INFER_FN(mil_infer_gather) {
    const mil_type *x, *ix;
    int64_t axis, a, bd, dims[MAXR];
    NC_TRY(need_tensor(op, "x", 1, &x, err));
    NC_TRY(need_tensor(op, "indices", 0, &ix, err));
    int_of(prog, op, "axis", 0, &axis);
    int_of(prog, op, "batch_dims", 0, &bd);
    if (!norm_axis(axis, x->rank, &a))
        return fail(op, err, "axis %lld is out of range for rank %d", (long long)axis, x->rank);
    if (bd < 0) bd += ix->rank;
    if (bd < 0 || bd > a || bd > ix->rank)
        return fail(op, err, "batch_dims %lld is out of range", (long long)bd);
    int rank = 0;
    if (x->rank - 1 + ix->rank - bd > MAXR) return fail(op, err, "result rank too large");
    for (int i = 0; i < a; i++)
        dims[rank++] = x->dims[i];
    for (int i = (int)bd; i < ix->rank; i++)
        dims[rank++] = ix->dims[i];
    for (int i = (int)a + 1; i < x->rank; i++)
        dims[rank++] = x->dims[i];
    return emit(prog, out, x->dtype, rank, dims, err);
}

MIL_INFER_FN(mil_infer_gather_along_axis) {
    const mil_type *x, *ix;
    int64_t axis, a;
    NC_TRY(need_tensor(op, "x", 1, &x, err));
    NC_TRY(need_tensor(op, "indices", 1, &ix, err));
    if (ix->rank != x->rank) return fail(op, err, "indices must have x's rank %d", x->rank);
    int_of(prog, op, "axis", 0, &axis);
    if (!norm_axis(axis, x->rank, &a))
        return fail(op, err, "axis %lld is out of range for rank %d", (long long)axis, x->rank);
    return emit(prog, out, x->dtype, ix->rank, ix->dims, err);
}

/* --- state, constexpr, quantization, buffers ----------------------------- */

MIL_INFER_FN(mil_infer_read_state) {
    (void)prog;
    const mil_type *s = mil_op_operand_type(op, "input");
    if (!s || s->kind != MIL_TYPE_STATE) return fail(op, err, "input must be a state<tensor<...>>");
    return emit_type(out, s->elems[0]);
}

MIL_INFER_FN(mil_infer_affine_dequantize) {
    const mil_type *q, *s;
    int64_t axis, a;
    NC_TRY(need_tensor(op, "quantized_data", 0, &q, err));
    NC_TRY(need_tensor(op, "scale", 0, &s, err));
    if (int_of(prog, op, "axis", 0, &axis) == 1 && q->rank && !norm_axis(axis, q->rank, &a))
        return fail(op, err, "axis %lld is out of range for rank %d", (long long)axis, q->rank);
    if (s->rank > 1) return fail(op, err, "scale must be a scalar or a vector");
    return emit(prog, out, s->dtype, q->rank, q->dims, err);
}

MIL_INFER_FN(mil_infer_lut16) {
    const mil_type *ix, *lut;
    int64_t shape[MAXR];
    int n;
    NC_TRY(need_tensor(op, "indices", 1, &ix, err));
    NC_TRY(need_tensor(op, "lut", 1, &lut, err));
    if (ints_of(prog, op, "shape", shape, MAXR, &n) != 1)
        return fail(op, err, "shape must be a constant");
    int64_t entries = lut->dims[lut->rank - 1];
    if (lut->rank != 1 ||
        (entries != 2 && entries != 4 && entries != 16 && entries != 64 && entries != 256))
        return fail(op, err, "lut must be 1-D with 2, 4, 16, 64 or 256 entries");
    int bits = entries == 2 ? 1 : entries == 4 ? 2 : entries == 16 ? 4 : entries == 64 ? 6 : 8;
    int64_t numel = 1;
    for (int i = 0; i < n; i++) {
        if (shape[i] < 0) return fail(op, err, "shape[%d] is negative", i);
        numel = dim_mul(numel, shape[i]);
    }
    int64_t need = numel < 0 ? UNK : dim_add(dim_mul(numel, bits), 7);
    if (need >= 0 && ix->dims[0] >= 0 && ix->dims[0] != need / 8)
        return fail(op, err, "indices has %lld bytes, shape needs %lld", (long long)ix->dims[0],
                    (long long)(need / 8));
    return emit(prog, out, lut->dtype, n, shape, err);
}

MIL_INFER_FN(mil_infer_lut18) {
    const mil_type *ix, *lut;
    NC_TRY(need_tensor(op, "indices", 1, &ix, err));
    NC_TRY(need_tensor(op, "lut", 2, &lut, err));
    if (lut->rank != ix->rank + 2)
        return fail(op, err, "lut must have rank %d (indices rank + 2), has %d", ix->rank + 2,
                    lut->rank);
    int64_t entries = lut->dims[lut->rank - 2], vec = lut->dims[lut->rank - 1];
    int bits = mil_dtype_bits(ix->dtype);
    if (bits < 1 || bits > 8 || (entries >= 0 && entries != (int64_t)1 << bits))
        return fail(op, err, "lut has %lld entries, %s indices need %lld", (long long)entries,
                    mil_dtype_name(ix->dtype), (long long)1 << bits);
    int64_t dims[MAXR], axis = 0, a = 0;
    memcpy(dims, ix->dims, (size_t)ix->rank * sizeof *dims);
    for (int i = 0; i < ix->rank; i++)
        if (dims[i] >= 0 && lut->dims[i] > 0 && dims[i] % lut->dims[i])
            return fail(op, err, "indices dim %d (%lld) is not divisible by lut's group count %lld",
                        i, (long long)dims[i], (long long)lut->dims[i]);
    if (vec > 1) {
        int_of(prog, op, "vector_axis", 0, &axis);
        if (!norm_axis(axis, ix->rank, &a)) return fail(op, err, "vector_axis is out of range");
        dims[a] = dim_mul(dims[a], vec);
    }
    return emit(prog, out, lut->dtype, ix->rank, dims, err);
}

MIL_INFER_FN(mil_infer_blockwise) {
    const mil_type *d, *s;
    NC_TRY(need_tensor(op, "data", 0, &d, err));
    NC_TRY(need_tensor(op, "scale", 0, &s, err));
    if (s->rank != d->rank) return fail(op, err, "scale must have data's rank %d", d->rank);
    for (int i = 0; i < d->rank; i++)
        if (d->dims[i] >= 0 && s->dims[i] > 0 && d->dims[i] % s->dims[i])
            return fail(op, err, "data dim %d is not a multiple of scale's", i);
    return emit(prog, out, s->dtype, d->rank, d->dims, err);
}

MIL_INFER_FN(mil_infer_quantize) {
    const mil_type *x;
    NC_TRY(need_tensor(op, "input", 0, &x, err));
    const char *name = str_of(op, "output_dtype");
    mil_dtype dt = name ? mil_dtype_from_name(name) : MIL_DT_INVALID;
    if (dt != MIL_DT_INT8 && dt != MIL_DT_UINT8)
        return fail(op, err, "output_dtype must be int8 or uint8");
    return emit(prog, out, dt, x->rank, x->dims, err);
}

MIL_INFER_FN(mil_infer_dequantize) {
    const mil_type *x, *s;
    NC_TRY(need_tensor(op, "input", 0, &x, err));
    NC_TRY(need_tensor(op, "scale", 0, &s, err));
    return emit(prog, out, s->dtype, x->rank, x->dims, err);
}

MIL_INFER_FN(mil_infer_buffer_to_tensor) {
    const mil_type *b = mil_op_operand_type(op, "input");
    if (!b || b->kind != MIL_TYPE_BUFFER) return fail(op, err, "input must be a tensor_buffer");
    return emit(prog, out, b->dtype, b->rank, b->dims, err);
}

MIL_INFER_FN(mil_infer_tensor_to_buffer) {
    const mil_type *x;
    int64_t strides[MAXR], il[MAXR];
    int ns, ni;
    NC_TRY(need_tensor(op, "input", 0, &x, err));
    if (ints_of(prog, op, "strides", strides, MAXR, &ns) != 1 || ns != x->rank)
        return fail(op, err, "strides must be a constant with %d entries", x->rank);
    if (ints_of(prog, op, "interleave_factors", il, MAXR, &ni) != 1) {
        ni = x->rank;
        for (int i = 0; i < ni; i++)
            il[i] = 1;
    }
    mil_type *t = nc_arena_alloc(&prog->arena, sizeof *t);
    const char **names = nc_arena_calloc(&prog->arena, 3, sizeof *names);
    int *lens = nc_arena_calloc(&prog->arena, 3, sizeof *lens);
    const int64_t **vals = nc_arena_calloc(&prog->arena, 3, sizeof *vals);
    if (!t || !names || !lens || !vals) return nc_fail(err, NC_ERR_NOMEM, "out of memory");
    names[0] = "shape", names[1] = "strides", names[2] = "interleave_factors";
    lens[0] = x->rank, lens[1] = ns, lens[2] = ni;
    vals[0] = nc_arena_memdup(&prog->arena, x->dims, (size_t)x->rank * sizeof(int64_t));
    vals[1] = nc_arena_memdup(&prog->arena, strides, (size_t)ns * sizeof(int64_t));
    vals[2] = nc_arena_memdup(&prog->arena, il, (size_t)ni * sizeof(int64_t));
    t->kind = MIL_TYPE_BUFFER;
    t->dtype = x->dtype;
    t->rank = x->rank;
    t->dims = vals[0];
    t->n_params = 3;
    t->param_names = names;
    t->param_lens = lens;
    t->param_vals = vals;
    return emit_type(out, t);
}
