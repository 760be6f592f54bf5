/* The bf16 panel layouts of gemm_bf16w.h, packed in portable C (once per
 * matrix, so plain loops serve). */
#include "cpu/gemm_bf16w.h"

void cpu_bf16w_pack(const void *w, size_t ldw, int k, int r0, int r1, uint16_t *panel) {
    enum { NR = CPU_BF16W_NR, HALF = CPU_BF16W_NR / 2 };
    for (int rb = r0; rb < r1; rb += NR) {
        uint16_t *blk = panel + (size_t)(rb - r0) * (size_t)k;
        for (int a = 0; a < NR; a++) {
            /* row a goes to lane a % 16, low half for a < 16 */
            size_t slot = (size_t)(a % HALF) * 2 + (size_t)(a / HALF);
            const uint16_t *row =
                (const uint16_t *)((const unsigned char *)w + (size_t)(rb + a) * ldw);
            if (rb + a < r1)
                for (int i = 0; i < k; i++)
                    blk[(size_t)i * NR + slot] = row[i];
            else
                for (int i = 0; i < k; i++)
                    blk[(size_t)i * NR + slot] = 0;
        }
    }
}

void cpu_bf16w_pack_pairs(const void *w, size_t ldw, int k, int r0, int r1, uint16_t *panel) {
    enum { NR = CPU_BF16W_NR, HALF = CPU_BF16W_NR / 2 };
    for (int rb = r0; rb < r1; rb += NR) {
        uint16_t *blk = panel + (size_t)(rb - r0) * (size_t)k;
        for (int a = 0; a < NR; a++) {
            /* pair c of row a: 16-row half a / 16 of step c, lane a % 16 */
            const uint16_t *row =
                (const uint16_t *)((const unsigned char *)w + (size_t)(rb + a) * ldw);
            for (int c = 0; c < k / 2; c++) {
                uint16_t *lane = blk + (size_t)c * NR * 2 + (size_t)(a / HALF) * NR + (size_t)(a % HALF) * 2;
                lane[0] = rb + a < r1 ? row[2 * c] : 0;
                lane[1] = rb + a < r1 ? row[2 * c + 1] : 0;
            }
        }
    }
}
