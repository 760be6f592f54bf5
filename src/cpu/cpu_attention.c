/* Causal GQA attention (see cpu_attention.h): scores = q.k * scale,
 * softmax in fp32, then the weighted sum of value rows, through the kernel
 * table's attention kernels (attn_kernels.h). Consecutive rows of one
 * sequence (a prompt) go through in blocks of CPU_ATTENTION_BLOCK: register
 * tiles of the block's query rows take the scores over a chunk of a KV
 * head's key rows, then register tiles of its rows' probabilities take the
 * output over the value rows likewise, instead of the whole cache being read
 * again for every row. fp32 heads are read in place (each is contiguous);
 * fp16 chunks are widened into a contiguous fp32 buffer first, or, for a
 * prompt (one sequence's rows, more than a block) with a kv_pack, each head
 * once for all its blocks. One row (decoding) reads the cache in place,
 * through the table's streaming kernels where it has them (attn_kernels.h:
 * read patterns the hardware prefetchers follow, or lines asked for). */
#include "cpu/cpu_attention.h"

#include <string.h>

#include "base/alloc.h"
#include "base/half.h"
#include "cpu/attn_kernels.h"

typedef struct {
    const cpu_kernels *kern;
    const cpu_attention_args *a;
    /* a prompt's heads copied once (kv_pack), or NULL: keys [lo0, lo0 +
     * keys) of the cache, head kvh's keys at packed + kvh * keys * head_dim,
     * its values n_kv_heads * keys * head_dim further */
    float *packed;
    int lo0, keys;
} attn_job;

/* Floats of the per-task copy of a chunk of one KV head's fp16 key or value
 * rows: a prompt block widens chunk_keys rows at a time into this fp32
 * buffer, 32 KiB on the stack, and every tile of the block then reads them
 * from L1. (Before the caches were head-major, fp32 rows were copied too: a
 * head's rows 4 KiB apart fell into the same few L1 sets and P.V ran at half
 * the speed it reaches on contiguous rows.) */
#define PACK_FLOATS 8192

/* Key rows per packed chunk: a multiple of 12 (the matmul tiles take 4 or 6
 * key rows); 0 where head_dim is too large to pack (then direct reads). */
static int chunk_keys(int head_dim) {
    return PACK_FLOATS / head_dim / 12 * 12;
}

/* Bytes from row i's cache to KV head kvh's row of position t. */
static size_t head_row_at(const cpu_attention_args *a, int i, int kvh, int t) {
    return ((size_t)kvh * a->kv_head_stride[i] + (size_t)t * a->head_dim) * (a->kv_f16 ? 2 : 4);
}

/* Rows t0..t0+n-1 of one head of an fp16 cache into dst as [n][hd] fp32. */
static void pack_rows(const cpu_kernels *kern, const char *src, int t0, int n, int hd, float *dst) {
    kern->row_to_f32[CPU_W_F16](src + (size_t)t0 * hd * sizeof(nc_fp16), dst, n * hd);
}

/* Rows i0..i0+nb-1 of one sequence at consecutive positions, KV head kvh.
 * Scores of row b, group head g at s + (b * group + g) * scores_stride. */
