/* xoshiro256** (Blackman & Vigna) seeded with splitmix64, from their
 * published definitions. */
#include "bench/rng.h"

uint64_t nc_splitmix64(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void nc_rng_seed(nc_rng *r, uint64_t seed) {
    for (int i = 0; i < 4; i++) r->s[i] = nc_splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t nc_rng_next(nc_rng *r) {
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

size_t nc_rng_index(nc_rng *r, size_t n) {
    /* 53 random bits as a double in [0, 1), times n: the same two IEEE
     * operations in C and Python, so both pick the same index */
    double u = (double)(nc_rng_next(r) >> 11) * 0x1.0p-53;
    double scaled = u * (double)n;
    size_t i = (size_t)scaled;
    return i < n ? i : n - 1;
}
