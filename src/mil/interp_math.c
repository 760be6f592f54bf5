/* Elementwise kernels of the MIL interpreter: shapes and NumPy broadcasting,
 * binary arithmetic and comparisons, unary activations, select. Float math is
 * done in fp32 (the caller rounds an op's result to fp16 in fp16 mode). */
#include <math.h>
#include <string.h>

#include "mil/interp_kernels.h"

size_t mil_kshape_count(const mil_kshape *s) {
    size_t n = 1;
    for (int i = 0; i < s->rank; i++) {
        size_t d = s->d[i] < 0 ? 0 : (size_t)s->d[i];
        if (d && n > SIZE_MAX / d) return SIZE_MAX; /* saturates: no buffer is that large */
        n *= d;
    }
    for (int i = 0; i < s->rank; i++)
        if (s->d[i] == 0) return 0;
    return n;
}

int mil_kshape_equal(const mil_kshape *a, const mil_kshape *b) {
    if (a->rank != b->rank) return 0;
    for (int i = 0; i < a->rank; i++)
        if (a->d[i] != b->d[i]) return 0;
    return 1;
}

void mil_kshape_strides(const mil_kshape *s, int64_t *strides) {
    int64_t st = 1;
    for (int i = s->rank - 1; i >= 0; i--) {
        strides[i] = st;
        st *= s->d[i];
    }
}

int mil_kshape_broadcast(const mil_kshape *a, const mil_kshape *b, mil_kshape *out) {
    int r = a->rank > b->rank ? a->rank : b->rank;
    mil_kshape o;
    o.rank = r;
    for (int i = 0; i < r; i++) {
        int ia = i - (r - a->rank), ib = i - (r - b->rank);
        int64_t da = ia >= 0 ? a->d[ia] : 1, db = ib >= 0 ? b->d[ib] : 1;
        if (da == db || db == 1) o.d[i] = da;
        else if (da == 1) o.d[i] = db;
        else return 0;
    }
    *out = o;
    return 1;
}

void mil_kshape_bcast_strides(const mil_kshape *in, const mil_kshape *out, int64_t *strides) {
    int64_t own[MIL_K_MAX_RANK];
    mil_kshape_strides(in, own);
    for (int i = 0; i < out->rank; i++) {
        int j = i - (out->rank - in->rank);
        strides[i] = (j >= 0 && in->d[j] != 1) ? own[j] : 0;
    }
}

/* Walks the outer (all but last) axes of an output shape, keeping the offset
 * of up to three broadcast operands; the caller runs the last axis. */
typedef struct bcast_walk {
    int rank;
    int64_t d[MIL_K_MAX_RANK], idx[MIL_K_MAX_RANK];
    int64_t st[3][MIL_K_MAX_RANK];
    int64_t off[3];
    int n_ops;
} bcast_walk;

static void walk_init(bcast_walk *w, const mil_kshape *os, const mil_kshape *const *ins, int n) {
    memset(w, 0, sizeof *w);
    w->rank = os->rank;
    w->n_ops = n;
    for (int i = 0; i < os->rank; i++) w->d[i] = os->d[i];
    for (int k = 0; k < n; k++) mil_kshape_bcast_strides(ins[k], os, w->st[k]);
}

/* Advances to the next row (all axes but the last); 0 at the end. */
static int walk_next_row(bcast_walk *w) {
    for (int i = w->rank - 2; i >= 0; i--) {
        w->idx[i]++;
        for (int k = 0; k < w->n_ops; k++) w->off[k] += w->st[k][i];
        if (w->idx[i] < w->d[i]) return 1;
        for (int k = 0; k < w->n_ops; k++) w->off[k] -= w->st[k][i] * w->d[i];
        w->idx[i] = 0;
    }
    return 0;
}

int mil_kbin_is_compare(mil_kbin op) { return op >= MIL_KB_EQ && op <= MIL_KB_GE; }

static inline float bin_f32(mil_kbin op, float a, float b) {
    switch (op) {
    case MIL_KB_ADD: return a + b;
    case MIL_KB_SUB: return a - b;
    case MIL_KB_MUL: return a * b;
    case MIL_KB_DIV: return a / b;
    case MIL_KB_POW: return powf(a, b);
    case MIL_KB_MAX: return (a > b || isnan(a)) ? a : b; /* NaN propagates, as in numpy */
    case MIL_KB_MIN: return (a < b || isnan(a)) ? a : b;
    case MIL_KB_FLOOR_DIV: return floorf(a / b);
    case MIL_KB_MOD: {
        float r = fmodf(a, b); /* numpy mod: the result takes the divisor's sign */
        if (r != 0 && ((r < 0) != (b < 0))) r += b;
        return r;
    }
    default: return 0;
    }
}

