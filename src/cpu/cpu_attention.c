/* Causal GQA attention (see cpu_attention.h): scores = q.k * scale,
 * softmax in fp32, then the weighted sum of value rows. Consecutive rows of
 * one sequence (a prompt) go through in blocks of CPU_ATTENTION_BLOCK: each
 * key row then serves every row of the block while it is in cache (the
 * matmul tile takes the block's queries as its activation rows), and each
 * value row a register tile of the block's rows (cpu_attn_kernels.pv),
 * instead of the whole cache being read again for every row. */
#include "cpu/cpu_attention.h"

#include "cpu/attn_kernels.h"

typedef struct {
    const cpu_kernels *kern;
    const cpu_attention_args *a;
} attn_job;

/* Rows i0..i0+nb-1 of one sequence at consecutive positions, KV head kvh.
 * Scores of row b, group head g at s + (b * group + g) * scores_stride. */
static void attend_block(const attn_job *j, int i0, int nb, int kvh, float *s) {
    const cpu_attention_args *a = j->a;
    const cpu_attn_kernels *ak = j->kern->attn;
    int hd = a->head_dim, kv_dim = a->n_kv_heads * hd, group = a->n_heads / a->n_kv_heads;
    int n_max = a->n_keys[i0 + nb - 1]; /* the last row sees the most keys */
    size_t esz = a->kv_f16 ? 2 : 4;     /* cache element bytes */
    const char *kc = (const char *)a->k_cache[i0] + (size_t)kvh * hd * esz;
    const char *vc = (const char *)a->v_cache[i0] + (size_t)kvh * hd * esz;
    size_t ss = a->scores_stride;
    /* q.k: per group head, the block's query rows (stride ldq) against the
     * key rows as the weight matrix; row b's scores land at b * group + g */
    cpu_matmul_fn mm = j->kern->matmul[a->kv_f16 ? CPU_W_F16 : CPU_W_F32];
    const float *q = a->q + (size_t)i0 * a->ldq + (size_t)kvh * group * hd;
    if (nb == 1) /* one row (decoding): its group heads are the activation rows */
        mm(kc, (size_t)kv_dim, q, (size_t)hd, s, ss, group, hd, 0, n_max);
    else
        for (int g = 0; g < group; g++)
            mm(kc, (size_t)kv_dim, q + (size_t)g * hd, a->ldq, s + (size_t)g * ss,
               (size_t)group * ss, nb, hd, 0, n_max);
    /* softmax over each row's own keys; the zeros past them (the keys after
     * its position, causal) let every row of the block run over n_max keys */
    for (int b = 0; b < nb; b++)
        for (int g = 0; g < group; g++)
            ak->softmax(s + (size_t)(b * group + g) * ss, a->n_keys[i0 + b], n_max, a->scale);
    /* P.V: the same row arrangement as the scores */
    float *out = a->out + (size_t)i0 * a->ldo + (size_t)kvh * group * hd;
    if (nb == 1)
        ak->pv[a->kv_f16 != 0](s, ss, vc, (size_t)kv_dim, out, (size_t)hd, group, n_max, hd);
    else
        for (int g = 0; g < group; g++)
            ak->pv[a->kv_f16 != 0](s + (size_t)g * ss, (size_t)group * ss, vc, (size_t)kv_dim,
                                   out + (size_t)g * hd, a->ldo, nb, n_max, hd);
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

void cpu_attention(nc_pool *pool, const cpu_kernels *kern, const cpu_attention_args *a) {
    attn_job j = {kern, a};
    int windows = (a->n + CPU_ATTENTION_BLOCK - 1) / CPU_ATTENTION_BLOCK;
    nc_pool_for(pool, windows * a->n_kv_heads, attention_task, &j);
}
