/* The CPU kernel table: one implementation per instruction set (scalar
 * reference, AVX2+FMA+F16C, AVX-512, NEON), chosen once at start by
 * cpu_kernels_get() from the CPU's features. Everything that must be fast
 * and vectorised goes through this table; callers never test the ISA. */
#ifndef NC_CPU_KERNELS_H
#define NC_CPU_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

/* Storage type of a weight matrix, read straight from the mmap. The float
 * types are CPU_W_FLOAT_N first; Q8/Q4 are block-quantized rows (cpu_quant.h:
 * 32 weights per block, an fp16 scale each; a row is ceil(cols/32) blocks).
 * Q4X16 is Q4 rearranged at load into groups of 16 rows (q4_interleave.h)
 * for the tables that have a kernel for it (qmatmul[2]): the same bytes,
 * but no row of it starts at a row pointer (cpu_mat_row_to_f32 reads one). */
typedef enum {
    CPU_W_F32,
    CPU_W_F16,
    CPU_W_BF16,
    CPU_W_Q8,
    CPU_W_Q4,
    CPU_W_Q4X16,
    CPU_W_N
} cpu_wtype;
#define CPU_W_FLOAT_N 3
/* The types a file holds (every one but Q4X16, which only loading makes). */
#define CPU_W_STORED_N CPU_W_Q4X16

/* Y[t*ldy + r] = sum_k X[t*ldx + k] * W[r*ldw + k]  for t in [0, n), r in
 * [r0, r1): n activation rows against rows r0..r1 of W ([rows, k], row
 * stride ldw elements), each weight loaded once per group of activation rows
 * and converted to fp32 in registers. Accumulation is fp32. */
typedef void (*cpu_matmul_fn)(const void *w, size_t ldw, const float *x, size_t ldx, float *y,
                              size_t ldy, int n, int k, int r0, int r1);

/* The same against block-quantized weights (Q8 or Q4) with int8 activations:
 * Y[t*ldy + r] = sum over blocks j of dW[r,j] * dX[t,j] * sum_i qW[r,j,i] qX[t,j,i]
 * (integer inner sums). w: rows of nb blocks, row stride ldw_bytes; xq: nb*32
 * int8 per activation row, stride ldq bytes; xs: each block's scale repeated
 * 8 times (so a vector load picks it up), stride lds floats. */
typedef void (*cpu_qmatmul_fn)(const void *w, size_t ldw_bytes, const int8_t *xq, size_t ldq,
                               const float *xs, size_t lds, float *y, size_t ldy, int n, int nb,
                               int r0, int r1);

/* Optional prompt path for quantized weights, the int8 GEMM: pack[] repacks
 * rows r0..r1 of a Q8 ([0]), Q4 ([1]) or Q4X16 ([2], r0 and r1 multiples
 * of 16) matrix (nb blocks per row) into a
 * panel of panel_bytes(r1 - r0, nb) bytes, once per pool task; matmul then
 * runs n activation rows, quantized as for cpu_qmatmul_fn, against the
 * panel's rows: y[t*ldy + row] for row < rows. Tables that have it use it
 * for every prompt (8 rows on) instead of the fp32 GEMM. */
typedef struct cpu_qpanel_kernels {
    void (*pack[3])(const void *w, size_t ldw, int nb, int r0, int r1, void *panel);
    void (*matmul)(const void *panel, int nb, const int8_t *xq, size_t ldq, const float *xs,
                   size_t lds, float *y, size_t ldy, int n, int rows);
    size_t (*panel_bytes)(int rows, int nb);
} cpu_qpanel_kernels;

/* The prompt GEMM (kernels_driver.h): pack() lays rows r0..r1 of a matrix of
 * any type (row stride ldw_bytes, k columns; Q8/Q4 dequantized as d * code)
 * out as fp32 panel blocks of nr rows, block b = rows r0+b*nr.. at panel +
 * b*nr*k as [k][nr] (rows past r1 zero), once per pool task; run() then
 * computes y[t*ldy + r] = sum_i x[t*ldx + i] * W[r0 + r, i] for t < n,
 * r < rows from the panel with fp32 FMAs: activations are never quantized. */
