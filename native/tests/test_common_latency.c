/* Latency samples and their nearest-rank percentiles (the monitor's and the regulator's
 * summaries at exit). */
#include "ic_latency.h"
#include "ic_test.h"

static void percentiles(void) {
  int64_t one[] = {7};
  CHECK(ic_percentile_sorted(one, 1, 50) == 7 && ic_percentile_sorted(one, 1, 99) == 7);
  int64_t v[100];
  for (int i = 0; i < 100; i++)
    v[i] = i + 1;
  CHECK(ic_percentile_sorted(v, 100, 50) == 50);
  CHECK(ic_percentile_sorted(v, 100, 99) == 99);
  CHECK(ic_percentile_sorted(v, 100, 100) == 100);
  CHECK(ic_percentile_sorted(v, 100, 0) == 1);
  CHECK(ic_percentile_sorted(v, 10, 99) == 10); /* n = 10: p99 is the maximum */
  ic_latency_t l;
  CHECK(ic_latency_init(&l, 3));
  ic_latency_add(&l, 30);
  ic_latency_add(&l, -5); /* a freeze before the release (--lead) */
  ic_latency_add(&l, 10);
  ic_latency_add(&l, 99);
  CHECK(l.n == 3 && l.dropped == 1);
  ic_latency_sort(&l);
  CHECK(l.ns[0] == -5 && l.ns[1] == 10 && l.ns[2] == 30);
  ic_latency_free(&l);
}

int main(void) {
  percentiles();
  return TEST_RESULT();
}
