/* The functions of rates.comp: integer arithmetic only, so that rates.expected, written
 * from a Python model of them, is exact. */
#include <stdio.h>

#include "composition.h"

static long long emitted, reported;

int32_t sample(int i) { return (int32_t)((i * 7919) % 1009) - 504; }

int32_t decimate(const int32_t *x) { return x[0] + 2 * x[1] + 3 * x[2] + 4 * x[3]; }

void interpolate(int32_t y, int32_t *out) {
  out[0] = y;
  out[1] = 3 * y;
}

void pack(const int32_t *x, int32_t *out) {
  for (int k = 0; k < 8; k++) out[k] = x[k];
}

int64_t energy(const int32_t *f) {
  int64_t e = 0;
  for (int k = 0; k < 8; k++) e += (int64_t)f[k] * f[k];
  return e;
}

void emit(int n, int32_t z) {
  emitted = emitted * 31 + z;
  emitted %= 1000000007;
  if (n % 100 == 0) printf("emit %d %d\n", n, z);
}

void report(int n, int64_t e) {
  reported += e * (n + 1);
  if (n % 40 == 0) printf("report %d %lld\n", n, (long long)e);
}

void summary(void) { printf("emitted %lld reported %lld\n", emitted, reported); }
