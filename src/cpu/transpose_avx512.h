/* A 16 x 16 transpose of 32-bit elements in AVX-512 registers, for the files
 * compiled with AVX-512 (the fp32 GEMM's panel packing in kernels_avx512.c,
 * the AMX activation packing in gemm_amx.c). Header only: each includer
 * inlines it with its own ISA flags. */
#ifndef NC_CPU_TRANSPOSE_AVX512_H
#define NC_CPU_TRANSPOSE_AVX512_H

#include <immintrin.h>

/* In place: rows m[0..15] become the columns (m[c] lane r = old m[r] lane
 * c). Pairs of rows interleaved, then pairs of pairs, then 128-bit lanes
 * gathered in two shuffle stages: 64 shuffles in all. */
static inline __attribute__((always_inline)) void cpu_transpose16_epi32(__m512i m[16]) {
    __m512i t[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_epi32(m[i], m[i + 1]);
        t[i + 1] = _mm512_unpackhi_epi32(m[i], m[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
        m[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
        m[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
        m[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
        m[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
    }
    for (int h = 0; h < 16; h += 8)
        for (int i = 0; i < 4; i++) {
            t[h + i] = _mm512_shuffle_i32x4(m[h + i], m[h + i + 4], 0x88);
            t[h + i + 4] = _mm512_shuffle_i32x4(m[h + i], m[h + i + 4], 0xdd);
        }
    for (int i = 0; i < 8; i++) {
        m[i] = _mm512_shuffle_i32x4(t[i], t[i + 8], 0x88);
        m[i + 8] = _mm512_shuffle_i32x4(t[i], t[i + 8], 0xdd);
    }
}

#endif
