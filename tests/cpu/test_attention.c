/* CPU attention: every kernel table this CPU can run (scalar, AVX2, AVX-512,
 * NEON under qemu) against a double-precision reference written here: the
 * softmax, P.V and q.k kernels alone, then whole causal grouped-query
 * attention through cpu_attention on awkward sizes (head_dim 24/64/128, key
 * counts that are no multiple of the vector width, 1..40 query rows, groups
 * 1/2/4, fp32 and fp16 caches, padded strides, rows of several sequences in
 * one batch, a pool), each case with and without a kv_pack, over head-major
 * caches (the decoders' layout) whose sequences differ in context. */
#include <math.h>

#include "../test.h"
#include "base/alloc.h"
#include "base/half.h"
#include "base/pool.h"
#include "cpu/attn_kernels.h"
#include "cpu/cpu_attention.h"
#include "cpu/cpu_kernels.h"

static uint32_t rng = 7;
static float frand(void) { /* uniform in [-1, 1) */
    rng = rng * 1664525u + 1013904223u;
    return (float)(rng >> 8) / (float)(1 << 23) - 1.0f;
}

static void print_tables(const cpu_kernels *const *tabs, int nt) {
    printf("  %d kernel tables (", nt);
    for (int i = 0; i < nt; i++)
        printf("%s%s", i ? ", " : "", tabs[i]->name);
    printf(")\n");
}

/* Each probability within 1e-6 relative of the double softmax of s * scale
 * (plus 1e-30 absolute for the terms that underflow), zeros up to n_pad. */
static void test_softmax_all_tables_match_double_reference(void) {
    const cpu_kernels *tabs[8];
    int nt = cpu_kernels_available(tabs, 8);
    enum { CAP = 1100 };
    static float s0[CAP], s[CAP];
    static const int ns[] = {1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33, 100, 1029};
    for (int ti = 0; ti < nt; ti++)
        for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++)
            for (int wide = 0; wide < 2; wide++) {
                int n = ns[ni], n_pad = n + 21;
                float scale = wide ? 4.0f : 0.0883883476f; /* 1/sqrt(128) */
                for (int i = 0; i < n_pad; i++)
                    s0[i] = s[i] = (wide ? 30.0f : 8.0f) * frand(); /* wide: terms underflow */
                tabs[ti]->attn->softmax(s, n, n_pad, scale);
                double mx = -INFINITY, sum = 0;
                for (int i = 0; i < n; i++)
                    mx = fmax(mx, (double)s0[i] * scale);
                for (int i = 0; i < n; i++)
                    sum += exp((double)s0[i] * scale - mx);
                for (int i = 0; i < n; i++) {
                    double ref = exp((double)s0[i] * scale - mx) / sum;
                    /* s * scale rounded to fp32 moves the exponent by up to
                     * |s * scale| * 2^-24 before the exp */
                    double tol = ref * (1e-6 + fabs((double)s0[i] * scale) * 6e-8) + 1e-30;
                    CHECKF(fabs(s[i] - ref) <= tol, "%s n=%d i=%d got %.9g want %.9g",
                           tabs[ti]->name, n, i, s[i], ref);
                }
                for (int i = n; i < n_pad; i++)
                    CHECK(s[i] == 0.0f);
            }
    print_tables(tabs, nt);
}

/* The q.k forms a table may have: qk on fp32 keys, then qk_stream on fp32
 * and on fp16 keys (kf holds kh's values, so one reference serves all). */
enum { QK_FORMS = 3 };
static const char *const qk_form_name[QK_FORMS] = {"qk", "qk_stream fp32", "qk_stream fp16"};

/* Runs q.k form `form` of table ak; 0 where the table lacks it. */
static int run_qk_form(const cpu_attn_kernels *ak, int form, const float *q, size_t ldq,
                       const float *kf, const nc_fp16 *kh, size_t ldk, float *s, size_t lds,
                       int rows, int keys, int dim) {
    if (form == 0 ? !ak->qk : !ak->qk_stream[form - 1]) return 0;
    if (form == 0)
        ak->qk(q, ldq, kf, ldk, s, lds, rows, keys, dim);
    else
        ak->qk_stream[form - 1](q, ldq, form == 1 ? (const void *)kf : kh, ldk, s, lds, rows, keys,
                                dim);
    return 1;
}

