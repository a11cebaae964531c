/* Per-thread hardware counters through perf_event_open (ic_perf.h). */
#include "ic_perf.h"

#include <errno.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define HW_CACHE(cache, op, result) \
  ((cache) | ((op) << 8) | ((result) << 16))

/* Names as perf(1) spells them, so users recognise them. */
static const struct {
  const char *name;
  uint32_t type;
  uint64_t config;
} events[IC_PERF_NEVENTS] = {
    {"cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
    {"instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS},
    {"cache-references", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES},
    {"cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES},
    {"L1-dcache-load-misses", PERF_TYPE_HW_CACHE,
     HW_CACHE(PERF_COUNT_HW_CACHE_L1D, PERF_COUNT_HW_CACHE_OP_READ,
              PERF_COUNT_HW_CACHE_RESULT_MISS)},
    {"LLC-load-misses", PERF_TYPE_HW_CACHE,
     HW_CACHE(PERF_COUNT_HW_CACHE_LL, PERF_COUNT_HW_CACHE_OP_READ,
              PERF_COUNT_HW_CACHE_RESULT_MISS)},
};

static int read_paranoid(void) {
  FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
  int v;
  if (!f)
    return INT_MIN;
  if (fscanf(f, "%d", &v) != 1)
    v = INT_MIN;
  fclose(f);
  return v;
}

const char *ic_perf_reason(int err, int paranoid, char *buf, size_t cap) {
  switch (err) {
  case ENOENT:
  case EOPNOTSUPP:
  case ENODEV:
    snprintf(buf, cap, "not supported by this CPU or hypervisor (no PMU)");
    break;
  case EACCES:
  case EPERM:
    if (paranoid == INT_MIN)
      snprintf(buf, cap, "permission denied (perf_event_paranoid or a seccomp filter)");
    else
      snprintf(buf, cap, "perf_event_paranoid=%d forbids it", paranoid);
    break;
  case ENOSYS:
    snprintf(buf, cap, "perf_event_open is not available in this kernel");
    break;
  case EMFILE:
  case ENFILE:
    snprintf(buf, cap, "no file descriptor left");
    break;
  case EBUSY:
    snprintf(buf, cap, "the PMU is busy (claimed by another user)");
    break;
  case EINVAL:
    snprintf(buf, cap, "rejected by the kernel (event not valid on this PMU)");
    break;
  default:
    snprintf(buf, cap, "%s", strerror(err));
  }
  return buf;
}

static int open_event(int i) {
  struct perf_event_attr a;
  memset(&a, 0, sizeof a);
  a.size = sizeof a;
  a.type = events[i].type;
  a.config = events[i].config;
  a.exclude_kernel = 1;
  a.exclude_hv = 1;
  /* With more events than counters the kernel multiplexes; the times let us scale. */
  a.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
  return (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

bool ic_perf_open(ic_perf_t *p, int max_reps) {
  memset(p, 0, sizeof *p);
  p->counts = malloc((size_t)max_reps * IC_PERF_NEVENTS * sizeof *p->counts);
  if (!p->counts) {
    for (int i = 0; i < IC_PERF_NEVENTS; i++)
      p->fd[i] = -1;
    return false;
  }
  p->max_reps = max_reps;
  for (size_t i = 0; i < (size_t)max_reps * IC_PERF_NEVENTS; i++)
    p->counts[i] = -1;
  int paranoid = read_paranoid();
  for (int i = 0; i < IC_PERF_NEVENTS; i++) {
    p->fd[i] = open_event(i);
    if (p->fd[i] < 0)
      ic_perf_reason(errno, paranoid, p->reason[i], sizeof p->reason[i]);
  }
  return true;
}

void ic_perf_close(ic_perf_t *p) {
  for (int i = 0; i < IC_PERF_NEVENTS; i++)
    if (p->fd[i] >= 0)
      close(p->fd[i]);
  free(p->counts);
  memset(p, 0, sizeof *p);
  for (int i = 0; i < IC_PERF_NEVENTS; i++)
    p->fd[i] = -1;
}

int ic_perf_navailable(const ic_perf_t *p) {
  int n = 0;
  for (int i = 0; i < IC_PERF_NEVENTS; i++)
    n += p->fd[i] >= 0;
  return n;
}

static bool read_event(int fd, uint64_t v[3]) {
  return read(fd, v, 3 * sizeof v[0]) == (ssize_t)(3 * sizeof v[0]);
}

void ic_perf_rep_begin(ic_perf_t *p) {
  for (int i = 0; i < IC_PERF_NEVENTS; i++)
    if (p->fd[i] >= 0 && !read_event(p->fd[i], p->start[i]))
      memset(p->start[i], 0, sizeof p->start[i]);
}

/* The delta scaled up by enabled/running when the kernel multiplexed the counter;
 * -1 when it never ran during the repetition. */
static int64_t scaled_delta(const uint64_t a[3], const uint64_t b[3]) {
  uint64_t value = b[0] - a[0], enabled = b[1] - a[1], running = b[2] - a[2];
  if (!running)
    return -1;
  if (running >= enabled)
    return (int64_t)value;
  return (int64_t)((double)value * (double)enabled / (double)running);
}

void ic_perf_rep_end(ic_perf_t *p, int rep) {
  if (rep < 0 || rep >= p->max_reps)
    return;
  int64_t *row = &p->counts[(size_t)rep * IC_PERF_NEVENTS];
  for (int i = 0; i < IC_PERF_NEVENTS; i++) {
    uint64_t now[3];
    if (p->fd[i] >= 0 && read_event(p->fd[i], now))
      row[i] = scaled_delta(p->start[i], now);
  }
}

void ic_perf_json_counters(ic_json_t *j, const ic_perf_t *p, int rep) {
  if (!ic_perf_navailable(p) || rep < 0 || rep >= p->max_reps)
    return;
  const int64_t *row = &p->counts[(size_t)rep * IC_PERF_NEVENTS];
  ic_json_object(j, "counters");
  for (int i = 0; i < IC_PERF_NEVENTS; i++) {
    if (p->fd[i] < 0)
      continue;
    if (row[i] < 0)
      ic_json_null(j, events[i].name);
    else
      ic_json_i64(j, events[i].name, row[i]);
  }
  ic_json_pop(j);
}

void ic_perf_json_summary(ic_json_t *j, const ic_perf_t *p) {
  ic_json_array(j, "counters_available");
  for (int i = 0; i < IC_PERF_NEVENTS; i++)
    if (p->fd[i] >= 0)
      ic_json_str(j, NULL, events[i].name);
  ic_json_pop(j);
  ic_json_object(j, "counters_missing");
  for (int i = 0; i < IC_PERF_NEVENTS; i++)
    if (p->fd[i] < 0)
      ic_json_str(j, events[i].name, p->reason[i]);
  ic_json_pop(j);
}
