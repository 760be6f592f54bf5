/* Data-movement kernels of the MIL interpreter: transpose, strided slices
 * (slice_by_index, slice_by_size, split, slice_update), concat, gather and
 * scatter, pad, tile, band_part. Elements are 4-byte words of any dtype;
 * only scatter's arithmetic modes look at the values. */
#include <string.h>

#include "base/half.h"
#include "mil/interp_kernels.h"

/* Row-major odometer over a shape. */
static int odo_next(int64_t *idx, const mil_kshape *s) {
    for (int i = s->rank - 1; i >= 0; i--) {
        if (++idx[i] < s->d[i]) return 1;
        idx[i] = 0;
    }
    return 0;
}

void mil_k_transpose(const uint32_t *x, const mil_kshape *xs, const int *perm, uint32_t *out) {
    mil_kshape os = {xs->rank, {0}};
    int64_t st[MIL_K_MAX_RANK], pst[MIL_K_MAX_RANK], idx[MIL_K_MAX_RANK] = {0};
    mil_kshape_strides(xs, st);
    for (int i = 0; i < xs->rank; i++) {
        os.d[i] = xs->d[perm[i]];
        pst[i] = st[perm[i]];
    }
    size_t n = mil_kshape_count(&os);
    if (n == 0) return;
    int r = os.rank;
    int64_t inner = r ? os.d[r - 1] : 1, ist = r ? pst[r - 1] : 0, off = 0;
    mil_kshape outer = os;
    if (r) outer.d[r - 1] = 1;
    size_t o = 0;
    do {
        off = 0;
        for (int i = 0; i < r - 1; i++) off += idx[i] * pst[i];
        for (int64_t j = 0; j < inner; j++) out[o++] = x[off + j * ist];
    } while (odo_next(idx, &outer));
}

void mil_k_strided_slice(const uint32_t *x, const mil_kshape *xs, const int64_t *begin,
                         const int64_t *stride, uint32_t *out, const mil_kshape *os) {
    int64_t st[MIL_K_MAX_RANK], idx[MIL_K_MAX_RANK] = {0};
    mil_kshape_strides(xs, st);
    if (mil_kshape_count(os) == 0) return;
    int r = os->rank;
    int64_t inner = r ? os->d[r - 1] : 1;
    int64_t ist = r ? st[r - 1] * stride[r - 1] : 0, b_in = r ? begin[r - 1] * st[r - 1] : 0;
    mil_kshape outer = *os;
    if (r) outer.d[r - 1] = 1;
    size_t o = 0;
    do {
        int64_t off = b_in;
        for (int i = 0; i < r - 1; i++) off += (begin[i] + idx[i] * stride[i]) * st[i];
        for (int64_t j = 0; j < inner; j++) out[o++] = x[off + j * ist];
    } while (odo_next(idx, &outer));
}

void mil_k_strided_assign(uint32_t *out, const mil_kshape *xs, const int64_t *begin,
                          const int64_t *stride, const uint32_t *upd, const mil_kshape *us) {
    int64_t st[MIL_K_MAX_RANK], idx[MIL_K_MAX_RANK] = {0};
    mil_kshape_strides(xs, st);
    if (mil_kshape_count(us) == 0) return;
    size_t o = 0;
    do {
        int64_t off = 0;
        for (int i = 0; i < us->rank; i++) off += (begin[i] + idx[i] * stride[i]) * st[i];
        out[off] = upd[o++];
    } while (odo_next(idx, us));
}

void mil_k_concat(const uint32_t *const *xs_data, const mil_kshape *xs, int n, int axis,
                  int interleave, uint32_t *out) {
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < axis; i++) outer *= xs[0].d[i];
    for (int i = axis + 1; i < xs[0].rank; i++) inner *= xs[0].d[i];
    size_t o = 0;
    for (int64_t b = 0; b < outer; b++) {
        if (interleave) {
            int64_t len = xs[0].d[axis];
            for (int64_t a = 0; a < len; a++)
                for (int k = 0; k < n; k++) {
                    memcpy(out + o, xs_data[k] + (b * len + a) * inner,
                           (size_t)inner * sizeof *out);
                    o += (size_t)inner;
                }
        } else {
            for (int k = 0; k < n; k++) {
                int64_t blk = xs[k].d[axis] * inner;
                if (blk) memcpy(out + o, xs_data[k] + b * blk, (size_t)blk * sizeof *out);
                o += (size_t)blk;
            }
        }
    }
}

