/* Reduction kernels of the MIL interpreter: reduce_* over any axis set,
 * softmax along one axis and layer_norm, all accumulating in fp32. A tensor
 * is viewed as [outer, reduced, inner] when the reduced axes are adjacent
 * (size-1 axes ignored), else walked with an odometer. */
#include <math.h>
#include <string.h>

#include "mil/interp_kernels.h"

/* Splits xs into the kept axes (out-of-reduction positions) and reduced
 * axes, with their element strides, dropping size-1 axes. */
typedef struct red_geom {
    int n_keep, n_red;
    int64_t keep_d[MIL_K_MAX_RANK], keep_st[MIL_K_MAX_RANK];
    int64_t red_d[MIL_K_MAX_RANK], red_st[MIL_K_MAX_RANK];
    int64_t n_out, n_r; /* number of output elements, elements per reduction */
} red_geom;

static void red_geom_init(red_geom *g, const mil_kshape *xs, unsigned mask) {
    int64_t st[MIL_K_MAX_RANK];
    mil_kshape_strides(xs, st);
    memset(g, 0, sizeof *g);
    g->n_out = 1;
    g->n_r = 1;
    for (int i = 0; i < xs->rank; i++) {
        if (xs->d[i] == 1) continue;
        if (mask & (1u << i)) {
            g->red_d[g->n_red] = xs->d[i];
            g->red_st[g->n_red++] = st[i];
            g->n_r *= xs->d[i];
        } else {
            g->keep_d[g->n_keep] = xs->d[i];
            g->keep_st[g->n_keep++] = st[i];
            g->n_out *= xs->d[i];
        }
    }
    for (int i = 0; i < xs->rank; i++)
        if (xs->d[i] == 0) g->n_out = g->n_r = 0;
}

/* Offset of the o-th output position / r-th reduced element (row-major). */
static int64_t geom_off(const int64_t *d, const int64_t *st, int n, int64_t pos) {
    int64_t off = 0;
    for (int i = n - 1; i >= 0; i--) {
        off += (pos % d[i]) * st[i];
        pos /= d[i];
    }
    return off;
}

/* When the reduced axes form one run of row-major axes, element r of a
 * reduction sits at base + r * red_stride: true if the run is dense. */
static int red_is_dense(const red_geom *g, int64_t *red_stride) {
    if (g->n_red == 0) {
        *red_stride = 1;
        return 1;
    }
    for (int i = 0; i + 1 < g->n_red; i++)
        if (g->red_st[i] != g->red_st[i + 1] * g->red_d[i + 1]) return 0;
    *red_stride = g->red_st[g->n_red - 1];
    return 1;
}

static inline float red_init(mil_kred op) {
    switch (op) {
    case MIL_KR_MAX: return -INFINITY;
    case MIL_KR_MIN: return INFINITY;
    case MIL_KR_PROD: return 1.0f;
    default: return 0.0f;
    }
}

/* Reduces n elements x[base + r*step] (step -1: the geometry's odometer). */
static float red_run(mil_kred op, const float *x, const red_geom *g, int64_t base, int dense,
                     int64_t rstride, int32_t *arg) {
    float acc = red_init(op), mx = -INFINITY;
    int32_t best = 0;
    if (op == MIL_KR_LOG_SUM_EXP) {
        for (int64_t r = 0; r < g->n_r; r++) {
            float v = x[base + (dense ? r * rstride : geom_off(g->red_d, g->red_st, g->n_red, r))];
            if (v > mx || isnan(v)) mx = v;
        }
        if (isinf(mx)) return mx;
    }
    for (int64_t r = 0; r < g->n_r; r++) {
        float v = x[base + (dense ? r * rstride : geom_off(g->red_d, g->red_st, g->n_red, r))];
        switch (op) {
        case MIL_KR_SUM:
        case MIL_KR_MEAN:
        case MIL_KR_LOG_SUM: acc += v; break;
        case MIL_KR_MAX:
            if (v > acc || isnan(v)) acc = v;
            break;
        case MIL_KR_MIN:
            if (v < acc || isnan(v)) acc = v;
            break;
        case MIL_KR_PROD: acc *= v; break;
        case MIL_KR_SUM_SQUARE:
        case MIL_KR_L2: acc += v * v; break;
        case MIL_KR_L1: acc += fabsf(v); break;
        case MIL_KR_LOG_SUM_EXP: acc += expf(v - mx); break;
        case MIL_KR_ARGMAX: /* first index of the maximum; NaN wins, as numpy */
            if (r == 0 || v > acc || (isnan(v) && !isnan(acc))) {
                acc = v;
                best = (int32_t)r;
            }
            break;
        case MIL_KR_ARGMIN:
            if (r == 0 || v < acc || (isnan(v) && !isnan(acc))) {
                acc = v;
                best = (int32_t)r;
            }
            break;
        }
        if (isnan(acc) && (op == MIL_KR_ARGMAX || op == MIL_KR_ARGMIN)) break;
    }
    if (op == MIL_KR_MEAN) acc /= (float)g->n_r;
    if (op == MIL_KR_L2) acc = sqrtf(acc);
    if (op == MIL_KR_LOG_SUM) acc = logf(acc);
    if (op == MIL_KR_LOG_SUM_EXP) acc = logf(acc) + mx;
    if (arg) *arg = best;
    return acc;
}

