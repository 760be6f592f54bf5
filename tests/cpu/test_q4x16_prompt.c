/* Prompts on Q4 interleaved by 16 rows (CPU_W_Q4X16): the packers that lay
 * its rows out for the prompt GEMMs give the very panels they give for the
 * same Q4 rows before interleaving (the fp32 GEMM's of every table that
 * decodes the layout; the 256-bit int8 one of the avx2-vnni table), and a
 * whole prompt through cpu_matmul_act gives the very outputs of the Q4
 * rows. */
#include <stdlib.h>
#include <string.h>

#include "../test.h"
#include "cpu/cpu_kernels.h"
#include "cpu/cpu_matmul.h"
#include "cpu/cpu_quant.h"
#include "cpu/q4_interleave.h"
#include "cpu/qkernels.h"

static float frand(void) { /* uniform in [-1, 1) */
    return (float)rand() / ((float)RAND_MAX + 1.0f) * 2.0f - 1.0f;
}

/* A random Q4 matrix (rows), and a copy interleaved (x16). */
typedef struct {
    uint8_t *rows, *x16;
    size_t ldw;
} q4_pair;

static int q4_pair_new(q4_pair *p, int rows, int k) {
    nc_error err;
    p->ldw = cpu_wtype_row_bytes(CPU_W_Q4, k);
    p->rows = malloc(p->ldw * rows);
    p->x16 = malloc(p->ldw * rows);
    float *wf = malloc(sizeof(float) * k);
    for (int r = 0; r < rows; r++) {
        for (int i = 0; i < k; i++)
            wf[i] = frand();
        cpu_quantize_weight_row(CPU_W_Q4, wf, k, p->rows + r * p->ldw);
    }
    free(wf);
    memcpy(p->x16, p->rows, p->ldw * rows);
    return cpu_q4x16_interleave(NULL, p->x16, rows, k, &err) == NC_OK;
}

static void q4_pair_free(q4_pair *p) {
    free(p->rows);
    free(p->x16);
}

static const int ks[] = {64, 100, 128, 1000, 2048 + 64};
enum { ROWS = 80 };
/* row ranges of a task: whole, within, the last partial GEMM block */
static const int ranges[][2] = {{0, 80}, {16, 48}, {64, 80}, {0, 64}, {3, 77}};

/* The fp32 GEMM's packer of every table that sends Q4X16 prompts to it
 * (decodes the layout, has no int8 panels) on Q4X16 against it on the Q4
 * rows: the same floats, the padding rows too. */
static void test_gemm_pack_q4x16_equals_rows(void) {
    const cpu_kernels *tabs[8];
    int nt = cpu_kernels_available(tabs, 8), cases = 0;
    for (int ti = 0; ti < nt; ti++) {
        const cpu_gemm_kernels *g = &tabs[ti]->gemm;
        if (!tabs[ti]->qmatmul[2] || tabs[ti]->qpanel) continue;
        for (size_t a = 0; a < sizeof ks / sizeof *ks; a++) {
            q4_pair p;
            CHECK(q4_pair_new(&p, ROWS, ks[a]));
            for (size_t r = 0; r < sizeof ranges / sizeof *ranges; r++, cases++) {
                int r0 = ranges[r][0], r1 = ranges[r][1];
                size_t nf = cpu_gemm_panel_floats(g, r1 - r0, ks[a]);
                float *want = malloc(nf * sizeof(float)), *got = malloc(nf * sizeof(float));
                memset(want, 0x7f, nf * sizeof(float));
                memset(got, 0x7f, nf * sizeof(float));
                g->pack(CPU_W_Q4, p.rows, p.ldw, ks[a], r0, r1, want);
                g->pack(CPU_W_Q4X16, p.x16, p.ldw, ks[a], r0, r1, got);
                int same = !memcmp(want, got, nf * sizeof(float));
                free(want);
                free(got);
                CHECKF(same, "%s k=%d rows %d..%d", tabs[ti]->name, ks[a], r0, r1);
            }
            q4_pair_free(&p);
        }
    }
    if (!cases) SKIP("no table decodes Q4X16 on this CPU");
    printf("  %d cases\n", cases);
}

