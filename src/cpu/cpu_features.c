/* Runtime CPU detection and the one-time choice of the kernel table. On
 * x86-64 the CPUID bits alone are not enough: the OS must also save the
 * wide registers (XCR0), or AVX instructions fault. On arm64 the kernel
 * says which extensions user code may run (HWCAP bits on Linux, sysctl on
 * macOS); elsewhere only the baseline NEON table is used. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu_kernels.h"
#include "cpu/cpu_quant.h"
#include "cpu/cpu_wisdom.h"
#include "cpu/gemm_amx.h"
#include "cpu/gemm_bf16.h"
#include "cpu/gemv_bf16.h"
#include "cpu/qkernels.h"

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
    }
    if (__get_cpuid_count(7, 1, &a, &b, &c, &d)) {
        f->avxvnni = (a >> 4) & 1; /* ymm state only: os_avx */
        if (os_avx512) f->avx512bf16 = (a >> 5) & 1;
    }
}
#elif defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
/* The arm64 Linux HWCAP bits (asm/hwcap.h), for C libraries whose headers
 * predate them. */
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1UL << 20)
#endif
#ifndef HWCAP2_I8MM
#define HWCAP2_I8MM (1UL << 13)
#endif
#ifndef HWCAP2_BF16
#define HWCAP2_BF16 (1UL << 14)
#endif
static void detect(cpu_features *f) {
    unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
    f->neon = 1;
    f->dotprod = (hw & HWCAP_ASIMDDP) != 0;
    f->i8mm = (hw2 & HWCAP2_I8MM) != 0;
    f->bf16 = (hw2 & HWCAP2_BF16) != 0;
}
#elif defined(__aarch64__) && defined(__APPLE__)
#include <sys/sysctl.h>
static int sysctl_flag(const char *name) {
    int v = 0;
    size_t len = sizeof v;
    return sysctlbyname(name, &v, &len, NULL, 0) == 0 && v == 1;
}
static void detect(cpu_features *f) {
    f->neon = 1;
    f->dotprod = sysctl_flag("hw.optional.arm.FEAT_DotProd");
    f->i8mm = sysctl_flag("hw.optional.arm.FEAT_I8MM");
    f->bf16 = sysctl_flag("hw.optional.arm.FEAT_BF16");
}
#elif defined(__aarch64__)
static void detect(cpu_features *f) {
    f->neon = 1; /* an OS this file cannot ask: the armv8.0 table */
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
static cpu_kernels avx2_vnni_table, avx512_table, amx_table;
static int has_amx;
#elif defined(__aarch64__)
/* The NEON table with quantized kernels on sdot (dotprod), and that with
 * the int8 prompt GEMM on smmla as well (i8mm; every CPU with it has
 * dotprod); each may get bf16 prompts on bfmmla (cpu_select_bf16). */
static cpu_kernels neon_table, neon_dotprod_table, neon_i8mm_table;
#endif
static pthread_once_t once = PTHREAD_ONCE_INIT;

static int has_amx_flag(void) {
#if defined(__x86_64__)
    return has_amx;
#else
    return 0;
#endif
}

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

#endif

static void choose(void) {
    detect(&features);
    chosen = &cpu_kernels_scalar;
#if defined(__x86_64__)
    /* Every table is filled in here, whatever cpu_select_table later caps
     * the choice to: tests walk every table the CPU can run. */
    avx512_table = cpu_kernels_avx512;
    if (has_avx512() && cpu_amx_available()) {
        amx_table = avx512_table;
        amx_table.name = "amx";
        amx_table.amx = 1;
        has_amx = 1;
    }
    /* AVX2 with the int8 prompt GEMM on 256-bit vpdpbusd (Alder Lake, and
     * the AVX-512 CPUs that have AVX-VNNI too) */
    avx2_vnni_table = cpu_kernels_avx2;
    avx2_vnni_table.name = "avx2-vnni";
    avx2_vnni_table.qpanel = &cpu_qpanel_avxvnni;
    if (has_avx2()) chosen = &cpu_kernels_avx2;
    if (has_avx2() && features.avxvnni) chosen = &avx2_vnni_table;
    if (has_avx512()) chosen = &avx512_table;
    if (has_amx) chosen = &amx_table;
#elif defined(__aarch64__)
    neon_table = cpu_kernels_neon;
    neon_dotprod_table = neon_table;
    neon_dotprod_table.name = "neon-dotprod";
    neon_dotprod_table.qmatmul[0] = cpu_qmatmul_q8_neon_dotprod;
    neon_dotprod_table.qmatmul[1] = cpu_qmatmul_q4_neon_dotprod;
    neon_dotprod_table.qpanel = &cpu_qpanel_neon_dotprod;
    neon_i8mm_table = neon_dotprod_table;
    neon_i8mm_table.name = "neon-i8mm";
    neon_i8mm_table.qpanel = &cpu_qpanel_neon_i8mm;
    chosen = &neon_table;
    if (features.dotprod) chosen = &neon_dotprod_table;
    if (features.dotprod && features.i8mm) chosen = &neon_i8mm_table;
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
    } order[] = {{"scalar", 0},       {"avx2", 1},   {"neon", 1},      {"avx2-vnni", 2},
                 {"neon-dotprod", 2}, {"avx512", 3}, {"neon-i8mm", 3}, {"amx", 4}};
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++)
        if (!strcmp(name, order[i].name)) return order[i].rank;
    return -1;
}