void mil_k_reduce(mil_kred op, const float *x, const mil_kshape *xs, unsigned mask, void *out) {
    red_geom g;
    red_geom_init(&g, xs, mask);
    int64_t rstride = 1;
    int dense = red_is_dense(&g, &rstride);
    int is_arg = op == MIL_KR_ARGMAX || op == MIL_KR_ARGMIN;
    float *of = out;
    int32_t *oi = out;
    if (g.n_r == 0) {
        for (int64_t o = 0; o < g.n_out; o++) {
            if (is_arg) oi[o] = 0;
            else of[o] = op == MIL_KR_MEAN ? NAN : red_init(op);
        }
        return;
    }
    for (int64_t o = 0; o < g.n_out; o++) {
        int64_t base = geom_off(g.keep_d, g.keep_st, g.n_keep, o);
        int32_t arg = 0;
        float v = red_run(op, x, &g, base, dense, rstride, is_arg ? &arg : NULL);
        if (is_arg) oi[o] = arg;
        else of[o] = v;
    }
}

void mil_k_reduce_i32(mil_kred op, const int32_t *x, const mil_kshape *xs, unsigned mask,
                      int32_t *out) {
    red_geom g;
    red_geom_init(&g, xs, mask);
    for (int64_t o = 0; o < g.n_out; o++) {
        int64_t base = geom_off(g.keep_d, g.keep_st, g.n_keep, o);
        int64_t acc = op == MIL_KR_MAX ? INT32_MIN : op == MIL_KR_MIN ? INT32_MAX
                      : op == MIL_KR_PROD ? 1 : 0;
        int32_t best = 0;
        for (int64_t r = 0; r < g.n_r; r++) {
            int64_t v = x[base + geom_off(g.red_d, g.red_st, g.n_red, r)];
            switch (op) {
            case MIL_KR_MAX: acc = v > acc ? v : acc; break;
            case MIL_KR_MIN: acc = v < acc ? v : acc; break;
            case MIL_KR_PROD: acc = (int64_t)(int32_t)(uint32_t)((uint64_t)acc * (uint64_t)v); break;
            case MIL_KR_SUM_SQUARE: acc += v * v; break;
            case MIL_KR_L1: acc += v < 0 ? -v : v; break;
            case MIL_KR_ARGMAX:
                if (r == 0 || v > acc) { acc = v; best = (int32_t)r; }
                break;
            case MIL_KR_ARGMIN:
                if (r == 0 || v < acc) { acc = v; best = (int32_t)r; }
                break;
            default: acc += v; break;
            }
        }
        if (op == MIL_KR_MEAN && g.n_r) acc /= g.n_r;
        out[o] = (op == MIL_KR_ARGMAX || op == MIL_KR_ARGMIN) ? best : (int32_t)(uint32_t)acc;
    }
}

/* [outer, n, inner] view of one axis. */
static void axis_view(const mil_kshape *xs, int axis, int64_t *outer, int64_t *n, int64_t *inner) {
    *outer = 1;
    *inner = 1;
    for (int i = 0; i < axis; i++) *outer *= xs->d[i];
    for (int i = axis + 1; i < xs->rank; i++) *inner *= xs->d[i];
    *n = xs->d[axis];
}

void mil_k_softmax(const float *x, const mil_kshape *xs, int axis, float *out) {
    int64_t outer, n, inner;
    axis_view(xs, axis, &outer, &n, &inner);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            const float *xp = x + o * n * inner + i;
            float *op = out + o * n * inner + i;
            float mx = -INFINITY;
            for (int64_t r = 0; r < n; r++)
                if (xp[r * inner] > mx || isnan(xp[r * inner])) mx = xp[r * inner];
            float sum = 0;
            for (int64_t r = 0; r < n; r++) {
                float e = expf(xp[r * inner] - mx);
                op[r * inner] = e;
                sum += e;
            }
            float inv = 1.0f / sum;
            for (int64_t r = 0; r < n; r++) op[r * inner] *= inv;
        }
}

void mil_k_layer_norm(const float *x, const mil_kshape *xs, unsigned mask, const float *gamma,
                      const float *beta, float eps, float *out) {
    red_geom g;
    red_geom_init(&g, xs, mask);
    int64_t rstride = 1;
    int dense = red_is_dense(&g, &rstride);
    if (g.n_r == 0) return;
    for (int64_t o = 0; o < g.n_out; o++) {
        int64_t base = geom_off(g.keep_d, g.keep_st, g.n_keep, o);
#define LN_OFF(r) (base + (dense ? (r) * rstride : geom_off(g.red_d, g.red_st, g.n_red, (r))))
        float sum = 0;
        for (int64_t r = 0; r < g.n_r; r++) sum += x[LN_OFF(r)];
        float mean = sum / (float)g.n_r;
        float var = 0;
        for (int64_t r = 0; r < g.n_r; r++) {
            float dv = x[LN_OFF(r)] - mean;
            var += dv * dv;
        }
        var /= (float)g.n_r;
        float inv = 1.0f / sqrtf(var + eps);
        for (int64_t r = 0; r < g.n_r; r++) {
            float v = (x[LN_OFF(r)] - mean) * inv;
            if (gamma) v *= gamma[r];
            if (beta) v += beta[r];
            out[LN_OFF(r)] = v;
        }
#undef LN_OFF
    }
}
