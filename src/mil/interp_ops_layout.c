/* MIL op semantics, data-movement family: transpose, reshape, expand_dims,
 * squeeze, slices, concat, stack, split, gather*, scatter*, slice_update,
 * select, cast, fill, band_part, pad, tile, shape, read_state/write_state.
 * They copy 4-byte words, so one implementation serves every dtype. */
#include <math.h>
#include <string.h>

#include "mil/interp_priv.h"

static nc_status copy_out(mil_interp *it, const mil_op *op, const mil_slot *x,
                          const mil_kshape *shape, nc_error *err) {
    mil_slot *o;
    if (mil_kshape_count(shape) != mil_kshape_count(&x->shape))
        return mil_interp_fail(err, NC_ERR_FORMAT, op, "%zu elements cannot become %zu",
                               mil_kshape_count(&x->shape), mil_kshape_count(shape));
    NC_TRY(mil_interp_out(it, op, 0, shape, &o, err));
    if (o->is_int != x->is_int)
        return mil_interp_fail(err, NC_ERR_FORMAT, op, "output dtype %s differs from the input's",
                               mil_dtype_name(o->dtype));
    if (o != x) memmove(o->data, x->data, mil_kshape_count(shape) * 4);
    return NC_OK;
}

/* identity (x), read_state and the E5RT tensor_buffer boundaries (input):
 * the output is the input. A state's slot holds its tensor and keeps it
 * across runs; a tensor_buffer holds the same elements as its tensor (its
 * strides describe the ANE's memory, not the values). */
static nc_status ex_pass_through(mil_interp *it, op_plan *p, nc_error *err) {
    mil_slot *x;
    NC_TRY(mil_interp_need(it, p->op, mil_op_arg(p->op, "x") ? "x" : "input", &x, err));
    return copy_out(it, p->op, x, &x->shape, err);
}

static nc_status ex_transpose(mil_interp *it, op_plan *p, nc_error *err) {
    const mil_op *op = p->op;
    mil_slot *x, *o;
    int64_t perm[MIL_K_MAX_RANK];
    int n, iperm[MIL_K_MAX_RANK];
    unsigned seen = 0;
    NC_TRY(mil_interp_need(it, op, "x", &x, err));
    NC_TRY(mil_interp_ints(it, op, "perm", perm, MIL_K_MAX_RANK, &n, err));
    if (n != x->shape.rank) return mil_interp_fail(err, NC_ERR_FORMAT, op, "perm needs %d entries", x->shape.rank);
    mil_kshape os = {n, {0}};
    for (int i = 0; i < n; i++) {
        int a = mil_interp_axis(perm[i], n);
        if (a < 0 || (seen & (1u << a))) return mil_interp_fail(err, NC_ERR_FORMAT, op, "perm is not a permutation");
        seen |= 1u << a;
        iperm[i] = a;
        os.d[i] = x->shape.d[a];
    }
    NC_TRY(mil_interp_out(it, op, 0, &os, &o, err));
    mil_k_transpose(x->data, &x->shape, iperm, o->data);
    return NC_OK;
}

static nc_status ex_reshape(mil_interp *it, op_plan *p, nc_error *err) {
    const mil_op *op = p->op;
    mil_slot *x;
    int64_t sh[MIL_K_MAX_RANK];
    int n, infer = -1;
    NC_TRY(mil_interp_need(it, op, "x", &x, err));
    NC_TRY(mil_interp_ints(it, op, "shape", sh, MIL_K_MAX_RANK, &n, err));
    if (n < 0) return mil_interp_fail(err, NC_ERR_FORMAT, op, "missing argument 'shape'");
    mil_kshape os = {n, {0}};
    int64_t known = 1;
    for (int i = 0; i < n; i++) {
        if (sh[i] == -1 && infer < 0) {
            infer = i;
            continue;
        }
        if (sh[i] == 0 && i < x->shape.rank) sh[i] = x->shape.d[i]; /* 0 copies the input's dim */
        if (sh[i] < 0) return mil_interp_fail(err, NC_ERR_FORMAT, op, "bad shape entry %lld", (long long)sh[i]);
        if (sh[i] && known > INT64_MAX / sh[i])
            return mil_interp_fail(err, NC_ERR_RANGE, op, "shape has too many elements");
        os.d[i] = sh[i];
        known *= sh[i];
    }
    int64_t total = (int64_t)mil_kshape_count(&x->shape);
    if (infer >= 0) {
        if (known == 0 || total % known)
            return mil_interp_fail(err, NC_ERR_FORMAT, op, "cannot infer -1 for %lld elements", (long long)total);
        os.d[infer] = total / known;
    }
    return copy_out(it, op, x, &os, err);
}

