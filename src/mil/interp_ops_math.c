/* MIL op semantics, arithmetic family: elementwise binary and unary ops,
 * activations, softmax, reductions, layer_norm, matmul, linear, conv. Each
 * reads its arguments (names and defaults as in coremltools' op specs),
 * computes the output shape and calls a kernel. */
#include <math.h>
#include <string.h>

#include "mil/interp_priv.h"

/* Float view of a slot: its data, or a converted copy in plan scratch i. */
static nc_status as_float(op_plan *p, int i, const mil_slot *s, const float **out, nc_error *err) {
    if (!s->is_int) {
        *out = s->data;
        return NC_OK;
    }
    size_t n = mil_kshape_count(&s->shape);
    void *buf;
    NC_TRY(mil_interp_scratch(p, i, n, &buf, err));
    float *f = buf;
    for (size_t k = 0; k < n; k++) f[k] = (float)((const int32_t *)s->data)[k];
    *out = f;
    return NC_OK;
}

/* ---- elementwise binary ---- */

static const struct { const char *type; mil_kbin op; } BINARY[] = {
    {"add", MIL_KB_ADD}, {"sub", MIL_KB_SUB}, {"mul", MIL_KB_MUL}, {"real_div", MIL_KB_DIV},
    {"pow", MIL_KB_POW}, {"maximum", MIL_KB_MAX}, {"minimum", MIL_KB_MIN},
    {"floor_div", MIL_KB_FLOOR_DIV}, {"mod", MIL_KB_MOD}, {"equal", MIL_KB_EQ},
    {"not_equal", MIL_KB_NE}, {"less", MIL_KB_LT}, {"less_equal", MIL_KB_LE},
    {"greater", MIL_KB_GT}, {"greater_equal", MIL_KB_GE}, {"logical_and", MIL_KB_AND},
    {"logical_or", MIL_KB_OR}, {"logical_xor", MIL_KB_XOR},
};

/* Row of `type` in a family table (first member of each row is the type
 * name), looked up once per op and kept in its plan. */
#define FAMILY_ROW(p, table)                                                                       \
    do {                                                                                           \
        if ((p)->row < 0) {                                                                        \
            (p)->row = 0;                                                                          \
            for (size_t i_ = 0; i_ < sizeof table / sizeof table[0]; i_++)                         \
                if (!strcmp(table[i_].type, (p)->op->type)) (p)->row = (int)i_;                    \
        }                                                                                          \
    } while (0)

static nc_status ex_binary(mil_interp *it, op_plan *p, nc_error *err) {
    const mil_op *op = p->op;
    FAMILY_ROW(p, BINARY);
    mil_kbin kop = BINARY[p->row].op;
    mil_slot *x, *y, *o;
    NC_TRY(mil_interp_need(it, op, "x", &x, err));
    NC_TRY(mil_interp_need(it, op, "y", &y, err));
    mil_kshape os;
    if (!mil_kshape_broadcast(&x->shape, &y->shape, &os))
        return mil_interp_fail(err, NC_ERR_FORMAT, op, "shapes of x and y do not broadcast");
    NC_TRY(mil_interp_out(it, op, 0, &os, &o, err));
    int is_cmp = kop >= MIL_KB_EQ;
    int use_float = !x->is_int || !y->is_int || (!is_cmp && !o->is_int);
    if (is_cmp && !o->is_int)
        return mil_interp_fail(err, NC_ERR_FORMAT, op, "a comparison's output must be bool");
    if (use_float) {
        if (!is_cmp && o->is_int)
            return mil_interp_fail(err, NC_ERR_FORMAT, op, "float inputs but output dtype %s",
                                   mil_dtype_name(o->dtype));
        const float *a, *b;
        NC_TRY(as_float(p, 0, x, &a, err));
        NC_TRY(as_float(p, 1, y, &b, err));
        mil_k_binary_f32(kop, a, &x->shape, b, &y->shape, o->data, &os);
    } else {
        mil_k_binary_i32(kop, x->data, &x->shape, y->data, &y->shape, o->data, &os);
    }
    return NC_OK;
}

/* ---- elementwise unary ---- */