/* pv accumulates probabilities times value rows into o, and qk (where a
 * table has one) computes dot products of rows: both against double sums on
 * every shape of tile and tail (1..9 rows, 1..13 keys, 1..70 columns or
 * dims: every leftover vector count of every table's tile, and the scalar or
 * masked tail), padded strides, fp32 and fp16 values. */
static void test_pv_qk_kernels_all_tables_match_double_reference(void) {
    const cpu_kernels *tabs[8];
    int nt = cpu_kernels_available(tabs, 8);
    enum { ROWS = 9, KEYS = 13, COLS = 70, LD = COLS + 3 };
    static float p[ROWS * LD], vf[KEYS * LD], o[ROWS * LD], o0[ROWS * LD];
    static nc_fp16 vh[KEYS * LD];
    for (int i = 0; i < KEYS * LD; i++)
        vf[i] = nc_fp16_to_f32(vh[i] = nc_f32_to_fp16(frand()));
    for (int i = 0; i < ROWS * LD; i++) {
        p[i] = frand();
        o0[i] = frand();
    }
    int cases = 0;
    for (int ti = 0; ti < nt; ti++)
        for (int rows = 1; rows <= ROWS; rows += 2)
            for (int keys = 1; keys <= KEYS; keys += 3)
                for (int cols = 1; cols <= COLS; cols++) {
                    for (int form = 0; form < 4; form++) {
                        int is_f16 = form % 2, stream = form / 2;
                        const cpu_attn_kernels *ak = tabs[ti]->attn;
                        if (stream && !ak->pv_stream[is_f16]) continue;
                        memcpy(o, o0, sizeof o);
                        (stream ? ak->pv_stream : ak->pv)[is_f16](
                            p, LD, is_f16 ? (const void *)vh : vf, LD, o, LD, rows, keys, cols);
                        for (int r = 0; r < ROWS; r++)
                            for (int c = 0; c < LD; c++) {
                                double ref = o0[r * LD + c];
                                for (int t = 0; r < rows && c < cols && t < keys; t++)
                                    ref += (double)p[r * LD + t] * vf[t * LD + c];
                                CHECKF(fabs(o[r * LD + c] - ref) <= 1e-5,
                                       "%s pv%s %s rows=%d keys=%d cols=%d at %d,%d: %g vs %g",
                                       tabs[ti]->name, stream ? "_stream" : "",
                                       is_f16 ? "fp16" : "fp32", rows, keys, cols, r, c,
                                       o[r * LD + c], ref);
                            }
                        cases++;
                    }
                    /* rows of p as queries, rows of vf (or vh) as keys: qk, then the
                     * streaming forms on fp32 and fp16 keys */
                    for (int form = 0; form < QK_FORMS; form++) {
                        int dim = cols;
                        memcpy(o, o0, sizeof o);
                        if (!run_qk_form(tabs[ti]->attn, form, p, LD, vf, vh, LD, o, LD, rows, keys,
                                         dim))
                            continue;
                        for (int r = 0; r < ROWS; r++)
                            for (int t = 0; t < LD; t++) {
                                double ref = o0[r * LD + t];
                                if (r < rows && t < keys) {
                                    ref = 0;
                                    for (int d = 0; d < dim; d++)
                                        ref += (double)p[r * LD + d] * vf[t * LD + d];
                                }
                                CHECKF(fabs(o[r * LD + t] - ref) <= 1e-5,
                                       "%s %s rows=%d keys=%d dim=%d at %d,%d: %g vs %g",
                                       tabs[ti]->name, qk_form_name[form], rows, keys, dim, r, t,
                                       o[r * LD + t], ref);
                            }
                        cases++;
                    }
                }
    print_tables(tabs, nt);
    printf("  %d cases\n", cases);
}

/* qk and the streaming qk (fp32 and fp16 keys) past the short shapes above:
 * key counts across 4-key tiles and 16-key vectors up to 211, heads from 1
 * to 200 elements (whole and partial 16-element steps), query rows around 4,
 * strided rows; every score against a double sum, nothing written past the
 * keys. */
