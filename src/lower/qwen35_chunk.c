/* The chunked (UT-transform) gated delta rule as a prefill_sS function
 * (qwen35_chunk.h). Per value head h and sub-chunk of C tokens with local
 * indices i, j, the state S [dk, dvp] entering the sub-chunk:
 *
 *   Gd[i,j] = sum_{j<t<=i} g_t   Gq[i] = sum_{t<=i} g_t   Gk[j] = sum_{t>j} g_t
 *   L  = strict_lower(beta_i k_i.k_j e^Gd)          A = lower(q_i.k_j e^Gd)
 *   [U | W] = (I + L)^-1 [beta V | beta K e^Gq]     (forward substitution)
 *   O  = A U + (Q e^Gq - A W) S                     (the outputs)
 *   S' = Phi S + Psi,  Phi = e^Gl I - (K e^Gk)^T W,  Psi = (K e^Gk)^T U
 *
 * which is HF's torch_chunk_gated_delta_rule with v_new = U - W S folded
 * into Phi and Psi, so that only S' = Phi S + Psi and O += Q_n S run in
 * sequence over the sub-chunks. fp16: the decay sums are taken directly
 * (constant 0/1 matmuls of g; a difference of two long cumulative sums
 * loses the small ones), exp only sees min(x, 0), and the UT transform is
 * applied to its right-hand side row by row, whose rows are bounded (they
 * are the recurrence's delta values), never formed as doubling products,
 * whose intermediate powers are not. Padding (beta = g = 0) has zero rows
 * in L, U and W and a unit decay, so it leaves the state alone. */
#include "lower/qwen35_chunk.h"

#include <stdio.h>
#include <stdlib.h>

/* What one function needs: the builder, the sizes. */
typedef struct ck {
    mil_builder *b;
    int32_t nk, nv, G, dk, dvp, S, C, N, F; /* N = S / C sub-chunks, F = dvp + dk */
    lower_exp_form exp;                     /* how exp is written (lower_ops.h) */
} ck;

typedef float (*fill_fn)(int r, int c, const ck *k, int arg);

/* A constant [1, 1, rows, cols] with entry f(r, c) (0/1 patterns: exact). */
static mil_var *konst(const ck *k, const char *name, int32_t rows, int32_t cols, fill_fn f,
                      int arg) {
    nc_fp16 *v = malloc((size_t)rows * cols * sizeof *v);
    if (!v) return NULL;
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++)
            v[(size_t)r * cols + c] = nc_f32_to_fp16(f(r, c, k, arg));
    int64_t dims[4] = {1, 1, rows, cols};
    mil_var *m = mil_build_const_tensor(k->b, name, MIL_DT_FP16, 4, dims, v);
    free(v);
    return m;
}

/* g [.., 1, C] times these [C, *] give the decay sums; t is the row. */
static float f_diff(int t, int ij, const ck *k, int arg) { /* column i*C + j: j < t <= i */
    (void)arg;
    return ij % k->C < t && t <= ij / k->C;
}
static float f_upto(int t, int i, const ck *k, int arg) { /* Gq: t <= i */
    (void)k, (void)arg;
    return t <= i;
}
static float f_after(int t, int j, const ck *k, int arg) { /* Gk: t > j */
    (void)k, (void)arg;
    return t > j;
}
static float f_one(int r, int c, const ck *k, int arg) {
    (void)r, (void)c, (void)k, (void)arg;
    return 1;
}
static float f_lower(int i, int j, const ck *k, int strict) {
    (void)k;
    return strict ? j < i : j <= i;
}
static float f_eye(int r, int c, const ck *k, int arg) {
    (void)k, (void)arg;
    return r == c;
}
static float f_place(int r, int c, const ck *k, int at) { /* identity into columns at.. */
    (void)k;
    return c == r + at;
}
static float f_row(int r, int c, const ck *k, int at) { /* one-hot column vector */
    (void)c, (void)k;
    return r == at;
}
static float f_block(int r, int c, const ck *k, int n) { /* rows of sub-chunk n */
    (void)c;
    return r / k->C == n;
}

static mil_var *rs4(const ck *k, const char *name, mil_var *x, int32_t d0, int32_t d1, int32_t d2,
                    int32_t d3) {
    int32_t s[4] = {d0, d1, d2, d3};
    return x ? mil_build_reshape(k->b, name, x, 4, s) : NULL;
}