static nc_status ex_expand_dims(mil_interp *it, op_plan *p, nc_error *err) {
    const mil_op *op = p->op;
    mil_slot *x;
    int64_t axes[MIL_K_MAX_RANK];
    int n;
    NC_TRY(mil_interp_need(it, op, "x", &x, err));
    NC_TRY(mil_interp_ints(it, op, "axes", axes, MIL_K_MAX_RANK, &n, err));
    int r = x->shape.rank + n;
    if (n < 1 || r > MIL_K_MAX_RANK) return mil_interp_fail(err, NC_ERR_FORMAT, op, "bad axes");
    unsigned ins = 0;
    for (int i = 0; i < n; i++) {
        int a = mil_interp_axis(axes[i], r); /* axes count in the output's rank */
        if (a < 0 || (ins & (1u << a))) return mil_interp_fail(err, NC_ERR_FORMAT, op, "bad axis %lld", (long long)axes[i]);
        ins |= 1u << a;
    }
    mil_kshape os = {r, {0}};
    for (int i = 0, j = 0; i < r; i++) os.d[i] = (ins & (1u << i)) ? 1 : x->shape.d[j++];
    return copy_out(it, op, x, &os, err);
}

static nc_status ex_squeeze(mil_interp *it, op_plan *p, nc_error *err) {
    const mil_op *op = p->op;
    mil_slot *x;
    int64_t axes[MIL_K_MAX_RANK];
    int n;
    NC_TRY(mil_interp_need(it, op, "x", &x, err));
    NC_TRY(mil_interp_ints(it, op, "axes", axes, MIL_K_MAX_RANK, &n, err));
    unsigned drop = 0;
    for (int i = 0; i < x->shape.rank; i++)
        if (n < 0 && x->shape.d[i] == 1) drop |= 1u << i;
    for (int i = 0; i < n; i++) {
        int a = mil_interp_axis(axes[i], x->shape.rank);
        if (a < 0 || x->shape.d[a] != 1)
            return mil_interp_fail(err, NC_ERR_FORMAT, op, "axis %lld is not of size 1", (long long)axes[i]);
        drop |= 1u << a;
    }
    mil_kshape os = {0, {0}};
    for (int i = 0; i < x->shape.rank; i++)
        if (!(drop & (1u << i))) os.d[os.rank++] = x->shape.d[i];
    return copy_out(it, op, x, &os, err);
}

/* Resolved geometry of a slice_by_index / slice_update: per axis the first
 * index, step and length, with squeezed axes flagged. NumPy/Python slice
 * rules: negative indices count from the end, out-of-range ones clamp. */
typedef struct slice_geom {
    int64_t begin[MIL_K_MAX_RANK], stride[MIL_K_MAX_RANK];
    mil_kshape full; /* the slice with every axis kept */
    mil_kshape out;  /* squeezed axes removed */
} slice_geom;

static nc_status slice_resolve(mil_interp *it, const mil_op *op, const mil_kshape *xs,
                               slice_geom *g, nc_error *err) {
    int r = xs->rank, nb, ne, ns, nbm, nem, nsq;
    int64_t b[MIL_K_MAX_RANK], e[MIL_K_MAX_RANK], s[MIL_K_MAX_RANK];
    int64_t bm[MIL_K_MAX_RANK], em[MIL_K_MAX_RANK], sq[MIL_K_MAX_RANK];
    NC_TRY(mil_interp_ints(it, op, "begin", b, MIL_K_MAX_RANK, &nb, err));
    NC_TRY(mil_interp_ints(it, op, "end", e, MIL_K_MAX_RANK, &ne, err));
    NC_TRY(mil_interp_ints(it, op, "stride", s, MIL_K_MAX_RANK, &ns, err));
    NC_TRY(mil_interp_ints(it, op, "begin_mask", bm, MIL_K_MAX_RANK, &nbm, err));
    NC_TRY(mil_interp_ints(it, op, "end_mask", em, MIL_K_MAX_RANK, &nem, err));
    NC_TRY(mil_interp_ints(it, op, "squeeze_mask", sq, MIL_K_MAX_RANK, &nsq, err));
    if (nb != r || ne != r || (ns >= 0 && ns != r) || (nbm >= 0 && nbm != r) ||
        (nem >= 0 && nem != r) || (nsq >= 0 && nsq != r))
        return mil_interp_fail(err, NC_ERR_FORMAT, op, "begin, end, stride and masks need %d entries", r);
    g->full.rank = r;
    g->out.rank = 0;
    for (int i = 0; i < r; i++) {
        int64_t d = xs->d[i], st = ns >= 0 ? s[i] : 1, lo, hi;
        if (st == 0) return mil_interp_fail(err, NC_ERR_FORMAT, op, "stride 0 on axis %d", i);
        int64_t bi = b[i], ei = e[i];
        if (st > 0) {
            lo = 0;
            hi = d;
        } else {
            lo = -1;
            hi = d - 1;
        }
        if (nbm >= 0 && bm[i]) bi = st > 0 ? 0 : d - 1;
        else {
            if (bi < 0) bi += d;
            bi = bi < lo ? lo : bi > hi ? hi : bi;
        }
        if (nem >= 0 && em[i]) ei = st > 0 ? d : -1;
        else {
            if (ei < 0) ei += d;
            ei = ei < lo ? lo : ei > hi ? hi : ei;
        }
        int64_t len = st > 0 ? (ei - bi + st - 1) / st : (bi - ei + (-st) - 1) / (-st);
        if (len < 0) len = 0;
        int squeeze = nsq >= 0 && sq[i];
        if (squeeze) {
            if (bi < 0 || bi >= d)
                return mil_interp_fail(err, NC_ERR_RANGE, op, "squeezed index %lld out of range on axis %d",
                                       (long long)b[i], i);
            len = 1;
        }
        g->begin[i] = bi;
        g->stride[i] = st;
        g->full.d[i] = len;
        if (!squeeze) g->out.d[g->out.rank++] = len;
    }
    return NC_OK;
}