static void test_qk_long_keys_and_wide_heads_all_tables(void) {
    const cpu_kernels *tabs[8];
    int nt = cpu_kernels_available(tabs, 8), cases = 0;
    enum { ROWS = 7, KEYS = 211, DIM = 200, LDQ = DIM + 5, LDK = DIM + 11, LDS = KEYS + 2 };
    static float q[ROWS * LDQ], k[KEYS * LDK], s[ROWS * LDS];
    static nc_fp16 kh[KEYS * LDK]; /* the streaming form's fp16 keys: k's values */
    for (int i = 0; i < ROWS * LDQ; i++)
        q[i] = frand();
    for (int i = 0; i < KEYS * LDK; i++)
        k[i] = nc_fp16_to_f32(kh[i] = nc_f32_to_fp16(frand()));
    static const int keys_of[] = {1, 15, 16, 17, 95, 96, 97, 150, 192, 211};
    static const int dims[] = {1, 16, 63, 64, 127, 128, 129, 200};
    for (int ti = 0; ti < nt; ti++)
        for (int form = 0; form < QK_FORMS; form++)
            for (size_t a = 0; a < sizeof keys_of / sizeof *keys_of; a++)
                for (size_t b = 0; b < sizeof dims / sizeof *dims; b++)
                    for (int rows = 1; rows <= ROWS; rows += 3) {
                        int keys = keys_of[a], dim = dims[b];
                        for (int i = 0; i < ROWS * LDS; i++)
                            s[i] = 12345.0f;
                        if (!run_qk_form(tabs[ti]->attn, form, q, LDQ, k, kh, LDK, s, LDS, rows,
                                         keys, dim))
                            continue;
                        cases++;
                        double worst = 0;
                        int past = 0;
                        for (int r = 0; r < ROWS; r++)
                            for (int t = 0; t < LDS; t++) {
                                if (r >= rows || t >= keys) {
                                    past |= s[r * LDS + t] != 12345.0f;
                                    continue;
                                }
                                double ref = 0;
                                for (int d = 0; d < dim; d++)
                                    ref += (double)q[r * LDQ + d] * k[t * LDK + d];
                                worst = nc_worse(worst, fabs(s[r * LDS + t] - ref));
                            }
                        CHECKF(worst <= 1e-5 * sqrt((double)dim) && !past,
                               "%s %s rows=%d keys=%d dim=%d: off by %g%s", tabs[ti]->name,
                               qk_form_name[form], rows, keys, dim, worst,
                               past ? ", wrote past the keys" : "");
                    }
    if (cases == 0) SKIP("no kernel table here has a qk kernel");
    printf("  %d cases\n", cases);
}

/* pv and the streaming pv (fp32 and fp16 values) past the short shapes
 * above: key counts up to 211 (several of the streaming forms' 2 KiB
 * blocks), rows from 1 to 256 values (AVX-512's streaming P.V reads rows
 * wider than its 128-value tile in blocks), query rows around 4, strided
 * rows; every output against o's start plus a double sum, nothing written
 * past the rows and columns. */
