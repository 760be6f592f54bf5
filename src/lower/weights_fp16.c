/* Parallel checkpoint -> fp16 conversion with saturation (weights_fp16.h). */
#include "lower/weights_fp16.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_ELEMS (1u << 16)

typedef struct {
    const st_tensor *t;
    size_t first, count;
    nc_fp16 *dst;
    size_t sat[64], nonfinite[64]; /* per thread */
} conv_job;

static nc_fp16 saturate(float f, size_t *sat, size_t *nonfinite) {
    if (!isfinite(f)) {
        (*nonfinite)++;
        return nc_f32_to_fp16(f);
    }
    nc_fp16 h = nc_f32_to_fp16(f);
    if ((h & 0x7fff) == 0x7c00) { /* finite but rounds to inf */
        (*sat)++;
        h = (nc_fp16)((h & 0x8000) | 0x7bff);
    }
    return h;
}

float lower_tensor_f32_at(const st_tensor *t, size_t i) {
    const unsigned char *b = t->data;
    if (t->dtype == ST_BF16) {
        nc_bf16 v;
        memcpy(&v, b + 2 * i, 2);
        return nc_bf16_to_f32(v);
    }
    if (t->dtype == ST_F16) {
        nc_fp16 v;
        memcpy(&v, b + 2 * i, 2);
        return nc_fp16_to_f32(v);
    }
    float f;
    memcpy(&f, b + 4 * i, 4);
    return f;
}

static void convert_chunk(void *ctx, int task, int thread) {
    conv_job *j = ctx;
    size_t lo = (size_t)task * CHUNK_ELEMS, hi = lo + CHUNK_ELEMS;
    if (hi > j->count) hi = j->count;
    size_t *sat = &j->sat[thread & 63], *nf = &j->nonfinite[thread & 63];
    for (size_t i = lo; i < hi; i++) j->dst[i] = saturate(lower_tensor_f32_at(j->t, j->first + i), sat, nf);
}

nc_status lower_tensor_to_fp16(nc_pool *pool, const st_tensor *t, size_t first, size_t count,
                               nc_fp16 *dst, lower_fp16_stats *stats, nc_error *err) {
    if (t->dtype != ST_BF16 && t->dtype != ST_F16 && t->dtype != ST_F32)
        return nc_fail(err, NC_ERR_UNSUPPORTED, "tensor %s: dtype %s (expected BF16, F16 or F32)",
                       t->name, st_dtype_name(t->dtype));
    size_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= (size_t)t->shape[i];
    if (first > n || count > n - first)
        return nc_fail(err, NC_ERR_INTERNAL, "tensor %s: rows out of range", t->name);
    conv_job j;
    memset(&j, 0, sizeof j);
    j.t = t;
    j.first = first;
    j.count = count;
    j.dst = dst;
    int tasks = (int)((count + CHUNK_ELEMS - 1) / CHUNK_ELEMS);
    nc_pool_for(pool, tasks, convert_chunk, &j);
    for (int i = 0; i < 64; i++) {
        stats->n_saturated += j.sat[i];
        stats->n_nonfinite += j.nonfinite[i];
    }
    stats->n_values += count;
    return NC_OK;
}

nc_status lower_tensor_find(const hf_weights *w, const char *model_dir, const char *name,
                            int64_t d0, int64_t d1, const st_tensor **out, nc_error *err) {
    const st_tensor *t = hf_weights_find(w, name, NULL);
    if (!t) return nc_fail(err, NC_ERR_NOT_FOUND, "%s: tensor %s is missing", model_dir, name);
    int rank = d1 ? 2 : 1;
    if (t->ndim != rank || t->shape[0] != d0 || (rank == 2 && t->shape[1] != d1)) {
        char want[64];
        if (rank == 2)
            snprintf(want, sizeof want, "[%lld, %lld]", (long long)d0, (long long)d1);
        else
            snprintf(want, sizeof want, "[%lld]", (long long)d0);
        return nc_fail(err, NC_ERR_FORMAT,
                       "tensor %s: shape does not match config.json (expected %s)", name, want);
    }
    *out = t;
    return NC_OK;
}

nc_status lower_tensor_load_fp16(const hf_weights *w, nc_pool *pool, const char *model_dir,
                                 const char *name, int64_t d0, int64_t d1, lower_fp16_stats *stats,
                                 lower_weight *out, nc_error *err) {
    const st_tensor *t;
    NC_TRY(lower_tensor_find(w, model_dir, name, d0, d1, &t, err));
    size_t n = (size_t)d0 * (size_t)(d1 ? d1 : 1);
    nc_fp16 *buf = malloc(n * sizeof *buf);
    if (!buf) return nc_fail(err, NC_ERR_NOMEM, "tensor %s: out of memory", name);
    nc_status st = lower_tensor_to_fp16(pool, t, 0, n, buf, stats, err);
    if (st != NC_OK) {
        free(buf);
        return st;
    }
    out->data = buf;
    out->val = NULL;
    return NC_OK;
}
