/*
 * rng.h: a small, seedable random number generator (xoshiro256**, seeded
 * through splitmix64), owned by whoever samples, so that sampling is
 * reproducible and there is no global state.
 */
#ifndef CT_CORE_RNG_H
#define CT_CORE_RNG_H

#include <stdint.h>

typedef struct rng {
  uint64_t s[4];
} rng;

void rng_seed(rng *r, uint64_t seed);
uint64_t rng_next(rng *r);
/* Uniform in [0, n) without modulo bias; n > 0. */
uint64_t rng_below(rng *r, uint64_t n);
/* Uniform in [0, 1). */
double rng_double(rng *r);

#endif
