/* The bandwidth probe's 32-byte-load pattern on AVX2 (cpu_membw.h): the
 * portable loops in cpu_membw.c compile to 16-byte loads for the baseline
 * ISA, and on a Zen 4 VM a sum of 32-byte loads streamed fastest of all
 * (about 65 GB/s at the higher memory level, against 58 for 8-byte words). */
#include <immintrin.h>

#include "cpu/cpu_membw.h"

uint64_t cpu_membw_sum_avx2(const uint64_t *p, size_t n_words) {
    const __m256i *v = (const __m256i *)p;
    size_t n = n_words / 4;
    __m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;
    for (size_t i = 0; i + 4 <= n; i += 4) {
        a = _mm256_add_epi64(a, _mm256_load_si256(v + i));
        b = _mm256_add_epi64(b, _mm256_load_si256(v + i + 1));
        c = _mm256_add_epi64(c, _mm256_load_si256(v + i + 2));
        d = _mm256_add_epi64(d, _mm256_load_si256(v + i + 3));
    }
    a = _mm256_add_epi64(_mm256_add_epi64(a, b), _mm256_add_epi64(c, d));
    return (uint64_t)_mm256_extract_epi64(a, 0) + (uint64_t)_mm256_extract_epi64(a, 1) +
           (uint64_t)_mm256_extract_epi64(a, 2) + (uint64_t)_mm256_extract_epi64(a, 3);
}
