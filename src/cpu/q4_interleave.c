/* Q4 rows interleaved by 16 (see q4_interleave.h). */
#include "cpu/q4_interleave.h"

#include <stdlib.h>
#include <string.h>

#include "base/half.h"

int cpu_q4x16_fits(int rows, int cols) {
    return rows > 0 && cols > 0 && rows % CPU_Q4X16_ROWS == 0 && cpu_qblocks(cols) % 2 == 0;
}

typedef struct {
    uint8_t *data, *tmp; /* tmp: a group per thread */
    int nb, groups, per_task;
} interleave_job;

/* Group g from its rows (copied to tmp) into the layout, written in order:
 * per pair the scales, then 4-byte runs of codes. */
static void interleave_group(uint8_t *dst, uint8_t *tmp, int nb) {
    size_t ldw = (size_t)nb * CPU_Q4_BLOCK_BYTES;
    memcpy(tmp, dst, CPU_Q4X16_ROWS * ldw);
    uint8_t *o = dst;
    for (int j = 0; j < nb; j += 2) {
        for (int h = 0; h < 2; h++)
            for (int a = 0; a < CPU_Q4X16_ROWS; a++, o += 2)
                memcpy(o, tmp + (size_t)a * ldw + (size_t)(j + h) * CPU_Q4_BLOCK_BYTES, 2);
        for (int h = 0; h < 2; h++)
            for (int q = 0; q < 4; q++)
                for (int a = 0; a < CPU_Q4X16_ROWS; a++, o += 4)
                    memcpy(o,
                           tmp + (size_t)a * ldw + (size_t)(j + h) * CPU_Q4_BLOCK_BYTES + 2 + 4 * q,
                           4);
    }
}

static void interleave_task(void *ctx, int task, int thread) {
    const interleave_job *j = ctx;
    size_t group = CPU_Q4X16_ROWS * (size_t)j->nb * CPU_Q4_BLOCK_BYTES;
    int g1 = (task + 1) * j->per_task < j->groups ? (task + 1) * j->per_task : j->groups;
    for (int g = task * j->per_task; g < g1; g++)
        interleave_group(j->data + (size_t)g * group, j->tmp + (size_t)thread * group, j->nb);
}

nc_status cpu_q4x16_interleave(nc_pool *pool, void *data, int rows, int cols, nc_error *err) {
    int nb = cpu_qblocks(cols), threads = pool ? nc_pool_threads(pool) : 1;
    size_t group = CPU_Q4X16_ROWS * (size_t)nb * CPU_Q4_BLOCK_BYTES;
    interleave_job j = {data, malloc((size_t)threads * group), nb, rows / CPU_Q4X16_ROWS, 64};
    if (!j.tmp) return nc_fail(err, NC_ERR_NOMEM, "out of memory interleaving Q4 rows");
    nc_pool_for(pool, (j.groups + j.per_task - 1) / j.per_task, interleave_task, &j);
    free(j.tmp);
    return NC_OK;
}

void cpu_q4x16_row_to_f32(const void *data, int cols, int r, float *dst) {
    int nb = cpu_qblocks(cols);
    const uint8_t *g = cpu_q4x16_group(data, (size_t)nb * CPU_Q4_BLOCK_BYTES, r);
    int a = r % CPU_Q4X16_ROWS;
    for (int j = 0; j < nb; j++) {
        nc_fp16 dh;
        memcpy(&dh, g + cpu_q4x16_scale_at(j, a), 2);
        float d = nc_fp16_to_f32(dh);
        for (int e = 0; e < CPU_QBLOCK && j * CPU_QBLOCK + e < cols; e++) {
            uint8_t c = g[cpu_q4x16_code_at(j, a, e % 16)];
            dst[j * CPU_QBLOCK + e] = d * (float)((e < 16 ? c & 15 : c >> 4) - 8);
        }
    }
}