static const struct {
    const char *type;
    mil_kun op;
    const char *p0;
    float d0;
    const char *p1;
    float d1;
} UNARY[] = {
    {"sqrt", MIL_KU_SQRT, NULL, 0, NULL, 0},
    {"rsqrt", MIL_KU_RSQRT, "epsilon", 1e-12f, NULL, 0},
    {"exp", MIL_KU_EXP, NULL, 0, NULL, 0},
    {"exp2", MIL_KU_EXP2, NULL, 0, NULL, 0},
    {"log", MIL_KU_LOG, "epsilon", 1e-45f, NULL, 0},
    {"tanh", MIL_KU_TANH, NULL, 0, NULL, 0},
    {"sigmoid", MIL_KU_SIGMOID, NULL, 0, NULL, 0},
    {"silu", MIL_KU_SILU, NULL, 0, NULL, 0},
    {"relu", MIL_KU_RELU, NULL, 0, NULL, 0},
    {"relu6", MIL_KU_RELU6, NULL, 0, NULL, 0},
    {"erf", MIL_KU_ERF, NULL, 0, NULL, 0},
    {"abs", MIL_KU_ABS, NULL, 0, NULL, 0},
    {"sign", MIL_KU_SIGN, NULL, 0, NULL, 0},
    {"ceil", MIL_KU_CEIL, NULL, 0, NULL, 0},
    {"floor", MIL_KU_FLOOR, NULL, 0, NULL, 0},
    {"round", MIL_KU_ROUND, NULL, 0, NULL, 0},
    {"square", MIL_KU_SQUARE, NULL, 0, NULL, 0},
    {"inverse", MIL_KU_INVERSE, "epsilon", 1e-4f, NULL, 0},
    {"sin", MIL_KU_SIN, NULL, 0, NULL, 0},
    {"cos", MIL_KU_COS, NULL, 0, NULL, 0},
    {"clip", MIL_KU_CLIP, "alpha", 0, "beta", 0},
    {"leaky_relu", MIL_KU_LEAKY_RELU, "alpha", 0.01f, NULL, 0},
    {"softplus", MIL_KU_SOFTPLUS, NULL, 0, NULL, 0},
    {"gelu", MIL_KU_GELU_EXACT, NULL, 0, NULL, 0},
    {"atan", MIL_KU_ATAN, NULL, 0, NULL, 0},
    {"softsign", MIL_KU_SOFTSIGN, NULL, 0, NULL, 0},
};

static nc_status ex_unary(mil_interp *it, op_plan *p, nc_error *err) {
    const mil_op *op = p->op;
    FAMILY_ROW(p, UNARY);
    size_t row = (size_t)p->row;
    mil_slot *x, *o;
    NC_TRY(mil_interp_need(it, op, "x", &x, err));
    mil_kun kop = UNARY[row].op;
    if (kop == MIL_KU_GELU_EXACT) {
        const char *mode = mil_interp_str(it, op, "mode", "EXACT");
        if (!strcmp(mode, "TANH_APPROXIMATION")) kop = MIL_KU_GELU_TANH;
        else if (!strcmp(mode, "SIGMOID_APPROXIMATION")) kop = MIL_KU_GELU_SIGMOID;
        else if (strcmp(mode, "EXACT"))
            return mil_interp_fail(err, NC_ERR_FORMAT, op, "unknown gelu mode '%s'", mode);
    }
    float p0 = UNARY[row].d0, p1 = UNARY[row].d1;
    if (UNARY[row].p0) NC_TRY(mil_interp_float(it, op, UNARY[row].p0, p0, &p0, err));
    if (UNARY[row].p1) NC_TRY(mil_interp_float(it, op, UNARY[row].p1, p1, &p1, err));
    NC_TRY(mil_interp_out(it, op, 0, &x->shape, &o, err));
    if (o->is_int)
        return mil_interp_fail(err, NC_ERR_UNSUPPORTED, op, "integer %s", mil_dtype_name(o->dtype));
    const float *xf;
    NC_TRY(as_float(p, 0, x, &xf, err));
    mil_k_unary_f32(kop, xf, o->data, mil_kshape_count(&x->shape), p0, p1);
    return NC_OK;
}