static void attend_block(const attn_job *j, int i0, int nb, int kvh, float *s) {
    const cpu_attention_args *a = j->a;
    const cpu_kernels *kern = j->kern;
    int hd = a->head_dim, group = a->n_heads / a->n_kv_heads;
    /* keys [lo, lo + n_max) of the cache: a sliding window starts past 0,
     * the block's first row earliest; the last row sees the most keys */
    int lo = a->first_key ? a->first_key[i0] : 0;
    int n_max = a->n_keys[i0 + nb - 1] - lo;
    size_t at = head_row_at(a, i0, kvh, lo);
    const char *kc = (const char *)a->k_cache[i0] + at;
    const char *vc = (const char *)a->v_cache[i0] + at;
    size_t ss = a->scores_stride;
    const float *q = a->q + (size_t)i0 * a->ldq + (size_t)kvh * group * hd;
    float *out = a->out + (size_t)i0 * a->ldo + (size_t)kvh * group * hd;
    /* The products take as rows the block's query rows of one group head
     * (strides ldq, ldo; row b's scores at b * group + g), one call per
     * group head; or, for one row (decoding), its group heads in one call.
     * One row reads each cache row once whatever its layout, so it reads the
     * cache directly: a copy would cost as much as the product. */
    int calls = nb == 1 ? 1 : group, rows = nb == 1 ? group : nb;
    size_t q_step = nb == 1 ? (size_t)hd : a->ldq, o_step = nb == 1 ? (size_t)hd : a->ldo;
    size_t s_step = nb == 1 ? ss : (size_t)group * ss;
    int chunk = nb == 1 ? 0 : chunk_keys(hd);
    float pack[PACK_FLOATS];
    const float *kh = NULL, *vh = NULL; /* the head copied once, at key lo */
    if (chunk && j->packed) {
        kh = j->packed + ((size_t)kvh * j->keys + (size_t)(lo - j->lo0)) * hd;
        vh = kh + (size_t)a->n_kv_heads * j->keys * hd;
    } else if (chunk && !a->kv_f16) {
        kh = (const float *)kc;
        vh = (const float *)vc;
    }

    /* q.k: the streaming kernel, or the query rows as activation rows and
     * the key rows as the weights */
    const cpu_attn_kernels *ak = kern->attn;
    int f16 = a->kv_f16 != 0;
    int qk_stream = nb == 1 && ak->qk_stream[f16], pv_stream = nb == 1 && ak->pv_stream[f16];
    for (int g = 0; !chunk && g < calls; g++)
        if (qk_stream)
            ak->qk_stream[f16](q + (size_t)g * hd, q_step, kc, (size_t)hd, s + (size_t)g * ss,
                               s_step, rows, n_max, hd);
        else
            kern->matmul[f16 ? CPU_W_F16 : CPU_W_F32](kc, (size_t)hd, q + (size_t)g * hd, q_step,
                                                      s + (size_t)g * ss, s_step, rows, hd, 0,
                                                      n_max);
    for (int t0 = 0; chunk && t0 < n_max; t0 += chunk) {
        int n = n_max - t0 < chunk ? n_max - t0 : chunk;
        const float *kp = kh ? kh + (size_t)t0 * hd : pack;
        if (!kh) pack_rows(kern, kc, t0, n, hd, pack);
        for (int g = 0; g < calls; g++)
            if (ak->qk)
                ak->qk(q + (size_t)g * hd, q_step, kp, (size_t)hd, s + (size_t)g * ss + t0, s_step,
                       rows, n, hd);
            else
                kern->matmul[CPU_W_F32](kp, (size_t)hd, q + (size_t)g * hd, q_step,
                                        s + (size_t)g * ss + t0, s_step, rows, hd, 0, n);
    }
    /* softmax over each row's own keys; the zeros past them (the keys after
     * its position, causal) and before them (before its window) let every
     * row of the block run over n_max keys */
    for (int b = 0; b < nb; b++) {
        int skip = a->first_key ? a->first_key[i0 + b] - lo : 0;
        for (int g = 0; g < group; g++) {
            float *sr = s + (size_t)(b * group + g) * ss;
            memset(sr, 0, (size_t)skip * sizeof(float));
            ak->softmax(sr + skip, a->n_keys[i0 + b] - lo - skip, n_max - skip, a->scale);
        }
    }
    /* P.V, accumulated into the zeroed output */
    for (int b = 0; b < nb; b++)
        memset(out + (size_t)b * a->ldo, 0, (size_t)group * hd * sizeof(float));
    for (int g = 0; !chunk && g < calls; g++)
        (pv_stream ? ak->pv_stream : ak->pv)[f16](s + (size_t)g * ss, s_step, vc, (size_t)hd,
                                                  out + (size_t)g * hd, o_step, rows, n_max, hd);
    for (int t0 = 0; chunk && t0 < n_max; t0 += chunk) {
        int n = n_max - t0 < chunk ? n_max - t0 : chunk;
        const float *vp = vh ? vh + (size_t)t0 * hd : pack;
        if (!vh) pack_rows(kern, vc, t0, n, hd, pack);
        for (int g = 0; g < calls; g++)
            ak->pv[0](s + (size_t)g * ss + t0, s_step, vp, (size_t)hd, out + (size_t)g * hd, o_step,
                      rows, n, hd);
    }
}

