/* gemm_amx.h where there is no AMX (every build that is not x86-64): the
 * engine asks cpu_amx_available() and never calls the rest. */
#include "cpu/gemm_amx.h"

#if !defined(__x86_64__)
int cpu_amx_available(void) {
    return 0;
}
size_t cpu_amx_x_bytes(int n, int k) {
    (void)n;
    (void)k;
    return 0;
}
void cpu_amx_pack_x(const float *x, size_t ldx, int n, int k, int tb, void *xp) {
    (void)x, (void)ldx, (void)n, (void)k, (void)tb, (void)xp;
}
size_t cpu_amx_scratch_bytes(int k) {
    (void)k;
    return 0;
}
void cpu_amx_matmul(cpu_wtype type, cpu_row_fn to_f32, const void *w, size_t ldw, int k, int r0,
                    int r1, const void *xp, int n, float *y, size_t ldy, void *scratch) {
    (void)type, (void)to_f32, (void)w, (void)ldw, (void)k, (void)r0, (void)r1, (void)xp, (void)n, (void)y,
        (void)ldy, (void)scratch;
}
double cpu_amx_burn(long iters, float *sink) {
    (void)iters;
    (void)sink;
    return 0;
}
#else
typedef int cpu_gemm_amx_portable_unused; /* ISO C: no empty translation unit */
#endif
