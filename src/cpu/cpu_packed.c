/* Matrices packed once for the prompt GEMM, and products against them with
 * an epilogue per output block (see cpu_packed.h). */
#include "cpu/cpu_packed.h"

#include <string.h>

#include "base/alloc.h"
#include "cpu/cpu_amx_dispatch.h"
#include "cpu/gemm_amx.h"
#include "cpu/gemm_bf16w.h"

/* The prompt GEMM for w's type, as cpu_matmul.c picks it. */
static const cpu_gemm_kernels *gemm_of(const cpu_kernels *kern, cpu_wtype t) {
    return t == CPU_W_BF16 && kern->gemm_bf16 ? kern->gemm_bf16 : &kern->gemm;
}

/* bf16 panels (gemm_bf16w.h) where the table has them and bf16 dot
 * products (cpu_select_bf16) are not chosen; under the fast contract, with
 * the dot products chosen, the panels that run on them (an even k); NULL:
 * the panels of gemm_of. */
static const cpu_gemm_bf16w *bf16w_of(const cpu_kernels *kern, cpu_wtype t, int k) {
    if (t != CPU_W_BF16) return NULL;
    if (!kern->gemm_bf16) return kern->gemm_bf16w;
    return cpu_bf16_mode() == CPU_BF16_MODE_FAST && k % 2 == 0 ? kern->gemm_bf16w_fast : NULL;
}

/* Only bf16 panels pay: fp32 panels, twice the bytes of bf16 weights,
 * stream from memory on every pass, and the tile waited on them about as
 * long as cpu_matmul.c's packing into a panel in L2 took (AVX-512, modernbert-base,
 * B=1 L=96: the tile's share of the CPU time went from 48% to 64%, no net
 * gain) for twice the memory. */
int cpu_packed_wanted(const cpu_kernels *kern, cpu_wtype t) {
    return !kern->amx && bf16w_of(kern, t, 0) != NULL;
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

/* Bytes of one part of a group's panel. */
static size_t part_bytes(const cpu_kernels *kern, const cpu_mat *w, int parts) {
    if (bf16w_of(kern, w->type, w->cols))
        return (size_t)group_rows(parts) * (size_t)w->cols * sizeof(uint16_t);
    return cpu_gemm_panel_floats(gemm_of(kern, w->type), group_rows(parts), w->cols) *
           sizeof(float);
}

size_t cpu_packed_bytes(const cpu_kernels *kern, const cpu_mat *w, int parts) {
    return (size_t)groups_of(w, parts) * (size_t)parts * part_bytes(kern, w, parts);
}

/* Part q of group g's panel. */
static unsigned char *part_panel(const cpu_packed *p, int g, int q) {
    return p->panel + ((size_t)g * (size_t)p->parts + (size_t)q) * p->part_bytes;
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
        if (p->w16)
            p->w16->pack(base, ldw, p->cols, r0, r1, (uint16_t *)(void *)part_panel(p, g, q));
        else
            p->g->pack(j->w->type, base, ldw, p->cols, r0, r1,
                       (float *)(void *)part_panel(p, g, q));
    }
}

nc_status cpu_packed_init(cpu_packed *p, nc_pool *pool, const cpu_kernels *kern, const cpu_mat *w,
                          int parts, const char *what, nc_error *err) {
    memset(p, 0, sizeof *p);
    const cpu_gemm_bf16w *w16 = bf16w_of(kern, w->type, w->cols);
    int nr = w16 ? CPU_BF16W_NR : gemm_of(kern, w->type)->nr;
    if (parts < 1 || w->rows % parts || group_rows(parts) % nr)
        return nc_fail(err, NC_ERR_INVALID, "%s: %d rows do not split into %d packed parts", what,
                       w->rows, parts);
    p->panel = nc_alloc_aligned(cpu_packed_bytes(kern, w, parts));
    if (!p->panel)
        return nc_fail(err, NC_ERR_NOMEM, "%s: out of memory for %zu bytes of packed weights", what,
                       cpu_packed_bytes(kern, w, parts));
    p->g = gemm_of(kern, w->type);
    p->w16 = w16;
    p->rows = w->rows;
    p->cols = w->cols;
    p->parts = parts;
    p->part_rows = part_rows_of(w, parts);
    p->group_rows = group_rows(parts);
    p->groups = groups_of(w, parts);
    p->part_bytes = part_bytes(kern, w, parts);
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
    const float *x; /* bf16 panels: the activation tiles (gemm_bf16w.h), ldx unused */
    size_t ldx;
    int n, step, ranges; /* step: tokens per block */
    cpu_packed_epilogue epi;
    void *ctx;
    float *scratch;
} matmul_job;

size_t cpu_packed_scratch_floats(int threads, int n, int k) {
    return (size_t)threads * CPU_PACKED_SCRATCH_FLOATS + cpu_bf16w_tiles_floats(n, k);
}

/* Tokens per block: n in equal blocks of at most CPU_PACKED_TOKENS (192
 * rows as 2 x 96, not 132 + 60), each a whole number of activation tiles
 * (CPU_BF16W_TB), so no block but the last ends in a short tile. */
