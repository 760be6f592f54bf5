/* Kernels chosen by measurement and remembered per CPU (cpu_wisdom.h). */
#include "cpu/cpu_wisdom.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/half.h"
#include "base/log.h"
#include "base/pool.h"
#include "base/timer.h"
#include "cpu/cpu_matmul.h"
#include "cpu/cpu_quant.h"
#include "cpu/gemm_bf16.h"
#include "cpu/gemv_bf16.h"
#include "cpu/q4_interleave.h"
#include "cpu/qgemv.h"

/* The format's number also names the probe: raised whenever the probe
 * changes what it ranks (2: weights 8 bytes past a cache line, as a
 * model's tensors sit; 3: on huge pages and aligned where the engine reads
 * the weights into memory; 4: a layer's products, not 2048-row ones; 5:
 * 512 MiB of them, not 64; 6: Q4 rows interleaved at load among the Q4
 * candidates), so a file of an older probe is measured again. */
#define WISDOM_HEADER "# nectar kernel wisdom 7"
#define MAX_LINES 256
/* The decode probe's weights: 512 MiB (at most an eighth of the memory:
 * decode_bytes; 16x the L3 of this Zen 5 VM, so they stream from memory as
 * a model's weights do, not partly from a 32 MiB L3 as 64 MiB did). Which
 * bf16 accurate kernel wins there depends on the VM's bandwidth level:
 * `dp3-r4-pf2` at the high one (54 against 46-51 tok/s in the engine),
 * `dp3-r1-pf16` at the low one (40 against 33); the probe measures the
 * level it meets (docs/performance.md) ... */
#define DECODE_BYTES ((size_t)512 << 20)
/* ... cut into the products of Qwen3-0.6B's layers one after another (q,
 * k, v, o, gate, up, down: rows x columns), each one pool loop split into
 * tasks as cpu_matmul.c splits a decode: the engine's streams are that
 * long and that many, not one 64 MiB matrix (a kernel that needs a long
 * stream to ramp up, the r1 ones on this Zen 5, ranked first on one 64 MiB
 * matrix and last in the engine), and its rows are 1024, 2048 and 3072
 * columns wide (with every product 2048 rows of 1024 columns the Q4 tile
 * ranked level with r1-pf64, which then decoded 20% faster in the engine:
 * docs/performance.md) */
static const struct {
    int rows, cols;
} DECODE_PRODUCTS[] = {{2048, 1024}, {1024, 1024}, {1024, 1024}, {1024, 2048},
                       {3072, 1024}, {3072, 1024}, {1024, 3072}};
#define DECODE_N_PRODUCTS ((int)(sizeof DECODE_PRODUCTS / sizeof DECODE_PRODUCTS[0]))
#define DECODE_K_MAX 3072
#define DECODE_ROWS_MAX 3072
/* ... held as the engine will hold a model's weights (io/weights_residency.h):
 * where the system has huge pages, read into memory on them with the data
 * 64-byte aligned; elsewhere mmapped in 4 KiB pages, starting 8 bytes past a
 * cache line as a safetensors file's tensors commonly do (an 8-byte length,
 * then a JSON header of any length: every tensor of the random 0.6B here
 * sits at 56 mod 64), so a 64-byte load spans two lines as in the engine.
 * Which kernel streams fastest differs between the two: on 2 MiB pages a
 * kernel that streams one row after another ranked first, on the mmapped
 * file it was the slowest. */
#define DECODE_MISALIGN 8
/* The prompt probe: one pool task's worth (64 rows x 1024 columns) packed
 * and run against 120 tokens, as the prompt GEMM does, 8 times. */
#define PROMPT_K 1024
#define PROMPT_ROWS 64
#define PROMPT_TOKENS 120
#define PROMPT_REPS 8
/* Interleaved rounds per measurement, the median rate deciding; one pass
 * over the decode weights per round (~10 ms at 50 GB/s, a few scheduler
 * time slices). */
#define ROUNDS 7

typedef struct {
    const char *name;
    cpu_matmul_fn decode;         /* bf16 decode slot */
    const cpu_gemm_kernels *gemm; /* prompt slot */
    cpu_qmatmul_fn qdecode;       /* Q8/Q4 decode slots */
} candidate;

static int is_q_slot(cpu_slot s) {
    return s == CPU_SLOT_DECODE_Q8 || s == CPU_SLOT_DECODE_Q4;
}

/* ---- the candidates ---- */

static const char *slot_name(cpu_slot s, int mode) {
    static const char *names[CPU_SLOT_N][2] = {{"decode-bf16-accurate", "decode-bf16-fast"},
                                               {"prompt-bf16-accurate", "prompt-bf16-fast"},
                                               {"decode-q8", "decode-q8"},
                                               {"decode-q4", "decode-q4"}};
    return names[s][mode == CPU_BF16_MODE_FAST];
}

#if defined(__x86_64__)
/* Whether the table in use is the AVX-512 one (or AMX, its copy), whose
 * kernels cpu_set_bf16_decode / cpu_set_q_decode replace. */
static int table_is_avx512(void) {
    const char *t = cpu_kernels_get()->name;
    return !strcmp(t, "avx512") || !strcmp(t, "amx");
}
#endif

