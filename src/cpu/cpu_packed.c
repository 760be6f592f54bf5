/* Matrices packed once for the prompt GEMM, and products against them with
 * an epilogue per output block (see cpu_packed.h). */
#include "cpu/cpu_packed.h"

#include <string.h>

#include "base/alloc.h"
#include "cpu/cpu_amx_dispatch.h"
#include "cpu/gemm_amx.h"

/* The prompt GEMM for w's type, as cpu_matmul.c picks it. */
static const cpu_gemm_kernels *gemm_of(const cpu_kernels *kern, cpu_wtype t) {
    return t == CPU_W_BF16 && kern->gemm_bf16 ? kern->gemm_bf16 : &kern->gemm;
}

int cpu_packed_wanted(const cpu_kernels *kern, cpu_wtype t) {
    return !kern->amx && !cpu_wtype_is_quant(t) && gemm_of(kern, t)->run;
}

static int group_rows(int parts) {
    return CPU_PACKED_GROUP_ROWS / parts;
}

static int part_rows_of(const cpu_mat *w, int parts) {
    return w->rows / parts;
}

static int groups_of(const cpu_mat *w, int parts) {
    return (part_rows_of(w, parts) + group_rows(parts) - 1) / group_rows(parts);
}

size_t cpu_packed_bytes(const cpu_kernels *kern, const cpu_mat *w, int parts) {
    size_t part = cpu_gemm_panel_floats(gemm_of(kern, w->type), group_rows(parts), w->cols);
    return (size_t)groups_of(w, parts) * (size_t)parts * part * sizeof(float);
}

typedef struct {
    const cpu_packed *p;
    const cpu_mat *w;
} pack_job;

/* Group g's rows of every part; a part's rows past its end pack as zeros. */
static void pack_group(void *ctx, int g, int thread) {
    (void)thread;
    const pack_job *j = ctx;
    const cpu_packed *p = j->p;
    size_t ldw = cpu_wtype_row_bytes(j->w->type, j->w->cols);
    int r0 = g * p->group_rows;
    int r1 = r0 + p->group_rows < p->part_rows ? r0 + p->group_rows : p->part_rows;
    for (int q = 0; q < p->parts; q++) {
        const unsigned char *base =
            (const unsigned char *)j->w->data + (size_t)q * p->part_rows * ldw;
        float *dst = p->panel + ((size_t)g * (size_t)p->parts + (size_t)q) * p->part_floats;
        p->g->pack(j->w->type, base, ldw, p->cols, r0, r1, dst);
    }
}

nc_status cpu_packed_init(cpu_packed *p, nc_pool *pool, const cpu_kernels *kern, const cpu_mat *w,
                          int parts, const char *what, nc_error *err) {
    memset(p, 0, sizeof *p);
    if (parts < 1 || w->rows % parts || group_rows(parts) % gemm_of(kern, w->type)->nr)
        return nc_fail(err, NC_ERR_INVALID, "%s: %d rows do not split into %d packed parts", what,
                       w->rows, parts);
    p->panel = nc_alloc_aligned(cpu_packed_bytes(kern, w, parts));
    if (!p->panel)
        return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory for %zu bytes of packed weights", what,
                       cpu_packed_bytes(kern, w, parts));
    p->g = gemm_of(kern, w->type);
    p->rows = w->rows;
    p->cols = w->cols;
    p->parts = parts;
    p->part_rows = part_rows_of(w, parts);
    p->group_rows = group_rows(parts);
    p->groups = groups_of(w, parts);
    p->part_floats = cpu_gemm_panel_floats(p->g, p->group_rows, w->cols);
    pack_job j = {p, w};
    nc_pool_for(pool, p->groups, pack_group, &j);
    return NC_OK;
}

void cpu_packed_free(cpu_packed *p) {
    nc_free_aligned(p->panel);
    memset(p, 0, sizeof *p);
}

typedef struct {
    const cpu_packed *p;
    const float *x;
    size_t ldx;
    int n, step; /* step: tokens per task */
    cpu_packed_epilogue epi;
    void *ctx;
    float *scratch;
} matmul_job;

/* Tokens per block: n in equal blocks of at most CPU_PACKED_TOKENS (192
 * rows as 2 x 96, not 128 + 64), so no block ends in a short tile. */
static int block_tokens(int n) {
    int blocks = (n + CPU_PACKED_TOKENS - 1) / CPU_PACKED_TOKENS;
    return (n + blocks - 1) / blocks;
}

/* Token blocks per product: enough that every thread gets several tasks
 * when the matrix has few groups (a pool loop ends when its last task does,
 * so with 12 tasks on 2 threads up to a twelfth of the product was one
 * thread waiting), but blocks of at least MIN_SPLIT_TOKENS rows, which keep
 * the register tiles full. */
#define TASKS_PER_THREAD 12
#define MIN_SPLIT_TOKENS 32
static int token_blocks(int n, int groups, int threads) {
    int blocks = (n + block_tokens(n) - 1) / block_tokens(n);
    int want = (TASKS_PER_THREAD * threads + groups - 1) / groups;
    if (want > n / MIN_SPLIT_TOKENS) want = n / MIN_SPLIT_TOKENS;
    return want > blocks ? want : blocks;
}

/* One task: group g against token block tb, each part's outputs into the
 * thread's scratch, then the epilogue. */
