/* The sampler's random numbers: xoshiro256** seeded through splitmix64, so a
 * given seed yields the same stream on every platform and compiler (rand()
 * does not). One generator per sequence; no global state. */
#ifndef NC_GEN_RNG_H
#define NC_GEN_RNG_H

#include <stdint.h>

typedef struct gen_rng {
    uint64_t s[4];
} gen_rng;

void gen_rng_seed(gen_rng *r, uint64_t seed);
uint64_t gen_rng_next(gen_rng *r);
/* Uniform in [0, 1) with 53 random bits. */
double gen_rng_uniform(gen_rng *r);

#endif