static nc_status ex_slice_by_index(mil_interp *it, op_plan *p, nc_error *err) {
    mil_slot *x, *o;
    slice_geom g;
    NC_TRY(mil_interp_need(it, p->op, "x", &x, err));
    NC_TRY(slice_resolve(it, p->op, &x->shape, &g, err));
    NC_TRY(mil_interp_out(it, p->op, 0, &g.out, &o, err));
    mil_k_strided_slice(x->data, &x->shape, g.begin, g.stride, o->data, &g.full);
    return NC_OK;
}

static nc_status ex_slice_by_size(mil_interp *it, op_plan *p, nc_error *err) {
    const mil_op *op = p->op;
    mil_slot *x, *o;
    int64_t b[MIL_K_MAX_RANK], sz[MIL_K_MAX_RANK], st[MIL_K_MAX_RANK];
    int nb, ns;
    NC_TRY(mil_interp_need(it, op, "x", &x, err));
    NC_TRY(mil_interp_ints(it, op, "begin", b, MIL_K_MAX_RANK, &nb, err));
    NC_TRY(mil_interp_ints(it, op, "size", sz, MIL_K_MAX_RANK, &ns, err));
    int r = x->shape.rank;
    if (nb != r || ns != r) return mil_interp_fail(err, NC_ERR_FORMAT, op, "begin and size need %d entries", r);
    mil_kshape os = {r, {0}};
    for (int i = 0; i < r; i++) {
        int64_t d = x->shape.d[i];
        if (b[i] < 0) b[i] += d;
        int64_t len = sz[i] == -1 ? d - b[i] : sz[i];
        if (b[i] < 0 || len < 0 || b[i] + len > d)
            return mil_interp_fail(err, NC_ERR_RANGE, op, "slice [%lld, +%lld) outside axis %d of size %lld",
                                   (long long)b[i], (long long)sz[i], i, (long long)d);
        os.d[i] = len;
        st[i] = 1;
    }
    NC_TRY(mil_interp_out(it, op, 0, &os, &o, err));
    mil_k_strided_slice(x->data, &x->shape, b, st, o->data, &os);
    return NC_OK;
}

static nc_status ex_slice_update(mil_interp *it, op_plan *p, nc_error *err) {
    const mil_op *op = p->op;
    mil_slot *x, *u, *o;
    slice_geom g;
    NC_TRY(mil_interp_need(it, op, "x", &x, err));
    NC_TRY(mil_interp_need(it, op, "update", &u, err));
    NC_TRY(slice_resolve(it, op, &x->shape, &g, err));
    if (!mil_kshape_equal(&u->shape, &g.out) && mil_kshape_count(&u->shape) != mil_kshape_count(&g.full))
        return mil_interp_fail(err, NC_ERR_FORMAT, op, "update's shape does not match the slice");
    NC_TRY(mil_interp_out(it, op, 0, &x->shape, &o, err));
    if (o->is_int != u->is_int || o->is_int != x->is_int)
        return mil_interp_fail(err, NC_ERR_FORMAT, op, "x, update and output dtypes differ");
    memmove(o->data, x->data, mil_kshape_count(&x->shape) * 4);
    mil_k_strided_assign(o->data, &x->shape, g.begin, g.stride, u->data, &g.full);
    return NC_OK;
}

/* The tuple argument's slots (concat, stack). */
static nc_status tuple_slots(mil_interp *it, const mil_op *op, const char *name, mil_slot **out,
                             int max, int *n, nc_error *err) {
    const mil_arg *a = mil_op_arg(op, name);
    if (!a || a->n_items < 1) return mil_interp_fail(err, NC_ERR_FORMAT, op, "missing argument '%s'", name);
    if (a->n_items > max) return mil_interp_fail(err, NC_ERR_UNSUPPORTED, op, "more than %d values", max);
    for (int i = 0; i < a->n_items; i++) {
        out[i] = mil_interp_slot(it, a->items[i]);
        if (!out[i] || !out[i]->has_value)
            return mil_interp_fail(err, NC_ERR_INVALID, op, "value %d of '%s' is not set", i, name);
    }
    *n = a->n_items;
    return NC_OK;
}

#define MAX_TUPLE 512