nc_status cpu_select_table(const char *cap, nc_error *err) {
    pthread_once(&once, choose);
    const cpu_kernels *tabs[8];
    int n = cpu_kernels_available(tabs, 8), limit = cap && *cap ? rank(cap) : 4;
    if (limit < 0)
        return nc_fail(err, NC_ERR_INVALID,
                       "kernel table '%s' is unknown (scalar, avx2, avx2-vnni, avx512, amx, "
                       "neon, neon-dotprod, neon-i8mm)",
                       cap);
    for (int i = 0; i < n; i++) /* scalar first, best last */
        if (rank(tabs[i]->name) <= limit) chosen = tabs[i];
    return NC_OK;
}

/* The bf16 contract (cpu_select_bf16) and the kernels that serve it. Until
 * cpu_tune measures, the accurate contract keeps the tables' fp32 kernels
 * and the fast one takes the first bf16 dot-product kernels. */
static int bf16_mode = CPU_BF16_MODE_ACCURATE;

/* "MODE[,decode=KERNEL][,prompt=KERNEL]": the contract, and optionally the
 * kernels that serve it (forced: cpu_tune then measures only the rest). A
 * kernel is checked against the candidates of the new contract, so a bad
 * one is found after the contract has changed: cpu_select_bf16 puts the
 * last accepted spec back. */
static nc_status select_bf16(const char *spec, nc_error *err) {
    char buf[128], *mode = buf;
    snprintf(buf, sizeof buf, "%s", spec ? spec : "");
    char *rest = strchr(buf, ',');
    if (rest) *rest++ = 0;
    int want = !*mode || !strcmp(mode, "accurate") ? CPU_BF16_MODE_ACCURATE
               : !strcmp(mode, "off")              ? CPU_BF16_MODE_OFF
               : !strcmp(mode, "fast")             ? CPU_BF16_MODE_FAST
                                                   : -1;
    if (want < 0)
        return nc_fail(err, NC_ERR_INVALID,
                       "bf16 kernels '%s': not accurate, fast or off (then optionally "
                       ",decode=KERNEL,prompt=KERNEL)",
                       spec);
    bf16_mode = want;
    const cpu_gemm_kernels *g = NULL;
    cpu_matmul_fn decode = NULL;
#if defined(__x86_64__)
    if (want == CPU_BF16_MODE_FAST && features.avx512bf16) {
        g = &cpu_gemm_bf16_avx512[CPU_BF16_FAST];
        decode = cpu_gemv_bf16_avx512[cpu_gemv_bf16_first(1)].fn;
    }
#elif defined(__aarch64__)
    if (want == CPU_BF16_MODE_FAST && features.bf16) g = &cpu_gemm_bf16_neon[CPU_BF16_FAST];
#endif
    cpu_set_bf16_decode(decode);
    cpu_set_bf16_prompt(g);
    cpu_tune_unforce();
    while (rest && *rest) {
        char *next = strchr(rest, ',');
        if (next) *next++ = 0;
        int slot = !strncmp(rest, "decode=", 7)   ? CPU_SLOT_DECODE_BF16
                   : !strncmp(rest, "prompt=", 7) ? CPU_SLOT_PROMPT_BF16
                                                  : -1;
        if (slot < 0)
            return nc_fail(err, NC_ERR_INVALID, "bf16 kernels '%s': '%s' is not decode=... or "
                           "prompt=...", spec, rest);
        if (cpu_tune_force((cpu_slot)slot, rest + 7, err) != NC_OK) return NC_ERR_INVALID;
        rest = next;
    }
    return NC_OK;
}

nc_status cpu_select_bf16(const char *spec, nc_error *err) {
    static char accepted[128]; /* "": the default contract */
    pthread_once(&once, choose);
    nc_status st = select_bf16(spec, err);
    if (st == NC_OK) {
        snprintf(accepted, sizeof accepted, "%s", spec ? spec : "");
    } else {
        nc_error ignored;
        select_bf16(accepted, &ignored);
    }
    return st;
}

int cpu_bf16_mode(void) {
    pthread_once(&once, choose);
    return bf16_mode;
}

void cpu_set_bf16_decode(cpu_matmul_fn decode) {
    pthread_once(&once, choose);
#if defined(__x86_64__)
    avx512_table.matmul[CPU_W_BF16] = amx_table.matmul[CPU_W_BF16] =
        decode ? decode : cpu_kernels_avx512.matmul[CPU_W_BF16];
#else
    (void)decode; /* no bf16 decode kernels elsewhere yet */
#endif
}