static nc_status ex_logical_not(mil_interp *it, op_plan *p, nc_error *err) {
    mil_slot *x, *o;
    NC_TRY(mil_interp_need(it, p->op, "x", &x, err));
    NC_TRY(mil_interp_out(it, p->op, 0, &x->shape, &o, err));
    size_t n = mil_kshape_count(&x->shape);
    for (size_t i = 0; i < n; i++)
        ((int32_t *)o->data)[i] = x->is_int ? !((int32_t *)x->data)[i] : !((float *)x->data)[i];
    return NC_OK;
}

/* ---- softmax, reductions, layer_norm ---- */

static nc_status ex_softmax(mil_interp *it, op_plan *p, nc_error *err) {
    const mil_op *op = p->op;
    mil_slot *x, *o;
    int64_t axis;
    NC_TRY(mil_interp_need(it, op, "x", &x, err));
    NC_TRY(mil_interp_int(it, op, "axis", -1, &axis, err));
    int ax = mil_interp_axis(axis, x->shape.rank);
    if (ax < 0 || x->is_int)
        return mil_interp_fail(err, NC_ERR_FORMAT, op, "axis %lld of a rank-%d float tensor",
                               (long long)axis, x->shape.rank);
    NC_TRY(mil_interp_out(it, op, 0, &x->shape, &o, err));
    mil_k_softmax(x->data, &x->shape, ax, o->data);
    return NC_OK;
}

static const struct { const char *type; mil_kred op; } REDUCE[] = {
    {"reduce_sum", MIL_KR_SUM}, {"reduce_mean", MIL_KR_MEAN}, {"reduce_max", MIL_KR_MAX},
    {"reduce_min", MIL_KR_MIN}, {"reduce_prod", MIL_KR_PROD},
    {"reduce_sum_square", MIL_KR_SUM_SQUARE}, {"reduce_l1_norm", MIL_KR_L1},
    {"reduce_l2_norm", MIL_KR_L2}, {"reduce_log_sum_exp", MIL_KR_LOG_SUM_EXP},
    {"reduce_log_sum", MIL_KR_LOG_SUM},
    {"reduce_argmax", MIL_KR_ARGMAX}, {"reduce_argmin", MIL_KR_ARGMIN},
};

/* Bit mask of the axes named by argument `name` (all axes when absent). */
static nc_status axes_mask(mil_interp *it, const mil_op *op, const char *name, int rank,
                           unsigned *mask, nc_error *err) {
    int64_t axes[MIL_K_MAX_RANK];
    int n;
    NC_TRY(mil_interp_ints(it, op, name, axes, MIL_K_MAX_RANK, &n, err));
    if (n < 0) {
        *mask = (1u << rank) - 1;
        return NC_OK;
    }
    *mask = 0;
    for (int i = 0; i < n; i++) {
        int a = mil_interp_axis(axes[i], rank);
        if (a < 0)
            return mil_interp_fail(err, NC_ERR_FORMAT, op, "axis %lld out of range for rank %d",
                                   (long long)axes[i], rank);
        *mask |= 1u << a;
    }
    return NC_OK;
}

static nc_status ex_reduce(mil_interp *it, op_plan *p, nc_error *err) {
    const mil_op *op = p->op;
    FAMILY_ROW(p, REDUCE);
    mil_kred kop = REDUCE[p->row].op;
    mil_slot *x, *o;
    int64_t keep;
    unsigned mask;
    NC_TRY(mil_interp_need(it, op, "x", &x, err));
    NC_TRY(mil_interp_int(it, op, "keep_dims", 0, &keep, err));
    if (kop == MIL_KR_ARGMAX || kop == MIL_KR_ARGMIN) {
        int64_t axis;
        NC_TRY(mil_interp_int(it, op, "axis", -1, &axis, err));
        int a = mil_interp_axis(axis, x->shape.rank);
        if (a < 0) return mil_interp_fail(err, NC_ERR_FORMAT, op, "axis %lld out of range", (long long)axis);
        mask = 1u << a;
    } else {
        NC_TRY(axes_mask(it, op, "axes", x->shape.rank, &mask, err));
    }
    mil_kshape os = {0, {0}};
    for (int i = 0; i < x->shape.rank; i++) {
        if (!(mask & (1u << i))) os.d[os.rank++] = x->shape.d[i];
        else if (keep) os.d[os.rank++] = 1;
    }
    NC_TRY(mil_interp_out(it, op, 0, &os, &o, err));
    if (x->is_int) {
        if (!o->is_int) return mil_interp_fail(err, NC_ERR_FORMAT, op, "int input, float output");
        mil_k_reduce_i32(kop, x->data, &x->shape, mask, o->data);
    } else {
        if (o->is_int != (kop == MIL_KR_ARGMAX || kop == MIL_KR_ARGMIN))
            return mil_interp_fail(err, NC_ERR_FORMAT, op, "output dtype %s", mil_dtype_name(o->dtype));
        mil_k_reduce(kop, x->data, &x->shape, mask, o->data);
    }
    return NC_OK;
}