static void test_pv_long_keys_and_wide_rows_all_tables(void) {
    const cpu_kernels *tabs[8];
    int nt = cpu_kernels_available(tabs, 8), cases = 0;
    enum { ROWS = 7, KEYS = 211, COLS = 256, LDP = KEYS + 3, LDV = COLS + 9, LDO = COLS + 5 };
    static float p[ROWS * LDP], vf[KEYS * LDV], o[ROWS * LDO], o0[ROWS * LDO];
    static nc_fp16 vh[KEYS * LDV]; /* the fp16 forms' values: vf's values */
    for (int i = 0; i < ROWS * LDP; i++)
        p[i] = frand();
    for (int i = 0; i < KEYS * LDV; i++)
        vf[i] = nc_fp16_to_f32(vh[i] = nc_f32_to_fp16(frand()));
    for (int i = 0; i < ROWS * LDO; i++)
        o0[i] = frand();
    static const int keys_of[] = {1, 4, 5, 17, 96, 97, 211};
    static const int cols_of[] = {1, 16, 63, 128, 129, 200, 256};
    for (int ti = 0; ti < nt; ti++)
        for (int form = 0; form < 4; form++)
            for (size_t a = 0; a < sizeof keys_of / sizeof *keys_of; a++)
                for (size_t b = 0; b < sizeof cols_of / sizeof *cols_of; b++)
                    for (int rows = 1; rows <= ROWS; rows += 3) {
                        int is_f16 = form % 2, stream = form / 2;
                        int keys = keys_of[a], cols = cols_of[b];
                        const cpu_attn_kernels *ak = tabs[ti]->attn;
                        if (stream && !ak->pv_stream[is_f16]) continue;
                        memcpy(o, o0, sizeof o);
                        (stream ? ak->pv_stream : ak->pv)[is_f16](
                            p, LDP, is_f16 ? (const void *)vh : vf, LDV, o, LDO, rows, keys, cols);
                        cases++;
                        double worst = 0;
                        int past = 0;
                        for (int r = 0; r < ROWS; r++)
                            for (int c = 0; c < LDO; c++) {
                                if (r >= rows || c >= cols) {
                                    past |= o[r * LDO + c] != o0[r * LDO + c];
                                    continue;
                                }
                                double ref = o0[r * LDO + c];
                                for (int t = 0; t < keys; t++)
                                    ref += (double)p[r * LDP + t] * vf[t * LDV + c];
                                worst = nc_worse(worst, fabs(o[r * LDO + c] - ref));
                            }
                        CHECKF(worst <= 1e-5 * sqrt((double)keys) && !past,
                               "%s pv%s %s rows=%d keys=%d cols=%d: off by %g%s", tabs[ti]->name,
                               stream ? "_stream" : "", is_f16 ? "fp16" : "fp32", rows, keys, cols,
                               worst, past ? ", wrote past the rows" : "");
                    }
    printf("  %d cases\n", cases);
}

/* One sequence's cache: positions x (n_kv_heads * head_dim) values as
 * stored (fp32 or fp16), and their exact fp32 values for the reference. */
typedef struct {
    void *k, *v;
    float *kf, *vf;
} test_cache;

static void cache_fill(test_cache *c, size_t count, int is_f16) {
    c->k = malloc(count * 4);
    c->v = malloc(count * 4);
    c->kf = malloc(count * sizeof(float));
    c->vf = malloc(count * sizeof(float));
    for (size_t i = 0; i < count; i++)
        for (int kv = 0; kv < 2; kv++) {
            float x = frand(), *xf = kv ? c->vf : c->kf;
            void *dst = kv ? c->v : c->k;
            if (is_f16)
                xf[i] = nc_fp16_to_f32(((nc_fp16 *)dst)[i] = nc_f32_to_fp16(x));
            else
                xf[i] = ((float *)dst)[i] = x;
        }
}

static void cache_free(test_cache *c) {
    free(c->k);
    free(c->v);
    free(c->kf);
    free(c->vf);
}

typedef struct {
    int head_dim, group, n_rows, first_pos; /* first_pos: keys already cached */
    int n_seqs;                             /* rows go round-robin over this many sequences */
    int is_f16;
    int window; /* keys a row sees, its own included (a sliding window); 0: all */
} attn_case;

/* A head-major copy ([head][ctx][hd], as the decoders keep their caches) of
 * a position-major cache of `positions` rows; ctx > positions, so a head
 * stride taken as positions * hd reads the wrong keys. */
static void *head_major(const void *src, int positions, int ctx, int n_kv, int hd, int is_f16) {
    size_t esz = is_f16 ? 2 : 4;
    char *dst = calloc((size_t)n_kv * ctx * hd, esz);
    for (int h = 0; dst && h < n_kv; h++)
        for (int t = 0; t < positions; t++)
            memcpy(dst + ((size_t)h * ctx + t) * hd * esz,
                   (const char *)src + ((size_t)t * n_kv + h) * hd * esz, (size_t)hd * esz);
    return dst;
}

/* Runs one case on table `kern` (through `pool`, may be NULL; with `pack`,
 * may be NULL, as the decoders' kv_pack) over head-major copies of the
 * caches; returns the largest error against the double reference (which
 * reads the position-major originals), or -1 when memory outside the output
 * heads was written. */