static nc_status ex_concat(mil_interp *it, op_plan *p, nc_error *err) {
    const mil_op *op = p->op;
    mil_slot *vs[MAX_TUPLE], *o;
    mil_kshape shapes[MAX_TUPLE];
    const uint32_t *datas[MAX_TUPLE];
    int n;
    int64_t axis, inter;
    NC_TRY(tuple_slots(it, op, "values", vs, MAX_TUPLE, &n, err));
    NC_TRY(mil_interp_int(it, op, "axis", 0, &axis, err));
    NC_TRY(mil_interp_int(it, op, "interleave", 0, &inter, err));
    int r = vs[0]->shape.rank, ax = mil_interp_axis(axis, r);
    if (ax < 0) return mil_interp_fail(err, NC_ERR_FORMAT, op, "axis %lld out of range", (long long)axis);
    mil_kshape os = vs[0]->shape;
    os.d[ax] = 0;
    for (int k = 0; k < n; k++) {
        const mil_kshape *s = &vs[k]->shape;
        int ok = s->rank == r && vs[k]->is_int == vs[0]->is_int;
        for (int i = 0; ok && i < r; i++)
            if (i != ax && s->d[i] != vs[0]->shape.d[i]) ok = 0;
        if (inter && s->d[ax] != vs[0]->shape.d[ax]) ok = 0;
        if (!ok) return mil_interp_fail(err, NC_ERR_FORMAT, op, "value %d does not match value 0's shape/dtype", k);
        os.d[ax] += s->d[ax];
        shapes[k] = *s;
        datas[k] = vs[k]->data;
    }
    NC_TRY(mil_interp_out(it, op, 0, &os, &o, err));
    mil_k_concat(datas, shapes, n, ax, (int)inter, o->data);
    return NC_OK;
}

static nc_status ex_stack(mil_interp *it, op_plan *p, nc_error *err) {
    const mil_op *op = p->op;
    mil_slot *vs[MAX_TUPLE], *o;
    mil_kshape shapes[MAX_TUPLE];
    const uint32_t *datas[MAX_TUPLE];
    int n;
    int64_t axis;
    NC_TRY(tuple_slots(it, op, "values", vs, MAX_TUPLE, &n, err));
    NC_TRY(mil_interp_int(it, op, "axis", 0, &axis, err));
    int r = vs[0]->shape.rank, ax = mil_interp_axis(axis, r + 1);
    if (ax < 0 || r + 1 > MIL_K_MAX_RANK) return mil_interp_fail(err, NC_ERR_FORMAT, op, "bad axis");
    mil_kshape one = {r + 1, {0}};
    for (int i = 0, j = 0; i <= r; i++) one.d[i] = i == ax ? 1 : vs[0]->shape.d[j++];
    for (int k = 0; k < n; k++) {
        if (!mil_kshape_equal(&vs[k]->shape, &vs[0]->shape))
            return mil_interp_fail(err, NC_ERR_FORMAT, op, "value %d differs in shape", k);
        shapes[k] = one;
        datas[k] = vs[k]->data;
    }
    mil_kshape os = one;
    os.d[ax] = n;
    NC_TRY(mil_interp_out(it, op, 0, &os, &o, err));
    mil_k_concat(datas, shapes, n, ax, 0, o->data);
    return NC_OK;
}

static nc_status ex_split(mil_interp *it, op_plan *p, nc_error *err) {
    const mil_op *op = p->op;
    mil_slot *x;
    int64_t axis, num, sizes[256];
    int ns;
    NC_TRY(mil_interp_need(it, op, "x", &x, err));
    NC_TRY(mil_interp_int(it, op, "axis", 0, &axis, err));
    NC_TRY(mil_interp_int(it, op, "num_splits", op->n_outputs, &num, err));
    NC_TRY(mil_interp_ints(it, op, "split_sizes", sizes, 256, &ns, err));
    int ax = mil_interp_axis(axis, x->shape.rank);
    if (ax < 0) return mil_interp_fail(err, NC_ERR_FORMAT, op, "axis %lld out of range", (long long)axis);
    int64_t d = x->shape.d[ax];
    int n = ns >= 0 ? ns : (int)num;
    if (n < 1 || n != op->n_outputs || n > 256)
        return mil_interp_fail(err, NC_ERR_FORMAT, op, "%d parts but %d declared outputs", n, op->n_outputs);
    int64_t total = 0;
    if (ns < 0) {
        int64_t part = (d + n - 1) / n; /* equal parts, the last one smaller */
        for (int k = 0; k < n; k++) sizes[k] = (k + 1) * part <= d ? part : d - k * part;
    }
    for (int k = 0; k < n; k++) {
        if (sizes[k] < 0) return mil_interp_fail(err, NC_ERR_FORMAT, op, "negative split size");
        total += sizes[k];
    }
    if (total != d) return mil_interp_fail(err, NC_ERR_FORMAT, op, "split sizes add to %lld, axis is %lld",
                                           (long long)total, (long long)d);
    int64_t begin[MIL_K_MAX_RANK] = {0}, stride[MIL_K_MAX_RANK];
    for (int i = 0; i < MIL_K_MAX_RANK; i++) stride[i] = 1;
    for (int k = 0; k < n; k++) {
        mil_slot *o;
        mil_kshape os = x->shape;
        os.d[ax] = sizes[k];
        NC_TRY(mil_interp_out(it, op, k, &os, &o, err));
        mil_k_strided_slice(x->data, &x->shape, begin, stride, o->data, &os);
        begin[ax] += sizes[k];
    }
    return NC_OK;
}