static nc_status ex_layer_norm(mil_interp *it, op_plan *p, nc_error *err) {
    const mil_op *op = p->op;
    mil_slot *x, *o;
    unsigned mask;
    float eps;
    NC_TRY(mil_interp_need(it, op, "x", &x, err));
    NC_TRY(axes_mask(it, op, "axes", x->shape.rank, &mask, err));
    NC_TRY(mil_interp_float(it, op, "epsilon", 1e-5f, &eps, err));
    size_t nrm = 1;
    for (int i = 0; i < x->shape.rank; i++)
        if (mask & (1u << i)) nrm *= (size_t)x->shape.d[i];
    const float *gb[2] = {NULL, NULL};
    const char *names[2] = {"gamma", "beta"};
    for (int k = 0; k < 2; k++) {
        mil_slot *s = mil_interp_arg(it, op, names[k]);
        if (!s) continue;
        if (!s->has_value || mil_kshape_count(&s->shape) != nrm)
            return mil_interp_fail(err, NC_ERR_FORMAT, op, "%s has %zu elements, the normalised axes %zu",
                                   names[k], mil_kshape_count(&s->shape), nrm);
        NC_TRY(as_float(p, k, s, &gb[k], err));
    }
    if (x->is_int) return mil_interp_fail(err, NC_ERR_FORMAT, op, "x must be float");
    NC_TRY(mil_interp_out(it, op, 0, &x->shape, &o, err));
    mil_k_layer_norm(x->data, &x->shape, mask, gb[0], gb[1], eps, o->data);
    return NC_OK;
}

/* ---- matmul, linear, conv ---- */

static nc_status ex_matmul(mil_interp *it, op_plan *p, nc_error *err) {
    const mil_op *op = p->op;
    mil_slot *x, *y, *o;
    int64_t tx, ty;
    NC_TRY(mil_interp_need(it, op, "x", &x, err));
    NC_TRY(mil_interp_need(it, op, "y", &y, err));
    NC_TRY(mil_interp_int(it, op, "transpose_x", 0, &tx, err));
    NC_TRY(mil_interp_int(it, op, "transpose_y", 0, &ty, err));
    mil_kshape xs = x->shape, ys = y->shape;
    if (xs.rank < 1 || ys.rank < 1)
        return mil_interp_fail(err, NC_ERR_FORMAT, op, "x and y must have rank >= 1");
    int x_vec = xs.rank == 1, y_vec = ys.rank == 1;
    if (x_vec) { /* [K] -> [1, K] */
        xs.d[1] = xs.d[0];
        xs.d[0] = 1;
        xs.rank = 2;
        tx = 0;
    }
    if (y_vec) { /* [K] -> [K, 1] */
        ys.d[1] = 1;
        ys.rank = 2;
        ty = 0;
    }
    int64_t m = tx ? xs.d[xs.rank - 1] : xs.d[xs.rank - 2];
    int64_t kx = tx ? xs.d[xs.rank - 2] : xs.d[xs.rank - 1];
    int64_t ky = ty ? ys.d[ys.rank - 1] : ys.d[ys.rank - 2];
    int64_t n = ty ? ys.d[ys.rank - 2] : ys.d[ys.rank - 1];
    if (kx != ky)
        return mil_interp_fail(err, NC_ERR_FORMAT, op, "inner dimensions differ (%lld and %lld)",
                               (long long)kx, (long long)ky);
    mil_kshape bx = {xs.rank - 2, {0}}, by = {ys.rank - 2, {0}}, bo;
    memcpy(bx.d, xs.d, sizeof(int64_t) * (size_t)bx.rank);
    memcpy(by.d, ys.d, sizeof(int64_t) * (size_t)by.rank);
    if (!mil_kshape_broadcast(&bx, &by, &bo))
        return mil_interp_fail(err, NC_ERR_FORMAT, op, "batch dimensions do not broadcast");
    if (bo.rank + 2 > MIL_K_MAX_RANK) return mil_interp_fail(err, NC_ERR_UNSUPPORTED, op, "rank too high");
    mil_kshape full = bo;
    full.d[full.rank++] = m;
    full.d[full.rank++] = n;
    mil_kshape os = bo; /* declared shape drops the promoted axes */
    if (!x_vec) os.d[os.rank++] = m;
    if (!y_vec) os.d[os.rank++] = n;
    NC_TRY(mil_interp_out(it, op, 0, &os, &o, err));
    if (o->is_int) return mil_interp_fail(err, NC_ERR_UNSUPPORTED, op, "integer matmul");
    const float *xf, *yf;
    void *tr = NULL;
    NC_TRY(as_float(p, 0, x, &xf, err));
    NC_TRY(as_float(p, 1, y, &yf, err));
    if (ty) NC_TRY(mil_interp_scratch(p, 2, mil_kshape_count(&ys), &tr, err));
    mil_k_matmul(xf, &xs, (int)tx, yf, &ys, (int)ty, o->data, &full, tr, it->pool);
    return NC_OK;
}

