/* The monitor's pure parts: usage smoothing against tick-sized steps, activity and its
 * onset, nearest-rank percentiles, cpu.stat parsing and the log line. */
#include <math.h>
#include <string.h>

#include "cgroup.h"
#include "ic_test.h"
#include "latency.h"
#include "log.h"
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

static void cpu_stat(void) {
  uint64_t ns;
  CHECK(ic_cpu_stat_usage_ns("usage_usec 1234\nuser_usec 1000\nsystem_usec 234\n", &ns) &&
        ns == 1234000);
  CHECK(ic_cpu_stat_usage_ns("nr_periods 0\nusage_usec 5\n", &ns) && ns == 5000);
  CHECK(ic_cpu_stat_usage_ns("usage_usec 7", &ns) && ns == 7000);
  CHECK(!ic_cpu_stat_usage_ns("user_usec 1000\n", &ns));
  CHECK(!ic_cpu_stat_usage_ns("usage_usec x\n", &ns));
  CHECK(!ic_cpu_stat_usage_ns("usage_usec 12x\n", &ns));
  CHECK(!ic_cpu_stat_usage_ns("", &ns));
}

static void log_line(void) {
  char buf[512];
  ic_log_entry_t e = {.t_ns = 42, .action = "freeze", .group = "/cg/\"be\"", .reason = "release",
                      .job = 3, .has_latency = true, .latency_ns = -7, .by = "monitor"};
  size_t n = ic_log_format(buf, sizeof buf, &e);
  CHECK(n == strlen(buf) && buf[n - 1] == '\n');
  CHECK(!strcmp(buf, "{\"t_ns\":42,\"action\":\"freeze\",\"group\":\"/cg/\\\"be\\\"\",\"reason\":"
                     "\"release\",\"job\":3,\"latency_ns\":-7,\"by\":\"monitor\"}\n"));
  e = (ic_log_entry_t){.t_ns = 1, .action = "thaw", .group = "/g", .reason = "cap", .job = -1,
                       .error = 19, .by = "watchdog"};
  ic_log_format(buf, sizeof buf, &e);
  CHECK(strstr(buf, "\"error\":\"No such device\"") && !strstr(buf, "job") &&
        !strstr(buf, "latency"));
  CHECK(ic_log_format(buf, 10, &e) == 0); /* too small: nothing half-written */
}

int main(void) {
  smoothing();
  activity();
  percentiles();
  cpu_stat();
  log_line();
  return TEST_RESULT();
}
