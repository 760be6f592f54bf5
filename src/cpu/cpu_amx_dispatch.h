/* The AMX route for prompt products (cpu_amx_dispatch.c). */
#ifndef NC_CPU_AMX_DISPATCH_H
#define NC_CPU_AMX_DISPATCH_H

#include "cpu/cpu_matmul.h"

/* Runs the count products of a's rows on AMX tiles and returns 1, or
 * returns 0 without doing anything when the table has no AMX, the prompt is
 * short or a's AMX scratch is missing or too small. */
/* Whether products of a's rows (against any weights of a->k columns) go
 * to the tiles: then they read fp32 rows and need no int8 copies. */
int cpu_amx_takes(const cpu_kernels *kern, const cpu_act *a);

int cpu_matmul_amx(nc_pool *pool, const cpu_kernels *kern, cpu_act *a, int count,
                   const cpu_product *p);

/* Packs a's rows as the tiles' bf16 terms into a->amx_x, once (a->amx_packed
 * records it), split over the pool; cpu_amx_takes(kern, a) must hold. */
void cpu_amx_pack_act(nc_pool *pool, cpu_act *a);

#endif
