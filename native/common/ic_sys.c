/* Clocks, placement and scheduling: the calls whose failure modes differ between a
 * laptop, a VM and a locked-down board, with one reaction each. */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "ic_common.h"

static uint64_t clock_ns(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

uint64_t ic_now_ns(void) { return clock_ns(CLOCK_MONOTONIC); }

uint64_t ic_thread_cpu_ns(void) { return clock_ns(CLOCK_THREAD_CPUTIME_ID); }

uint64_t ic_process_cpu_ns(void) { return clock_ns(CLOCK_PROCESS_CPUTIME_ID); }

/* The kernel's list of online CPUs ("0-3,6"), for an error message that helps. */
static const char *online_cpus(char *buf, size_t cap) {
  FILE *f = fopen("/sys/devices/system/cpu/online", "r");
  if (!f || !fgets(buf, (int)cap, f))
    snprintf(buf, cap, "unknown");
  if (f)
    fclose(f);
  buf[strcspn(buf, "\n")] = '\0';
  return buf;
}

void ic_pin_cpu_or_die(int cpu) {
  char online[256];
  if (cpu < 0 || cpu >= CPU_SETSIZE)
    ic_usage_error("--cpu", "CPU %d does not exist (online: %s)", cpu,
                   online_cpus(online, sizeof online));
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  /* EINVAL covers absent, offline and outside our cpuset alike: all are the caller's
   * choice of CPU, hence a usage error rather than a failure. */
  if (sched_setaffinity(0, sizeof set, &set))
    ic_usage_error("--cpu", "cannot run on CPU %d: %s (online: %s)", cpu, strerror(errno),
                   online_cpus(online, sizeof online));
}

bool ic_set_rt_priority(int prio) {
  struct sched_param sp = {.sched_priority = prio};
  if (sched_setscheduler(0, SCHED_FIFO, &sp) == 0)
    return true;
  ic_warn("--rt-priority %d refused (%s); running SCHED_OTHER", prio, strerror(errno));
  return false;
}

bool ic_lock_memory(void) {
  if (mlockall(MCL_CURRENT | MCL_FUTURE) == 0)
    return true;
  ic_warn("--mlock refused (%s); pages may be reclaimed during the run", strerror(errno));
  return false;
}

/* glibc answers 0 for the line size on many Arm systems; sysfs usually knows. */
static size_t sysfs_line_size(void) {
  FILE *f = fopen("/sys/devices/system/cpu/cpu0/cache/index0/coherency_line_size", "r");
  unsigned long v = 0;
  if (f) {
    if (fscanf(f, "%lu", &v) != 1)
      v = 0;
    fclose(f);
  }
  return v;
}

size_t ic_line_size(void) {
  long v = sysconf(_SC_LEVEL1_DCACHE_LINESIZE);
  size_t line = v > 0 ? (size_t)v : sysfs_line_size();
  /* A line size that is not a power of two is a misreport: kernels index by it. */
  if (line < 16 || (line & (line - 1)))
    line = 64;
  return line;
}

bool ic_write_all(int fd, const void *buf, size_t n) {
  const char *p = buf;
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return false;
    p += w;
    n -= (size_t)w;
  }
  return true;
}

volatile sig_atomic_t ic_stop_requested;

static void on_stop(int sig) {
  (void)sig;
  ic_stop_requested = 1;
}

void ic_catch_stop_signals(int flags) {
  struct sigaction sa = {.sa_handler = on_stop, .sa_flags = flags};
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
}
