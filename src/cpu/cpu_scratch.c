/* Prompt scratch for the matrix products (see cpu_scratch.h). */
#include "cpu/cpu_scratch.h"

#include <string.h>

#include "base/alloc.h"
#include "cpu/gemm_amx.h"

void cpu_prompt_scratch_free(cpu_prompt_scratch *s) {
    nc_free_aligned(s->panels);
    nc_free_aligned(s->amx_x);
    nc_free_aligned(s->amx_scratch);
    nc_free_aligned(s->gemm_x);
    memset(s, 0, sizeof *s);
}

nc_status cpu_prompt_scratch_reserve(cpu_prompt_scratch *s, const cpu_kernels *kern, int threads,
                                     int max_rows, int max_k, const char *owner, nc_error *err) {
    size_t panel_floats = (size_t)CPU_MATMUL_PANEL_ROWS * (size_t)max_k;
    size_t x_bytes = kern->amx ? cpu_amx_x_bytes(max_rows, max_k) : 0;
    size_t w_bytes = kern->amx ? cpu_amx_scratch_bytes(max_k) : 0;
    /* the bf16 GEMM's activations, converted once (two terms at most) */
    const cpu_gemm_kernels *g = kern->gemm_bf16;
    size_t gx_bytes = g && g->x_bytes ? g->x_bytes(max_rows, max_k) : 0;
    if (s->panels && s->panel_floats >= panel_floats && s->amx_x_bytes >= x_bytes &&
        s->amx_scratch_bytes >= w_bytes && s->gemm_x_bytes >= gx_bytes)
        return NC_OK;
    cpu_prompt_scratch_free(s);
    s->panels = nc_alloc_aligned((size_t)threads * panel_floats * sizeof(float));
    if (x_bytes) {
        s->amx_x = nc_alloc_aligned(x_bytes);
        s->amx_scratch = nc_alloc_aligned((size_t)threads * w_bytes);
    }
    if (gx_bytes) s->gemm_x = nc_alloc_aligned(gx_bytes);
    if (!s->panels || (x_bytes && (!s->amx_x || !s->amx_scratch)) || (gx_bytes && !s->gemm_x)) {
        cpu_prompt_scratch_free(s);
        return nc_fail(err, NC_ERR_NOMEM,
                       "%s: out of memory for the prompt scratch (%d rows of %d)", owner, max_rows,
                       max_k);
    }
    s->panel_floats = panel_floats;
    s->amx_x_bytes = x_bytes;
    s->amx_scratch_bytes = w_bytes;
    s->gemm_x_bytes = gx_bytes;
    return NC_OK;
}

void cpu_act_attach(cpu_act *a, const cpu_prompt_scratch *s) {
    a->panels = s->panels;
    a->panel_floats = s->panel_floats;
    a->amx_x = s->amx_x;
    a->amx_x_bytes = s->amx_x_bytes;
    a->amx_scratch = s->amx_scratch;
    a->amx_scratch_bytes = s->amx_scratch_bytes;
    a->gemm_x = s->gemm_x;
    a->gemm_x_bytes = s->gemm_x_bytes;
}
