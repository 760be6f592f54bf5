/* Gated DeltaNet token mixing on the CPU (see cpu_delta.h): conv1d + SiLU,
 * the L2 norm, and the gated delta rule per head, recurrent and chunked,
 * with every product over the state or a chunk done by a gemm_acc kernel
 * (the scalar reference below, or the ISA's). */
#include "cpu/cpu_delta.h"

#include <math.h>
#include <string.h>
#if defined(__x86_64__) || defined(_M_X64)
#include <xmmintrin.h>
#endif

/* Strong decays drive values below FLT_MIN (exp(gc) late in a chunk, a
 * state left to decay); subnormal arithmetic costs ~100x on x86, which made
 * the delta rule 3x slower than all the projections of a random 0.8B model.
 * The kernels run with subnormals flushed to zero (an absolute change below
 * 1.2e-38) and restore the caller's mode. */
static unsigned flush_subnormals(void) {
#if defined(__x86_64__) || defined(_M_X64)
    unsigned csr = _mm_getcsr();
    _mm_setcsr(csr | 0x8040); /* FTZ | DAZ */
    return csr;
#else
    return 0;
#endif
}
static void restore_subnormals(unsigned csr) {
#if defined(__x86_64__) || defined(_M_X64)
    _mm_setcsr(csr);
#else
    (void)csr;
#endif
}

void cpu_gemm_acc_scalar(int m, int n, int k, const float *x, size_t ldx, const float *B,
                         size_t ldb, float beta, float *y, size_t ldy) {
    for (int i = 0; i < m; i++) {
        float *yr = y + (size_t)i * ldy;
        for (int j = 0; j < n; j++)
            yr[j] = beta == 0.0f ? 0.0f : beta * yr[j];
        for (int a = 0; a < k; a++) {
            float s = x[(size_t)i * ldx + a];
            const float *br = B + (size_t)a * ldb;
            for (int j = 0; j < n; j++)
                yr[j] += s * br[j];
        }
    }
}

cpu_gemm_acc_fn cpu_delta_gemm_for(const cpu_kernels *kern) {
#if defined(__x86_64__) || defined(_M_X64)
    if (!kern->name) return cpu_gemm_acc_scalar; /* a table the CPU never filled in */
    if (!strcmp(kern->name, "avx512") || !strcmp(kern->name, "amx")) return cpu_gemm_acc_avx512;
    if (!strncmp(kern->name, "avx2", 4)) return cpu_gemm_acc_avx2; /* and avx2-vnni */
#else
    (void)kern;
#endif
    return cpu_gemm_acc_scalar;
}

void cpu_conv1d_silu(const cpu_row_kernels *rows, float *x, size_t ldx, int n, int channels,
                     int c0, const float *w_t, int K, float *window) {
    size_t cs = (size_t)channels;
    int hist = K - 1;
    int cw = channels - c0 < CPU_CONV_BLOCK ? channels - c0 : CPU_CONV_BLOCK;
    /* Backwards, so each row is overwritten only after every later row
     * (which reads it) is done; the new window is saved first. */
    float save[CPU_CONV_MAX_HIST * CPU_CONV_BLOCK];
    int keep = n < hist ? n : hist; /* inputs of this call that stay in the window */
    for (int r = 0; r < keep; r++)
        memcpy(save + (size_t)r * CPU_CONV_BLOCK, x + (size_t)(n - keep + r) * ldx + c0,
               (size_t)cw * sizeof(float));
    for (int t = n - 1; t >= 0; t--) {
        float acc[CPU_CONV_BLOCK];
        memset(acc, 0, (size_t)cw * sizeof(float));
        for (int j = 0; j < K; j++) {
            int src = t - hist + j; /* input row; < 0: from the window */
            const float *in =
                src >= 0 ? x + (size_t)src * ldx + c0 : window + (size_t)(hist + src) * cs + c0;
            rows->mul_add(acc, w_t + (size_t)j * cs + c0, in, (size_t)cw);
        }
        rows->silu(x + (size_t)t * ldx + c0, acc, (size_t)cw);
    }
    /* advance the window: drop the oldest `keep`, append the saved rows */
    for (int r = 0; r < hist - keep; r++)
        memcpy(window + (size_t)r * cs + c0, window + (size_t)(r + keep) * cs + c0,
               (size_t)cw * sizeof(float));
    for (int r = 0; r < keep; r++)
        memcpy(window + (size_t)(hist - keep + r) * cs + c0, save + (size_t)r * CPU_CONV_BLOCK,
               (size_t)cw * sizeof(float));
}

void cpu_l2norm_scale(float *x, int n, float eps, float scale) {
    float ss = 0.0f;
    for (int i = 0; i < n; i++)
        ss += x[i] * x[i];
    float r = 1.0f / sqrtf(ss + eps);
    for (int i = 0; i < n; i++)
        x[i] = x[i] * r * scale;
}

void cpu_delta_recurrent(const cpu_delta_head *h, cpu_gemm_acc_fn gemm) {
    unsigned csr = flush_subnormals();
    int dk = h->dk, dv = h->dv;
    float *S = h->state;
    for (int t = 0; t < h->n; t++) {
        const float *q = h->q + (size_t)t * h->ldqk, *k = h->k + (size_t)t * h->ldqk;
        const float *v = h->v + (size_t)t * h->ldv;
        float decay = expf(h->g[(size_t)t * h->ldgb]), beta = h->beta[(size_t)t * h->ldgb];
        float delta[CPU_DELTA_MAX_DV];
        /* what the decayed state predicts for k: decay * S^T k */
        gemm(1, dv, dk, k, (size_t)dk, S, (size_t)dv, 0.0f, delta, (size_t)dv);
        for (int j = 0; j < dv; j++)
            delta[j] = (v[j] - decay * delta[j]) * beta;
        /* S = decay S + k delta^T, then out = S^T q */
        gemm(dk, dv, 1, k, 1, delta, (size_t)dv, decay, S, (size_t)dv);
        gemm(1, dv, dk, q, (size_t)dk, S, (size_t)dv, 0.0f, h->out + (size_t)t * h->ldo,
             (size_t)dv);
    }
    restore_subnormals(csr);
}