static nc_status ex_linear(mil_interp *it, op_plan *p, nc_error *err) {
    const mil_op *op = p->op;
    mil_slot *x, *w, *o;
    NC_TRY(mil_interp_need(it, op, "x", &x, err));
    NC_TRY(mil_interp_need(it, op, "weight", &w, err));
    mil_slot *b = mil_interp_arg(it, op, "bias");
    if (x->shape.rank < 1 || w->shape.rank != 2 || w->shape.d[1] != x->shape.d[x->shape.rank - 1])
        return mil_interp_fail(err, NC_ERR_FORMAT, op, "weight must be [D_out, D_in] with D_in = x's last axis");
    int64_t d_out = w->shape.d[0], d_in = w->shape.d[1];
    if (b && (!b->has_value || (int64_t)mil_kshape_count(&b->shape) != d_out))
        return mil_interp_fail(err, NC_ERR_FORMAT, op, "bias must have D_out = %lld elements", (long long)d_out);
    mil_kshape os = x->shape;
    os.d[os.rank - 1] = d_out;
    NC_TRY(mil_interp_out(it, op, 0, &os, &o, err));
    const float *xf, *wf, *bf = NULL;
    NC_TRY(as_float(p, 0, x, &xf, err));
    NC_TRY(as_float(p, 1, w, &wf, err));
    if (b) {
        if (b->is_int) return mil_interp_fail(err, NC_ERR_UNSUPPORTED, op, "integer bias");
        bf = b->data;
    }
    size_t rows = d_in ? mil_kshape_count(&x->shape) / (size_t)d_in : 0;
    mil_k_linear(xf, rows, (size_t)d_in, wf, bf, (size_t)d_out, o->data, it->pool);
    return NC_OK;
}

