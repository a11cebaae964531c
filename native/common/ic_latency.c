#include "ic_latency.h"

#include <math.h>
#include <stdlib.h>

#include "ic_prefault.h"

bool ic_latency_init(ic_latency_t *l, size_t cap) {
  *l = (ic_latency_t){.cap = cap};
  l->ns = malloc(cap * sizeof *l->ns);
  if (!l->ns)
    return false;
  ic_prefault(l->ns, cap * sizeof *l->ns); /* fault the pages in now, not while acting */
  return true;
}

void ic_latency_add(ic_latency_t *l, int64_t ns) {
  if (l->n < l->cap)
    l->ns[l->n++] = ns;
  else
    l->dropped++;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

void ic_latency_sort(ic_latency_t *l) { qsort(l->ns, l->n, sizeof *l->ns, cmp_i64); }

int64_t ic_percentile_sorted(const int64_t *sorted, size_t n, double p) {
  double rank = ceil(p / 100.0 * (double)n);
  size_t i = rank < 1 ? 0 : (size_t)rank - 1;
  return sorted[i < n ? i : n - 1];
}

void ic_latency_free(ic_latency_t *l) {
  free(l->ns);
  *l = (ic_latency_t){0};
}