/* Index tensors are int32 in storage; float indices are truncated into scratch. */
static nc_status as_index(op_plan *p, const mil_slot *s, const int32_t **out, nc_error *err) {
    if (s->is_int) {
        *out = s->data;
        return NC_OK;
    }
    size_t n = mil_kshape_count(&s->shape);
    void *buf;
    NC_TRY(mil_interp_scratch(p, 0, n, &buf, err));
    for (size_t i = 0; i < n; i++) {
        float f = ((const float *)s->data)[i];
        ((int32_t *)buf)[i] = (f != f || fabsf(f) > 2e9f) ? INT32_MAX : (int32_t)f;
    }
    *out = buf;
    return NC_OK;
}

static nc_status ex_gather(mil_interp *it, op_plan *p, nc_error *err) {
    const mil_op *op = p->op;
    mil_slot *x, *ix, *o;
    int64_t axis, bd;
    const int32_t *idx;
    NC_TRY(mil_interp_need(it, op, "x", &x, err));
    NC_TRY(mil_interp_need(it, op, "indices", &ix, err));
    NC_TRY(mil_interp_int(it, op, "axis", 0, &axis, err));
    NC_TRY(mil_interp_int(it, op, "batch_dims", 0, &bd, err));
    int ax = mil_interp_axis(axis, x->shape.rank);
    if (ax < 0 || bd < 0 || bd > ax || bd > ix->shape.rank)
        return mil_interp_fail(err, NC_ERR_FORMAT, op, "axis %lld / batch_dims %lld out of range",
                               (long long)axis, (long long)bd);
    for (int i = 0; i < bd; i++)
        if (ix->shape.d[i] != x->shape.d[i])
            return mil_interp_fail(err, NC_ERR_FORMAT, op, "batch axis %d differs between x and indices", i);
    mil_kshape os = {0, {0}};
    if (x->shape.rank - 1 + ix->shape.rank - bd > MIL_K_MAX_RANK)
        return mil_interp_fail(err, NC_ERR_UNSUPPORTED, op, "rank too high");
    for (int i = 0; i < ax; i++) os.d[os.rank++] = x->shape.d[i];
    for (int i = (int)bd; i < ix->shape.rank; i++) os.d[os.rank++] = ix->shape.d[i];
    for (int i = ax + 1; i < x->shape.rank; i++) os.d[os.rank++] = x->shape.d[i];
    NC_TRY(as_index(p, ix, &idx, err));
    NC_TRY(mil_interp_out(it, op, 0, &os, &o, err));
    if (mil_k_gather(x->data, &x->shape, idx, &ix->shape, ax, (int)bd, o->data))
        return mil_interp_fail(err, NC_ERR_RANGE, op, "an index is outside [-%lld, %lld)",
                               (long long)x->shape.d[ax], (long long)x->shape.d[ax]);
    return NC_OK;
}

static nc_status ex_gather_along_axis(mil_interp *it, op_plan *p, nc_error *err) {
    const mil_op *op = p->op;
    mil_slot *x, *ix, *o;
    int64_t axis;
    const int32_t *idx;
    NC_TRY(mil_interp_need(it, op, "x", &x, err));
    NC_TRY(mil_interp_need(it, op, "indices", &ix, err));
    NC_TRY(mil_interp_int(it, op, "axis", 0, &axis, err));
    int ax = mil_interp_axis(axis, x->shape.rank);
    int ok = ax >= 0 && ix->shape.rank == x->shape.rank;
    for (int i = 0; ok && i < x->shape.rank; i++)
        if (i != ax && ix->shape.d[i] != x->shape.d[i]) ok = 0;
    if (!ok) return mil_interp_fail(err, NC_ERR_FORMAT, op, "indices must match x's shape except on axis");
    NC_TRY(as_index(p, ix, &idx, err));
    NC_TRY(mil_interp_out(it, op, 0, &ix->shape, &o, err));
    if (mil_k_gather_along_axis(x->data, &x->shape, idx, &ix->shape, ax, o->data))
        return mil_interp_fail(err, NC_ERR_RANGE, op, "an index is out of range");
    return NC_OK;
}

static nc_status scatter_mode(const mil_op *op, const char *m, mil_kscat *out, nc_error *err) {
    static const char *names[] = {"update", "add", "sub", "mul", "div", "max", "min"};
    for (int i = 0; i < 7; i++)
        if (!strcmp(m, names[i])) {
            *out = (mil_kscat)i;
            return NC_OK;
        }
    return mil_interp_fail(err, NC_ERR_FORMAT, op, "unknown scatter mode '%s'", m);
}