static int block_tokens(int n) {
    int blocks = (n + CPU_PACKED_TOKENS - 1) / CPU_PACKED_TOKENS;
    int step = (n + blocks - 1) / blocks;
    return (step + CPU_BF16W_TB - 1) / CPU_BF16W_TB * CPU_BF16W_TB;
}

/* Runs of consecutive groups per product: a task runs one run, so the bf16
 * panels' prefetch of the next block carries on from group to group (the
 * groups lie in the panel in order); RANGES_PER_THREAD runs per thread
 * leave the pool some balancing. */
#define RANGES_PER_THREAD 3
static int range_count(int groups, int threads) {
    return groups < RANGES_PER_THREAD * threads ? groups : RANGES_PER_THREAD * threads;
}

/* One task: a run of groups against every token block, each group's parts
 * into the thread's scratch, then the epilogue. */
static void range_task(void *ctx, int ri, int thread) {
    const matmul_job *j = ctx;
    const cpu_packed *p = j->p;
    float *ys = j->scratch + (size_t)thread * CPU_PACKED_SCRATCH_FLOATS;
    int g0 = (int)((long)ri * p->groups / j->ranges),
        g1 = (int)((long)(ri + 1) * p->groups / j->ranges);
    size_t ldy = (size_t)p->parts * (size_t)p->group_rows;
    const void *end = part_panel(p, g1, 0);
    for (int g = g0; g < g1; g++) {
        int r0 = g * p->group_rows;
        int rows = p->part_rows - r0 < p->group_rows ? p->part_rows - r0 : p->group_rows;
        /* every token block while the group's panel is in cache */
        for (int t0 = 0; t0 < j->n; t0 += j->step) {
            int nt = j->n - t0 < j->step ? j->n - t0 : j->step;
            for (int q = 0; q < p->parts; q++) {
                float *y = ys + (size_t)q * (size_t)p->group_rows;
                const void *panel = part_panel(p, g, q);
                if (p->w16) /* t0 is a whole number of tiles (block_tokens) */
                    p->w16->run(panel, p->cols, rows, j->x + (size_t)t0 * (size_t)p->cols, y, ldy,
                                nt, end);
                else
                    p->g->run(panel, p->cols, rows, j->x + (size_t)t0 * j->ldx, j->ldx, y, ldy, nt);
            }
            cpu_packed_block b = {ys, ldy, (size_t)p->group_rows, t0, nt, r0, rows};
            j->epi(j->ctx, &b);
        }
    }
}

int cpu_packed_tiled(const cpu_packed *p) {
    return p->panel && p->w16;
}

void cpu_packed_pack_tile(const cpu_packed *p, const float *x, size_t ldx, int rows, int c0,
                          int cols, float *xt, int t0) {
    p->w16->pack_x(x, ldx, rows, c0, cols, xt + (size_t)t0 * (size_t)p->cols);
}

typedef struct {
    const cpu_packed *p;
    const float *x;
    size_t ldx;
    int n;
    float *tiles;
} tiles_job;

/* Activation tile i of x (gemm_bf16w.h). */
static void tile_task(void *ctx, int i, int thread) {
    (void)thread;
    const tiles_job *j = ctx;
    int t0 = i * CPU_BF16W_TB, rows = j->n - t0 < CPU_BF16W_TB ? j->n - t0 : CPU_BF16W_TB;
    cpu_packed_pack_tile(j->p, j->x + (size_t)t0 * j->ldx, j->ldx, rows, 0, j->p->cols, j->tiles,
                         t0);
}

void cpu_packed_matmul_tiles(nc_pool *pool, const cpu_packed *p, const float *xt, int n,
                             cpu_packed_epilogue epi, void *ctx, float *scratch) {
    if (n <= 0) return;
    int step = block_tokens(n), ranges = range_count(p->groups, nc_pool_threads(pool));
    matmul_job j = {p, xt, (size_t)p->cols, n, step, ranges, epi, ctx, scratch};
    nc_pool_for(pool, ranges, range_task, &j);
}

void cpu_packed_matmul(nc_pool *pool, const cpu_packed *p, const float *x, size_t ldx, int n,
                       cpu_packed_epilogue epi, void *ctx, float *scratch) {
    if (n <= 0) return;
    int threads = nc_pool_threads(pool);
    if (p->w16) { /* the tiles after the threads' blocks */
        float *xt = scratch + (size_t)threads * CPU_PACKED_SCRATCH_FLOATS;
        tiles_job pk = {p, x, ldx, n, xt};
        nc_pool_for(pool, (n + CPU_BF16W_TB - 1) / CPU_BF16W_TB, tile_task, &pk);
        cpu_packed_matmul_tiles(pool, p, xt, n, epi, ctx, scratch);
        return;
    }
    int step = block_tokens(n), ranges = range_count(p->groups, threads);
    matmul_job j = {p, x, ldx, n, step, ranges, epi, ctx, scratch};
    nc_pool_for(pool, ranges, range_task, &j);
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
    if (!cpu_amx_takes(kern, w->type, a) || w->cols != a->k || parts < 1 || w->rows % parts)
        return 0;
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
