/* MIL op semantics, compile-time family: constexpr_affine_dequantize,
 * constexpr_lut_to_dense (iOS16 packed-bytes form and iOS18 typed-indices
 * form with per-group LUTs), constexpr_blockwise_shift_scale,
 * constexpr_cast, plus the activation quantize/dequantize pair. Constexpr
 * ops run once, when the interpreter prepares the function. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mil/interp_priv.h"
#include "mil/mil_blob.h"

/* A parameter from an argument or (iOS16/17 constexpr form) an attribute;
 * attribute values are loaded into `tmp`, which the caller frees. */
static nc_status operand(mil_interp *it, const mil_op *op, const char *name, mil_slot *tmp,
                         mil_slot **out, nc_error *err) {
    *out = mil_interp_arg(it, op, name);
    if (*out) {
        if (!(*out)->has_value)
            return mil_interp_fail(err, NC_ERR_INVALID, op, "argument '%s' has no value", name);
        return NC_OK;
    }
    const mil_value *v = mil_op_attr(op, name);
    if (!v) return NC_OK;
    memset(tmp, 0, sizeof *tmp);
    tmp->dtype = v->type ? v->type->dtype : MIL_DT_INVALID;
    tmp->is_int = !mil_dtype_is_float(tmp->dtype);
    nc_status st = mil_interp_load_value(it, v, tmp, err);
    if (st != NC_OK) {
        char label[400];
        return nc_fail_prefix(err, "%s: attribute '%s'", mil_interp_op_label(op, label, sizeof label), name);
    }
    *out = tmp;
    return NC_OK;
}

static void tmp_free(mil_slot *t) {
    free(t->data);
    t->data = NULL;
}

static float val_f(const mil_slot *s, size_t i) {
    return s->is_int ? (float)((int32_t *)s->data)[i] : ((float *)s->data)[i];
}

/* Index of the per-axis parameter p (scalar, or a vector along `axis`) for
 * element i of a tensor of shape xs. */
static size_t per_axis(const mil_slot *p, const mil_kshape *xs, int axis, size_t i) {
    if (mil_kshape_count(&p->shape) <= 1 || axis < 0 || axis >= xs->rank || xs->d[axis] < 1) return 0;
    size_t inner = 1;
    for (int k = axis + 1; k < xs->rank; k++) inner *= (size_t)xs->d[k];
    return (i / inner) % (size_t)xs->d[axis];
}

static nc_status ex_affine_dequantize(mil_interp *it, op_plan *p, nc_error *err) {
    const mil_op *op = p->op;
    mil_slot tq = {0}, ts = {0}, tz = {0}, ta = {0}, *q, *s, *z, *a, *o;
    nc_status st = NC_OK;
    if ((st = operand(it, op, "quantized_data", &tq, &q, err)) ||
        (st = operand(it, op, "scale", &ts, &s, err)) ||
        (st = operand(it, op, "zero_point", &tz, &z, err)) ||
        (st = operand(it, op, "axis", &ta, &a, err)))
        goto done;
    if (!q || !s) {
        st = mil_interp_fail(err, NC_ERR_FORMAT, op, "needs quantized_data and scale");
        goto done;
    }
    int axis = a ? mil_interp_axis((int64_t)val_f(a, 0), q->shape.rank) : 0;
    size_t ns = mil_kshape_count(&s->shape), nz = z ? mil_kshape_count(&z->shape) : 1;
    if (axis < 0 || (ns > 1 && (int64_t)ns != q->shape.d[axis]) ||
        (nz > 1 && (int64_t)nz != q->shape.d[axis])) {
        st = mil_interp_fail(err, NC_ERR_FORMAT, op, "scale/zero_point do not fit axis of quantized_data");
        goto done;
    }
    if ((st = mil_interp_out(it, op, 0, &q->shape, &o, err))) goto done;
    size_t n = mil_kshape_count(&q->shape);
    for (size_t i = 0; i < n; i++) {
        float zp = z ? val_f(z, per_axis(z, &q->shape, axis, i)) : 0.0f;
        ((float *)o->data)[i] = val_f(s, per_axis(s, &q->shape, axis, i)) * (val_f(q, i) - zp);
    }
done:
    tmp_free(&tq);
    tmp_free(&ts);
    tmp_free(&tz);
    tmp_free(&ta);
    return st;
}