static nc_status ex_conv(mil_interp *it, op_plan *p, nc_error *err) {
    const mil_op *op = p->op;
    mil_slot *x, *w, *o;
    NC_TRY(mil_interp_need(it, op, "x", &x, err));
    NC_TRY(mil_interp_need(it, op, "weight", &w, err));
    mil_slot *b = mil_interp_arg(it, op, "bias");
    int ns = x->shape.rank - 2;
    if (ns < 1 || ns > 3 || w->shape.rank != x->shape.rank)
        return mil_interp_fail(err, NC_ERR_FORMAT, op, "x must be [N, C, 1 to 3 spatial axes] and weight of the same rank");
    int64_t groups, strides[3], dil[3], pad[6];
    int n_st, n_dil, n_pad;
    NC_TRY(mil_interp_int(it, op, "groups", 1, &groups, err));
    NC_TRY(mil_interp_ints(it, op, "strides", strides, 3, &n_st, err));
    NC_TRY(mil_interp_ints(it, op, "dilations", dil, 3, &n_dil, err));
    NC_TRY(mil_interp_ints(it, op, "pad", pad, 6, &n_pad, err));
    const char *pad_type = mil_interp_str(it, op, "pad_type", "valid");
    if ((n_st >= 0 && n_st != ns) || (n_dil >= 0 && n_dil != ns))
        return mil_interp_fail(err, NC_ERR_FORMAT, op, "strides and dilations need %d values", ns);
    mil_kconv c;
    memset(&c, 0, sizeof c);
    c.n_spatial = ns;
    c.batch = x->shape.d[0];
    c.c_in = x->shape.d[1];
    c.c_out = w->shape.d[0];
    c.groups = groups;
    if (groups < 1 || c.c_in % groups || c.c_out % groups || w->shape.d[1] * groups != c.c_in)
        return mil_interp_fail(err, NC_ERR_FORMAT, op,
                               "weight [%lld, %lld, ...] does not fit %lld input channels in %lld groups",
                               (long long)w->shape.d[0], (long long)w->shape.d[1], (long long)c.c_in,
                               (long long)groups);
    for (int i = 0; i < 3; i++) {
        c.in[i] = c.k[i] = c.out[i] = c.stride[i] = c.dilation[i] = 1;
        c.pad_begin[i] = 0;
    }
    for (int i = 0; i < ns; i++) {
        int j = 3 - ns + i; /* spatial axes fill the kernel's last positions */
        int64_t in = x->shape.d[2 + i], k = w->shape.d[2 + i];
        int64_t s = n_st >= 0 ? strides[i] : 1, d = n_dil >= 0 ? dil[i] : 1;
        if (s < 1 || d < 1) return mil_interp_fail(err, NC_ERR_FORMAT, op, "strides and dilations must be >= 1");
        int64_t ext = d * (k - 1) + 1, pb = 0, pe = 0, out;
        if (!strcmp(pad_type, "valid")) {
        } else if (!strcmp(pad_type, "custom")) {
            if (n_pad != 2 * ns) return mil_interp_fail(err, NC_ERR_FORMAT, op, "pad needs %d values", 2 * ns);
            pb = pad[2 * i];
            pe = pad[2 * i + 1];
        } else if (!strcmp(pad_type, "same") || !strcmp(pad_type, "same_lower")) {
            int64_t o2 = (in + s - 1) / s, tot = (o2 - 1) * s + ext - in;
            if (tot < 0) tot = 0;
            pb = !strcmp(pad_type, "same") ? tot / 2 : tot - tot / 2;
            pe = tot - pb;
        } else {
            return mil_interp_fail(err, NC_ERR_FORMAT, op, "unknown pad_type '%s'", pad_type);
        }
        out = (in + pb + pe - ext) / s + 1;
        if (in + pb + pe < ext || out < 1)
            return mil_interp_fail(err, NC_ERR_FORMAT, op, "kernel larger than the padded input");
        c.in[j] = in;
        c.k[j] = k;
        c.out[j] = out;
        c.stride[j] = s;
        c.dilation[j] = d;
        c.pad_begin[j] = pb;
    }
    mil_kshape os = x->shape;
    os.d[1] = c.c_out;
    for (int i = 0; i < ns; i++) os.d[2 + i] = c.out[3 - ns + i];
    if (b && (!b->has_value || (int64_t)mil_kshape_count(&b->shape) != c.c_out || b->is_int))
        return mil_interp_fail(err, NC_ERR_FORMAT, op, "bias must be %lld floats", (long long)c.c_out);
    NC_TRY(mil_interp_out(it, op, 0, &os, &o, err));
    const float *xf, *wf;
    NC_TRY(as_float(p, 0, x, &xf, err));
    NC_TRY(as_float(p, 1, w, &wf, err));
    mil_k_conv(&c, xf, wf, b ? b->data : NULL, o->data, it->pool);
    return NC_OK;
}

/* scaled_dot_product_attention: softmax(q·kᵀ/sqrt(E) + mask)·v as one op
 * (one fp16 rounding at the end); a bool mask keeps where true. The ANE
 * ignores this op's mask (docs/ane-rules.md), so the lowering writes attention
 * out; the interpreter still runs it for CoreML programs. */
