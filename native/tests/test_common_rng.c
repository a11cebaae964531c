#include <stdlib.h>

#include "ic_common.h"
#include "ic_test.h"

/* Following idx from 0 must come back to 0 after exactly n steps, touching every slot. */
static bool one_cycle(const size_t *idx, size_t n) {
  char *seen = calloc(n, 1);
  size_t i = 0, steps = 0;
  do {
    if (idx[i] >= n || seen[i]) {
      free(seen);
      return false;
    }
    seen[i] = 1;
    i = idx[i];
    steps++;
  } while (i != 0);
  free(seen);
  return steps == n;
}

int main(void) {
  static const size_t sizes[] = {1, 2, 3, 7, 64, 1000, 65536};
  ic_rng_t r;
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
    for (uint64_t seed = 0; seed < 5; seed++) {
      size_t n = sizes[s];
      size_t *idx = malloc(n * sizeof *idx);
      ic_rng_seed(&r, seed);
      ic_sattolo(idx, n, &r);
      CHECK(one_cycle(idx, n));
      free(idx);
    }

  /* Reproducible from the seed, different across seeds, never stuck at zero. */
  ic_rng_t a, b, c;
  ic_rng_seed(&a, 42);
  ic_rng_seed(&b, 42);
  ic_rng_seed(&c, 43);
  bool same = true, differs = false;
  for (int i = 0; i < 100; i++) {
    uint64_t x = ic_rng_next(&a), y = ic_rng_next(&b), z = ic_rng_next(&c);
    same &= x == y;
    differs |= x != z;
    CHECK(x != 0 || y != 0);
  }
  CHECK(same);
  CHECK(differs);
  ic_rng_seed(&a, 0);
  CHECK(a.s != 0);
  return TEST_RESULT();
}