static nc_status ex_scatter(mil_interp *it, op_plan *p, nc_error *err) {
    const mil_op *op = p->op;
    int along = !strcmp(op->type, "scatter_along_axis"), nd = !strcmp(op->type, "scatter_nd");
    mil_slot *d, *ix, *u, *o;
    int64_t axis;
    const int32_t *idx;
    mil_kscat mode = MIL_KS_ADD;
    NC_TRY(mil_interp_need(it, op, "data", &d, err));
    NC_TRY(mil_interp_need(it, op, "indices", &ix, err));
    NC_TRY(mil_interp_need(it, op, "updates", &u, err));
    NC_TRY(mil_interp_int(it, op, "axis", 0, &axis, err));
    /* coremltools' default mode is "add" (its DefaultInputs) */
    NC_TRY(scatter_mode(op, mil_interp_str(it, op, "mode", "add"), &mode, err));
    int ax = mil_interp_axis(axis, d->shape.rank);
    if (ax < 0) return mil_interp_fail(err, NC_ERR_FORMAT, op, "axis %lld out of range", (long long)axis);
    mil_kshape us = {0, {0}};
    if (nd) {
        int kk = ix->shape.rank ? (int)ix->shape.d[ix->shape.rank - 1] : -1;
        if (kk < 1 || kk > d->shape.rank || ix->shape.rank - 1 + d->shape.rank - kk > MIL_K_MAX_RANK)
            return mil_interp_fail(err, NC_ERR_FORMAT, op, "indices' last axis must be 1..rank(data)");
        for (int i = 0; i < ix->shape.rank - 1; i++) us.d[us.rank++] = ix->shape.d[i];
        for (int i = kk; i < d->shape.rank; i++) us.d[us.rank++] = d->shape.d[i];
    } else if (along) {
        us = ix->shape;
    } else {
        if (d->shape.rank - 1 + ix->shape.rank > MIL_K_MAX_RANK)
            return mil_interp_fail(err, NC_ERR_UNSUPPORTED, op, "rank too high");
        for (int i = 0; i < ax; i++) us.d[us.rank++] = d->shape.d[i];
        for (int i = 0; i < ix->shape.rank; i++) us.d[us.rank++] = ix->shape.d[i];
        for (int i = ax + 1; i < d->shape.rank; i++) us.d[us.rank++] = d->shape.d[i];
    }
    if (!mil_kshape_equal(&us, &u->shape) || u->is_int != d->is_int)
        return mil_interp_fail(err, NC_ERR_FORMAT, op, "updates do not have the shape/dtype the indices need");
    NC_TRY(as_index(p, ix, &idx, err));
    NC_TRY(mil_interp_out(it, op, 0, &d->shape, &o, err));
    memmove(o->data, d->data, mil_kshape_count(&d->shape) * 4);
    int bad = nd      ? mil_k_scatter_nd(o->data, &d->shape, idx, &ix->shape, u->data, mode, !d->is_int)
              : along ? mil_k_scatter_along_axis(o->data, &d->shape, idx, &ix->shape, u->data, ax, mode, !d->is_int)
                    : mil_k_scatter(o->data, &d->shape, idx, &ix->shape, u->data, ax, mode, !d->is_int);
    if (bad) return mil_interp_fail(err, NC_ERR_RANGE, op, "an index is out of range");
    return NC_OK;
}

static nc_status ex_select(mil_interp *it, op_plan *p, nc_error *err) {
    const mil_op *op = p->op;
    mil_slot *c, *a, *b, *o;
    NC_TRY(mil_interp_need(it, op, "cond", &c, err));
    NC_TRY(mil_interp_need(it, op, "a", &a, err));
    NC_TRY(mil_interp_need(it, op, "b", &b, err));
    mil_kshape t, os;
    if (!mil_kshape_broadcast(&c->shape, &a->shape, &t) || !mil_kshape_broadcast(&t, &b->shape, &os))
        return mil_interp_fail(err, NC_ERR_FORMAT, op, "cond, a and b do not broadcast");
    if (a->is_int != b->is_int) return mil_interp_fail(err, NC_ERR_FORMAT, op, "a and b differ in dtype");
    const int32_t *cond;
    NC_TRY(as_index(p, c, &cond, err)); /* float conditions: non-zero is true */
    NC_TRY(mil_interp_out(it, op, 0, &os, &o, err));
    if (o->is_int != a->is_int) return mil_interp_fail(err, NC_ERR_FORMAT, op, "output dtype differs from a's");
    mil_k_select(cond, &c->shape, a->data, &a->shape, b->data, &b->shape, o->data, &os);
    return NC_OK;
}

/* Saturating float -> integer of a dtype's range (truncation toward zero,
 * as numpy's astype; NaN -> 0). */
static int32_t float_to_int(float f, mil_dtype dt) {
    double lo = -2147483648.0, hi = 2147483647.0;
    switch (dt) {
    case MIL_DT_INT8: lo = -128; hi = 127; break;
    case MIL_DT_UINT8: lo = 0; hi = 255; break;
    case MIL_DT_INT16: lo = -32768; hi = 32767; break;
    case MIL_DT_UINT16: lo = 0; hi = 65535; break;
    default: break;
    }
    if (f != f) return 0;
    double d = trunc((double)f);
    return (int32_t)(d < lo ? lo : d > hi ? hi : d);
}