/* Whether models loaded from now on interleave their Q4 rows. The tables'
 * qmatmul[2] stays set whatever the choice: a model loaded before the
 * choice changed (a later tuning under another bf16 contract) still runs
 * its interleaved matrices. */
static atomic_int q4_interleave = 1;

void cpu_set_q4_interleave(int on) {
    atomic_store(&q4_interleave, on != 0);
}

int cpu_q4_interleave_wanted(const cpu_kernels *k) {
    return k->qmatmul[2] && atomic_load(&q4_interleave);
}

void cpu_set_q_decode(int fmt, cpu_qmatmul_fn decode) {
    pthread_once(&once, choose);
#if defined(__x86_64__)
    avx512_table.qmatmul[fmt] = amx_table.qmatmul[fmt] =
        decode ? decode : cpu_kernels_avx512.qmatmul[fmt];
#else
    (void)fmt;
    (void)decode;
#endif
}

void cpu_set_bf16_prompt(const cpu_gemm_kernels *prompt) {
    pthread_once(&once, choose);
#if defined(__x86_64__)
    avx512_table.gemm_bf16 = amx_table.gemm_bf16 = prompt;
#elif defined(__aarch64__)
    neon_table.gemm_bf16 = neon_dotprod_table.gemm_bf16 = neon_i8mm_table.gemm_bf16 = prompt;
#else
    (void)prompt;
#endif
}

void cpu_identity(char *out, size_t cap) {
    pthread_once(&once, choose);
    char brand[49] = "";
    unsigned fms = 0;
    char vendor[13] = "";
#if defined(__x86_64__)
    unsigned int a, b, c, d, r[12];
    if (__get_cpuid(0, &a, &b, &c, &d)) {
        memcpy(vendor, &b, 4);
        memcpy(vendor + 4, &d, 4);
        memcpy(vendor + 8, &c, 4);
    }
    if (__get_cpuid(1, &a, &b, &c, &d)) fms = a;
    for (unsigned i = 0; i < 3; i++)
        if (!__get_cpuid(0x80000002u + i, &r[4 * i], &r[4 * i + 1], &r[4 * i + 2], &r[4 * i + 3]))
            memset(&r[4 * i], 0, 16);
    memcpy(brand, r, 48);
#elif defined(__aarch64__)
    strcpy(vendor, "arm64");
#endif
    /* printable, no tabs: the key is one field of a wisdom line */
    for (char *p = brand; *p; p++)
        if (*p < ' ' || *p > '~') *p = ' ';
    char *s = brand;
    while (*s == ' ')
        s++;
    size_t n = strlen(s);
    while (n && s[n - 1] == ' ')
        s[--n] = 0;
    const cpu_features *f = &features;
    snprintf(out, cap, "%s %s fms=%x %s%s%s%s%s%s%s%s%s%s%s%s", vendor, s, fms, f->avx2 ? "avx2," : "",
             f->fma ? "fma," : "", f->avx512f ? "avx512f," : "", f->avx512bw ? "bw," : "",
             f->avx512vl ? "vl," : "", f->avx512vnni ? "vnni," : "",
             f->avx512bf16 ? "bf16," : "", f->avxvnni ? "avxvnni," : "", has_amx_flag() ? "amx," : "",
             f->dotprod ? "dotprod," : "", f->i8mm ? "i8mm," : "", f->bf16 ? "armbf16," : "");
}

int cpu_kernels_available(const cpu_kernels **out, int cap) {
    pthread_once(&once, choose);
    int n = 0;
    if (n < cap) out[n++] = &cpu_kernels_scalar;
#if defined(__x86_64__)
    if (has_avx2() && n < cap) out[n++] = &cpu_kernels_avx2;
    if (has_avx2() && features.avxvnni && n < cap) out[n++] = &avx2_vnni_table;
    if (has_avx512() && n < cap) out[n++] = &avx512_table;
    if (has_amx && n < cap) out[n++] = &amx_table;
#elif defined(__aarch64__)
    if (n < cap) out[n++] = &neon_table;
    if (features.dotprod && n < cap) out[n++] = &neon_dotprod_table;
    if (features.dotprod && features.i8mm && n < cap) out[n++] = &neon_i8mm_table;
#endif
    return n;
}

size_t cpu_wtype_size(cpu_wtype t) {
    return t == CPU_W_F32 ? 4 : cpu_wtype_is_quant(t) ? 0 : 2;
}
size_t cpu_wtype_row_bytes(cpu_wtype t, int cols) {
    size_t nb = ((size_t)cols + 31) / 32;
    return t == CPU_W_Q8   ? nb * CPU_Q8_BLOCK_BYTES
           : t == CPU_W_Q4 || t == CPU_W_Q4X16 ? nb * CPU_Q4_BLOCK_BYTES
                           : (size_t)cols * cpu_wtype_size(t);
}
const char *cpu_wtype_name(cpu_wtype t) {
    static const char *names[CPU_W_N] = {"f32", "f16", "bf16", "q8", "q4", "q4"};
    return (unsigned)t < CPU_W_N ? names[t] : "?";
}
