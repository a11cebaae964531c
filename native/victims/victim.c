/* The helpers every victim's init uses (victim.h). Apart from the table in registry.c, so a
 * program that brings its own victims (the learning stage's generated kernels) links the
 * driver and these without the built-in kernels. */
#include "victim.h"

void *ic_victim_alloc(ic_mem_t *m, uint64_t count, size_t elem, const char *what) {
  if (count > SIZE_MAX / elem || !ic_mem_alloc(m, (size_t)count * elem, false))
    ic_die(IC_EXIT_FAIL, "cannot allocate %llu × %zu bytes for %s", (unsigned long long)count,
           elem, what);
  return m->ptr;
}

void *ic_victim_state(size_t bytes) {
  void *p = calloc(1, bytes);
  if (!p)
    ic_die(IC_EXIT_FAIL, "out of memory");
  return p;
}

void ic_victim_cycle(void *base, size_t n, size_t stride, uint64_t seed) {
  size_t *next = malloc(n * sizeof *next);
  if (!next)
    ic_die(IC_EXIT_FAIL, "out of memory");
  ic_rng_t r;
  ic_rng_seed(&r, seed);
  ic_sattolo(next, n, &r);
  for (size_t i = 0; i < n; i++)
    *(void **)((char *)base + i * stride) = (char *)base + next[i] * stride;
  free(next);
}