/* Comparisons and logical ops for both storages (int32 and float are exact
 * in double). */
static inline int32_t compare(mil_kbin op, double a, double b) {
    switch (op) {
    case MIL_KB_EQ: return a == b;
    case MIL_KB_NE: return a != b;
    case MIL_KB_LT: return a < b;
    case MIL_KB_LE: return a <= b;
    case MIL_KB_GT: return a > b;
    case MIL_KB_GE: return a >= b;
    case MIL_KB_AND: return (a != 0) && (b != 0);
    case MIL_KB_OR: return (a != 0) || (b != 0);
    case MIL_KB_XOR: return (a != 0) != (b != 0);
    default: return 0;
    }
}

void mil_k_binary_f32(mil_kbin op, const float *a, const mil_kshape *as, const float *b,
                      const mil_kshape *bs, void *out, const mil_kshape *os) {
    int is_cmp = op >= MIL_KB_EQ;
    const mil_kshape *ins[2] = {as, bs};
    bcast_walk w;
    walk_init(&w, os, ins, 2);
    int64_t n = os->rank ? os->d[os->rank - 1] : 1;
    int64_t sa = os->rank ? w.st[0][os->rank - 1] : 0, sb = os->rank ? w.st[1][os->rank - 1] : 0;
    if (mil_kshape_count(os) == 0) return;
    float *of = out;
    int32_t *oi = out;
    int64_t o = 0;
    do {
        const float *pa = a + w.off[0], *pb = b + w.off[1];
        if (is_cmp)
            for (int64_t j = 0; j < n; j++) oi[o + j] = compare(op, pa[j * sa], pb[j * sb]);
        else if (op == MIL_KB_ADD && sa == 1 && sb == 1)
            for (int64_t j = 0; j < n; j++) of[o + j] = pa[j] + pb[j];
        else if (op == MIL_KB_MUL && sa == 1 && sb == 1)
            for (int64_t j = 0; j < n; j++) of[o + j] = pa[j] * pb[j];
        else
            for (int64_t j = 0; j < n; j++) of[o + j] = bin_f32(op, pa[j * sa], pb[j * sb]);
        o += n;
    } while (walk_next_row(&w));
}

static inline int32_t bin_i32(mil_kbin op, int32_t a, int32_t b) {
    /* wrap on overflow instead of undefined behaviour */
    uint32_t ua = (uint32_t)a, ub = (uint32_t)b;
    switch (op) {
    case MIL_KB_ADD: return (int32_t)(ua + ub);
    case MIL_KB_SUB: return (int32_t)(ua - ub);
    case MIL_KB_MUL: return (int32_t)(ua * ub);
    case MIL_KB_DIV:
    case MIL_KB_FLOOR_DIV: {
        if (b == 0 || (a == INT32_MIN && b == -1)) return 0;
        int32_t q = a / b;
        if ((a % b != 0) && ((a < 0) != (b < 0))) q--; /* floor, as numpy's // */
        return q;
    }
    case MIL_KB_MOD: {
        if (b == 0 || b == -1) return 0;
        int32_t r = a % b;
        if (r != 0 && ((r < 0) != (b < 0))) r += b;
        return r;
    }
    case MIL_KB_POW: {
        if (b < 0) return a == 1 ? 1 : (a == -1 ? ((b & 1) ? -1 : 1) : 0);
        uint32_t r = 1, base = ua;
        for (int32_t e = b; e > 0; e >>= 1) {
            if (e & 1) r *= base;
            base *= base;
        }
        return (int32_t)r;
    }
    case MIL_KB_MAX: return a > b ? a : b;
    case MIL_KB_MIN: return a < b ? a : b;
    default: return compare(op, a, b);
    }
}

void mil_k_binary_i32(mil_kbin op, const int32_t *a, const mil_kshape *as, const int32_t *b,
                      const mil_kshape *bs, int32_t *out, const mil_kshape *os) {
    const mil_kshape *ins[2] = {as, bs};
    bcast_walk w;
    walk_init(&w, os, ins, 2);
    int64_t n = os->rank ? os->d[os->rank - 1] : 1;
    int64_t sa = os->rank ? w.st[0][os->rank - 1] : 0, sb = os->rank ? w.st[1][os->rank - 1] : 0;
    if (mil_kshape_count(os) == 0) return;
    int64_t o = 0;
    do {
        const int32_t *pa = a + w.off[0], *pb = b + w.off[1];
        for (int64_t j = 0; j < n; j++) out[o + j] = bin_i32(op, pa[j * sa], pb[j * sb]);
        o += n;
    } while (walk_next_row(&w));
}

