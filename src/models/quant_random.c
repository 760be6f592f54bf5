/* gen-random's quantized folders (quant_random.h). */
#include "models/quant_random.h"

#include <stdlib.h>
#include <string.h>

#include "cpu/cpu_quant.h"
#include "models/quant_write.h"

/* Source elements a fill of at most ST_WRITE_CHUNK_ELEMS stored bytes of
 * tensor i can need: the rows it touches, one more where it starts inside a
 * row, and the step back to a random block's start. */
static size_t src_elems(const quant_random *q, int i) {
    size_t row_bytes = (size_t)q->t[i].shape[1], cols = (size_t)q->p->t[q->from[i]].shape[1];
    size_t rows = (ST_WRITE_CHUNK_ELEMS + row_bytes - 1) / row_bytes + 1;
    return rows * cols + ST_RANDOM_BLOCK;
}

nc_status quant_random_init(quant_random *q, st_random_plan *p, cpu_wtype type,
                            nc_error *err) {
    memset(q, 0, sizeof *q);
    q->p = p;
    for (int i = 0; i < p->n; i++) { /* insertion sort by name: a few hundred tensors */
        int j = i;
        for (; j > 0 && strcmp(p->t[q->from[j - 1]].name, p->t[i].name) > 0; j--)
            q->from[j] = q->from[j - 1];
        q->from[j] = i;
    }
    size_t src_bytes = 0, max_cols = 1;
    for (int i = 0; i < p->n; i++) {
        const st_write_tensor *s = &p->t[q->from[i]];
        q->t[i] = *s;
        q->type[i] = CPU_W_N;
        if (!quant_write_takes(s->ndim, s->dtype, s->shape[1])) continue;
        q->type[i] = type;
        quant_write_stored_shape(&q->t[i], type);
        size_t b = src_elems(q, i) * st_dtype_size(s->dtype);
        if (b > src_bytes) src_bytes = b;
        if ((size_t)s->shape[1] > max_cols) max_cols = (size_t)s->shape[1];
    }
    q->src = malloc(src_bytes ? src_bytes : 1);
    q->row_f32 = malloc(max_cols * sizeof(float));
    q->row_q = malloc(cpu_wtype_row_bytes(CPU_W_Q8, (int)max_cols));
    if (!q->src || !q->row_f32 || !q->row_q) {
        quant_random_free(q);
        return nc_fail(err, NC_ERR_NOMEM, "gen-random: out of memory");
    }
    return NC_OK;
}

nc_status quant_random_fill(void *ctx, int index, size_t first, size_t n, void *dst,
                            nc_error *err) {
    quant_random *q = ctx;
    st_random_plan *p = q->p;
    int k = q->from[index]; /* the plan's index */
    if (q->type[index] == CPU_W_N) return st_random_fill(p, k, first, n, dst, err);
    size_t row_bytes = (size_t)q->t[index].shape[1], cols = (size_t)p->t[k].shape[1];
    size_t e0 = first / row_bytes * cols, e1 = (first + n + row_bytes - 1) / row_bytes * cols;
    size_t from = e0 / ST_RANDOM_BLOCK * ST_RANDOM_BLOCK, esz = st_dtype_size(p->t[k].dtype);
    NC_TRY(st_random_fill(p, k, from, e1 - from, q->src, err));
    quant_write_span(q->type[index], p->t[k].dtype, (int)cols,
                     (const uint8_t *)q->src + (e0 - from) * esz, first, n, q->row_f32, q->row_q,
                     dst);
    return NC_OK;
}

void quant_random_free(quant_random *q) {
    free(q->src);
    free(q->row_f32);
    free(q->row_q);
    q->src = NULL;
    q->row_f32 = NULL;
    q->row_q = NULL;
}
