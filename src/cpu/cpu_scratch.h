/* The scratch that matrix products use for prompts (cpu_act's fp32 weight
 * panels and AMX buffers), allocated once by a model for up to max_rows
 * input rows of at most max_k values, and attached to each cpu_act. */
#ifndef NC_CPU_SCRATCH_H
#define NC_CPU_SCRATCH_H

#include "base/error.h"
#include "cpu/cpu_matmul.h"

typedef struct cpu_prompt_scratch {
    float *panels; /* per pool thread */
    size_t panel_floats;
    void *amx_x;       /* AMX tables only, else NULL */
    void *amx_scratch; /* per pool thread */
    size_t amx_x_bytes, amx_scratch_bytes;
    void *gemm_x; /* tables with bf16 dot products (cpu_act.gemm_x), else NULL */
    size_t gemm_x_bytes;
} cpu_prompt_scratch;

/* Allocates (or grows) s for kern on `threads` pool threads; on failure s is
 * empty and err names `owner`. */
nc_status cpu_prompt_scratch_reserve(cpu_prompt_scratch *s, const cpu_kernels *kern, int threads,
                                     int max_rows, int max_k, const char *owner, nc_error *err);
void cpu_prompt_scratch_free(cpu_prompt_scratch *s);

/* a's prompt scratch from s (a's other fields are left as they are). */
void cpu_act_attach(cpu_act *a, const cpu_prompt_scratch *s);

#endif
