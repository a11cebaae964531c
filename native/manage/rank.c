#include "rank.h"

#include <stdlib.h>

double ic_manage_score(const ic_thread_t *t) {
  double s = t->sensitivity > 0 ? t->sensitivity : 1.0;
  if (t->misses_per_s >= 0)
    return t->misses_per_s * s;
  return t->cpu_share * s * (1.0 + t->nivcsw_per_s / 100.0);
}

static int by_score(const void *a, const void *b) {
  const ic_thread_t *x = a, *y = b;
  if (x->score != y->score)
    return x->score > y->score ? -1 : 1;
  return (x->tid > y->tid) - (x->tid < y->tid);
}

void ic_manage_rank(ic_thread_t *threads, int n) {
  for (int i = 0; i < n; i++)
    threads[i].score = ic_manage_score(&threads[i]);
  qsort(threads, (size_t)n, sizeof *threads, by_score);
}

bool ic_manage_should_switch(double current, double challenger) {
  return challenger > 1.2 * current;
}