/* Whether the table in use runs bf16 dot products: the AVX-512 and AMX
 * tables where the CPU has AVX512-BF16, the NEON ones where it has
 * FEAT_BF16 (prompts only there). */
static int table_has_bf16_dot(void) {
#if defined(__x86_64__)
    return cpu_features_get()->avx512bf16 && table_is_avx512();
#elif defined(__aarch64__)
    return cpu_features_get()->bf16 && !strncmp(cpu_kernels_get()->name, "neon", 4);
#else
    return 0;
#endif
}

/* The kernels that keep the contract of `mode` for slot s, the default
 * first. The fp32 kernels keep every contract. */
static int candidates_of(cpu_slot s, int mode, candidate *out) {
    int n = 0, fast = mode == CPU_BF16_MODE_FAST, dot = table_has_bf16_dot();
    if (is_q_slot(s)) {
        /* Q4 rows interleaved at load (q4_interleave.h), the default where
         * the table has a kernel for them */
        cpu_qmatmul_fn x16 = cpu_kernels_get()->qmatmul[2];
        if (s == CPU_SLOT_DECODE_Q4 && x16) out[n++] = (candidate){"x16", NULL, NULL, x16};
        out[n++] = (candidate){"tile", NULL, NULL, NULL}; /* the table's own */
#if defined(__x86_64__)
        for (int i = 0;
             table_is_avx512() && i < cpu_qgemv_avx512_count && n < CPU_WISDOM_MAX_CANDIDATES; i++)
            if (cpu_qgemv_avx512[i].fmt == (int)(s - CPU_SLOT_DECODE_Q8))
                out[n++] =
                    (candidate){cpu_qgemv_avx512[i].name, NULL, NULL, cpu_qgemv_avx512[i].fn};
#endif
        return n;
    }
    if (s == CPU_SLOT_DECODE_BF16) {
#if defined(__x86_64__)
        /* (bounded: the fp32 candidate always fits) */
        for (int i = 0;
             dot && fast && i < cpu_gemv_bf16_avx512_count && n < CPU_WISDOM_MAX_CANDIDATES - 1;
             i++)
            if (cpu_gemv_bf16_avx512[i].terms == 1)
                out[n++] = (candidate){cpu_gemv_bf16_avx512[i].name, cpu_gemv_bf16_avx512[i].fn,
                                       NULL, NULL};
        out[n++] = (candidate){"fp32-widen", NULL, NULL, NULL};
        for (int i = 0; dot && i < cpu_gemv_bf16_avx512_count && n < CPU_WISDOM_MAX_CANDIDATES; i++)
            if (cpu_gemv_bf16_avx512[i].terms == 3)
                out[n++] = (candidate){cpu_gemv_bf16_avx512[i].name, cpu_gemv_bf16_avx512[i].fn,
                                       NULL, NULL};
#else
        out[n++] = (candidate){"fp32-widen", NULL, NULL, NULL};
#endif
        return n;
    }
    const cpu_gemm_kernels *dp = NULL;
#if defined(__x86_64__)
    dp = dot ? cpu_gemm_bf16_avx512 : NULL;
#elif defined(__aarch64__)
    dp = dot ? cpu_gemm_bf16_neon : NULL;
#endif
    /* Two terms (16-bit activations, 2^-17 per product) are not the
     * accurate contract's exact products: tiny_bf16 parity 7.65e-5 against
     * 5.5e-6 (docs/performance.md), so only the fast contract may take them. */
    if (dp && fast) out[n++] = (candidate){"dp1", NULL, &dp[CPU_BF16_FAST], NULL};
    out[n++] = (candidate){"fp32-gemm", NULL, NULL, NULL};
    if (dp && fast) out[n++] = (candidate){"dp2", NULL, &dp[CPU_BF16_ACCURATE], NULL};
    return n;
}

/* ---- measuring ---- */

/* A bf16 decode candidate's kernel. The table's entries may be chosen
 * kernels (cpu_set_bf16_decode), so the default candidate is the AVX-512
 * table's own tile, not whatever the table holds now. */
static cpu_matmul_fn bf16_decode_fn(const candidate *c) {
    if (c->decode) return c->decode;
#if defined(__x86_64__)
    if (table_is_avx512()) return cpu_kernels_avx512.matmul[CPU_W_BF16];
#endif
    return cpu_kernels_get()->matmul[CPU_W_BF16];
}

typedef struct {
    cpu_matmul_fn fn;   /* bf16 weights */
    cpu_qmatmul_fn qfn; /* Q8/Q4 weights */
    const void *w;
    size_t ldw; /* Q8/Q4: bytes */
    const float *x;
    const int8_t *xq; /* Q8/Q4: x quantized */
    const float *xs;
    float *y;
    int rows, cols, per;
} decode_job;

