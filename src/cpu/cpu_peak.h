/* Peak arithmetic rate: each kernel table has an FMA "burner" (12
 * independent vector FMA chains, enough to cover the FMA latency on two
 * ports) and cpu_peak_fma_flops runs it on every pool thread. This is the
 * denominator of prompt processing's compute roofline in `nectar bench`. */
#ifndef NC_CPU_PEAK_H
#define NC_CPU_PEAK_H

#include "base/pool.h"
#include "cpu/cpu_kernels.h"

/* fp32 FLOP/s (an FMA counts 2) of kern's burner on all of the pool's
 * threads, best of `reps` passes of about `seconds` each. If per_cpu_s is
 * not NULL it gets the best rate per second of CPU time the threads got
 * (one core's peak, unaffected by other processes taking the CPUs). */
double cpu_peak_fma_flops(nc_pool *pool, const cpu_kernels *kern, double seconds, int reps,
                          double *per_cpu_s);

/* The same for the bf16 AMX tile products (gemm_amx.h) that run prompts
 * with the "amx" table; 0 where there is no AMX. */
double cpu_peak_amx_flops(nc_pool *pool, double seconds, int reps, double *per_cpu_s);

/* The burners: run `iters` iterations, return the flops done. The result of
 * the chains goes to *sink so the work cannot be dropped. */
double cpu_fma_burn_scalar(long iters, float *sink);
#if defined(__x86_64__) || defined(_M_X64)
double cpu_fma_burn_avx2(long iters, float *sink);
double cpu_fma_burn_avx512(long iters, float *sink);
#endif
#if defined(__aarch64__)
double cpu_fma_burn_neon(long iters, float *sink);
#endif

#endif
