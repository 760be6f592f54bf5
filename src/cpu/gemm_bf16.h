/* The prompt GEMM for bf16 weights on AVX512-BF16 (gemm_bf16_avx512.c), a
 * cpu_gemm_kernels like the fp32 one, which the AVX-512 tables use for bf16
 * weights where the CPU has AVX512-BF16 (cpu_kernels.gemm_bf16). */
#ifndef NC_CPU_GEMM_BF16_H
#define NC_CPU_GEMM_BF16_H

#include "cpu/cpu_kernels.h"

#if defined(__x86_64__) || defined(_M_X64)
/* [CPU_BF16_ACCURATE]: activations as two bf16 terms (relative error
 * <= 2^-17 per product, within the fp32 parity bounds); [CPU_BF16_FAST]: one
 * term (2^-9), half the instructions. */
extern const cpu_gemm_kernels cpu_gemm_bf16_avx512[2];
#endif
#define CPU_BF16_ACCURATE 0
#define CPU_BF16_FAST 1

#endif