static void decode_task(void *ctx, int task, int thread) {
    (void)thread;
    const decode_job *j = ctx;
    int r0 = task * j->per, r1 = r0 + j->per < j->rows ? r0 + j->per : j->rows, k = j->cols;
    if (j->qfn)
        j->qfn(j->w, j->ldw, j->xq, (size_t)k, j->xs, (size_t)k / CPU_QBLOCK * CPU_QSCALE_REP, j->y,
               (size_t)j->rows, 1, k / CPU_QBLOCK, r0, r1);
    else
        j->fn(j->w, (size_t)k, j->x, (size_t)k, j->y, (size_t)j->rows, 1, k, r0, r1);
}

/* Where each product of the probe lies in its buffer of `bytes`: the
 * layer's products over and over while they fit (fewer rows for the last
 * one). Returns a malloc'd array of *n of them (NULL: no memory), their
 * total bytes in *total. */
typedef struct {
    size_t offset, ldw;
    int rows, cols;
} probe_product;

static probe_product *plan_products(cpu_wtype wt, size_t bytes, int *n, size_t *total) {
    /* at most one product per 16 of the narrowest rows */
    size_t cap = bytes / (16 * cpu_wtype_row_bytes(wt, 1024)) + 1;
    probe_product *out = malloc(cap * sizeof *out);
    size_t off = 0;
    *n = 0;
    for (int i = 0; out && (size_t)*n < cap; i = (i + 1) % DECODE_N_PRODUCTS) {
        size_t ldw = cpu_wtype_row_bytes(wt, DECODE_PRODUCTS[i].cols);
        size_t fit = (bytes - off) / ldw;
        int rows = fit < (size_t)DECODE_PRODUCTS[i].rows ? (int)fit : DECODE_PRODUCTS[i].rows;
        rows -= rows % 16; /* whole groups for the interleaved Q4 kernel */
        if (rows < 16) break;
        out[(*n)++] = (probe_product){off, ldw, rows, DECODE_PRODUCTS[i].cols};
        off += (size_t)rows * ldw;
    }
    *total = off;
    return out;
}

/* One pass of j's kernel over the products at w, each split as
 * cpu_matmul.c splits a decode: a few tasks per thread, whole multiples of
 * 16 rows, one pool loop per product. */
static void stream_products(nc_pool *pool, const decode_job *j, const uint8_t *w,
                            const probe_product *prod, int n_prod) {
    int th = nc_pool_threads(pool);
    for (int p = 0; p < n_prod; p++) {
        decode_job jm = *j;
        jm.w = w + prod[p].offset;
        jm.ldw = prod[p].ldw;
        jm.rows = prod[p].rows;
        jm.cols = prod[p].cols;
        jm.per = cpu_matmul_decode_rows_per_task(jm.rows, th);
        nc_pool_for(pool, (jm.rows + jm.per - 1) / jm.per, decode_task, &jm);
    }
}

/* The decode probe's weights, where DECODE_MISALIGN's comment says. */
typedef struct probe_memory {
    nc_huge huge;
    void *small;
    size_t small_bytes;
} probe_memory;

