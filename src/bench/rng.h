/* The bench's seeded PRNG: xoshiro256** seeded through splitmix64, chosen
 * because both are a few lines in any language, so the bootstrap intervals
 * can be reproduced bit for bit outside C (tools/make_bench_fixtures.py). */
#ifndef NC_BENCH_RNG_H
#define NC_BENCH_RNG_H

#include <stddef.h>
#include <stdint.h>

typedef struct nc_rng {
    uint64_t s[4];
} nc_rng;

/* s[0..3] = four successive splitmix64 outputs starting from `seed`. */
void nc_rng_seed(nc_rng *r, uint64_t seed);
uint64_t nc_rng_next(nc_rng *r);
/* Index in [0, n): floor(((x >> 11) * 2^-53) * n) in IEEE double. */
size_t nc_rng_index(nc_rng *r, size_t n);
/* One splitmix64 step (exposed for the reference-vector test). */
uint64_t nc_splitmix64(uint64_t *state);

#endif