/* Rows i0.. of a window that belong together: same cache, next position. */
static int same_sequence_run(const cpu_attention_args *a, int i0, int max) {
    int nb = 1;
    while (nb < max && a->k_cache[i0 + nb] == a->k_cache[i0] &&
           a->v_cache[i0 + nb] == a->v_cache[i0] &&
           a->n_keys[i0 + nb] == a->n_keys[i0 + nb - 1] + 1)
        nb++;
    return nb;
}

/* One (window of CPU_ATTENTION_BLOCK rows, KV head) task: the window's runs
 * of same-sequence rows, each as one block (one row per run when every row
 * is a different sequence, e.g. one decoding step of several streams). */
static void attention_task(void *ctx, int task, int thread) {
    const attn_job *j = ctx;
    const cpu_attention_args *a = j->a;
    int win = task / a->n_kv_heads, kvh = task % a->n_kv_heads;
    int group = a->n_heads / a->n_kv_heads;
    float *s = a->scores + (size_t)thread * CPU_ATTENTION_BLOCK * group * a->scores_stride;
    int end = (win + 1) * CPU_ATTENTION_BLOCK < a->n ? (win + 1) * CPU_ATTENTION_BLOCK : a->n;
    for (int i = win * CPU_ATTENTION_BLOCK; i < end;) {
        int nb = same_sequence_run(a, i, end - i);
        attend_block(j, i, nb, kvh, s);
        i += nb;
    }
}

/* Task (K or V, KV head): that head's keys [lo0, lo0 + keys) into the pack. */
static void pack_head_task(void *ctx, int task, int thread) {
    (void)thread;
    const attn_job *j = ctx;
    const cpu_attention_args *a = j->a;
    int hd = a->head_dim, kvh = task % a->n_kv_heads;
    const char *src = (const char *)(task < a->n_kv_heads ? a->k_cache[0] : a->v_cache[0]) +
                      head_row_at(a, 0, kvh, j->lo0);
    pack_rows(j->kern, src, 0, j->keys, hd, j->packed + (size_t)task * j->keys * hd);
}

/* Whether the rows are one sequence's, over more than one block, of an fp16
 * cache, with a pack that holds (or can grow to hold) its heads; grows it. */
static int pack_once(const cpu_attention_args *a, int *lo0, int *keys) {
    if (!a->kv_pack || !a->kv_f16 || a->n <= CPU_ATTENTION_BLOCK || !chunk_keys(a->head_dim) ||
        same_sequence_run(a, 0, a->n) < a->n)
        return 0;
    *lo0 = a->first_key ? a->first_key[0] : 0;
    *keys = a->n_keys[a->n - 1] - *lo0;
    size_t need = (size_t)2 * a->n_kv_heads * (size_t)*keys * a->head_dim;
    if (need > CPU_KV_PACK_MAX_BYTES / sizeof(float)) return 0;
    if (need > a->kv_pack->floats) {
        size_t grown = need + need / 2; /* room for the next prompts' growth */
        if (grown > CPU_KV_PACK_MAX_BYTES / sizeof(float))
            grown = CPU_KV_PACK_MAX_BYTES / sizeof(float);
        float *buf = nc_alloc_aligned(grown * sizeof(float));
        if (!buf) return 0; /* the per-block copies need no memory */
        nc_free_aligned(a->kv_pack->buf);
        a->kv_pack->buf = buf;
        a->kv_pack->floats = grown;
    }
    return 1;
}

void cpu_attention(nc_pool *pool, const cpu_kernels *kern, const cpu_attention_args *a) {
    attn_job j = {kern, a, NULL, 0, 0};
    if (pack_once(a, &j.lo0, &j.keys)) {
        j.packed = a->kv_pack->buf;
        nc_pool_for(pool, 2 * a->n_kv_heads, pack_head_task, &j);
    }
    int windows = (a->n + CPU_ATTENTION_BLOCK - 1) / CPU_ATTENTION_BLOCK;
    nc_pool_for(pool, windows * a->n_kv_heads, attention_task, &j);
}
