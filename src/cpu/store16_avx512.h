/* Storing one vector of results of the outer-product GEMMs (16 weight rows,
 * one token) into y, for the AVX-512 files: only the first `valid` rows
 * (the matrix's last group may be partial), added to what y holds when a
 * later K chunk accumulates. Header only, inlined with the includer's ISA
 * flags. */
#ifndef NC_CPU_STORE16_AVX512_H
#define NC_CPU_STORE16_AVX512_H

#include <immintrin.h>

static inline __attribute__((always_inline)) void cpu_store16(float *y, __m512 v, int valid,
                                                              int accumulate) {
    __mmask16 m = valid >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << valid) - 1);
    if (accumulate) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, y));
    _mm512_mask_storeu_ps(y, m, v);
}

#endif