typedef struct cpu_gemm_kernels {
    int nr;
    void (*pack)(cpu_wtype t, const void *w, size_t ldw_bytes, int k, int r0, int r1, float *panel);
    void (*run)(const float *panel, int k, int rows, const float *x, size_t ldx, float *y,
                size_t ldy, int n);
    /* Optional (NULL: run converts the activations it reads, in every
     * task): x_prep converts row t of n (x: its k values) into the
     * x_bytes(n, k) bytes at xb, once per product, and run_x is run on
     * them. */
    size_t (*x_bytes)(int n, int k);
    void (*x_prep)(const float *x, int n, int k, int t, void *xb);
    void (*run_x)(const float *panel, int k, int rows, const void *xb, int n, float *y, size_t ldy);
} cpu_gemm_kernels;

/* Floats of the panel that cpu_gemm_kernels.pack fills for `rows` rows. */
static inline size_t cpu_gemm_panel_floats(const cpu_gemm_kernels *g, int rows, int k) {
    return (size_t)((rows + g->nr - 1) / g->nr) * (size_t)g->nr * (size_t)k;
}

typedef struct cpu_kernels {
    const char *name; /* "scalar", "avx2", "avx2-vnni", "avx512", "amx", "neon", ... */
    cpu_matmul_fn matmul[CPU_W_FLOAT_N];
    /* [0] Q8, [1] Q4, [2] Q4X16 (NULL where the table has none: its Q4
     * matrices keep their rows; the rows r0..r1 of a call are multiples of
     * 16) */
    cpu_qmatmul_fn qmatmul[3];
    const cpu_qpanel_kernels *qpanel; /* NULL: prompts use qmatmul too */
    cpu_gemm_kernels gemm;            /* prompts (many activation rows), every type */
    /* prompts against bf16 weights on bf16 dot products (gemm_bf16.h), where
     * the CPU has them; NULL: gemm */
    const cpu_gemm_kernels *gemm_bf16;
    /* prompts against bf16 weights packed once into bf16 panels
     * (gemm_bf16w.h, for cpu_packed.c); NULL: fp32 panels from gemm */
    const struct cpu_gemm_bf16w *gemm_bf16w;
    /* the same panels on bf16 dot products, for the fast contract where
     * gemm_bf16 is set (cpu_select_bf16); NULL: none */
    const struct cpu_gemm_bf16w *gemm_bf16w_fast;
    const struct cpu_attn_kernels *attn;         /* softmax, q.k, P.V (attn_kernels.h) */
    double (*fma_burn)(long iters, float *sink); /* peak-rate probe (cpu_peak.h) */
    /* a stored row of n weights of each type as fp32 (Q8/Q4 dequantized as
     * d * code): embedding lookups, AMX weight packing, fp16 KV rows */
    void (*row_to_f32[CPU_W_N])(const void *src, float *dst, int n);
    /* out[i] = gelu(a[i]) * gate[i] (gate[i] = 1 when gate is NULL), the
     * exact (erf) GELU within 2e-7 max(1, |x|) (gelu.h); out may be a */
    void (*gelu)(float *out, const float *a, const float *gate, size_t n);
    const struct cpu_row_kernels *rows; /* LayerNorm, residual add, RoPE (rows.h) */
    /* 1: prompts of every weight type run on AMX tiles (gemm_amx.h); the
     * "amx" table is the AVX-512 one with this set, where the CPU has AMX. */
    int amx;
} cpu_kernels;

extern const cpu_kernels cpu_kernels_scalar;
#if defined(__x86_64__) || defined(_M_X64)
extern const cpu_kernels cpu_kernels_avx2;
extern const cpu_kernels cpu_kernels_avx512;
#endif
#if defined(__aarch64__)
extern const cpu_kernels cpu_kernels_neon;
#endif