static nc_status ex_lut_to_dense(mil_interp *it, op_plan *p, nc_error *err) {
    const mil_op *op = p->op;
    mil_slot ti = {0}, tl = {0}, tsh = {0}, tva = {0}, *ind, *lut, *shp, *va, *o;
    nc_status st = NC_OK;
    uint8_t *bytes = NULL;
    if ((st = operand(it, op, "indices", &ti, &ind, err)) || (st = operand(it, op, "lut", &tl, &lut, err)) ||
        (st = operand(it, op, "shape", &tsh, &shp, err)) ||
        (st = operand(it, op, "vector_axis", &tva, &va, err)))
        goto done;
    if (!ind || !lut) {
        st = mil_interp_fail(err, NC_ERR_FORMAT, op, "needs indices and lut");
        goto done;
    }
    if (shp) {
        /* iOS16: indices are packed bytes, lut a flat palette, shape the output */
        size_t np = mil_kshape_count(&lut->shape);
        int bits = 0;
        while ((1u << bits) < np) bits++;
        if (np < 2 || (1u << bits) != np || bits > 8) {
            st = mil_interp_fail(err, NC_ERR_FORMAT, op, "lut of %zu entries is not 2, 4, 16, 64 or 256", np);
            goto done;
        }
        mil_kshape os = {(int)mil_kshape_count(&shp->shape), {0}};
        if (os.rank > MIL_K_MAX_RANK) {
            st = mil_interp_fail(err, NC_ERR_UNSUPPORTED, op, "rank too high");
            goto done;
        }
        for (int i = 0; i < os.rank; i++) os.d[i] = (int64_t)val_f(shp, (size_t)i);
        size_t n = mil_kshape_count(&os), nb = mil_kshape_count(&ind->shape);
        if (nb * 8 < n * (size_t)bits) {
            st = mil_interp_fail(err, NC_ERR_FORMAT, op, "%zu index bytes for %zu %d-bit indices", nb, n, bits);
            goto done;
        }
        bytes = malloc(nb ? nb : 1);
        if (!bytes) {
            st = nc_fail(err, NC_ERR_NOMEM, "out of memory");
            goto done;
        }
        for (size_t i = 0; i < nb; i++) bytes[i] = (uint8_t)((int32_t *)ind->data)[i];
        if ((st = mil_interp_out(it, op, 0, &os, &o, err))) goto done;
        for (size_t i = 0; i < n; i++)
            ((uint32_t *)o->data)[i] = ((uint32_t *)lut->data)[mil_unpack_sub_byte(bytes, i, bits)];
        goto done;
    }
    /* iOS18: indices have the output's shape (its vector axis divided by the
     * vector size); lut is [groups per axis..., palette, vector size] */
    int r = ind->shape.rank;
    if (lut->shape.rank != r + 2) {
        st = mil_interp_fail(err, NC_ERR_FORMAT, op, "lut must have rank %d", r + 2);
        goto done;
    }
    int64_t npal = lut->shape.d[r], vs = lut->shape.d[r + 1];
    int vaxis = va ? mil_interp_axis((int64_t)val_f(va, 0), r) : 0;
    if (vaxis < 0 || vs < 1 || npal < 1) {
        st = mil_interp_fail(err, NC_ERR_FORMAT, op, "bad vector_axis or lut shape");
        goto done;
    }
    mil_kshape os = ind->shape;
    os.d[vaxis] *= vs;
    int64_t gsz[MIL_K_MAX_RANK];
    for (int i = 0; i < r; i++) {
        if (lut->shape.d[i] < 1 || os.d[i] % lut->shape.d[i]) {
            st = mil_interp_fail(err, NC_ERR_FORMAT, op, "lut groups do not divide axis %d", i);
            goto done;
        }
        gsz[i] = os.d[i] / lut->shape.d[i];
    }
    if ((st = mil_interp_out(it, op, 0, &os, &o, err))) goto done;
    size_t n = mil_kshape_count(&os);
    int only_axis0 = vs == 1;
    for (int i = 1; i < r; i++)
        only_axis0 &= lut->shape.d[i] == 1;
    if (only_axis0 && r > 0 && n > 0) {
        /* what `nectar compile --palettize` writes: scalar entries, groups
         * of output channels only; one table per run of rows */
        size_t row = n / (size_t)os.d[0];
        const int32_t *ix = ind->data;
        for (int64_t r0 = 0; r0 < os.d[0]; r0++) {
            const uint32_t *tab =
                (const uint32_t *)lut->data + (size_t)(r0 / gsz[0]) * (size_t)npal;
            uint32_t *dst = (uint32_t *)o->data + (size_t)r0 * row;
            for (size_t j = 0; j < row; j++) {
                int32_t k = ix[(size_t)r0 * row + j];
                if (k < 0 || k >= npal) {
                    st = mil_interp_fail(err, NC_ERR_RANGE, op,
                                         "index %lld outside the %lld-entry palette", (long long)k,
                                         (long long)npal);
                    goto done;
                }
                dst[j] = tab[k];
            }
        }
        n = 0; /* done */
    }
    int64_t pos[MIL_K_MAX_RANK] = {0};
    for (size_t e = 0; e < n; e++) {
        size_t ii = 0, li = 0;
        for (int i = 0; i < r; i++) {
            int64_t ip = i == vaxis ? pos[i] / vs : pos[i];
            ii = ii * (size_t)ind->shape.d[i] + (size_t)ip;
            li = li * (size_t)lut->shape.d[i] + (size_t)(pos[i] / gsz[i]);
        }
        int64_t k = ((int32_t *)ind->data)[ii];
        if (k < 0 || k >= npal) {
            st = mil_interp_fail(err, NC_ERR_RANGE, op, "index %lld outside the %lld-entry palette",
                                 (long long)k, (long long)npal);
            goto done;
        }
        size_t src = (li * (size_t)npal + (size_t)k) * (size_t)vs + (size_t)(pos[vaxis] % vs);
        ((uint32_t *)o->data)[e] = ((uint32_t *)lut->data)[src];
        for (int i = r - 1; i >= 0; i--) {
            if (++pos[i] < os.d[i]) break;
            pos[i] = 0;
        }
    }
    if (o->is_int != lut->is_int) st = mil_interp_fail(err, NC_ERR_FORMAT, op, "output dtype differs from lut's");
done:
    free(bytes);
    tmp_free(&ti);
    tmp_free(&tl);
    tmp_free(&tsh);
    tmp_free(&tva);
    return st;
}