static double run_case(const cpu_kernels *kern, nc_pool *pool, const attn_case *tc,
                       cpu_kv_pack *pack) {
    const int n_kv = 2, hd = tc->head_dim, n_heads = n_kv * tc->group, n = tc->n_rows;
    const int kv_dim = n_kv * hd, qd = n_heads * hd;
    const size_t ldq = (size_t)qd + 3, ldo = (size_t)qd + 5;
    int positions = tc->first_pos + n; /* enough for any sequence */
    test_cache caches[3];
    for (int c = 0; c < tc->n_seqs; c++)
        cache_fill(&caches[c], (size_t)positions * kv_dim, tc->is_f16);
    /* each sequence's cache its own context, as states of one model may be */
    int ctx[3];
    void *hk[3] = {0}, *hv[3] = {0};
    for (int c = 0; c < tc->n_seqs; c++) {
        ctx[c] = positions + 7 + 5 * c;
        hk[c] = head_major(caches[c].k, positions, ctx[c], n_kv, hd, tc->is_f16);
        hv[c] = head_major(caches[c].v, positions, ctx[c], n_kv, hd, tc->is_f16);
    }
    size_t *head_stride = malloc(sizeof(size_t) * n);
    float *q = malloc(sizeof(float) * n * ldq), *out = malloc(sizeof(float) * n * ldo);
    const void **kp = malloc(sizeof(void *) * n), **vp = malloc(sizeof(void *) * n);
    int *n_keys = malloc(sizeof(int) * n), *first = malloc(sizeof(int) * n), next_pos[3] = {0};
    for (int c = 0; c < tc->n_seqs; c++)
        next_pos[c] = tc->first_pos + c; /* sequences at different lengths */
    for (int i = 0; i < n; i++) {
        int c = i % tc->n_seqs;
        kp[i] = hk[c];
        vp[i] = hv[c];
        head_stride[i] = (size_t)ctx[c] * hd;
        n_keys[i] = ++next_pos[c];
        first[i] = tc->window && n_keys[i] > tc->window ? n_keys[i] - tc->window : 0;
    }
    for (size_t i = 0; i < (size_t)n * ldq; i++)
        q[i] = frand();
    for (size_t i = 0; i < (size_t)n * ldo; i++)
        out[i] = 12345.0f;
    size_t ss = (size_t)positions + 3;
    int threads = pool ? nc_pool_threads(pool) : 1;
    float *scores = malloc(sizeof(float) * threads * CPU_ATTENTION_BLOCK * tc->group * ss);
    float scale = 1.0f / sqrtf((float)hd);
    cpu_attention_args a = {.q = q,
                            .out = out,
                            .ldq = ldq,
                            .ldo = ldo,
                            .k_cache = kp,
                            .v_cache = vp,
                            .kv_head_stride = head_stride,
                            .kv_f16 = tc->is_f16,
                            .n_keys = n_keys,
                            .first_key = tc->window ? first : NULL,
                            .n = n,
                            .n_heads = n_heads,
                            .n_kv_heads = n_kv,
                            .head_dim = hd,
                            .scale = scale,
                            .scores = scores,
                            .scores_stride = ss,
                            .kv_pack = pack};
    cpu_attention(pool, kern, &a);

    double worst = 0, *p = malloc(sizeof(double) * positions);
    for (int i = 0; i < n && worst >= 0; i++) {
        const test_cache *c = &caches[i % tc->n_seqs];
        for (int h = 0; h < n_heads; h++) {
            const float *qh = q + (size_t)i * ldq + (size_t)h * hd;
            size_t kv_off = (size_t)(h / tc->group) * hd;
            double mx = -INFINITY, sum = 0;
            for (int t = first[i]; t < n_keys[i]; t++) {
                double d = 0;
                for (int e = 0; e < hd; e++)
                    d += (double)qh[e] * c->kf[(size_t)t * kv_dim + kv_off + e];
                p[t] = d * scale;
                mx = fmax(mx, p[t]);
            }
            for (int t = first[i]; t < n_keys[i]; t++)
                sum += p[t] = exp(p[t] - mx);
            for (int e = 0; e < hd; e++) {
                double ref = 0;
                for (int t = first[i]; t < n_keys[i]; t++)
                    ref += p[t] / sum * c->vf[(size_t)t * kv_dim + kv_off + e];
                worst = nc_worse(worst, fabs(out[(size_t)i * ldo + (size_t)h * hd + e] - ref));
            }
        }
        for (size_t e = (size_t)qd; e < ldo; e++) /* the row padding stays untouched */
            if (out[(size_t)i * ldo + e] != 12345.0f) worst = -1;
    }
    free(p);
    free(scores);
    free(q);
    free(out);
    free(kp);
    free(vp);
    free(n_keys);
    free(first);
    free(head_stride);
    for (int c = 0; c < tc->n_seqs; c++) {
        cache_free(&caches[c]);
        free(hk[c]);
        free(hv[c]);
    }
    return worst;
}

