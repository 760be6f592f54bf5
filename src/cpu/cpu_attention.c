/* Causal GQA attention (see cpu_attention.h): scores = q.k * scale,
 * softmax in fp32, then the weighted sum of value rows. */
#include "cpu/cpu_attention.h"

#include <string.h>

#include "cpu/cpu_ops.h"

typedef struct {
    const cpu_kernels *kern;
    const cpu_attention_args *a;
} attn_job;

static void attention_task(void *ctx, int task, int thread) {
    const attn_job *j = ctx;
    const cpu_attention_args *a = j->a;
    int i = task / a->n_heads, h = task % a->n_heads;
    int hd = a->head_dim, kv_dim = a->n_kv_heads * hd;
    int kvh = h / (a->n_heads / a->n_kv_heads);
    int n_keys = a->n_keys[i];
    const float *q = a->q + (size_t)i * a->ldq + (size_t)h * hd;
    const float *kc = a->k_cache[i] + (size_t)kvh * hd;
    const float *vc = a->v_cache[i] + (size_t)kvh * hd;
    float *s = a->scores + (size_t)thread * a->scores_stride;
    for (int t = 0; t < n_keys; t++) s[t] = j->kern->dot(q, kc + (size_t)t * kv_dim, hd) * a->scale;
    cpu_softmax(s, n_keys);
    float *out = a->out + (size_t)i * a->ldo + (size_t)h * hd;
    memset(out, 0, (size_t)hd * sizeof *out);
    for (int t = 0; t < n_keys; t++) j->kern->axpy(s[t], vc + (size_t)t * kv_dim, out, hd);
}

void cpu_attention(nc_pool *pool, const cpu_kernels *kern, const cpu_attention_args *a) {
    attn_job j = {kern, a};
    nc_pool_for(pool, a->n * a->n_heads, attention_task, &j);
}