/* Resolves a possibly negative index into [0, d); -1 when out of range. */
static inline int64_t fix_index(int64_t i, int64_t d) {
    if (i < 0) i += d;
    return (i < 0 || i >= d) ? -1 : i;
}

int mil_k_gather(const uint32_t *x, const mil_kshape *xs, const int32_t *idx,
                 const mil_kshape *is, int axis, int batch_dims, uint32_t *out) {
    int64_t nb = 1, mid = 1, inner = 1, t = 1;
    for (int i = 0; i < batch_dims; i++) nb *= xs->d[i];
    for (int i = batch_dims; i < axis; i++) mid *= xs->d[i];
    for (int i = axis + 1; i < xs->rank; i++) inner *= xs->d[i];
    for (int i = batch_dims; i < is->rank; i++) t *= is->d[i];
    int64_t d = xs->d[axis];
    size_t o = 0;
    for (int64_t b = 0; b < nb; b++)
        for (int64_t m = 0; m < mid; m++)
            for (int64_t k = 0; k < t; k++) {
                int64_t j = fix_index(idx[b * t + k], d);
                if (j < 0) return -1;
                if (inner)
                    memcpy(out + o, x + ((b * mid + m) * d + j) * inner,
                           (size_t)inner * sizeof *out);
                o += (size_t)inner;
            }
    return 0;
}

/* Offset in a tensor of strides st of position pos with index j on axis. */
static int64_t along_offset(const int64_t *pos, const int64_t *st, int rank, int axis, int64_t j) {
    int64_t off = 0;
    for (int i = 0; i < rank; i++) off += (i == axis ? j : pos[i]) * st[i];
    return off;
}

int mil_k_gather_along_axis(const uint32_t *x, const mil_kshape *xs, const int32_t *idx,
                            const mil_kshape *is, int axis, uint32_t *out) {
    int64_t st[MIL_K_MAX_RANK], pos[MIL_K_MAX_RANK] = {0};
    mil_kshape_strides(xs, st);
    if (mil_kshape_count(is) == 0) return 0;
    size_t o = 0;
    do {
        int64_t j = fix_index(idx[o], xs->d[axis]);
        if (j < 0) return -1;
        out[o++] = x[along_offset(pos, st, xs->rank, axis, j)];
    } while (odo_next(pos, is));
    return 0;
}

static uint32_t scat_combine(mil_kscat mode, uint32_t old, uint32_t upd, int is_float) {
    if (mode == MIL_KS_UPDATE) return upd;
    if (is_float) {
        float a = nc_bits_f32(old), b = nc_bits_f32(upd), r = b;
        switch (mode) {
        case MIL_KS_ADD: r = a + b; break;
        case MIL_KS_SUB: r = a - b; break;
        case MIL_KS_MUL: r = a * b; break;
        case MIL_KS_DIV: r = a / b; break;
        case MIL_KS_MAX: r = a > b ? a : b; break;
        case MIL_KS_MIN: r = a < b ? a : b; break;
        default: break;
        }
        return nc_f32_bits(r);
    }
    int32_t a = (int32_t)old, b = (int32_t)upd, r = b;
    switch (mode) {
    case MIL_KS_ADD: r = (int32_t)(old + upd); break;
    case MIL_KS_SUB: r = (int32_t)(old - upd); break;
    case MIL_KS_MUL: r = (int32_t)(old * upd); break;
    case MIL_KS_DIV: r = (b == 0 || (a == INT32_MIN && b == -1)) ? 0 : a / b; break;
    case MIL_KS_MAX: r = a > b ? a : b; break;
    case MIL_KS_MIN: r = a < b ? a : b; break;
    default: break;
    }
    return (uint32_t)r;
}

int mil_k_scatter(uint32_t *out, const mil_kshape *ds, const int32_t *idx, const mil_kshape *is,
                  const uint32_t *upd, int axis, mil_kscat mode, int is_float) {
    int64_t outer = 1, inner = 1, t = mil_kshape_count(is), d = ds->d[axis];
    for (int i = 0; i < axis; i++) outer *= ds->d[i];
    for (int i = axis + 1; i < ds->rank; i++) inner *= ds->d[i];
    size_t u = 0;
    for (int64_t b = 0; b < outer; b++)
        for (int64_t k = 0; k < t; k++) {
            int64_t j = fix_index(idx[k], d);
            if (j < 0) return -1;
            uint32_t *dst = out + (b * d + j) * inner;
            for (int64_t e = 0; e < inner; e++, u++) dst[e] = scat_combine(mode, dst[e], upd[u], is_float);
        }
    return 0;
}