/* One pack for every case, as a model keeps one: it grows with the longer
 * prompts and serves the shorter ones after them. */
static cpu_kv_pack shared_pack;

/* The case with each block widening its own fp16 chunks, then with the
 * heads widened once (one sequence's rows over more than one block). */
static int check_case(const cpu_kernels *kern, nc_pool *pool, const attn_case *tc) {
    int ok = 1;
    for (int packed = 0; packed < 2; packed++) {
        double err = run_case(kern, pool, tc, packed ? &shared_pack : NULL);
        if (err >= 0 && err <= 2e-6) continue;
        printf("  %s hd=%d group=%d rows=%d first_pos=%d seqs=%d window=%d %s%s: %s %g\n",
               kern->name, tc->head_dim, tc->group, tc->n_rows, tc->first_pos, tc->n_seqs,
               tc->window, tc->is_f16 ? "fp16" : "fp32", packed ? " kv_pack" : "",
               err < 0 ? "wrote outside the heads" : "max abs error", err);
        ok = 0;
    }
    return ok;
}

static void test_attention_all_tables_match_double_reference(void) {
    const cpu_kernels *tabs[8];
    int nt = cpu_kernels_available(tabs, 8);
    static const int hds[] = {24, 64, 128}, groups[] = {1, 2, 4};
    static const int rows[] = {1, 2, 3, 5, 16, 17, 40}, first[] = {0, 5, 37};
    int cases = 0;
    for (int ti = 0; ti < nt; ti++)
        for (int is_f16 = 0; is_f16 < 2; is_f16++)
            for (size_t hi = 0; hi < 3; hi++)
                for (size_t gi = 0; gi < 3; gi++)
                    for (size_t ri = 0; ri < sizeof rows / sizeof *rows; ri++)
                        for (size_t fi = 0; fi < 3; fi++) {
                            attn_case tc = {hds[hi], groups[gi], rows[ri], first[fi], 1, is_f16, 0};
                            CHECK(check_case(tabs[ti], NULL, &tc));
                            cases++;
                        }
    print_tables(tabs, nt);
    printf("  %d cases\n", cases);
}

/* Sliding windows (Gemma 3's local layers): each row sees only its last
 * `window` keys. A prompt whose block starts inside the cache and whose
 * rows' windows begin at different keys, one decoding row far past the
 * window, windows longer than the prefix (nothing masked), windows of 1,
 * rows of several sequences, packed chunks and a pool. */
static void test_sliding_window_rows_see_only_their_window(void) {
    const cpu_kernels *tabs[8];
    int nt = cpu_kernels_available(tabs, 8), cases = 0;
    nc_pool *pool = NULL;
    nc_error err;
    CHECK_OK(nc_pool_new(3, &pool, &err), &err);
    for (int ti = 0; ti < nt; ti++)
        for (int is_f16 = 0; is_f16 < 2; is_f16++) {
            const attn_case tcs[] = {
                {64, 2, 17, 5, 1, is_f16, 4},    {24, 1, 1, 300, 1, is_f16, 7},
                {128, 4, 40, 0, 1, is_f16, 512}, {64, 2, 16, 20, 1, is_f16, 1},
                {24, 2, 9, 11, 3, is_f16, 3},    {64, 2, 33, 250, 1, is_f16, 100},
            };
            for (size_t i = 0; i < sizeof tcs / sizeof tcs[0]; i++, cases++) {
                CHECK(check_case(tabs[ti], NULL, &tcs[i]));
                CHECK(check_case(tabs[ti], pool, &tcs[i]));
            }
        }
    nc_pool_free(pool);
    printf("  %d window cases\n", cases);
}

