/* Parallel, deterministic random fill of a tensor plan (safetensors_random.h). */
#include "io/safetensors_random.h"

#include <stdio.h>

#include "base/half.h"

#define BLOCK ST_RANDOM_BLOCK
#define GOLDEN 0x9e3779b97f4a7c15ull

void st_random_add(st_random_plan *p, const char *name, st_dtype dt, int64_t d0, int64_t d1,
                   int base_one) {
    if (p->n >= ST_RANDOM_MAX_TENSORS) return;
    st_write_tensor *t = &p->t[p->n];
    snprintf(p->names[p->n], sizeof p->names[0], "%s", name);
    t->name = p->names[p->n];
    t->dtype = dt;
    t->ndim = d1 ? 2 : 1;
    t->shape[0] = d0;
    t->shape[1] = d1;
    p->base_one[p->n++] = (unsigned char)base_one;
}

size_t st_random_bytes(const st_random_plan *p) {
    size_t bytes = 0;
    for (int i = 0; i < p->n; i++)
        bytes += st_write_tensor_bytes(&p->t[i]);
    return bytes;
}

uint64_t st_random_mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

typedef struct {
    const st_random_plan *p;
    int index;
    size_t first, n;
    void *dst;
} fill_job;

static void store(void *dst, st_dtype dt, size_t i, float v) {
    if (dt == ST_BF16)
        ((nc_bf16 *)dst)[i] = nc_f32_to_bf16(v);
    else if (dt == ST_F16)
        ((nc_fp16 *)dst)[i] = nc_f32_to_fp16(v);
    else
        ((float *)dst)[i] = v;
}

/* One block of BLOCK values; each block is computed from (seed, tensor,
 * position) alone, so the split over threads does not change the bytes. */
static void fill_block(void *ctx, int task, int thread) {
    (void)thread;
    const fill_job *j = ctx;
    const st_random_plan *p = j->p;
    size_t i0 = (size_t)task * BLOCK, i1 = i0 + BLOCK < j->n ? i0 + BLOCK : j->n;
    st_dtype dt = p->t[j->index].dtype;
    float base = p->base_one[j->index] ? 1.0f : 0.0f;
    if (p->kind == ST_RANDOM_SUM4) {
        /* one splitmix stream per block */
        uint64_t st = p->seed ^ ((uint64_t)j->index << 40) ^ ((j->first + i0) / BLOCK);
        st += GOLDEN;
        for (size_t i = i0; i < i1; i++) {
            uint64_t r = st_random_mix(st += GOLDEN);
            /* sum of four uniform(0,1): mean 2, variance 1/3 */
            float u =
                (float)((r & 0xffff) + ((r >> 16) & 0xffff) + ((r >> 32) & 0xffff) + (r >> 48)) *
                (1.0f / 65536.0f);
            store(j->dst, dt, i, base + 0.02f * (u - 2.0f) * 1.7320508f);
        }
        return;
    }
    uint64_t key = p->seed ^ ((uint64_t)(j->index + 1) << 44);
    for (size_t i = i0; i < i1; i++) {
        /* uniform on [-0.02 sqrt 3, 0.02 sqrt 3): std 0.02 */
        double u = (double)(st_random_mix(key + (j->first + i) * GOLDEN) >> 11) * 0x1p-53;
        store(j->dst, dt, i, base + (float)((u * 2.0 - 1.0) * 0.0346410161513775));
    }
}

nc_status st_random_fill(void *plan, int index, size_t first, size_t n, void *dst, nc_error *err) {
    (void)err;
    const st_random_plan *p = plan;
    fill_job j = {p, index, first, n, dst};
    nc_pool_for(p->pool, (int)((n + BLOCK - 1) / BLOCK), fill_block, &j);
    return NC_OK;
}