void mil_k_select(const int32_t *cond, const mil_kshape *cs, const uint32_t *a,
                  const mil_kshape *as, const uint32_t *b, const mil_kshape *bs, uint32_t *out,
                  const mil_kshape *os) {
    const mil_kshape *ins[3] = {cs, as, bs};
    bcast_walk w;
    walk_init(&w, os, ins, 3);
    int r = os->rank;
    int64_t n = r ? os->d[r - 1] : 1;
    int64_t sc = r ? w.st[0][r - 1] : 0, sa = r ? w.st[1][r - 1] : 0, sb = r ? w.st[2][r - 1] : 0;
    if (mil_kshape_count(os) == 0) return;
    int64_t o = 0;
    do {
        const int32_t *pc = cond + w.off[0];
        const uint32_t *pa = a + w.off[1], *pb = b + w.off[2];
        for (int64_t j = 0; j < n; j++) out[o + j] = pc[j * sc] ? pa[j * sa] : pb[j * sb];
        o += n;
    } while (walk_next_row(&w));
}

void mil_k_broadcast_to(const uint32_t *x, const mil_kshape *xs, uint32_t *out,
                        const mil_kshape *os) {
    const mil_kshape *ins[1] = {xs};
    bcast_walk w;
    walk_init(&w, os, ins, 1);
    int r = os->rank;
    int64_t n = r ? os->d[r - 1] : 1, s = r ? w.st[0][r - 1] : 0;
    if (mil_kshape_count(os) == 0) return;
    int64_t o = 0;
    do {
        const uint32_t *p = x + w.off[0];
        for (int64_t j = 0; j < n; j++) out[o + j] = p[j * s];
        o += n;
    } while (walk_next_row(&w));
}

static inline float sigmoidf(float x) { return 1.0f / (1.0f + expf(-x)); }

void mil_k_unary_f32(mil_kun op, const float *x, float *out, size_t n, float p0, float p1) {
    /* constants of the two GELU forms (coremltools' definitions) */
    const float inv_sqrt2 = 0.70710678118654752f, k_tanh = 0.79788456080286536f;
    for (size_t i = 0; i < n; i++) {
        float v = x[i], r;
        switch (op) {
        case MIL_KU_SQRT: r = sqrtf(v); break;
        case MIL_KU_RSQRT: r = 1.0f / sqrtf(v + p0); break;
        case MIL_KU_EXP: r = expf(v); break;
        case MIL_KU_EXP2: r = exp2f(v); break;
        case MIL_KU_LOG: r = logf(v + p0); break;
        case MIL_KU_TANH: r = tanhf(v); break;
        case MIL_KU_SIGMOID: r = sigmoidf(v); break;
        case MIL_KU_SILU: r = v * sigmoidf(v); break;
        case MIL_KU_RELU: r = v > 0 ? v : (isnan(v) ? v : 0.0f); break;
        case MIL_KU_GELU_EXACT: r = 0.5f * v * (1.0f + erff(v * inv_sqrt2)); break;
        case MIL_KU_GELU_TANH:
            r = 0.5f * v * (1.0f + tanhf(k_tanh * (v + 0.044715f * v * v * v)));
            break;
        case MIL_KU_GELU_SIGMOID: r = v * sigmoidf(1.702f * v); break;
        case MIL_KU_ERF: r = erff(v); break;
        case MIL_KU_ABS: r = fabsf(v); break;
        case MIL_KU_SIGN: r = v > 0 ? 1.0f : (v < 0 ? -1.0f : v); break;
        case MIL_KU_CEIL: r = ceilf(v); break;
        case MIL_KU_FLOOR: r = floorf(v); break;
        case MIL_KU_ROUND: r = nearbyintf(v); break; /* half to even, as numpy */
        case MIL_KU_SQUARE: r = v * v; break;
        case MIL_KU_INVERSE: r = 1.0f / (v + p0); break;
        case MIL_KU_SIN: r = sinf(v); break;
        case MIL_KU_COS: r = cosf(v); break;
        case MIL_KU_CLIP: r = v < p0 ? p0 : (v > p1 ? p1 : v); break;
        case MIL_KU_LEAKY_RELU: r = v >= 0 ? v : p0 * v; break;
        case MIL_KU_SOFTPLUS: r = v > 20.0f ? v : log1pf(expf(v)); break;
        case MIL_KU_RELU6: r = v < 0 ? 0.0f : (v > 6.0f ? 6.0f : v); break;
        case MIL_KU_ATAN: r = atanf(v); break;
        case MIL_KU_SOFTSIGN: r = v / (1.0f + fabsf(v)); break;
        default: r = v; break;
        }
        out[i] = r;
    }
}