static nc_status ex_cast(mil_interp *it, op_plan *p, nc_error *err) {
    const mil_op *op = p->op;
    mil_slot *x, *o;
    NC_TRY(mil_interp_need(it, op, "x", &x, err));
    const char *to = mil_interp_str(it, op, "dtype", NULL);
    mil_dtype dt = to ? mil_dtype_from_name(to) : MIL_DT_INVALID;
    if (dt == MIL_DT_INVALID) return mil_interp_fail(err, NC_ERR_FORMAT, op, "bad target dtype '%s'", to ? to : "");
    NC_TRY(mil_interp_out(it, op, 0, &x->shape, &o, err));
    if (o->dtype != dt)
        return mil_interp_fail(err, NC_ERR_FORMAT, op, "casts to %s but the output is declared %s", to,
                               mil_dtype_name(o->dtype));
    size_t n = mil_kshape_count(&x->shape);
    for (size_t i = 0; i < n; i++) {
        if (x->is_int && o->is_int) {
            int32_t v = ((int32_t *)x->data)[i];
            ((int32_t *)o->data)[i] = dt == MIL_DT_BOOL ? v != 0 : float_to_int((float)v, dt);
        } else if (x->is_int) {
            ((float *)o->data)[i] = (float)((int32_t *)x->data)[i];
        } else if (o->is_int) {
            float f = ((float *)x->data)[i];
            ((int32_t *)o->data)[i] = dt == MIL_DT_BOOL ? f != 0 : float_to_int(f, dt);
        } else {
            ((float *)o->data)[i] = ((float *)x->data)[i]; /* fp16 rounding follows in fp16 mode */
        }
    }
    return NC_OK;
}

/* A float or int constant in the output's storage. */
static uint32_t fill_word(const mil_slot *o, const mil_slot *v) {
    uint32_t w = 0;
    if (!v) return 0;
    if (o->is_int) {
        int32_t q = v->is_int ? ((int32_t *)v->data)[0] : float_to_int(((float *)v->data)[0], o->dtype);
        memcpy(&w, &q, 4);
    } else {
        float f = v->is_int ? (float)((int32_t *)v->data)[0] : ((float *)v->data)[0];
        memcpy(&w, &f, 4);
    }
    return w;
}

static nc_status ex_fill(mil_interp *it, op_plan *p, nc_error *err) {
    const mil_op *op = p->op;
    mil_slot *o, *v = mil_interp_arg(it, op, "value");
    mil_kshape os = {0, {0}};
    if (!strcmp(op->type, "fill_like")) {
        mil_slot *r;
        NC_TRY(mil_interp_need(it, op, "ref_tensor", &r, err));
        os = r->shape;
    } else {
        int64_t sh[MIL_K_MAX_RANK];
        int n;
        NC_TRY(mil_interp_ints(it, op, "shape", sh, MIL_K_MAX_RANK, &n, err));
        if (n < 0) return mil_interp_fail(err, NC_ERR_FORMAT, op, "missing argument 'shape'");
        os.rank = n;
        for (int i = 0; i < n; i++) {
            if (sh[i] < 0) return mil_interp_fail(err, NC_ERR_FORMAT, op, "negative dimension");
            os.d[i] = sh[i];
        }
    }
    if (v && (!v->has_value || mil_kshape_count(&v->shape) < 1))
        return mil_interp_fail(err, NC_ERR_FORMAT, op, "value must be one number");
    NC_TRY(mil_interp_out(it, op, 0, &os, &o, err));
    uint32_t w = fill_word(o, v);
    size_t n = mil_kshape_count(&os);
    for (size_t i = 0; i < n; i++) ((uint32_t *)o->data)[i] = w;
    return NC_OK;
}

static nc_status ex_band_part(mil_interp *it, op_plan *p, nc_error *err) {
    const mil_op *op = p->op;
    mil_slot *x, *o;
    int64_t lo, up;
    NC_TRY(mil_interp_need(it, op, "x", &x, err));
    NC_TRY(mil_interp_int(it, op, "lower", -1, &lo, err));
    NC_TRY(mil_interp_int(it, op, "upper", -1, &up, err));
    if (x->shape.rank < 2) return mil_interp_fail(err, NC_ERR_FORMAT, op, "x needs rank >= 2");
    NC_TRY(mil_interp_out(it, op, 0, &x->shape, &o, err));
    mil_k_band_part(x->data, &x->shape, lo, up, o->data);
    return NC_OK;
}

