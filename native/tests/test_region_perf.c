/* Hardware counters: every event ends up either available or missing with a reason the
 * user can act on; where the PMU exists, counts come back for a repetition. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "ic_perf.h"
#include "ic_test.h"

static const char *const events[] = {"cycles", "instructions", "cache-references",
                                     "cache-misses", "L1-dcache-load-misses",
                                     "LLC-load-misses"};

static void test_reasons(void) {
  char buf[IC_PERF_REASON_MAX];
  CHECK(strstr(ic_perf_reason(ENOENT, 2, buf, sizeof buf), "no PMU"));
  CHECK(strstr(ic_perf_reason(EOPNOTSUPP, 2, buf, sizeof buf), "no PMU"));
  CHECK(!strcmp(ic_perf_reason(EACCES, 3, buf, sizeof buf), "perf_event_paranoid=3 forbids it"));
  CHECK(!strcmp(ic_perf_reason(EPERM, 2, buf, sizeof buf), "perf_event_paranoid=2 forbids it"));
  CHECK(strstr(ic_perf_reason(EPERM, INT_MIN, buf, sizeof buf), "permission denied"));
  CHECK(strstr(ic_perf_reason(ENOSYS, 0, buf, sizeof buf), "not available"));
  CHECK(!strcmp(ic_perf_reason(ENOMEM, 0, buf, sizeof buf), strerror(ENOMEM)));
}

/* Not inlined: inlined, GCC 12's -Wdangling-pointer (aarch64) takes the stream's buffer for the
   local `out` itself and warns on every use of the returned line. */
__attribute__((noinline)) static char *json_line(const ic_perf_t *p, int rep, bool summary) {
  char *out = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&out, &len);
  ic_json_t j;
  ic_json_begin(&j, f);
  if (summary)
    ic_perf_json_summary(&j, p);
  else
    ic_perf_json_counters(&j, p, rep);
  ic_json_end(&j);
  fclose(f);
  return out;
}

static volatile uint64_t sink;

static void test_open_and_report(void) {
  ic_perf_t p;
  CHECK(ic_perf_open(&p, 2));
  int available = ic_perf_navailable(&p);
  ic_perf_rep_begin(&p);
  uint64_t x = 1;
  for (int i = 0; i < 1000000; i++)
    x = x * 6364136223846793005ULL + 1;
  sink = x;
  ic_perf_rep_end(&p, 0);

  char *summary = json_line(&p, 0, true);
  printf("%s", summary);
  /* Each event is named once: in the available list or with its reason. */
  for (size_t i = 0; i < sizeof events / sizeof events[0]; i++) {
    char quoted[64];
    snprintf(quoted, sizeof quoted, "\"%s\"", events[i]);
    char *first = strstr(summary, quoted);
    CHECK(first && !strstr(first + 1, quoted));
    if (p.fd[i] < 0)
      CHECK(p.reason[i][0] != '\0');
  }
  const char *head = "{\"counters_available\":[";
  CHECK(!strncmp(summary, head, strlen(head)));
  CHECK(strstr(summary, "\"counters_missing\":{") != NULL);

  char *counters = json_line(&p, 0, false);
  if (!available) {
    CHECK(!strcmp(counters, "{}\n"));
  } else {
    head = "{\"counters\":{";
    CHECK(!strncmp(counters, head, strlen(head)));
    /* A million multiply-adds retire at least a million instructions. */
    if (p.fd[1] >= 0)
      CHECK(p.counts[1] >= 1000000);
    printf("%s", counters);
  }
  /* The second repetition never ran: its counts stay unknown. */
  CHECK(p.counts[IC_PERF_NEVENTS] == -1);
  free(summary);
  free(counters);
  ic_perf_close(&p);
}

int main(void) {
  test_reasons();
  test_open_and_report();
  return TEST_RESULT();
}
