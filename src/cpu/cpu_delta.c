/* Gated DeltaNet token mixing on the CPU (see cpu_delta.h): conv1d + SiLU,
 * the L2 norm, and the gated delta rule per head, recurrent and chunked.
 * Every inner loop is an axpy along a contiguous row (no float sums to
 * reassociate), so -O2 vectorises them on every ISA. */
#include "cpu/cpu_delta.h"

#include <math.h>
#include <string.h>

static inline float silu(float x) {
    return x / (1.0f + expf(-x));
}

/* y[0..n) += a * x[0..n) */
static inline void axpy(float *restrict y, float a, const float *restrict x, int n) {
    for (int i = 0; i < n; i++)
        y[i] += a * x[i];
}

void cpu_conv1d_silu(float *x, size_t ldx, int n, int channels, const float *w_t, int K,
                     float *window) {
    size_t cs = (size_t)channels;
    int hist = K - 1;
    /* Backwards, so each row is overwritten only after every later row
     * (which reads it) is done; the new window is saved first. */
    float save[CPU_CONV_MAX_HIST * 1024];
    int keep = n < hist ? n : hist; /* inputs of this call that stay in the window */
    for (int c0 = 0; c0 < channels; c0 += 1024) {
        int cw = channels - c0 < 1024 ? channels - c0 : 1024;
        for (int r = 0; r < keep; r++)
            memcpy(save + (size_t)r * 1024, x + (size_t)(n - keep + r) * ldx + c0,
                   (size_t)cw * sizeof(float));
        for (int t = n - 1; t >= 0; t--) {
            float *o = x + (size_t)t * ldx + c0;
            float acc[1024];
            memset(acc, 0, (size_t)cw * sizeof(float));
            for (int j = 0; j < K; j++) {
                int src = t - hist + j; /* input row; < 0: from the window */
                const float *in =
                    src >= 0 ? x + (size_t)src * ldx + c0 : window + (size_t)(hist + src) * cs + c0;
                const float *wj = w_t + (size_t)j * cs + c0;
                for (int c = 0; c < cw; c++)
                    acc[c] += wj[c] * in[c];
            }
            for (int c = 0; c < cw; c++)
                o[c] = silu(acc[c]);
        }
        /* advance the window: drop the oldest `keep`, append the saved rows */
        for (int r = 0; r < hist - keep; r++)
            memcpy(window + (size_t)r * cs + c0, window + (size_t)(r + keep) * cs + c0,
                   (size_t)cw * sizeof(float));
        for (int r = 0; r < keep; r++)
            memcpy(window + (size_t)(hist - keep + r) * cs + c0, save + (size_t)r * 1024,
                   (size_t)cw * sizeof(float));
    }
}

void cpu_l2norm_scale(float *x, int n, float eps, float scale) {
    float ss = 0.0f;
    for (int i = 0; i < n; i++)
        ss += x[i] * x[i];
    float r = 1.0f / sqrtf(ss + eps);
    for (int i = 0; i < n; i++)
        x[i] = x[i] * r * scale;
}

void cpu_delta_recurrent(const cpu_delta_head *h) {
    int dk = h->dk, dv = h->dv;
    float *S = h->state;
    for (int t = 0; t < h->n; t++) {
        const float *q = h->q + (size_t)t * h->ldqk, *k = h->k + (size_t)t * h->ldqk;
        const float *v = h->v + (size_t)t * h->ldv;
        float decay = expf(h->g[(size_t)t * h->ldgb]), beta = h->beta[(size_t)t * h->ldgb];
        float *out = h->out + (size_t)t * h->ldo;
        float delta[CPU_DELTA_MAX_DV];
        /* decay the state and read it with k: kv_mem = S^T k */
        memset(delta, 0, (size_t)dv * sizeof(float));
        for (int a = 0; a < dk; a++) {
            float *row = S + (size_t)a * dv;
            for (int j = 0; j < dv; j++)
                row[j] *= decay;
            axpy(delta, k[a], row, dv);
        }
        for (int j = 0; j < dv; j++)
            delta[j] = (v[j] - delta[j]) * beta;
        /* write k delta^T, then read with q */
        memset(out, 0, (size_t)dv * sizeof(float));
        for (int a = 0; a < dk; a++) {
            float *row = S + (size_t)a * dv;
            axpy(row, k[a], delta, dv);
            axpy(out, q[a], row, dv);
        }
    }
}

size_t cpu_delta_scratch_floats(int chunk, int dk, int dv) {
    size_t c = (size_t)chunk;
    return c * (3 * (size_t)dk + (size_t)dv) + 2 * c * c + 2 * c;
}