/* Block index of element i: each axis of data divided into scale's count. */
static size_t block_of(const mil_kshape *ds, const mil_kshape *bs, size_t i) {
    size_t b = 0, stride = 1;
    for (int k = ds->rank - 1; k >= 0; k--) {
        size_t pos = i % (size_t)ds->d[k];
        i /= (size_t)ds->d[k];
        size_t blk = (size_t)(ds->d[k] / bs->d[k]);
        b += (pos / blk) * stride;
        stride *= (size_t)bs->d[k];
    }
    return b;
}

static nc_status ex_blockwise_shift_scale(mil_interp *it, op_plan *p, nc_error *err) {
    const mil_op *op = p->op;
    mil_slot td = {0}, ts = {0}, to = {0}, *d, *s, *off, *o;
    nc_status st = NC_OK;
    if ((st = operand(it, op, "data", &td, &d, err)) || (st = operand(it, op, "scale", &ts, &s, err)) ||
        (st = operand(it, op, "offset", &to, &off, err)))
        goto done;
    if (!d || !s || s->shape.rank != d->shape.rank || (off && !mil_kshape_equal(&off->shape, &s->shape))) {
        st = mil_interp_fail(err, NC_ERR_FORMAT, op, "data, scale (and offset) need the same rank");
        goto done;
    }
    for (int k = 0; k < d->shape.rank; k++)
        if (s->shape.d[k] < 1 || d->shape.d[k] % s->shape.d[k]) {
            st = mil_interp_fail(err, NC_ERR_FORMAT, op, "scale does not divide data on axis %d", k);
            goto done;
        }
    if ((st = mil_interp_out(it, op, 0, &d->shape, &o, err))) goto done;
    size_t n = mil_kshape_count(&d->shape);
    for (size_t i = 0; i < n; i++) {
        size_t b = block_of(&d->shape, &s->shape, i);
        ((float *)o->data)[i] = val_f(s, b) * (val_f(d, i) - (off ? val_f(off, b) : 0.0f));
    }
done:
    tmp_free(&td);
    tmp_free(&ts);
    tmp_free(&to);
    return st;
}

