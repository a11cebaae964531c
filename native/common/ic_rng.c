/* Reproducible randomness for memory layouts: the same seed gives the same lists, so a
 * surprising result can be re-run exactly. */
#include "ic_common.h"

void ic_rng_seed(ic_rng_t *r, uint64_t seed) {
  /* splitmix64 spreads small seeds (0, 1, 2 ...) over the state; xorshift must not be 0. */
  uint64_t z = seed + 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  r->s = z ? z : 0x9E3779B97F4A7C15ULL;
}

uint64_t ic_rng_next(ic_rng_t *r) {
  uint64_t x = r->s;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  r->s = x;
  return x * 0x2545F4914F6CDD1DULL;
}

/* Uniform in [0, n): rejecting the incomplete top range removes the modulo bias. */
static uint64_t below(ic_rng_t *r, uint64_t n) {
  uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t x;
  do
    x = ic_rng_next(r);
  while (x >= limit);
  return x % n;
}

void ic_sattolo(size_t *idx, size_t n, ic_rng_t *r) {
  for (size_t i = 0; i < n; i++)
    idx[i] = i;
  /* Sattolo: swapping only with strictly earlier slots yields one n-cycle, never a
   * shorter loop a pointer chase could get stuck in. */
  for (size_t i = n; i > 1; i--) {
    size_t j = (size_t)below(r, i - 1);
    size_t t = idx[i - 1];
    idx[i - 1] = idx[j];
    idx[j] = t;
  }
}