/* avxvnni: the VEX (256-bit) vpdpbusd, CPUID.(7,1):EAX[4]; dotprod, i8mm,
 * bf16: the arm64 extensions FEAT_DotProd (sdot/udot), FEAT_I8MM (smmla)
 * and FEAT_BF16 (bfdot/bfmmla/bfcvt), from the kernel's HWCAP bits on Linux
 * and sysctl hw.optional.arm.FEAT_* on macOS. */
typedef struct cpu_features {
    int avx2, fma, f16c, avx512f, avx512bw, avx512vl, avx512vnni, avx512bf16, avxvnni;
    int neon, dotprod, i8mm, bf16;
} cpu_features;

const cpu_features *cpu_features_get(void);

/* The table the engines use: the best for this CPU, or the one
 * cpu_select_table chose. Thread-safe. */
const cpu_kernels *cpu_kernels_get(void);

/* Caps the choice: the best table this CPU runs at or below `cap` in the
 * order scalar < avx2 (neon) < avx2-vnni (neon-dotprod) < avx512
 * (neon-i8mm) < amx, e.g. "scalar" for the
 * reference, "avx512" for AVX-512 without AMX tiles; NULL or "" for the
 * best. Call it at start, before a model is loaded (the command line does,
 * from NECTAR_NO_SIMD, NECTAR_SIMD and NECTAR_NO_AMX). An unknown name is
 * NC_ERR_INVALID naming the known ones, and changes nothing. */
nc_status cpu_select_table(const char *cap, nc_error *err);

/* The precision contract for bf16 weights (NECTAR_BF16 on the command line):
 * "accurate" (NULL or "" too, the default): activations in fp32; a kernel
 * may split them into bf16 terms only where each product stays within
 * 2^-17 of the exact one (docs/performance.md); "fast": activations rounded
 * to bf16 as llama.cpp's bf16 path does (2^-9 per product), on vdpbf16ps
 * (AVX512-BF16) or bfmmla (arm64 FEAT_BF16) where the CPU has them; "off":
 * the tables' fp32 kernels only. Which kernel serves a contract is chosen
 * by cpu_tune (cpu_wisdom.h); until then accurate uses the fp32 kernels,
 * fast the first bf16 dot-product ones. A spec that is refused
 * (NC_ERR_INVALID: a mode or forced kernel that is none) leaves the
 * contract and kernels as they were. */
#define CPU_BF16_MODE_OFF 0
#define CPU_BF16_MODE_ACCURATE 1
#define CPU_BF16_MODE_FAST 2
nc_status cpu_select_bf16(const char *mode, nc_error *err);
int cpu_bf16_mode(void);
/* For cpu_tune: bf16 decoding (NULL: the table's fp32-widening tile) and
 * bf16 prompts (NULL: the fp32 GEMM) in the AVX-512/AMX (or NEON) tables. */
void cpu_set_bf16_decode(cpu_matmul_fn decode);
void cpu_set_bf16_prompt(const cpu_gemm_kernels *prompt);
/* For cpu_tune: Q8 (fmt 0) or Q4 (1) decoding in the AVX-512/AMX tables
 * (a qgemv.h kernel; NULL: the table's own). */
void cpu_set_q_decode(int fmt, cpu_qmatmul_fn decode);
/* For cpu_tune: whether models loaded from now on interleave their Q4 rows
 * (q4_interleave.h) where the table has a kernel for them (qmatmul[2]);
 * on by default. Models already loaded keep their layout and kernels. */
void cpu_set_q4_interleave(int on);
int cpu_q4_interleave_wanted(const cpu_kernels *k);

/* Every table this CPU can run (scalar first), for tests comparing them. */
int cpu_kernels_available(const cpu_kernels **out, int cap);

/* Bytes per element of a float type (Q types: 0; see cpu_wtype_row_bytes). */
size_t cpu_wtype_size(cpu_wtype t);
/* Bytes of one stored row of `cols` weights. */
size_t cpu_wtype_row_bytes(cpu_wtype t, int cols);
static inline int cpu_wtype_is_quant(cpu_wtype t) {
    return t == CPU_W_Q8 || t == CPU_W_Q4 || t == CPU_W_Q4X16;
}
const char *cpu_wtype_name(cpu_wtype t);

#endif