static nc_status ex_pad(mil_interp *it, op_plan *p, nc_error *err) {
    const mil_op *op = p->op;
    mil_slot *x, *o;
    int64_t pad[2 * MIL_K_MAX_RANK], before[MIL_K_MAX_RANK] = {0};
    int n;
    NC_TRY(mil_interp_need(it, op, "x", &x, err));
    NC_TRY(mil_interp_ints(it, op, "pad", pad, 2 * MIL_K_MAX_RANK, &n, err));
    const char *m = mil_interp_str(it, op, "mode", "constant");
    int r = x->shape.rank;
    if (n < 0 || n % 2 || n / 2 > r) return mil_interp_fail(err, NC_ERR_FORMAT, op, "pad needs 2N values, N <= %d", r);
    mil_kpad mode = !strcmp(m, "constant") ? MIL_KP_CONSTANT : !strcmp(m, "reflect") ? MIL_KP_REFLECT
                    : !strcmp(m, "replicate") ? MIL_KP_REPLICATE : (mil_kpad)-1;
    if ((int)mode < 0) return mil_interp_fail(err, NC_ERR_FORMAT, op, "unknown pad mode '%s'", m);
    mil_kshape os = x->shape;
    for (int k = 0; k < n / 2; k++) { /* pads apply to the last n/2 axes */
        int a = r - n / 2 + k;
        if (pad[2 * k] < 0 || pad[2 * k + 1] < 0) return mil_interp_fail(err, NC_ERR_FORMAT, op, "negative pad");
        if (mode == MIL_KP_REFLECT && (pad[2 * k] >= x->shape.d[a] || pad[2 * k + 1] >= x->shape.d[a]))
            return mil_interp_fail(err, NC_ERR_FORMAT, op, "reflect pad must be smaller than the axis");
        before[a] = pad[2 * k];
        os.d[a] += pad[2 * k] + pad[2 * k + 1];
    }
    NC_TRY(mil_interp_out(it, op, 0, &os, &o, err));
    mil_k_pad(x->data, &x->shape, before, mode, fill_word(o, mil_interp_arg(it, op, "constant_val")),
              o->data, &os);
    return NC_OK;
}

static nc_status ex_tile(mil_interp *it, op_plan *p, nc_error *err) {
    const mil_op *op = p->op;
    mil_slot *x, *o;
    int64_t reps[MIL_K_MAX_RANK];
    int n;
    NC_TRY(mil_interp_need(it, op, "x", &x, err));
    NC_TRY(mil_interp_ints(it, op, "reps", reps, MIL_K_MAX_RANK, &n, err));
    if (n != x->shape.rank) return mil_interp_fail(err, NC_ERR_FORMAT, op, "reps needs %d values", x->shape.rank);
    mil_kshape os = x->shape;
    for (int i = 0; i < n; i++) {
        if (reps[i] < 1 || os.d[i] > INT32_MAX) return mil_interp_fail(err, NC_ERR_FORMAT, op, "reps must be >= 1");
        os.d[i] *= reps[i];
    }
    NC_TRY(mil_interp_out(it, op, 0, &os, &o, err));
    mil_k_tile(x->data, &x->shape, o->data, &os);
    return NC_OK;
}

static nc_status ex_shape(mil_interp *it, op_plan *p, nc_error *err) {
    mil_slot *x, *o;
    NC_TRY(mil_interp_need(it, p->op, "x", &x, err));
    mil_kshape os = {1, {x->shape.rank}};
    NC_TRY(mil_interp_out(it, p->op, 0, &os, &o, err));
    for (int i = 0; i < x->shape.rank; i++) ((int32_t *)o->data)[i] = (int32_t)x->shape.d[i];
    return NC_OK;
}

static nc_status ex_write_state(mil_interp *it, op_plan *p, nc_error *err) {
    const mil_op *op = p->op;
    mil_slot *s, *d;
    NC_TRY(mil_interp_need(it, op, "input", &s, err));
    NC_TRY(mil_interp_need(it, op, "data", &d, err));
    if (!mil_kshape_equal(&s->shape, &d->shape) || s->is_int != d->is_int)
        return mil_interp_fail(err, NC_ERR_FORMAT, op, "data does not match the state's type");
    memmove(s->data, d->data, mil_kshape_count(&s->shape) * 4);
    return NC_OK;
}

static const struct { const char *type; mil_exec_fn fn; } LAYOUT_OPS[] = {
    {"identity", ex_pass_through}, {"transpose", ex_transpose}, {"reshape", ex_reshape},
    {"expand_dims", ex_expand_dims}, {"squeeze", ex_squeeze},
    {"slice_by_index", ex_slice_by_index}, {"slice_by_size", ex_slice_by_size},
    {"slice_update", ex_slice_update}, {"concat", ex_concat}, {"stack", ex_stack},
    {"split", ex_split}, {"gather", ex_gather}, {"gather_along_axis", ex_gather_along_axis},
    {"scatter", ex_scatter}, {"scatter_along_axis", ex_scatter}, {"scatter_nd", ex_scatter},
    {"select", ex_select}, {"tensor_buffer_to_tensor", ex_pass_through},
    {"tensor_to_tensor_buffer", ex_pass_through},
    {"cast", ex_cast}, {"fill", ex_fill}, {"fill_like", ex_fill}, {"band_part", ex_band_part},
    {"pad", ex_pad}, {"tile", ex_tile}, {"shape", ex_shape}, {"read_state", ex_pass_through},
    {"write_state", ex_write_state},
};

mil_exec_fn mil_interp_lookup_layout(const char *type) {
    for (size_t i = 0; i < sizeof LAYOUT_OPS / sizeof LAYOUT_OPS[0]; i++)
        if (!strcmp(LAYOUT_OPS[i].type, type)) return LAYOUT_OPS[i].fn;
    return NULL;
}
