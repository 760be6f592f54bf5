/* The AMX route for prompt products (cpu_amx_dispatch.c). */
#ifndef NC_CPU_AMX_DISPATCH_H
#define NC_CPU_AMX_DISPATCH_H

#include "cpu/cpu_matmul.h"

/* Whether products of a's rows against weights of type t (and a->k
 * columns) go to the tiles: then they read fp32 rows and need no int8
 * copies. Q8/Q4 weights go to the table's int8 GEMM instead where it has
 * one (cpu_kernels.qpanel): vpdpbusd on int8 activations ran 0.6B q8
 * pp512 15% faster than the three bf16 tile products per block that keep
 * fp32 activations (Sapphire Rapids VM, 2 threads: 468-479 against 406-412
 * tok/s), at the int8 path's accuracy (docs/performance.md). */
int cpu_amx_takes(const cpu_kernels *kern, cpu_wtype t, const cpu_act *a);

/* Runs the count products of a's rows on AMX tiles and returns 1, or
 * returns 0 without doing anything when the tiles do not take every one of
 * them (cpu_amx_takes). */
int cpu_matmul_amx(nc_pool *pool, const cpu_kernels *kern, cpu_act *a, int count,
                   const cpu_product *p);

/* Packs a's rows as the tiles' bf16 terms into a->amx_x, once (a->amx_packed
 * records it), split over the pool; cpu_amx_takes must hold for a. */
void cpu_amx_pack_act(nc_pool *pool, cpu_act *a);

#endif
