/* The declared functions of recursive.comp. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define N 64
typedef int32_t block[N];

void seed(int32_t i, block out) {
  for (int k = 0; k < N; k++)
    out[k] = (int32_t)((uint32_t)(i * 131 + k * 7919) % 1000u);
}

void blur(const block x, block out) {
  for (int k = 0; k < N; k++)
    out[k] = (x[k > 0 ? k - 1 : k] + 2 * x[k] + x[k < N - 1 ? k + 1 : k]) / 4;
}

int64_t total(const block x) {
  int64_t s = 0;
  for (int k = 0; k < N; k++)
    s += x[k];
  return s;
}

bool odd_sum(const block x) { return total(x) % 2 != 0; }

void report(int32_t i, int64_t fib, bool even, int64_t sum, int64_t tri, bool odd) {
  printf("%2d fib=%lld even=%d sum=%lld tri=%lld odd=%d\n", (int)i, (long long)fib, (int)even,
         (long long)sum, (long long)tri, (int)odd);
}
