/* The monitor's usage smoothing against tick-sized steps, and activity and its onset. */
#include <math.h>

#include "ic_test.h"
#include "usage.h"

#define MS 1000000ULL

/* A task using 50% of a CPU whose usage is charged in 4 ms ticks, polled every 1 ms:
 * single polls see 0% or 400%, a 20 ms window sees 40-60%. */
static void smoothing(void) {
  static ic_usage_t u;
  ic_usage_reset(&u);
  CHECK(isnan(ic_usage_pct(&u, 20 * MS)));
  uint64_t used = 0;
  double lo = 1e9, hi = 0;
  for (uint64_t t = 0; t <= 200; t++) {
    if (t % 8 == 0 && t)
      used += 4 * MS; /* 4 ms charged every 8 ms: 50% */
    ic_usage_add(&u, t * MS, used, 10 * MS);
    if (t >= 20) {
      double p = ic_usage_pct(&u, 20 * MS);
      lo = p < lo ? p : lo;
      hi = p > hi ? p : hi;
      double one = ic_usage_pct(&u, 1 * MS);
      CHECK(one == 0 || one == 400);
    }
  }
  CHECK(lo >= 40 && hi <= 60);
  /* The window spans whole samples: 20 ms back from 200 is the sample at 180. */
  CHECK(fabs(ic_usage_pct(&u, 20 * MS) - 100.0 * (double)(used - 22 * 4 * MS) / (20.0 * MS)) < 1e-9);
  /* Fewer samples than the window: the rate over what there is. */
  ic_usage_reset(&u);
  ic_usage_add(&u, 0, 0, 10 * MS);
  ic_usage_add(&u, 5 * MS, 5 * MS, 10 * MS);
  CHECK(fabs(ic_usage_pct(&u, 50 * MS) - 100.0) < 1e-9);
  /* A counter going backwards (a recreated group) is no usage, not a huge one. */
  ic_usage_add(&u, 6 * MS, 1 * MS, 10 * MS);
  CHECK(ic_usage_pct(&u, 1 * MS) == 0);
  /* More samples than the ring holds: still right over the newest. */
  ic_usage_reset(&u);
  for (uint64_t t = 0; t < 3 * IC_USAGE_RING; t++)
    ic_usage_add(&u, t * MS, t * MS / 4, 10 * MS);
  CHECK(fabs(ic_usage_pct(&u, 100 * MS) - 25.0) < 0.5);
}

static void activity(void) {
  static ic_usage_t u;
  ic_usage_reset(&u);
  const uint64_t idle_after = 10 * MS;
  for (uint64_t t = 0; t <= 30; t++)
    ic_usage_add(&u, t * MS, 0, idle_after);
  CHECK(!ic_usage_active(&u, idle_after));
  ic_usage_add(&u, 31 * MS, 4 * MS, idle_after); /* first tick of a job */
  CHECK(ic_usage_active(&u, idle_after));
  CHECK(u.onset_ns == 30 * MS); /* last moment known idle */
  for (uint64_t t = 32; t <= 40; t++) /* charged again at 35 and 39 */
    ic_usage_add(&u, t * MS, (t >= 39 ? 12 : t >= 35 ? 8 : 4) * MS, idle_after);
  CHECK(ic_usage_active(&u, idle_after) && u.onset_ns == 30 * MS);
  for (uint64_t t = 41; t <= 49; t++)
    ic_usage_add(&u, t * MS, 12 * MS, idle_after);
  CHECK(ic_usage_active(&u, idle_after)); /* 10 ms after the last change: still active */
  ic_usage_add(&u, 50 * MS, 12 * MS, idle_after);
  CHECK(!ic_usage_active(&u, idle_after));
  ic_usage_add(&u, 60 * MS, 16 * MS, idle_after); /* a new job: a new onset */
  CHECK(ic_usage_active(&u, idle_after) && u.onset_ns == 50 * MS);
  /* Polled more slowly than idle_after: active means "moved since the last poll". */
  ic_usage_reset(&u);
  ic_usage_add(&u, 0, 0, idle_after);
  ic_usage_add(&u, 50 * MS, 3 * MS, idle_after);
  CHECK(ic_usage_active(&u, idle_after));
  ic_usage_add(&u, 100 * MS, 3 * MS, idle_after);
  CHECK(!ic_usage_active(&u, idle_after));
}



int main(void) {
  smoothing();
  activity();
  return TEST_RESULT();
}