int mil_k_scatter_along_axis(uint32_t *out, const mil_kshape *ds, const int32_t *idx,
                             const mil_kshape *is, const uint32_t *upd, int axis,
                             mil_kscat mode, int is_float) {
    int64_t st[MIL_K_MAX_RANK], pos[MIL_K_MAX_RANK] = {0};
    mil_kshape_strides(ds, st);
    if (mil_kshape_count(is) == 0) return 0;
    size_t u = 0;
    do {
        int64_t j = fix_index(idx[u], ds->d[axis]);
        if (j < 0) return -1;
        int64_t off = along_offset(pos, st, ds->rank, axis, j);
        out[off] = scat_combine(mode, out[off], upd[u], is_float);
        u++;
    } while (odo_next(pos, is));
    return 0;
}

int mil_k_scatter_nd(uint32_t *out, const mil_kshape *ds, const int32_t *idx, const mil_kshape *is,
                     const uint32_t *upd, mil_kscat mode, int is_float) {
    int64_t st[MIL_K_MAX_RANK];
    mil_kshape_strides(ds, st);
    int k = (int)is->d[is->rank - 1];
    int64_t inner = 1;
    for (int i = k; i < ds->rank; i++) inner *= ds->d[i];
    size_t n = k ? mil_kshape_count(is) / (size_t)k : 0, u = 0;
    for (size_t t = 0; t < n; t++) {
        int64_t off = 0;
        for (int j = 0; j < k; j++) {
            int64_t q = fix_index(idx[t * (size_t)k + (size_t)j], ds->d[j]);
            if (q < 0) return -1;
            off += q * st[j];
        }
        for (int64_t e = 0; e < inner; e++, u++) out[off + e] = scat_combine(mode, out[off + e], upd[u], is_float);
    }
    return 0;
}

/* Source index along one axis for output position p, or -1 for the fill. */
static int64_t pad_src(int64_t p, int64_t before, int64_t d, mil_kpad mode) {
    int64_t i = p - before;
    if (i >= 0 && i < d) return i;
    if (mode == MIL_KP_CONSTANT || d == 0) return -1;
    if (mode == MIL_KP_REPLICATE) return i < 0 ? 0 : d - 1;
    /* reflect without repeating the edge (numpy "reflect"); period 2(d-1) */
    if (d == 1) return 0;
    int64_t period = 2 * (d - 1);
    i %= period;
    if (i < 0) i += period;
    return i < d ? i : period - i;
}

void mil_k_pad(const uint32_t *x, const mil_kshape *xs, const int64_t *before, mil_kpad mode,
               uint32_t fill, uint32_t *out, const mil_kshape *os) {
    int64_t st[MIL_K_MAX_RANK], idx[MIL_K_MAX_RANK] = {0};
    mil_kshape_strides(xs, st);
    if (mil_kshape_count(os) == 0) return;
    size_t o = 0;
    do {
        int64_t off = 0;
        int inside = 1;
        for (int i = 0; i < os->rank; i++) {
            int64_t s = pad_src(idx[i], before[i], xs->d[i], mode);
            if (s < 0) {
                inside = 0;
                break;
            }
            off += s * st[i];
        }
        out[o++] = inside ? x[off] : fill;
    } while (odo_next(idx, os));
}

void mil_k_tile(const uint32_t *x, const mil_kshape *xs, uint32_t *out, const mil_kshape *os) {
    int64_t st[MIL_K_MAX_RANK], idx[MIL_K_MAX_RANK] = {0};
    mil_kshape_strides(xs, st);
    if (mil_kshape_count(os) == 0) return;
    size_t o = 0;
    do {
        int64_t off = 0;
        for (int i = 0; i < os->rank; i++) off += (idx[i] % xs->d[i]) * st[i];
        out[o++] = x[off];
    } while (odo_next(idx, os));
}

void mil_k_band_part(const uint32_t *x, const mil_kshape *xs, int64_t lower, int64_t upper,
                     uint32_t *out) {
    int r = xs->rank;
    int64_t m = xs->d[r - 2], n = xs->d[r - 1];
    if (m == 0 || n == 0) return;
    size_t mats = mil_kshape_count(xs) / (size_t)(m * n);
    for (size_t b = 0; b < mats; b++)
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                size_t k = b * (size_t)(m * n) + (size_t)(i * n + j);
                int keep = (lower < 0 || i - j <= lower) && (upper < 0 || j - i <= upper);
                out[k] = keep ? x[k] : 0u;
            }
}