/* A batch mixing sequences (rows of 2 or 3 streams interleaved: every block
 * is one row, as when several streams decode together), a long context (many
 * packed key chunks), a head too wide to pack, and a pool of 3 threads
 * (scores per thread) give the reference's values too. */
static void test_attention_mixed_sequences_long_context_wide_head_threads(void) {
    const cpu_kernels *tabs[8];
    int nt = cpu_kernels_available(tabs, 8);
    nc_pool *pool = NULL;
    nc_error err;
    CHECK_OK(nc_pool_new(3, &pool, &err), &err);
    for (int ti = 0; ti < nt; ti++)
        for (int is_f16 = 0; is_f16 < 2; is_f16++) {
            attn_case mixed = {128, 2, 9, 11, 3, is_f16, 0},
                      threaded = {64, 4, 40, 13, 1, is_f16, 0};
            attn_case pair = {24, 1, 6, 0, 2, is_f16, 0};
            /* many packed key chunks; a head too wide to pack (read in place) */
            attn_case long_ctx = {64, 2, 17, 300, 1, is_f16, 0},
                      wide = {1024, 2, 5, 3, 1, is_f16, 0};
            CHECK(check_case(tabs[ti], NULL, &long_ctx));
            CHECK(check_case(tabs[ti], NULL, &wide));
            CHECK(check_case(tabs[ti], NULL, &mixed));
            CHECK(check_case(tabs[ti], NULL, &pair));
            CHECK(check_case(tabs[ti], pool, &threaded));
            CHECK(check_case(tabs[ti], pool, &mixed));
        }
    nc_pool_free(pool);
}

/* The pack is taken by one sequence's rows over more than one block of an
 * fp16 cache, and grows to hold their heads; rows of several sequences, a
 * single block, or fp32 caches (read in place) leave it alone (and are right
 * either way, above). */
static void test_kv_pack_grows_for_one_sequences_prompts_only(void) {
    const cpu_kernels *tabs[8];
    cpu_kernels_available(tabs, 8);
    cpu_kv_pack pack = {0};
    attn_case mixed = {64, 2, 40, 0, 2, 1, 0}, one_block = {64, 2, 16, 30, 1, 1, 0};
    attn_case fp32 = {64, 2, 40, 300, 1, 0, 0};
    CHECK(run_case(tabs[0], NULL, &mixed, &pack) <= 2e-6);
    CHECK(run_case(tabs[0], NULL, &one_block, &pack) <= 2e-6);
    CHECK(run_case(tabs[0], NULL, &fp32, &pack) <= 2e-6);
    CHECK(pack.floats == 0 && !pack.buf);
    attn_case prompt = {64, 2, 17, 5, 1, 1, 0}, longer = {64, 2, 40, 300, 1, 1, 0};
    CHECK(run_case(tabs[0], NULL, &prompt, &pack) <= 2e-6);
    CHECK(pack.floats >= (size_t)2 * 2 * (5 + 17) * 64); /* [k|v][2 heads][22 keys][64] */
    size_t first = pack.floats;
    CHECK(run_case(tabs[0], NULL, &longer, &pack) <= 2e-6);
    CHECK(pack.floats >= (size_t)2 * 2 * (300 + 40) * 64 && pack.floats > first);
    nc_free_aligned(pack.buf);
    CHECK(shared_pack.floats > 0); /* the cases above copied heads once too */
}

int main(void) {
    RUN(test_softmax_all_tables_match_double_reference);
    RUN(test_pv_qk_kernels_all_tables_match_double_reference);
    RUN(test_qk_long_keys_and_wide_heads_all_tables);
    RUN(test_pv_long_keys_and_wide_rows_all_tables);
    RUN(test_attention_all_tables_match_double_reference);
    RUN(test_sliding_window_rows_see_only_their_window);
    RUN(test_attention_mixed_sequences_long_context_wide_head_threads);
    RUN(test_kv_pack_grows_for_one_sequences_prompts_only);
    nc_free_aligned(shared_pack.buf);
    return nc_test_exit_code();
}