static mil_var *tr4(const ck *k, const char *name, mil_var *x, int32_t p0, int32_t p1, int32_t p2,
                    int32_t p3) {
    int32_t p[4] = {p0, p1, p2, p3};
    return x ? mil_build_transpose(k->b, name, x, 4, p) : NULL;
}

static mil_var *mul(const ck *k, const char *name, mil_var *x, mil_var *y) {
    return x && y ? mil_build_mul(k->b, name, x, y) : NULL;
}
static mil_var *sub(const ck *k, const char *name, mil_var *x, mil_var *y) {
    return x && y ? mil_build_binary(k->b, "sub", name, x, y) : NULL;
}
static mil_var *mm(const ck *k, const char *name, mil_var *x, mil_var *y, int tx, int ty) {
    return x && y ? mil_build_matmul(k->b, name, x, y, tx, ty) : NULL;
}

/* exp(min(x, 0)): the decays are <= 0 exactly; the clamp keeps a rounding
 * from ever exponentiating a positive number. */
static mil_var *exp_neg(const ck *k, const char *name, mil_var *x) {
    char n[64];
    snprintf(n, sizeof n, "%s_zero", name);
    mil_var *z = x ? mil_build_const_scalar(k->b, n, MIL_DT_FP16, 0.0) : NULL;
    snprintf(n, sizeof n, "%s_clamped", name);
    mil_var *m = z ? mil_build_binary(k->b, "minimum", n, x, z) : NULL;
    return lower_exp_nonpos(k->b, name, m, k->exp);
}

/* q or k [1, nk, dk, S] -> [nv, N, C, dk]: a key head serves its G value
 * heads (a broadcast multiply by ones, exact), tokens as rows. */
static mil_var *token_rows(const ck *k, const char *name, mil_var *x) {
    char n[3][48];
    snprintf(n[0], sizeof n[0], "%s_per_kv", name);
    snprintf(n[1], sizeof n[1], "%s_blocks", name);
    snprintf(n[2], sizeof n[2], "%s_ones", name);
    mil_var *h = rs4(k, n[0], x, k->nk, 1, k->dk, k->S);
    if (h && k->G > 1) {
        int64_t dims[4] = {1, k->G, 1, 1};
        nc_fp16 *one = malloc((size_t)k->G * sizeof *one);
        for (int i = 0; one && i < k->G; i++)
            one[i] = nc_f32_to_fp16(1.0f);
        mil_var *ones = one ? mil_build_const_tensor(k->b, n[2], MIL_DT_FP16, 4, dims, one) : NULL;
        free(one);
        snprintf(n[2], sizeof n[2], "%s_per_v", name);
        h = mul(k, n[2], h, ones);
    }
    mil_var *bl = rs4(k, n[1], h, k->nv, k->dk, k->N, k->C);
    return tr4(k, name, bl, 0, 2, 3, 1);
}

/* The decay sums of g [nv, N, 1, C] as [nv, N, C, C] (Gd), [nv, N, C, 1]
 * (Gq, Gk) and [nv, N, 1, 1] (Gl). */
static int decay_sums(const ck *k, mil_var *g, lower_q35_chunk_variant v, mil_var **gd,
                      mil_var **gq, mil_var **gk, mil_var **gl) {
    int32_t C = k->C;
    mil_var *mq = konst(k, "sum_upto", C, C, f_upto, 0);
    mil_var *ml = konst(k, "sum_all", C, 1, f_one, 0);
    mil_var *gqr = mm(k, "gcum_row", g, mq, 0, 0); /* [nv, N, 1, C] */
    *gq = rs4(k, "gcum", gqr, k->nv, k->N, C, 1);
    *gl = mm(k, "gsum", g, ml, 0, 0);
    if (v == LOWER_Q35_CHUNK_CUMSUM) { /* the textbook form: differences of one cumsum */
        *gd = sub(k, "gdiff", *gq, gqr);
        *gk = sub(k, "gafter", *gl, *gq);
    } else {
        mil_var *md = konst(k, "sum_between", C, C * C, f_diff, 0);
        mil_var *ma = konst(k, "sum_after", C, C, f_after, 0);
        *gd = rs4(k, "gdiff", mm(k, "gdiff_flat", g, md, 0, 0), k->nv, k->N, C, C);
        *gk = rs4(k, "gafter", mm(k, "gafter_row", g, ma, 0, 0), k->nv, k->N, C, 1);
    }
    return *gd && *gq && *gk && *gl;
}

