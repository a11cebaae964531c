/* A pseudo-random permutation of line indices without a table: a bijection on `bits`-bit
 * counters (odd multipliers and xor-shifts, each invertible mod 2^bits), with the values at
 * or above n skipped. Every index below n comes once per period of 2^bits counters, the
 * order defeats prefetchers, and no address depends on loaded data. */
#ifndef IC_LINEPERM_H
#define IC_LINEPERM_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
  uint64_t n;    /* indices 0..n-1 */
  uint64_t mask; /* 2^bits - 1, the smallest such >= n - 1 */
  unsigned half; /* the xor-shift distance */
} lineperm_t;

static inline void lineperm_init(lineperm_t *p, uint64_t n) {
  unsigned bits = 0;
  while (bits < 63 && (1ULL << bits) < n)
    bits++;
  p->n = n;
  p->mask = bits ? (1ULL << bits) - 1 : 0;
  p->half = bits / 2 ? bits / 2 : 1;
}

/* The image of counter x (x <= mask); an index when below n, else to be skipped. */
static inline uint64_t lineperm_at(const lineperm_t *p, uint64_t x) {
  x = (x * 0x9E3779B97F4A7C15ULL) & p->mask;
  x ^= x >> p->half;
  x = (x * 0xBF58476D1CE4E5B9ULL) & p->mask;
  x ^= x >> p->half;
  return x;
}

#endif
