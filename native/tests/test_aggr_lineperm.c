#include <stdlib.h>

#include "ic_test.h"
#include "lineperm.h"

/* Over one period every index below n comes exactly once, and the order is not sequential
 * (a prefetcher would follow it). */
static void check_period(uint64_t n) {
  lineperm_t p;
  lineperm_init(&p, n);
  CHECK(p.mask + 1 >= n && (p.mask + 1) / 2 < (n > 1 ? n : 2));
  char *seen = calloc(n, 1);
  uint64_t got = 0, steps_of_one = 0, last = 0;
  for (uint64_t x = 0; x <= p.mask; x++) {
    uint64_t i = lineperm_at(&p, x);
    CHECK(i <= p.mask);
    if (i >= n)
      continue;
    CHECK(!seen[i]);
    seen[i] = 1;
    if (got && i == last + 1)
      steps_of_one++;
    last = i;
    got++;
  }
  CHECK(got == n);
  if (n >= 1024)
    CHECK(steps_of_one < n / 16);
  free(seen);
}

int main(void) {
  const uint64_t sizes[] = {1, 2, 3, 64, 1000, 4096, 65537, 1u << 20};
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
    check_period(sizes[i]);
  return TEST_RESULT();
}