/* [U | W] = (I + L)^-1 X for X [nv, N, C, F]: row i becomes
 * x_i - sum_{j<i} L_ij x_j once rows j < i are final (L's row i alone, by
 * a one-hot column, times X; rows >= i are multiplied by zeros). C - 1
 * steps of three ops, batched over heads and sub-chunks. */
static mil_var *forward_subst(const ck *k, mil_var *L, mil_var *X) {
    for (int i = 1; i < k->C && X; i++) {
        char n[3][32];
        snprintf(n[0], sizeof n[0], "ut_row%d", i);
        snprintf(n[1], sizeof n[1], "ut_l%d", i);
        snprintf(n[2], sizeof n[2], "ut_x%d", i);
        mil_var *e = konst(k, n[0], k->C, 1, f_row, i);
        mil_var *li = mul(k, n[1], L, e);
        snprintf(n[0], sizeof n[0], "ut_y%d", i);
        X = sub(k, n[2], X, mm(k, n[0], li, X, 0, 0));
    }
    return X;
}

/* The textbook ANE form: T = (I - L)(I + L^2)(I + L^4)... (log2 C
 * products; L is nilpotent), then T X. */
static mil_var *doubling(const ck *k, mil_var *L, mil_var *X) {
    mil_var *eye = konst(k, "ut_eye", k->C, k->C, f_eye, 0);
    mil_var *P = sub(k, "ut_p1", mil_build_const_scalar(k->b, "ut_zero", MIL_DT_FP16, 0.0), L);
    mil_var *T = P && eye ? mil_build_add(k->b, "ut_t1", eye, P) : NULL;
    for (int p = 2; p < k->C && T; p *= 2) {
        char n[3][32];
        snprintf(n[0], sizeof n[0], "ut_p%d", p);
        snprintf(n[1], sizeof n[1], "ut_tp%d", p);
        snprintf(n[2], sizeof n[2], "ut_t%d", p);
        P = mm(k, n[0], P, P, 0, 0);
        mil_var *tp = mm(k, n[1], T, P, 0, 0);
        T = tp ? mil_build_add(k->b, n[2], T, tp) : NULL;
    }
    return mm(k, "ut_x", T, X, 0, 0);
}