static nc_status ex_constexpr_cast(mil_interp *it, op_plan *p, nc_error *err) {
    const mil_op *op = p->op;
    mil_slot tv = {0}, *v, *o;
    nc_status st = operand(it, op, "source_val", &tv, &v, err);
    if (st == NC_OK && !v) st = mil_interp_fail(err, NC_ERR_FORMAT, op, "needs source_val");
    if (st == NC_OK) st = mil_interp_out(it, op, 0, &v->shape, &o, err);
    if (st == NC_OK) {
        size_t n = mil_kshape_count(&v->shape);
        for (size_t i = 0; i < n; i++) {
            if (o->is_int) ((int32_t *)o->data)[i] = (int32_t)lrintf(val_f(v, i));
            else ((float *)o->data)[i] = val_f(v, i);
        }
    }
    tmp_free(&tv);
    return st;
}

/* iOS17 activation quantization, per tensor or along `axis`:
 * quantize q = clamp(round(x / scale) + zp) to int8/uint8, dequantize
 * x = (q - zp) * scale. */
static nc_status ex_quantize(mil_interp *it, op_plan *p, nc_error *err) {
    const mil_op *op = p->op;
    int is_quantize = !strcmp(op->type, "quantize");
    mil_slot *x, *s, *o, *z = mil_interp_arg(it, op, "zero_point");
    int64_t axis;
    NC_TRY(mil_interp_need(it, op, "input", &x, err));
    NC_TRY(mil_interp_need(it, op, "scale", &s, err));
    NC_TRY(mil_interp_int(it, op, "axis", 0, &axis, err));
    int ax = mil_interp_axis(axis, x->shape.rank > 0 ? x->shape.rank : 1);
    size_t ns = mil_kshape_count(&s->shape), nz = z ? mil_kshape_count(&z->shape) : 1;
    if ((ns > 1 || nz > 1) && (ax < 0 || ax >= x->shape.rank || (ns > 1 && (int64_t)ns != x->shape.d[ax]) ||
                               (nz > 1 && (int64_t)nz != x->shape.d[ax])))
        return mil_interp_fail(err, NC_ERR_FORMAT, op, "scale/zero_point do not fit axis %lld", (long long)axis);
    NC_TRY(mil_interp_out(it, op, 0, &x->shape, &o, err));
    if (o->is_int != is_quantize)
        return mil_interp_fail(err, NC_ERR_FORMAT, op, "output dtype %s", mil_dtype_name(o->dtype));
    int lo = o->dtype == MIL_DT_UINT8 ? 0 : -128, hi = o->dtype == MIL_DT_UINT8 ? 255 : 127;
    size_t n = mil_kshape_count(&x->shape);
    for (size_t i = 0; i < n; i++) {
        float sc = val_f(s, per_axis(s, &x->shape, ax, i));
        float zp = z ? val_f(z, per_axis(z, &x->shape, ax, i)) : 0.0f;
        if (is_quantize) {
            float q = nearbyintf(val_f(x, i) / sc) + zp;
            q = q != q ? 0.0f : q < lo ? (float)lo : q > hi ? (float)hi : q;
            ((int32_t *)o->data)[i] = (int32_t)q;
        } else {
            ((float *)o->data)[i] = (val_f(x, i) - zp) * sc;
        }
    }
    return NC_OK;
}

static const struct { const char *type; mil_exec_fn fn; } CONST_OPS[] = {
    {"constexpr_affine_dequantize", ex_affine_dequantize},
    {"constexpr_lut_to_dense", ex_lut_to_dense},
    {"constexpr_blockwise_shift_scale", ex_blockwise_shift_scale},
    {"constexpr_cast", ex_constexpr_cast},
    {"quantize", ex_quantize},
    {"dequantize", ex_quantize},
};

mil_exec_fn mil_interp_lookup_const(const char *type) {
    for (size_t i = 0; i < sizeof CONST_OPS / sizeof CONST_OPS[0]; i++)
        if (!strcmp(CONST_OPS[i].type, type)) return CONST_OPS[i].fn;
    return NULL;
}