size_t cpu_delta_scratch_floats(int chunk, int dk, int dv) {
    size_t c = (size_t)chunk;
    return c * (5 * (size_t)dk + (size_t)dv) + 2 * c * c + 2 * c;
}

/* One chunk of c tokens starting at row r0 (C: the scratch's chunk). */
static void delta_chunk(const cpu_delta_head *h, int r0, int c, int C, float *scratch,
                        cpu_gemm_acc_fn gemm) {
    int dk = h->dk, dv = h->dv;
    size_t ldk = (size_t)dk, ldv = (size_t)dv, ldc = (size_t)C;
    float *S = h->state;
    float *kT = scratch;                   /* [dk][C]: k transposed */
    float *kdT = kT + ldk * C;             /* [dk][C]: k_j exp(gc_last - gc_j), transposed */
    float *kb = kdT + ldk * C;             /* [C][dk]: beta k */
    float *qs = kb + ldc * dk;             /* [C][dk]: q exp(gc) */
    float *wn = qs + ldc * dk;             /* [C][dk]: -w */
    float *u = wn + ldc * dk;              /* [C][dv]: new values, then v_new */
    float *A = u + ldc * dv;               /* [C][C]: -(beta_i k_i . k_j) decay, j < i */
    float *P = A + ldc * C;                /* [C][C]: (q_i . k_j) decay, j <= i */
    float *gc = P + ldc * C, *eg = gc + C; /* cumulative log decay, its exp */
    const float *q0 = h->q + (size_t)r0 * h->ldqk;
#define ROW(p, ld, t) ((p) + (size_t)(r0 + (t)) * (ld))
    float acc = 0.0f;
    for (int i = 0; i < c; i++) {
        acc += ROW(h->g, h->ldgb, i)[0];
        gc[i] = acc;
        eg[i] = expf(acc);
        const float *k = ROW(h->k, h->ldqk, i), *q = ROW(h->q, h->ldqk, i);
        const float *v = ROW(h->v, h->ldv, i);
        float beta = ROW(h->beta, h->ldgb, i)[0];
        for (int a = 0; a < dk; a++) {
            kb[(size_t)i * dk + a] = k[a] * beta;
            kT[(size_t)a * C + i] = k[a];
            qs[(size_t)i * dk + a] = q[a] * eg[i];
            wn[(size_t)i * dk + a] = -(k[a] * beta) * eg[i];
        }
        for (int j = 0; j < dv; j++)
            u[(size_t)i * dv + j] = v[j] * beta;
    }
    /* the k.k and q.k products of the chunk, then their decays */
    gemm(c, c, dk, kb, ldk, kT, ldc, 0.0f, A, ldc);
    gemm(c, c, dk, q0, h->ldqk, kT, ldc, 0.0f, P, ldc);
    for (int i = 0; i < c; i++)
        for (int j = 0; j <= i; j++) {
            float d = expf(gc[i] - gc[j]);
            A[(size_t)i * C + j] *= -d;
            P[(size_t)i * C + j] *= d;
        }
    /* (I + A) u = beta v and (I + A) w = beta k exp(gc), by forward
     * substitution (A strictly lower triangular; stored negated) */
    for (int i = 1; i < c; i++) {
        gemm(1, dv, i, A + (size_t)i * C, ldc, u, ldv, 1.0f, u + (size_t)i * dv, ldv);
        gemm(1, dk, i, A + (size_t)i * C, ldc, wn, ldk, 1.0f, wn + (size_t)i * dk, ldk);
    }
    /* v_new = u - w S: the part the old state does not predict */
    gemm(c, dv, dk, wn, ldk, S, ldv, 1.0f, u, ldv);
    /* out_i = exp(gc_i) q_i^T S + sum_{j<=i} P[i][j] v_new_j */
    float *out = ROW(h->out, h->ldo, 0);
    gemm(c, dv, dk, qs, ldk, S, ldv, 0.0f, out, h->ldo);
    for (int i = 0; i < c; i++)
        gemm(1, dv, i + 1, P + (size_t)i * C, ldc, u, ldv, 1.0f, out + (size_t)i * h->ldo, h->ldo);
    /* S = exp(gc_last) S + sum_j exp(gc_last - gc_j) k_j v_new_j^T */
    float last = gc[c - 1];
    for (int j = 0; j < c; j++)
        eg[j] = expf(last - gc[j]);
    for (int a = 0; a < dk; a++)
        for (int j = 0; j < c; j++)
            kdT[(size_t)a * C + j] = kT[(size_t)a * C + j] * eg[j];
    gemm(dk, dv, c, kdT, ldc, u, ldv, expf(last), S, ldv);
#undef ROW
}

void cpu_delta_chunked(const cpu_delta_head *h, int chunk, float *scratch, cpu_gemm_acc_fn gemm) {
    unsigned csr = flush_subnormals();
    for (int r0 = 0; r0 < h->n; r0 += chunk) {
        int c = h->n - r0 < chunk ? h->n - r0 : chunk;
        delta_chunk(h, r0, c, chunk, scratch, gemm);
    }
    restore_subnormals(csr);
}