#if defined(__x86_64__)
/* The avx2-vnni table's int8 panel packer on Q4X16 against its Q4 packer.
 * The packers are plain AVX2 (only the panel GEMM uses AVX-VNNI), so they
 * run on every AVX2 CPU, not only where that table is available. */
static void test_avxvnni_pack_q4x16_equals_rows(void) {
    const cpu_features *f = cpu_features_get();
    if (!(f->avx2 && f->fma && f->f16c)) SKIP("no AVX2");
    const cpu_qpanel_kernels *qp = &cpu_qpanel_avxvnni;
    int cases = 0;
    for (size_t a = 0; a < sizeof ks / sizeof *ks; a++) {
        q4_pair p;
        CHECK(q4_pair_new(&p, ROWS, ks[a]));
        int nb = cpu_qblocks(ks[a]);
        for (size_t r = 0; r < 4; r++, cases++) { /* the ranges of whole groups */
            int r0 = ranges[r][0], r1 = ranges[r][1];
            size_t nbytes = qp->panel_bytes(r1 - r0, nb);
            uint8_t *want = malloc(nbytes), *got = malloc(nbytes);
            memset(want, 0x7f, nbytes);
            memset(got, 0x7f, nbytes);
            qp->pack[1](p.rows, p.ldw, nb, r0, r1, want);
            qp->pack[2](p.x16, p.ldw, nb, r0, r1, got);
            int same = !memcmp(want, got, nbytes);
            free(want);
            free(got);
            CHECKF(same, "k=%d rows %d..%d", ks[a], r0, r1);
        }
        q4_pair_free(&p);
    }
    printf("  %d cases\n", cases);
}
#endif

/* A prompt long enough for the tables' GEMMs (the fp32 one from 128 rows
 * where the table has no int8 panels) through cpu_matmul_act, on Q4X16 and
 * on the Q4 rows: the same panels, so the same outputs bit for bit. */
static void test_prompt_on_q4x16_equals_rows(void) {
    const cpu_kernels *tabs[8];
    int nt = cpu_kernels_available(tabs, 8), cases = 0;
    int k = 1024 + 64, n = 130;
    nc_error err;
    nc_pool *pool;
    CHECK_OK(nc_pool_new(2, &pool, &err), &err);
    q4_pair p;
    CHECK(q4_pair_new(&p, ROWS, k));
    float *x = malloc(sizeof(float) * n * k);
    float *y = malloc(sizeof(float) * n * ROWS), *y0 = malloc(sizeof(float) * n * ROWS);
    int8_t *q = malloc(cpu_qact_q_bytes(n, k));
    float *s = malloc(cpu_qact_s_bytes(n, k));
    size_t pf = (size_t)CPU_MATMUL_PANEL_ROWS * k + 64;
    float *panels = malloc(2 * pf * sizeof(float));
    for (int i = 0; i < n * k; i++)
        x[i] = frand();
    for (int ti = 0; ti < nt; ti++) {
        if (!tabs[ti]->qmatmul[2]) continue;
        float *out[2] = {y0, y};
        for (int v = 0; v < 2; v++) {
            cpu_mat m = {v ? CPU_W_Q4X16 : CPU_W_Q4, v ? p.x16 : p.rows, ROWS, k};
            cpu_act act = cpu_act_rows(x, (size_t)k, n, k, q, s);
            act.panels = panels;
            act.panel_floats = pf;
            cpu_matmul_act(pool, tabs[ti], &m, &act, out[v], (size_t)ROWS);
        }
        cases++;
        CHECKF(!memcmp(y, y0, sizeof(float) * n * ROWS), "%s", tabs[ti]->name);
    }
    q4_pair_free(&p);
    free(x);
    free(y);
    free(y0);
    free(q);
    free(s);
    free(panels);
    nc_pool_free(pool);
    if (!cases) SKIP("no table decodes Q4X16 on this CPU");
    printf("  %d tables\n", cases);
}

int main(void) {
    RUN(test_gemm_pack_q4x16_equals_rows);
#if defined(__x86_64__)
    RUN(test_avxvnni_pack_q4x16_equals_rows);
#endif
    RUN(test_prompt_on_q4x16_equals_rows);
    return nc_test_exit_code();
}