static uint8_t *probe_memory_alloc(probe_memory *m, size_t bytes) {
    memset(m, 0, sizeof *m);
    if (nc_huge_pages_available()) return nc_huge_alloc(bytes, &m->huge);
    void *p = mmap(NULL, bytes + 64, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
#if defined(MADV_NOHUGEPAGE)
    madvise(p, bytes + 64, MADV_NOHUGEPAGE);
#endif
    m->small = p;
    m->small_bytes = bytes + 64;
    return (uint8_t *)p + DECODE_MISALIGN;
}

static void probe_memory_free(probe_memory *m) {
    nc_huge_free(&m->huge);
    if (m->small) munmap(m->small, m->small_bytes);
    m->small = NULL;
}

/* The decode probe's weights: bf16 values, or Q8/Q4 blocks whose scales
 * are ordinary fp16 numbers (no NaN or subnormal slowing anything). */
static void fill_weights(cpu_slot s, uint8_t *w, size_t bytes, size_t ldw) {
    if (!is_q_slot(s)) {
        nc_bf16 *b = (nc_bf16 *)w;
        for (size_t i = 0; i < bytes / sizeof(nc_bf16); i++)
            b[i] = nc_f32_to_bf16((float)(int)(i % 61) * 0.01f - 0.3f);
        return;
    }
    size_t block = s == CPU_SLOT_DECODE_Q8 ? CPU_Q8_BLOCK_BYTES : CPU_Q4_BLOCK_BYTES;
    for (size_t i = 0; i < bytes; i++)
        w[i] = (uint8_t)(i * 37 + (i >> 7));
    nc_fp16 d = nc_f32_to_fp16(0.0123f);
    for (size_t r = 0; r + ldw <= bytes; r += ldw)
        for (size_t b = 0; b + block <= ldw; b += block)
            memcpy(w + r + b, &d, sizeof d);
    if (s == CPU_SLOT_DECODE_Q4) /* where the interleaved layout keeps them too */
        for (size_t g = 0; g + CPU_Q4X16_ROWS * ldw <= bytes; g += CPU_Q4X16_ROWS * ldw)
            for (size_t p = 0; p + CPU_Q4X16_PAIR_BYTES <= CPU_Q4X16_ROWS * ldw;
                 p += CPU_Q4X16_PAIR_BYTES)
                for (int i = 0; i < 2 * CPU_Q4X16_ROWS; i++)
                    memcpy(w + g + p + 2 * i, &d, sizeof d);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* DECODE_BYTES, or an eighth of the machine's memory where that is less
 * (a small board must not swap to choose a kernel), at least 64 MiB. */
static size_t decode_bytes(void) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    size_t eighth = pages > 0 && page > 0 ? (size_t)pages * (size_t)page / 8 : DECODE_BYTES;
    size_t floor = (size_t)64 << 20;
    return eighth >= DECODE_BYTES ? DECODE_BYTES : eighth > floor ? eighth : floor;
}

/* Bytes (decode) or flops (prompt) per CPU-second of each candidate, the
 * median of ROUNDS interleaved rounds: per CPU-second, so another process
 * taking the cores between rounds does not decide. */
static nc_status measure(cpu_slot s, const candidate *c, int n, int threads, int quick,
                         double *rate, nc_error *err) {
    double r[CPU_WISDOM_MAX_CANDIDATES][ROUNDS];
    const int rounds = quick ? 1 : ROUNDS;
    const size_t bytes = quick ? DECODE_BYTES / 64 : decode_bytes();
    if (s != CPU_SLOT_PROMPT_BF16) {
        int fmt = s == CPU_SLOT_DECODE_Q4;
        cpu_wtype wt = s == CPU_SLOT_DECODE_BF16 ? CPU_W_BF16 : fmt ? CPU_W_Q4 : CPU_W_Q8;
        size_t total;
        int n_prod;
        probe_product *prod = plan_products(wt, bytes, &n_prod, &total);
        probe_memory mem;
        uint8_t *w = probe_memory_alloc(&mem, bytes);
        float *x = nc_alloc_aligned(DECODE_K_MAX * sizeof(float));
        float *xs = nc_alloc_aligned(DECODE_K_MAX / CPU_QBLOCK * CPU_QSCALE_REP * sizeof(float));
        int8_t *xq = nc_alloc_aligned(DECODE_K_MAX);
        float *y = nc_alloc_aligned((size_t)DECODE_ROWS_MAX * sizeof(float));
        nc_pool *pool = NULL;
        if (!prod || !w || !x || !xs || !xq || !y || nc_pool_new(threads, &pool, err) != NC_OK) {
            int oom = !prod || !w || !x || !xs || !xq || !y;
            free(prod);
            probe_memory_free(&mem);
            nc_free_aligned(x);
            nc_free_aligned(xs);
            nc_free_aligned(xq);
            nc_free_aligned(y);
            return oom ? nc_fail(err, NC_ERR_NOMEM, "kernel tuning: out of memory") : NC_ERR_NOMEM;
        }
        for (int p = 0; p < n_prod; p++)
            fill_weights(s, w + prod[p].offset, (size_t)prod[p].rows * prod[p].ldw, prod[p].ldw);
        for (int i = 0; i < DECODE_K_MAX; i++)
            x[i] = (float)(i % 7) * 0.1f - 0.3f;
        /* blockwise: the first k/32 blocks are x[0..k)'s own */
        cpu_quantize_act_row(x, DECODE_K_MAX, xq, xs);
        int th = nc_pool_threads(pool);
        const cpu_kernels *k = cpu_kernels_get();
        for (int round = 0; round < rounds; round++)
            for (int i = 0; i < n; i++) {
                decode_job j = {.fn = bf16_decode_fn(&c[i]), .x = x, .xq = xq, .xs = xs, .y = y};
                if (is_q_slot(s)) j.qfn = c[i].qdecode ? c[i].qdecode : k->qmatmul[fmt];
#if defined(__x86_64__)
                /* as bf16_decode_fn says */
                if (is_q_slot(s) && !c[i].qdecode && table_is_avx512())
                    j.qfn = cpu_kernels_avx512.qmatmul[fmt];
#endif
                double c0 = nc_process_cpu_s();
                stream_products(pool, &j, w, prod, n_prod);
                double dc = nc_process_cpu_s() - c0;
                r[i][round] = dc > 0 ? (double)total / dc * th : 0;
            }
        nc_pool_free(pool);
        free(prod);
        probe_memory_free(&mem);
        nc_free_aligned(x);
        nc_free_aligned(xs);
        nc_free_aligned(xq);
        nc_free_aligned(y);
    } else {
        const cpu_kernels *k = cpu_kernels_get();
        size_t wn = (size_t)PROMPT_ROWS * PROMPT_K;
        nc_bf16 *w = malloc(wn * sizeof(nc_bf16));
        float *x = malloc((size_t)PROMPT_TOKENS * PROMPT_K * sizeof(float));
        float *y = malloc((size_t)PROMPT_TOKENS * PROMPT_ROWS * sizeof(float));
        float *panel = nc_alloc_aligned(cpu_gemm_panel_floats(&k->gemm, PROMPT_ROWS, PROMPT_K) *
                                        sizeof(float) * 2);
        if (!w || !x || !y || !panel) {
            free(w);
            free(x);
            free(y);
            nc_free_aligned(panel);
            return nc_fail(err, NC_ERR_NOMEM, "kernel tuning: out of memory");
        }
        for (size_t i = 0; i < wn; i++)
            w[i] = nc_f32_to_bf16((float)(int)(i % 61) * 0.01f - 0.3f);
        for (size_t i = 0; i < (size_t)PROMPT_TOKENS * PROMPT_K; i++)
            x[i] = (float)(int)(i % 7) * 0.1f - 0.3f;
        double flops = 2.0 * PROMPT_ROWS * PROMPT_K * PROMPT_TOKENS * (quick ? 1 : PROMPT_REPS);
        for (int round = 0; round < rounds; round++)
            for (int i = 0; i < n; i++) {
                const cpu_gemm_kernels *g = c[i].gemm ? c[i].gemm : &k->gemm;
                double c0 = nc_process_cpu_s();
                for (int rep = 0; rep < (quick ? 1 : PROMPT_REPS); rep++) {
                    g->pack(CPU_W_BF16, w, PROMPT_K * sizeof(nc_bf16), PROMPT_K, 0, PROMPT_ROWS,
                            panel);
                    g->run(panel, PROMPT_K, PROMPT_ROWS, x, PROMPT_K, y, PROMPT_ROWS,
                           PROMPT_TOKENS);
                }
                double dc = nc_process_cpu_s() - c0;
                r[i][round] = dc > 0 ? flops / dc : 0;
            }
        free(w);
        free(x);
        free(y);
        nc_free_aligned(panel);
    }
    for (int i = 0; i < n; i++) {
        qsort(r[i], (size_t)rounds, sizeof(double), cmp_double);
        rate[i] = r[i][rounds / 2];
    }
    return NC_OK;
}

/* ---- the decode kernels as read patterns (cpu_membw.h) ---- */

/* The bf16 decode candidates of both contracts: the fast contract's list
 * holds every one (one-term, fp32-widen, three-term). */
int cpu_decode_stream_kernels(const char **names, int cap) {
    candidate c[CPU_WISDOM_MAX_CANDIDATES];
    int n = candidates_of(CPU_SLOT_DECODE_BF16, CPU_BF16_MODE_FAST, c);
    for (int i = 0; i < n && i < cap; i++)
        names[i] = c[i].name;
    return n < cap ? n : cap;
}

size_t cpu_decode_stream(nc_pool *pool, int kernel, const void *w, size_t bytes) {
    candidate c[CPU_WISDOM_MAX_CANDIDATES];
    int n = candidates_of(CPU_SLOT_DECODE_BF16, CPU_BF16_MODE_FAST, c);
    if (kernel < 0 || kernel >= n) return 0;
    decode_job j = {.fn = bf16_decode_fn(&c[kernel])};
    float *x = nc_alloc_aligned(DECODE_K_MAX * sizeof(float));
    float *y = nc_alloc_aligned((size_t)DECODE_ROWS_MAX * sizeof(float));
    if (!x || !y) {
        nc_free_aligned(x);
        nc_free_aligned(y);
        return 0;
    }
    for (int i = 0; i < DECODE_K_MAX; i++)
        x[i] = (float)(i % 7) * 0.1f - 0.3f;
    j.x = x;
    j.y = y;
    /* the layer's products one after another, as the wisdom probe lays
     * them, until the buffer ends */
    size_t total = 0;
    int n_prod;
    probe_product *prod = plan_products(CPU_W_BF16, bytes, &n_prod, &total);
    if (prod)
        stream_products(pool, &j, w, prod, n_prod);
    else
        total = 0;
    free(prod);
    nc_free_aligned(x);
    nc_free_aligned(y);
    return total;
}

/* ---- the wisdom file ---- */

typedef struct {
    char cpu[192], slot[32], kernel[24];
    double rate;
    int engine; /* chosen by timing the engine (cpu_wisdom_keep), not the probe */
} wisdom_line;

/* A line's optional fifth field: how the choice was made, where it was not
 * the probe's. */
#define WISDOM_ENGINE "engine"

/* Reads path into lines. A missing file is empty; a file that does not
 * parse is reported in note and treated as empty (measured again). */
static int load(const char *path, wisdom_line *lines, char *note, size_t note_cap) {
    FILE *f = fopen(path, "r");
    if (!f) {
        if (errno != ENOENT)
            snprintf(note, note_cap, "wisdom %s: %s; measuring again", path, strerror(errno));
        return 0;
    }
    char buf[512];
    int n = 0, lineno = 0, ok = 1;
    while (ok && fgets(buf, sizeof buf, f)) {
        lineno++;
        size_t len = strlen(buf);
        if (len == sizeof buf - 1 && buf[len - 1] != '\n') {
            snprintf(note, note_cap, "wisdom %s:%d: line too long; measuring again", path, lineno);
            ok = 0;
            break;
        }
        while (len && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
            buf[--len] = 0;
        if (lineno == 1) {
            if (strcmp(buf, WISDOM_HEADER)) {
                snprintf(note, note_cap, "wisdom %s:1: not '%s'; measuring again", path,
                         WISDOM_HEADER);
                ok = 0;
            }
            continue;
        }
        if (!len || buf[0] == '#') continue;
        char *field[5];
        int nf = 0, extra = 0;
        char *p = buf;
        for (;;) {
            field[nf++] = p;
            char *tab = strchr(p, '\t');
            if (!tab) break;
            if (nf == 5) {
                extra = 1;
                break;
            }
            *tab = 0;
            p = tab + 1;
        }
        char *end = NULL;
        double rate = nf >= 4 && !extra ? strtod(field[3], &end) : 0;
        const char *what =
            nf < 4 || extra                              ? "not 4 tab-separated fields"
            : nf == 5 && strcmp(field[4], WISDOM_ENGINE) ? "the fifth field is not 'engine'"
            : end == field[3] || *end || !isfinite(rate) || rate < 0 ? "the rate is not a number"
            : strlen(field[0]) >= sizeof lines->cpu || !*field[0]    ? "bad cpu key"
            : strlen(field[1]) >= sizeof lines->slot                 ? "bad slot"
            : strlen(field[2]) >= sizeof lines->kernel || !*field[2] ? "bad kernel name"
            : n >= MAX_LINES                                         ? "too many lines"
                                                                     : NULL;
        if (what) {
            snprintf(note, note_cap, "wisdom %s:%d: %s; measuring again", path, lineno, what);
            ok = 0;
            break;
        }
        wisdom_line *l = &lines[n++];
        strcpy(l->cpu, field[0]);
        strcpy(l->slot, field[1]);
        strcpy(l->kernel, field[2]);
        l->rate = rate;
        l->engine = nf == 5;
    }
    if (ok && ferror(f)) {
        snprintf(note, note_cap, "wisdom %s: read error; measuring again", path);
        ok = 0;
    }
    if (ok && lineno == 0) { /* an empty file: nothing known */
        fclose(f);
        return 0;
    }
    fclose(f);
    return ok ? n : 0;
}

/* mkdir -p of path's folder. */
static void make_parents(const char *path) {
    char dir[1024];
    if (snprintf(dir, sizeof dir, "%s", path) >= (int)sizeof dir) return;
    for (char *p = dir + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            mkdir(dir, 0755);
            *p = '/';
        }
}

/* Writes the lines to path through path.tmp and a rename: a reader never
 * sees half a file. 0 on failure (reported in note). */
static int save(const char *path, const wisdom_line *lines, int n, char *note, size_t note_cap) {
    char tmp[1100];
    if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof tmp) return 0;
    make_parents(path);
    FILE *f = fopen(tmp, "w");
    int ok = f != NULL;
    if (ok) {
        fprintf(f, "%s\n", WISDOM_HEADER);
        for (int i = 0; i < n; i++)
            fprintf(f, "%s\t%s\t%s\t%.6g%s\n", lines[i].cpu, lines[i].slot, lines[i].kernel,
                    lines[i].rate, lines[i].engine ? "\t" WISDOM_ENGINE : "");
        ok = !ferror(f);
        ok = fclose(f) == 0 && ok;
    }
    if (ok) ok = rename(tmp, path) == 0;
    if (!ok) {
        snprintf(note, note_cap, "wisdom %s: cannot write (%s); the choices hold for this run",
                 path, strerror(errno));
        unlink(tmp);
    }
    return ok;
}

/* Replaces cpu's line for slot in lines[0..*n), or adds one; 0 when the
 * lines are full. */
static int keep_line(wisdom_line *lines, int *n, const char *cpu, const char *slot,
                     const char *kernel, double rate, int engine) {
    int at = 0;
    while (at < *n && (strcmp(lines[at].cpu, cpu) || strcmp(lines[at].slot, slot)))
        at++;
    if (at >= MAX_LINES) return 0;
    if (at == *n) (*n)++;
    snprintf(lines[at].cpu, sizeof lines[at].cpu, "%s", cpu);
    snprintf(lines[at].slot, sizeof lines[at].slot, "%s", slot);
    snprintf(lines[at].kernel, sizeof lines[at].kernel, "%s", kernel);
    lines[at].rate = rate;
    lines[at].engine = engine;
    return 1;
}

/* ---- choosing ---- */

static void apply(cpu_slot s, const candidate *c) {
    if (s == CPU_SLOT_DECODE_BF16)
        cpu_set_bf16_decode(c->decode);
    else if (s == CPU_SLOT_PROMPT_BF16)
        cpu_set_bf16_prompt(c->gemm);
    else if (s == CPU_SLOT_DECODE_Q4 && !strcmp(c->name, "x16")) {
        cpu_set_q_decode(1, NULL); /* for matrices that keep their rows */
        cpu_set_q4_interleave(1);
    } else {
        cpu_set_q_decode(s == CPU_SLOT_DECODE_Q4, c->qdecode);
        if (s == CPU_SLOT_DECODE_Q4) cpu_set_q4_interleave(0);
    }
}

/* The fp32 kernel among a bf16 slot's candidates (NECTAR_BF16=off runs it
 * alone). */
static int fp32_candidate(const candidate *c, int n) {
    int i = 0;
    while (i + 1 < n && (c[i].decode || c[i].gemm))
        i++;
    return i;
}

/* Kernels forced by cpu_tune_force, per slot ("": none). */
static char forced[CPU_SLOT_N][24];

void cpu_tune_unforce(void) {
    memset(forced, 0, sizeof forced);
}

int cpu_tune_candidates(cpu_slot s, const char **names, int cap) {
    candidate c[CPU_WISDOM_MAX_CANDIDATES];
    int n = candidates_of(s, cpu_bf16_mode(), c);
    for (int i = 0; i < n && i < cap; i++)
        names[i] = c[i].name;
    return n;
}

nc_status cpu_tune_force(cpu_slot s, const char *name, nc_error *err) {
    if (!name) {
        forced[s][0] = 0;
        return NC_OK;
    }
    candidate c[CPU_WISDOM_MAX_CANDIDATES];
    int n = candidates_of(s, cpu_bf16_mode(), c);
    char known[256] = "";
    for (int i = 0; i < n; i++) {
        if (!strcmp(c[i].name, name)) {
            apply(s, &c[i]);
            snprintf(forced[s], sizeof forced[s], "%s", name);
            return NC_OK;
        }
        size_t used = strlen(known);
        snprintf(known + used, sizeof known - used, "%s%s", i ? ", " : "", c[i].name);
    }
    return nc_fail(err, NC_ERR_INVALID, "kernel '%s' is not a candidate here (%s)", name, known);
}

const char *cpu_tune_forced(cpu_slot s) {
    return forced[s][0] ? forced[s] : NULL;
}

/* Whether report r holds a rate for each of the n candidates c, in order. */
static int report_has_rates(const cpu_slot_report *r, const candidate *c, int n) {
    if (!r || r->n_candidates != n) return 0;
    for (int i = 0; i < n; i++)
        if (strcmp(r->cand_name[i], c[i].name) || !(r->cand_rate[i] > 0)) return 0;
    return 1;
}

nc_status cpu_tune_shortlist(cpu_slot s, const cpu_slot_report *known, int threads, int quick,
                             int cap, const char **names, double *rates, int *n, nc_error *err) {
    candidate c[CPU_WISDOM_MAX_CANDIDATES];
    int mode = cpu_bf16_mode(), nc = candidates_of(s, mode, c);
    double rate[CPU_WISDOM_MAX_CANDIDATES] = {0};
    *n = 0;
    if (mode == CPU_BF16_MODE_OFF && !is_q_slot(s)) { /* the fp32 kernel alone */
        c[0] = c[fp32_candidate(c, nc)];
        nc = 1;
    }
    if (nc > 1 && report_has_rates(known, c, nc))
        for (int i = 0; i < nc; i++)
            rate[i] = known->cand_rate[i] * 1e9;
    else if (nc > 1)
        NC_TRY(measure(s, c, nc, threads, quick, rate, err));
    /* the default, then the others by the probe's rate, fastest first */
    int taken[CPU_WISDOM_MAX_CANDIDATES] = {1};
    for (int k = 0; k < cap && k < nc; k++) {
        int best = 0;
        for (int i = 1; i < nc && k > 0; i++)
            if (!taken[i] && (taken[best] || rate[i] > rate[best])) best = i;
        taken[best] = 1;
        names[k] = c[best].name;
        rates[k] = rate[best] / 1e9;
        (*n)++;
    }
    return NC_OK;
}

int cpu_wisdom_keep(const char *path, cpu_slot s, const char *kernel, double rate, char *note,
                    size_t note_cap) {
    wisdom_line *lines = malloc(MAX_LINES * sizeof *lines);
    char cpu[sizeof lines->cpu];
    if (!lines) {
        snprintf(note, note_cap, "wisdom %s: out of memory", path);
        return 0;
    }
    cpu_identity(cpu, sizeof cpu);
    note[0] = 0;
    int n = load(path, lines, note, note_cap);
    note[0] = 0; /* a file that did not parse is replaced */
    int ok = keep_line(lines, &n, cpu, slot_name(s, cpu_bf16_mode()), kernel, rate, 1);
    if (!ok)
        snprintf(note, note_cap, "wisdom %s: too many lines", path);
    else
        ok = save(path, lines, n, note, note_cap);
    free(lines);
    return ok;
}

nc_status cpu_tune(const char *path, int measure_now, int threads, cpu_tuning *out, nc_error *err) {
    memset(out, 0, sizeof *out);
    cpu_identity(out->cpu, sizeof out->cpu);
    snprintf(out->file, sizeof out->file, "%s", path ? path : "off");
    int mode = cpu_bf16_mode();
    static wisdom_line lines[MAX_LINES]; /* one caller at a time: at start */
    int nl = path ? load(path, lines, out->note, sizeof out->note) : 0;
    int dirty = 0;
    for (int s = 0; s < CPU_SLOT_N; s++) {
        cpu_slot_report *rep = &out->slot[s];
        candidate c[CPU_WISDOM_MAX_CANDIDATES];
        int n = candidates_of((cpu_slot)s, mode, c);
        int bf16_off = mode == CPU_BF16_MODE_OFF && !is_q_slot((cpu_slot)s);
        snprintf(rep->slot, sizeof rep->slot, "%s",
                 bf16_off ? (s == CPU_SLOT_DECODE_BF16 ? "decode-bf16" : "prompt-bf16")
                          : slot_name((cpu_slot)s, mode));
        rep->unit = s == CPU_SLOT_PROMPT_BF16 ? "GFLOP per CPU-second" : "GB/s at a full CPU share";
        int pick = 0;
        if (bf16_off) {
            /* the fp32 kernels, nothing measured */
            pick = fp32_candidate(c, n);
            rep->why = "NECTAR_BF16=off";
        } else if (forced[s][0]) {
            while (pick + 1 < n && strcmp(c[pick].name, forced[s]))
                pick++;
            rep->why = "forced (NECTAR_BF16)";
        } else if (n == 1) {
            rep->why = "the only candidate";
        } else {
            int found = -1, from_engine = 0;
            for (int i = 0; i < nl && found < 0; i++)
                if (!strcmp(lines[i].cpu, out->cpu) && !strcmp(lines[i].slot, rep->slot))
                    for (int j = 0; j < n; j++)
                        if (!strcmp(c[j].name, lines[i].kernel)) {
                            found = j;
                            rep->rate = lines[i].rate;
                            from_engine = lines[i].engine;
                        }
            if (found >= 0) {
                pick = found;
                rep->why = from_engine ? "from the wisdom file (timed in the engine)"
                                       : "from the wisdom file";
            } else if (measure_now || path) {
                double rate[CPU_WISDOM_MAX_CANDIDATES];
                nc_status st =
                    measure((cpu_slot)s, c, n, threads, measure_now == CPU_TUNE_QUICK, rate, err);
                if (st != NC_OK) return st;
                for (int i = 0; i < n; i++) {
                    snprintf(rep->cand_name[i], sizeof rep->cand_name[i], "%s", c[i].name);
                    rep->cand_rate[i] = rate[i] / 1e9;
                    if (rate[i] > rate[pick]) pick = i;
                }
                rep->n_candidates = n;
                rep->rate = rate[pick] / 1e9;
                rep->why = "measured now";
                dirty |= keep_line(lines, &nl, out->cpu, rep->slot, c[pick].name, rep->rate, 0);
            } else {
                rep->why = "not measured (no wisdom)";
            }
        }
        snprintf(rep->kernel, sizeof rep->kernel, "%s", c[pick].name);
        apply((cpu_slot)s, &c[pick]);
    }
    if (dirty && path) {
        char note[sizeof out->note] = "";
        if (!save(path, lines, nl, note, sizeof note)) {
            size_t used = strlen(out->note);
            snprintf(out->note + used, sizeof out->note - used, "%s%s", used ? "; " : "", note);
        }
    }
    return NC_OK;
}

nc_status cpu_wisdom_path(const char *setting, const char *xdg_cache, const char *home, char *buf,
                          size_t cap, const char **path, nc_error *err) {
    *path = NULL;
    const char *var = "NECTAR_WISDOM";
    int n = -1;
    if (setting && *setting)
        n = strcmp(setting, "off") ? snprintf(buf, cap, "%s", setting) : -1;
    else if (xdg_cache && *xdg_cache) {
        var = "XDG_CACHE_HOME";
        n = snprintf(buf, cap, "%s/nectar/wisdom", xdg_cache);
    } else if (home && *home) {
        var = "HOME";
        n = snprintf(buf, cap, "%s/.cache/nectar/wisdom", home);
    }
    if (n >= 0 && (size_t)n < cap) {
        *path = buf;
        return NC_OK;
    }
    snprintf(buf, cap, "off");
    if (n < 0) return NC_OK; /* "off", or nowhere to keep it */
    return nc_fail(err, NC_ERR_INVALID,
                   "%s: the wisdom file's path is %d characters, at most %zu fit (set "
                   "NECTAR_WISDOM to a shorter path, or to off)",
                   var, n, cap - 1);
}

static pthread_mutex_t once_mu = PTHREAD_MUTEX_INITIALIZER;
static int once_done; /* a failure (out of memory) is tried again next time */

void cpu_tune_once_again(void) {
    pthread_mutex_lock(&once_mu);
    once_done = 0;
    pthread_mutex_unlock(&once_mu);
}

nc_status cpu_tune_once(const char *path, int threads, const cpu_tuning **out, nc_error *err) {
    static cpu_tuning tuning;
    pthread_mutex_lock(&once_mu);
    nc_status st = once_done ? NC_OK : cpu_tune(path, path != NULL, threads, &tuning, err);
    if (st == NC_OK && !once_done) { /* NECTAR_LOG=debug: which kernels run and why */
        char line[1024];
        int used = snprintf(line, sizeof line, "kernels (wisdom %s):", tuning.file);
        for (int s = 0; s < CPU_SLOT_N && used > 0 && (size_t)used < sizeof line; s++)
            used += snprintf(line + used, sizeof line - (size_t)used, " %s %s (%s);",
                             tuning.slot[s].slot, tuning.slot[s].kernel, tuning.slot[s].why);
        nc_log(NC_LOG_DEBUG, "%s", line);
        if (tuning.note[0]) nc_log(NC_LOG_WARN, "%s", tuning.note);
    }
    once_done = st == NC_OK;
    pthread_mutex_unlock(&once_mu);
    *out = &tuning;
    return st;
}