void lower_qwen35_prefill_chunked_function(mil_builder *b, const qwen35_config *c,
                                           lower_linear_weights *w, int S, int C,
                                           lower_q35_chunk_variant variant) {
    lower_q35_prefill io;
    if (!lower_qwen35_prefill_front(b, c, w, S, &io)) return;
    ck k = {b,
            c->linear_num_key_heads,
            c->linear_num_value_heads,
            c->linear_num_value_heads / c->linear_num_key_heads,
            lower_qwen35_dkp(c, w),
            lower_qwen35_dvp(c),
            S,
            C,
            S / C,
            0,
            w->exp};
    k.F = k.dvp + k.dk;
    /* tokens as rows, per value head and sub-chunk */
    mil_var *Q = token_rows(&k, "q_rows", io.q), *K = token_rows(&k, "k_rows", io.k);
    mil_var *V = tr4(&k, "v_rows", rs4(&k, "v_blocks", io.v, k.nv, k.dvp, k.N, C), 0, 2, 3, 1);
    mil_var *beta = rs4(&k, "beta_rows", io.beta, k.nv, k.N, C, 1);
    mil_var *g = rs4(&k, "g_rows", io.g, k.nv, k.N, 1, C);
    mil_var *gd, *gq, *gk, *gl;
    if (!Q || !K || !V || !beta || !decay_sums(&k, g, variant, &gd, &gq, &gk, &gl)) return;
    mil_var *egd = exp_neg(&k, "decay_between", gd), *egq = exp_neg(&k, "decay_upto", gq);
    mil_var *egk = exp_neg(&k, "decay_after", gk), *egl = exp_neg(&k, "decay_all", gl);

    /* L (strictly lower, beta by row) and A (lower with the diagonal) */
    mil_var *dl = mul(&k, "decay_strict", egd, konst(&k, "mask_strict", C, C, f_lower, 1));
    mil_var *di = mul(&k, "decay_incl", egd, konst(&k, "mask_incl", C, C, f_lower, 0));
    mil_var *L = mul(&k, "ut_l", mul(&k, "ut_kk_decay", mm(&k, "ut_kk", K, K, 0, 1), dl), beta);
    mil_var *A = mul(&k, "qk_decay", mm(&k, "qk", Q, K, 0, 1), di);

    /* the right-hand side [beta V | beta K e^Gq] (placed by 0/1 matmuls,
     * exact: no concat), then the UT transform */
    mil_var *vb = mul(&k, "v_beta", V, beta);
    mil_var *kb = mul(&k, "k_beta_decay", mul(&k, "k_beta", K, beta), egq);
    mil_var *xv = mm(&k, "ut_rhs_v", vb, konst(&k, "place_v", k.dvp, k.F, f_place, 0), 0, 0);
    mil_var *xk = mm(&k, "ut_rhs_k", kb, konst(&k, "place_k", k.dk, k.F, f_place, k.dvp), 0, 0);
    mil_var *X = xv && xk ? mil_build_add(b, "ut_rhs", xv, xk) : NULL;
    if (!L || !A || !X) return;
    X = variant == LOWER_Q35_CHUNK_DOUBLING ? doubling(&k, L, X) : forward_subst(&k, L, X);
    int32_t bu[4] = {0, 0, 0, 0}, su[4] = {k.nv, k.N, C, k.dvp};
    int32_t bw[4] = {0, 0, 0, k.dvp}, sw[4] = {k.nv, k.N, C, k.dk};
    mil_var *U = X ? mil_build_slice_by_size(b, "ut_u", X, 4, bu, su) : NULL;
    mil_var *W = U ? mil_build_slice_by_size(b, "ut_w", X, 4, bw, sw) : NULL;

    /* everything the sub-chunks' state chain needs, for all at once */
    mil_var *kd = mul(&k, "k_decay_after", K, egk);
    mil_var *eye = konst(&k, "state_eye", k.dk, k.dk, f_eye, 0);
    mil_var *phi = sub(&k, "chunk_phi", mul(&k, "chunk_decay_eye", eye, egl),
                       mm(&k, "chunk_kw", kd, W, 1, 0)); /* [nv, N, dk, dk] */
    mil_var *psi = mm(&k, "chunk_psi", kd, U, 1, 0);     /* [nv, N, dk, dvp] */
    mil_var *qs = sub(&k, "q_state", mul(&k, "q_decay", Q, egq), mm(&k, "qk_w", A, W, 0, 0));
    mil_var *qt = rs4(&k, "q_state_rows", qs, k.nv, 1, S, k.dk); /* [nv, 1, S, dk] */
    mil_var *O = rs4(&k, "o_intra", mm(&k, "o_intra_blocks", A, U, 0, 0), k.nv, 1, S, k.dvp);
    mil_var *St = rs4(&k, "state_rows", io.state, k.nv, 1, k.dk, k.dvp);

    /* in sequence: O += Q_n S_n, S_{n+1} = Phi_n S_n + Psi_n */
    for (int n = 0; n < k.N && O && St && qt && phi && psi; n++) {
        char nm[8][32];
        const char *what[8] = {"q_block", "block_mask", "o_inter",   "o_acc",
                               "phi_n",   "psi_n",      "state_phi", "state_next"};
        for (int i = 0; i < 8; i++)
            snprintf(nm[i], sizeof nm[i], "%s%d", what[i], n);
        mil_var *qn = k.N == 1 ? qt : mul(&k, nm[0], qt, konst(&k, nm[1], S, 1, f_block, n));
        mil_var *oi = mm(&k, nm[2], qn, St, 0, 0);
        O = oi ? mil_build_add(b, nm[3], O, oi) : NULL;
        int32_t bp[4] = {0, n, 0, 0}, sp[4] = {k.nv, 1, k.dk, k.dk}, ss[4] = {k.nv, 1, k.dk, k.dvp};
        mil_var *pn = mil_build_slice_by_size(b, nm[4], phi, 4, bp, sp);
        mil_var *sn = pn ? mil_build_slice_by_size(b, nm[5], psi, 4, bp, ss) : NULL;
        mil_var *sp_ = mm(&k, nm[6], pn, St, 0, 0);
        St = sp_ && sn ? mil_build_add(b, nm[7], sp_, sn) : NULL;
    }
    /* [nv, 1, S, dvp] -> [1, nv, dvp, S] */
    mil_var *o = tr4(&k, "core_cols", rs4(&k, "core_rows", O, 1, k.nv, S, k.dvp), 0, 1, 3, 2);
    lower_qwen35_prefill_finish(b, c, w, &io, S, o, St);
}
