/* Causal GQA attention (see cpu_attention.h): scores = q.k * scale,
 * softmax in fp32, then the weighted sum of value rows. */
#include "cpu/cpu_attention.h"

#include <string.h>

#include "cpu/cpu_ops.h"

typedef struct {
    const cpu_kernels *kern;
    const cpu_attention_args *a;
} attn_job;

/* One (query row, KV head) task: the query heads of the group read each
 * key and value row once while it is in L1 (GQA shares the cache traffic). */
static void attention_task(void *ctx, int task, int thread) {
    const attn_job *j = ctx;
    const cpu_attention_args *a = j->a;
    int i = task / a->n_kv_heads, kvh = task % a->n_kv_heads;
    int hd = a->head_dim, kv_dim = a->n_kv_heads * hd, group = a->n_heads / a->n_kv_heads;
    int n_keys = a->n_keys[i];
    const float *q = a->q + (size_t)i * a->ldq + (size_t)kvh * group * hd;
    size_t esz = a->kv_f16 ? 2 : 4; /* cache element bytes */
    const char *kc = (const char *)a->k_cache[i] + (size_t)kvh * hd * esz;
    const char *vc = (const char *)a->v_cache[i] + (size_t)kvh * hd * esz;
    float *s = a->scores + (size_t)thread * group * a->scores_stride;
    float *out = a->out + (size_t)i * a->ldo + (size_t)kvh * group * hd;
    /* q.k for every key: the fp32 matmul kernel with the cache rows as the
     * weight matrix (several keys per register tile, the group's heads as
     * activation rows) */
    j->kern->matmul[a->kv_f16 ? CPU_W_F16 : CPU_W_F32](kc, (size_t)kv_dim, q, (size_t)hd, s,
                                                       a->scores_stride, group, hd, 0, n_keys);
    for (int g = 0; g < group; g++) {
        float *sg = s + (size_t)g * a->scores_stride;
        for (int t = 0; t < n_keys; t++)
            sg[t] *= a->scale;
        cpu_softmax(sg, n_keys);
    }
    memset(out, 0, (size_t)group * hd * sizeof *out);
    for (int t = 0; t < n_keys; t++)
        for (int g = 0; g < group; g++) {
            float p = s[(size_t)g * a->scores_stride + t];
            const void *v = vc + (size_t)t * kv_dim * esz;
            if (a->kv_f16)
                j->kern->axpy_f16(p, v, out + (size_t)g * hd, hd);
            else
                j->kern->axpy(p, v, out + (size_t)g * hd, hd);
        }
}

void cpu_attention(nc_pool *pool, const cpu_kernels *kern, const cpu_attention_args *a) {
    attn_job j = {kern, a};
    nc_pool_for(pool, a->n * a->n_kv_heads, attention_task, &j);
}
