/* Latency samples kept in a preallocated array (no allocation while acting) and
 * summarised once at exit with nearest-rank percentiles. */
#ifndef IC_LATENCY_H
#define IC_LATENCY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
  int64_t *ns;
  size_t n, cap;
  uint64_t dropped; /* samples that found the array full */
} ic_latency_t;

bool ic_latency_init(ic_latency_t *l, size_t cap);
void ic_latency_add(ic_latency_t *l, int64_t ns);
/* Sorts the samples in place (at exit). */
void ic_latency_sort(ic_latency_t *l);
/* Nearest rank: the smallest sample with at least p% of all samples at or below it;
 * sorted[n - 1] for p = 100. n must be > 0. */
int64_t ic_percentile_sorted(const int64_t *sorted, size_t n, double p);
void ic_latency_free(ic_latency_t *l);

#endif