static void group_task(void *ctx, int task, int thread) {
    const matmul_job *j = ctx;
    const cpu_packed *p = j->p;
    float *ys = j->scratch + (size_t)thread * CPU_PACKED_SCRATCH_FLOATS;
    int g = task % p->groups, t0 = task / p->groups * j->step;
    int nt = j->n - t0 < j->step ? j->n - t0 : j->step;
    int r0 = g * p->group_rows;
    int rows = p->part_rows - r0 < p->group_rows ? p->part_rows - r0 : p->group_rows;
    size_t ldy = (size_t)p->parts * (size_t)p->group_rows;
    for (int q = 0; q < p->parts; q++)
        p->g->run(p->panel + ((size_t)g * (size_t)p->parts + (size_t)q) * p->part_floats, p->cols,
                  rows, j->x + (size_t)t0 * j->ldx, j->ldx, ys + (size_t)q * (size_t)p->group_rows,
                  ldy, nt);
    cpu_packed_block b = {ys, ldy, (size_t)p->group_rows, t0, nt, r0, rows};
    j->epi(j->ctx, &b);
}

void cpu_packed_matmul(nc_pool *pool, const cpu_packed *p, const float *x, size_t ldx, int n,
                       cpu_packed_epilogue epi, void *ctx, float *scratch) {
    if (n <= 0) return;
    int blocks = token_blocks(n, p->groups, nc_pool_threads(pool));
    matmul_job j = {p, x, ldx, n, (n + blocks - 1) / blocks, epi, ctx, scratch};
    nc_pool_for(pool, (n + j.step - 1) / j.step * p->groups, group_task, &j);
}

/* A product held whole in y (W's row order), handed to an epilogue in
 * blocks of one row group; on AMX, the tiles first write each group. */
typedef struct {
    const cpu_kernels *kern; /* AMX only: kern, w, a, out (= y, written) */
    const cpu_mat *w;
    const cpu_act *a;
    float *out;
    const float *y;
    size_t ldy;
    int n, parts, part_rows, group_rows, groups;
    cpu_packed_epilogue epi;
    void *ctx;
} whole_job;

static whole_job whole_job_of(const float *y, size_t ldy, int n, int rows, int parts,
                              cpu_packed_epilogue epi, void *ctx) {
    int gr = group_rows(parts), part_rows = rows / parts;
    whole_job j = {
        NULL, NULL, NULL, NULL, y, ldy, n, parts, part_rows, gr, (part_rows + gr - 1) / gr,
        epi,  ctx};
    return j;
}

/* Group g's outputs for the token block from t0. */
static void hand_block(const whole_job *j, int g, int t0) {
    int step = block_tokens(j->n), r0 = g * j->group_rows;
    int rows = j->part_rows - r0 < j->group_rows ? j->part_rows - r0 : j->group_rows;
    int nt = j->n - t0 < step ? j->n - t0 : step;
    cpu_packed_block b = {
        j->y + (size_t)t0 * j->ldy + (size_t)r0, j->ldy, (size_t)j->part_rows, t0, nt, r0, rows};
    j->epi(j->ctx, &b);
}

/* One AMX task: group g of every part on the tiles into y, then the
 * epilogue over its columns while they are in cache. */
static void amx_task(void *ctx, int g, int thread) {
    const whole_job *j = ctx;
    const cpu_act *a = j->a;
    size_t ldw = cpu_wtype_row_bytes(j->w->type, j->w->cols);
    int r0 = g * j->group_rows;
    int r1 = j->part_rows - r0 < j->group_rows ? j->part_rows : r0 + j->group_rows;
    for (int q = 0; q < j->parts; q++) {
        size_t first = (size_t)q * (size_t)j->part_rows;
        cpu_amx_matmul(j->w->type, j->kern->row_to_f32[j->w->type],
                       (const unsigned char *)j->w->data + first * ldw, ldw, j->w->cols, r0, r1,
                       a->amx_x, a->n, j->out + first, j->ldy,
                       (char *)a->amx_scratch + (size_t)thread * a->amx_scratch_bytes);
    }
    for (int t0 = 0; t0 < j->n; t0 += block_tokens(j->n))
        hand_block(j, g, t0);
}

int cpu_packed_matmul_amx(nc_pool *pool, const cpu_kernels *kern, const cpu_mat *w, int parts,
                          cpu_act *a, float *y, size_t ldy, cpu_packed_epilogue epi, void *ctx) {
    if (!cpu_amx_takes(kern, a) || w->cols != a->k || parts < 1 || w->rows % parts) return 0;
    cpu_amx_pack_act(pool, a);
    whole_job j = whole_job_of(y, ldy, a->n, w->rows, parts, epi, ctx);
    j.kern = kern;
    j.w = w;
    j.a = a;
    j.out = y;
    nc_pool_for(pool, j.groups, amx_task, &j);
    return 1;
}

static void rows_task(void *ctx, int task, int thread) {
    (void)thread;
    const whole_job *j = ctx;
    hand_block(j, task % j->groups, task / j->groups * block_tokens(j->n));
}

void cpu_packed_epilogue_rows(nc_pool *pool, const float *y, size_t ldy, int n, int rows, int parts,
                              cpu_packed_epilogue epi, void *ctx) {
    if (n <= 0) return;
    whole_job j = whole_job_of(y, ldy, n, rows, parts, epi, ctx);
    int blocks = (n + block_tokens(n) - 1) / block_tokens(n);
    nc_pool_for(pool, blocks * j.groups, rows_task, &j);
}
