/* Qwen3.5's causal depthwise conv + SiLU (cpu_conv1d_silu) on every kernel
 * table, against the same conv and SiLU computed here in double over the
 * whole sequence: a prompt, then single rows and short runs (fewer rows
 * than the window holds), over more channels than one block, each block
 * called as its own task would call it, in reverse order. */
#include <math.h>
#include <string.h>

#include "../test.h"
#include "cpu/cpu_delta.h"
#include "cpu/cpu_kernels.h"

enum { C = 2 * CPU_CONV_BLOCK + 452, K = 4, T = 16 };

static uint32_t rng = 5;
static float frand(void) { /* uniform in [-1, 1) */
    rng = rng * 1664525u + 1013904223u;
    return (float)(rng >> 8) / (float)(1 << 23) - 1.0f;
}

static void test_conv1d_silu_blocks_match_double(void) {
    static float seq[T][C], w_t[K][C], x[T][C], window[K - 1][C];
    for (int j = 0; j < K; j++)
        for (int c = 0; c < C; c++)
            w_t[j][c] = frand() * 2.0f;
    for (int t = 0; t < T; t++)
        for (int c = 0; c < C; c++)
            seq[t][c] = frand() * 3.0f;
    const int calls[] = {5, 1, 2, 1, 7}; /* rows per call: 16 in all */
    const cpu_kernels *tabs[8];
    int nt = cpu_kernels_available(tabs, 8), blocks = (C + CPU_CONV_BLOCK - 1) / CPU_CONV_BLOCK;
    for (int ti = 0; ti < nt; ti++) {
        memset(window, 0, sizeof window); /* a new sequence: zeros before it */
        double worst = 0;
        int t0 = 0;
        for (size_t call = 0; call < sizeof calls / sizeof *calls; call++) {
            int n = calls[call];
            memcpy(x, seq[t0], sizeof(float) * C * (size_t)n);
            for (int b = blocks - 1; b >= 0; b--)
                cpu_conv1d_silu(tabs[ti]->rows, &x[0][0], C, n, C, b * CPU_CONV_BLOCK, &w_t[0][0],
                                K, &window[0][0]);
            for (int r = 0; r < n; r++) {
                int t = t0 + r;
                for (int c = 0; c < C; c++) {
                    double acc = 0, mag = 0; /* mag: the sum of |terms| */
                    for (int j = 0; j < K; j++) {
                        int src = t - (K - 1) + j;
                        double term = src >= 0 ? (double)w_t[j][c] * seq[src][c] : 0.0;
                        acc += term;
                        mag += fabs(term);
                    }
                    double want = acc / (1 + exp(-acc));
                    /* the fp32 sum's rounding scales with mag, the SiLU's with want */
                    double err = fabs(x[r][c] - want) / (mag + fabs(want) + 1e-30);
                    worst = err > worst ? err : worst;
                }
            }
            t0 += n;
        }
        printf("  %s: worst error %.2e (of the terms' magnitude)\n", tabs[ti]->name, worst);
        CHECK(worst < 3e-6);
        for (int r = 0; r < K - 1; r++) /* the window holds the last K - 1 inputs */
            CHECK(!memcmp(window[r], seq[T - (K - 1) + r], sizeof(float) * C));
    }
}

int main(void) {
    RUN(test_conv1d_silu_blocks_match_double);
    return nc_test_exit_code();
}