static nc_status ex_sdpa(mil_interp *it, op_plan *p, nc_error *err) {
    const mil_op *op = p->op;
    mil_slot *q, *k, *v, *o, *m = mil_interp_arg(it, op, "attn_mask");
    NC_TRY(mil_interp_need(it, op, "query", &q, err));
    NC_TRY(mil_interp_need(it, op, "key", &k, err));
    NC_TRY(mil_interp_need(it, op, "value", &v, err));
    int r = q->shape.rank;
    if (r < 2 || k->shape.rank != r || v->shape.rank != r || q->is_int || k->is_int || v->is_int ||
        q->shape.d[r - 1] != k->shape.d[r - 1] || k->shape.d[r - 2] != v->shape.d[r - 2])
        return mil_interp_fail(err, NC_ERR_FORMAT, op, "query [..., L, E], key [..., S, E], value [..., S, EV] expected");
    mil_kshape bq = q->shape, bk = k->shape, bv = v->shape, b1, bo;
    bq.rank = bk.rank = bv.rank = r - 2;
    if (!mil_kshape_broadcast(&bq, &bk, &b1) || !mil_kshape_broadcast(&b1, &bv, &bo))
        return mil_interp_fail(err, NC_ERR_FORMAT, op, "batch dimensions do not broadcast");
    int64_t l = q->shape.d[r - 2], s = k->shape.d[r - 2], ev = v->shape.d[r - 1];
    mil_kshape ss = bo, os = bo;
    ss.d[r - 2] = l;
    ss.d[r - 1] = s;
    ss.rank = os.rank = r;
    os.d[r - 2] = l;
    os.d[r - 1] = ev;
    void *sc, *mk, *tr;
    NC_TRY(mil_interp_scratch(p, 0, mil_kshape_count(&ss), &sc, err));
    NC_TRY(mil_interp_scratch(p, 2, mil_kshape_count(&k->shape), &tr, err));
    mil_k_matmul(q->data, &q->shape, 0, k->data, &k->shape, 1, sc, &ss, tr, it->pool);
    float scale = 1.0f / sqrtf((float)q->shape.d[r - 1]);
    size_t n = mil_kshape_count(&ss);
    for (size_t i = 0; i < n; i++) ((float *)sc)[i] *= scale;
    if (m) {
        mil_kshape t;
        if (!m->has_value || !mil_kshape_broadcast(&ss, &m->shape, &t) || !mil_kshape_equal(&t, &ss))
            return mil_interp_fail(err, NC_ERR_FORMAT, op, "attn_mask does not broadcast to the scores");
        size_t nm = mil_kshape_count(&m->shape);
        NC_TRY(mil_interp_scratch(p, 1, nm, &mk, err));
        for (size_t i = 0; i < nm; i++)
            ((float *)mk)[i] = m->is_int ? (((int32_t *)m->data)[i] ? 0.0f : -INFINITY) : ((float *)m->data)[i];
        mil_k_binary_f32(MIL_KB_ADD, sc, &ss, mk, &m->shape, sc, &ss);
    }
    mil_k_softmax(sc, &ss, r - 1, sc);
    NC_TRY(mil_interp_out(it, op, 0, &os, &o, err));
    mil_k_matmul(sc, &ss, 0, v->data, &v->shape, 0, o->data, &os, NULL, it->pool);
    return NC_OK;
}

static const struct { const char *type; mil_exec_fn fn; } MATH_OPS[] = {
    {"scaled_dot_product_attention", ex_sdpa},
    {"softmax", ex_softmax}, {"layer_norm", ex_layer_norm}, {"matmul", ex_matmul},
    {"linear", ex_linear}, {"conv", ex_conv}, {"logical_not", ex_logical_not},
};

mil_exec_fn mil_interp_lookup_math(const char *type) {
    for (size_t i = 0; i < sizeof BINARY / sizeof BINARY[0]; i++)
        if (!strcmp(BINARY[i].type, type)) return ex_binary;
    for (size_t i = 0; i < sizeof UNARY / sizeof UNARY[0]; i++)
        if (!strcmp(UNARY[i].type, type)) return ex_unary;
    for (size_t i = 0; i < sizeof REDUCE / sizeof REDUCE[0]; i++)
        if (!strcmp(REDUCE[i].type, type)) return ex_reduce;
    for (size_t i = 0; i < sizeof MATH_OPS / sizeof MATH_OPS[0]; i++)
        if (!strcmp(MATH_OPS[i].type, type)) return MATH_OPS[i].fn;
    return NULL;
}
