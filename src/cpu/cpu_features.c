/* Runtime CPU detection and the one-time choice of the kernel table. On
 * x86-64 the CPUID bits alone are not enough: the OS must also save the
 * wide registers (XCR0), or AVX instructions fault. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu_kernels.h"
#include "cpu/cpu_quant.h"
#include "cpu/gemm_amx.h"
#include "cpu/gemm_bf16.h"

#if defined(__x86_64__)
#include <cpuid.h>

static unsigned long long read_xcr0(void) {
    unsigned int lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((unsigned long long)hi << 32) | lo;
}

static void detect(cpu_features *f) {
    unsigned int a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return;
    int osxsave = (c >> 27) & 1, avx = (c >> 28) & 1;
    f->fma = (c >> 12) & 1;
    f->f16c = (c >> 29) & 1;
    unsigned long long xcr0 = osxsave ? read_xcr0() : 0;
    int os_avx = (xcr0 & 0x6) == 0x6, os_avx512 = (xcr0 & 0xe6) == 0xe6;
    if (!avx || !os_avx) {
        f->fma = f->f16c = 0;
        return;
    }
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return;
    f->avx2 = (b >> 5) & 1;
    if (os_avx512) {
        f->avx512f = (b >> 16) & 1;
        f->avx512bw = (b >> 30) & 1;
        f->avx512vl = (b >> 31) & 1;
        f->avx512vnni = (c >> 11) & 1;
        if (__get_cpuid_count(7, 1, &a, &b, &c, &d)) f->avx512bf16 = (a >> 5) & 1;
    }
}
#elif defined(__aarch64__)
static void detect(cpu_features *f) {
    f->neon = 1;
}
#else
static void detect(cpu_features *f) {
    (void)f;
}
#endif

static cpu_features features;
static const cpu_kernels *chosen;
#if defined(__x86_64__)
/* The AVX-512 table with bf16 prompts on vdpbf16ps where the CPU has
 * AVX512-BF16, and that with prompts on AMX tiles, where the CPU and OS
 * have them. */
static cpu_kernels avx512_table, amx_table;
static int has_amx;
#endif
static pthread_once_t once = PTHREAD_ONCE_INIT;

#if defined(__x86_64__)
static int has_avx2(void) {
    return features.avx2 && features.fma && features.f16c;
}
/* The AVX-512 table's quantized kernels use VNNI (vpdpbusd): without it
 * (Skylake-X) the AVX2 table is chosen. */
static int has_avx512(void) {
    return has_avx2() && features.avx512f && features.avx512bw && features.avx512vl &&
           features.avx512vnni;
}

/* bf16 prompts on vdpbf16ps only on request (NECTAR_BF16=accurate: two bf16
 * terms per activation, within the parity bounds; fast: one term, ~5e-2 off
 * the fp32 logits of the tiny parity model): on this Sapphire Rapids both
 * ran slower than the fp32 GEMM (docs/performance.md). */
static const cpu_gemm_kernels *bf16_gemm(void) {
    const char *v = getenv("NECTAR_BF16");
    if (!features.avx512bf16 || !v) return NULL;
    if (!strcmp(v, "accurate")) return &cpu_gemm_bf16_avx512[CPU_BF16_ACCURATE];
    if (!strcmp(v, "fast")) return &cpu_gemm_bf16_avx512[CPU_BF16_FAST];
    return NULL;
}
#endif

static void choose(void) {
    detect(&features);
    chosen = &cpu_kernels_scalar;
#if defined(__x86_64__)
    /* Every table is filled in here, whatever cpu_select_table later caps
     * the choice to: tests walk every table the CPU can run. */
    avx512_table = cpu_kernels_avx512;
    avx512_table.gemm_bf16 = bf16_gemm();
    if (has_avx512() && cpu_amx_available()) {
        amx_table = avx512_table;
        amx_table.name = "amx";
        amx_table.amx = 1;
        has_amx = 1;
    }
    if (has_avx2()) chosen = &cpu_kernels_avx2;
    if (has_avx512()) chosen = &avx512_table;
    if (has_amx) chosen = &amx_table;
#elif defined(__aarch64__)
    chosen = &cpu_kernels_neon;
#endif
}

const cpu_features *cpu_features_get(void) {
    pthread_once(&once, choose);
    return &features;
}

const cpu_kernels *cpu_kernels_get(void) {
    pthread_once(&once, choose);
    return chosen;
}

/* A table's place in the cap order; -1 for a name that is none. */
static int rank(const char *name) {
    static const struct {
        const char *name;
        int rank;
    } order[] = {{"scalar", 0}, {"avx2", 1}, {"neon", 1}, {"avx512", 2}, {"amx", 3}};
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++)
        if (!strcmp(name, order[i].name)) return order[i].rank;
    return -1;
}

nc_status cpu_select_table(const char *cap, nc_error *err) {
    pthread_once(&once, choose);
    const cpu_kernels *tabs[8];
    int n = cpu_kernels_available(tabs, 8), limit = cap && *cap ? rank(cap) : 3;
    if (limit < 0)
        return nc_fail(err, NC_ERR_INVALID,
                       "kernel table '%s' is unknown (scalar, avx2, neon, avx512, amx)", cap);
    for (int i = 0; i < n; i++) /* scalar first, best last */
        if (rank(tabs[i]->name) <= limit) chosen = tabs[i];
    return NC_OK;
}

int cpu_kernels_available(const cpu_kernels **out, int cap) {
    pthread_once(&once, choose);
    int n = 0;
    if (n < cap) out[n++] = &cpu_kernels_scalar;
#if defined(__x86_64__)
    if (has_avx2() && n < cap) out[n++] = &cpu_kernels_avx2;
    if (has_avx512() && n < cap) out[n++] = &avx512_table;
    if (has_amx && n < cap) out[n++] = &amx_table;
#elif defined(__aarch64__)
    if (n < cap) out[n++] = &cpu_kernels_neon;
#endif
    return n;
}

size_t cpu_wtype_size(cpu_wtype t) {
    return t == CPU_W_F32 ? 4 : cpu_wtype_is_quant(t) ? 0 : 2;
}
size_t cpu_wtype_row_bytes(cpu_wtype t, int cols) {
    size_t nb = ((size_t)cols + 31) / 32;
    return t == CPU_W_Q8   ? nb * CPU_Q8_BLOCK_BYTES
           : t == CPU_W_Q4 ? nb * CPU_Q4_BLOCK_BYTES
                           : (size_t)cols * cpu_wtype_size(t);
}
const char *cpu_wtype_name(cpu_wtype t) {
    static const char *names[CPU_W_N] = {"f32", "f16", "bf16", "q8", "q4"};
    return (unsigned)t < CPU_W_N ? names[t] : "?";
}