/* One chunk of c tokens starting at row r0. */
static void delta_chunk(const cpu_delta_head *h, int r0, int c, int C, float *scratch) {
    int dk = h->dk, dv = h->dv;
    float *S = h->state;
    float *kT = scratch;                         /* [dk][C]: k transposed */
    float *kb = kT + (size_t)dk * C;             /* [C][dk]: beta k */
    float *w = kb + (size_t)C * dk;              /* [C][dk] */
    float *u = w + (size_t)C * dk;               /* [C][dv]: new values, then v_new */
    float *A = u + (size_t)C * dv;               /* [C][C] */
    float *P = A + (size_t)C * C;                /* [C][C] */
    float *gc = P + (size_t)C * C, *eg = gc + C; /* cumulative log decay, its exp */
#define ROW(p, ld, t) ((p) + (size_t)(r0 + (t)) * (ld))
    float acc = 0.0f;
    for (int i = 0; i < c; i++) {
        acc += ROW(h->g, h->ldgb, i)[0];
        gc[i] = acc;
        eg[i] = expf(acc);
        const float *k = ROW(h->k, h->ldqk, i);
        float beta = ROW(h->beta, h->ldgb, i)[0];
        for (int a = 0; a < dk; a++) {
            kb[(size_t)i * dk + a] = k[a] * beta;
            kT[(size_t)a * C + i] = k[a];
        }
    }
    /* A[i][j<i] = (beta_i k_i . k_j) exp(gc_i - gc_j); P[i][j<=i] likewise
     * with q_i */
    for (int i = 0; i < c; i++) {
        float *Ai = A + (size_t)i * C, *Pi = P + (size_t)i * C;
        const float *q = ROW(h->q, h->ldqk, i);
        memset(Ai, 0, (size_t)(i + 1) * sizeof(float));
        memset(Pi, 0, (size_t)(i + 1) * sizeof(float));
        for (int a = 0; a < dk; a++) {
            axpy(Ai, kb[(size_t)i * dk + a], kT + (size_t)a * C, i);
            axpy(Pi, q[a], kT + (size_t)a * C, i + 1);
        }
        for (int j = 0; j <= i; j++) {
            float d = expf(gc[i] - gc[j]);
            Ai[j] *= d;
            Pi[j] *= d;
        }
    }
    /* (I + A) u = beta v and (I + A) w = beta k exp(gc), by forward
     * substitution (A is strictly lower triangular) */
    for (int i = 0; i < c; i++) {
        const float *v = ROW(h->v, h->ldv, i);
        float beta = ROW(h->beta, h->ldgb, i)[0];
        float *ui = u + (size_t)i * dv, *wi = w + (size_t)i * dk;
        for (int j = 0; j < dv; j++)
            ui[j] = v[j] * beta;
        for (int a = 0; a < dk; a++)
            wi[a] = kb[(size_t)i * dk + a] * eg[i];
        const float *Ai = A + (size_t)i * C;
        for (int j = 0; j < i; j++) {
            axpy(ui, -Ai[j], u + (size_t)j * dv, dv);
            axpy(wi, -Ai[j], w + (size_t)j * dk, dk);
        }
    }
    /* v_new = u - w S: the part the old state does not predict (after the
     * substitution, which needs every u as it was) */
    for (int i = 0; i < c; i++)
        for (int a = 0; a < dk; a++)
            axpy(u + (size_t)i * dv, -w[(size_t)i * dk + a], S + (size_t)a * dv, dv);
    /* out_i = exp(gc_i) q_i^T S + sum_{j<=i} P[i][j] v_new_j */
    for (int i = 0; i < c; i++) {
        const float *q = ROW(h->q, h->ldqk, i);
        float *o = ROW(h->out, h->ldo, i);
        memset(o, 0, (size_t)dv * sizeof(float));
        for (int a = 0; a < dk; a++)
            axpy(o, q[a] * eg[i], S + (size_t)a * dv, dv);
        const float *Pi = P + (size_t)i * C;
        for (int j = 0; j <= i; j++)
            axpy(o, Pi[j], u + (size_t)j * dv, dv);
    }
    /* S = exp(gc_last) S + sum_j exp(gc_last - gc_j) k_j v_new_j^T */
    float last = gc[c - 1];
    for (int j = 0; j < c; j++)
        eg[j] = expf(last - gc[j]);
    float el = expf(last);
    for (int a = 0; a < dk; a++) {
        float *row = S + (size_t)a * dv;
        for (int x = 0; x < dv; x++)
            row[x] *= el;
        const float *ka = kT + (size_t)a * C;
        for (int j = 0; j < c; j++)
            axpy(row, ka[j] * eg[j], u + (size_t)j * dv, dv);
    }
#undef ROW
}

void cpu_delta_chunked(const cpu_delta_head *h, int chunk, float *scratch) {
    for (int r0 = 0; r0 < h->n; r0 += chunk) {
        int c = h->n - r0 < chunk ? h->n - r0 : chunk;
        delta_chunk(h, r0, c, chunk, scratch);
    }
}
