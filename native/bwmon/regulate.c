/* ic-regulate: MemGuard from user space (docs/native-contract.md, "Regulator").
 *
 *   ic-regulate --best-effort DIR[,DIR] [--critical DIR] --period 1ms
 *               (--event TYPE:CONFIG[:CONFIG1] --budget N | --probe SIZE:LINES --threshold NS)
 *
 * Each best-effort cgroup gets a budget of events per period (a memory-traffic counter of the
 * CPU model, or any perf event). The counter is opened on the cgroup on every CPU
 * (PERF_FLAG_PID_CGROUP) with an overflow every budget/ncpus events, delivered as a real-time
 * signal to this thread (O_ASYNC, F_SETSIG, F_SETOWN_EX, PERF_EVENT_IOC_REFRESH): on each
 * overflow the group's total is read, and once it reaches the budget the group is frozen
 * (cgroup.freeze) or its threads are moved to SCHED_IDLE until the next period starts, when
 * every group is thawed and the counters reset. Where no counter sees memory traffic, the
 * latency probe stands in: this thread chases lines on its own core between periods, and a
 * window of probe samples above --threshold throttles every best-effort group until the
 * period ends. Critical groups are never written.
 *
 * Fail-safe: before it writes any group, the regulator starts ic-watchdog (a process in its
 * own session, on another CPU, at SCHED_FIFO 99) and registers every best-effort group with
 * it; the watchdog thaws them all when the regulator dies or stops renewing its lease. The
 * regulator thaws everything at start-up, at exit and on SIGINT/SIGTERM. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "arglist.h"
#include "client.h"
#include "ic_arch.h"
#include "ic_cgroup.h"
#include "ic_common.h"
#include "ic_latency.h"
#include "ic_opts.h"
#include "ic_perf.h"
#include "ic_tag.h"
#include "source.h"

enum { MAX_GROUPS = 16, MAX_CPUS = 256, MAX_PERIODS_LOGGED = 1 << 20 };

enum {
  O_BEST_EFFORT, O_CRITICAL, O_EVENT, O_BUDGET, O_PROBE, O_THRESHOLD, O_WINDOW,
  O_PROBE_INTERVAL, O_PERIOD, O_ACTION, O_GATE, O_LEASE, O_DURATION, O_LOG, O_CPU, O_RT,
  O_MLOCK, O_HELP
};

static const char *const actions[] = {"freeze", "idle", NULL};
enum { ACT_FREEZE, ACT_IDLE };

static const ic_opt_t opts[] = {
    [O_BEST_EFFORT] = {.name = "best-effort", .type = IC_OPT_STRING, .metavar = "DIR[,DIR]",
                       .help = "cgroup directories to regulate, each with its own budget; "
                               "repeatable"},
    [O_CRITICAL] = {.name = "critical", .type = IC_OPT_STRING, .metavar = "DIR[,DIR]",
                    .help = "cgroup directories never touched; a best-effort group inside or "
                            "around one is refused; repeatable"},
    [O_EVENT] = {.name = "event", .type = IC_OPT_STRING, .metavar = "TYPE:CONFIG[:CONFIG1]",
                 .help = "the perf event counted per group (a core event: uncore counters "
                         "cannot count a cgroup)"},
    [O_BUDGET] = {.name = "budget", .type = IC_OPT_U64, .min = 1,
                  .help = "events per period per group (with --event)"},
    [O_PROBE] = {.name = "probe", .type = IC_OPT_STRING, .metavar = "SIZE:LINES",
                 .help = "no counter: the latency probe on --cpu decides (with --threshold)"},
    [O_THRESHOLD] = {.name = "threshold", .type = IC_OPT_DURATION,
                     .help = "probe: a window whose median latency per line exceeds this is "
                             "memory pressure"},
    [O_WINDOW] = {.name = "window", .type = IC_OPT_U64, .def = "10", .min = 1, .max = 1024,
                  .help = "probe: samples per window"},
    [O_PROBE_INTERVAL] = {.name = "probe-interval", .type = IC_OPT_DURATION, .def = "20us",
                          .help = "probe: time between samples"},
    [O_PERIOD] = {.name = "period", .type = IC_OPT_DURATION, .def = "1ms",
                  .help = "regulation period, 100us..1s"},
    [O_ACTION] = {.name = "action", .type = IC_OPT_ENUM, .def = "freeze", .choices = actions,
                  .help = "freeze = cgroup freezer until the period ends; idle = the group's "
                          "threads to SCHED_IDLE until then"},
    [O_GATE] = {.name = "gate", .type = IC_OPT_STRING, .metavar = "FILE",
                .help = "regulate only while the u32 at offset 0 of FILE is not 0 (ic-gang's "
                        "running-gang count: RT-Gang throttles only while a gang runs)"},
    [O_LEASE] = {.name = "lease", .type = IC_OPT_DURATION, .def = "100ms",
                 .help = "the watchdog thaws every group when the heartbeat is older, "
                         "10ms..10s and at least two periods"},
    [O_DURATION] = {.name = "duration", .type = IC_OPT_DURATION, .def = "0",
                    .help = "exit after this long; 0: until SIGINT/SIGTERM"},
    [O_LOG] = {.name = "log", .type = IC_OPT_STRING, .metavar = "FILE",
               .help = "one JSON line per group and period that was throttled"},
    [O_CPU] = IC_OPT_ENTRY_CPU,
    [O_RT] = IC_OPT_ENTRY_RT_PRIORITY,
    [O_MLOCK] = IC_OPT_ENTRY_MLOCK,
    [O_HELP] = IC_OPT_ENTRY_HELP,
};

typedef struct {
  ic_cgroup_t cg;
  char dir[PATH_MAX];
  char spec[PATH_MAX]; /* ic_cgroup_open keeps pointers into it */
  int fd[MAX_CPUS];
  int nfd;
  bool throttled;
  uint64_t throttled_at_ns, count_at_throttle;
  /* idle action: the threads we moved, to move back */
  pid_t *idled;
  size_t nidled, capidled;
  /* statistics */
  uint64_t throttles, write_errors;
  ic_latency_t overshoot; /* events over budget at the end of each throttled period */
  ic_latency_t react;     /* overflow signal -> throttle write returned, ns */
} group_t;

static struct {
  group_t g[MAX_GROUPS];
  int ng;
  int action;
  uint64_t budget, period_ns;
  bool probe_mode;
  ic_src_t probe;
  uint64_t threshold_ticks, probe_interval_ns;
  uint32_t window;
  volatile const uint32_t *gate;
  FILE *log;
  uint64_t periods, signals, gated_periods, probe_samples, pressure_windows;
  int sig;
} R = {.sig = -1};

static void usage(FILE *f) {
  fprintf(f, "usage: ic-regulate --best-effort DIR[,DIR] --period D (--event T:C --budget N | "
             "--probe SIZE:LINES --threshold D) [options]\n\n"
             "MemGuard-style bandwidth budgets per best-effort cgroup, enforced by the "
             "freezer.\n\noptions:\n");
  ic_opts_help(f, opts, IC_NOPTS(opts));
  ic_opts_units_help(f);
}

/* ---- acting on a group ---------------------------------------------------------------------- */

static void idle_threads(group_t *g, bool idle) {
  if (!idle) {
    struct sched_param sp = {0};
    for (size_t i = 0; i < g->nidled; i++)
      sched_setscheduler(g->idled[i], SCHED_OTHER, &sp);
    g->nidled = 0;
    return;
  }
  char path[PATH_MAX + 32];
  snprintf(path, sizeof path, "%s/cgroup.threads", g->dir);
  FILE *f = fopen(path, "r");
  if (!f) {
    snprintf(path, sizeof path, "%s/tasks", g->dir);
    f = fopen(path, "r");
  }
  if (!f) {
    g->write_errors++;
    return;
  }
  long tid;
  struct sched_param sp = {0};
  while (fscanf(f, "%ld", &tid) == 1) {
    /* Only what runs SCHED_OTHER: a real-time thread in a best-effort group is left alone. */
    if (sched_getscheduler((pid_t)tid) != SCHED_OTHER)
      continue;
    if (sched_setscheduler((pid_t)tid, SCHED_IDLE, &sp))
      continue;
    if (g->nidled == g->capidled) {
      size_t cap = g->capidled ? 2 * g->capidled : 64;
      pid_t *p = realloc(g->idled, cap * sizeof *p);
      if (!p)
        break;
      g->idled = p;
      g->capidled = cap;
    }
    g->idled[g->nidled++] = (pid_t)tid;
  }
  fclose(f);
}

static void throttle(group_t *g, bool on) {
  if (R.action == ACT_FREEZE) {
    if (ic_cgroup_set_frozen(&g->cg, on))
      g->write_errors++;
  } else {
    idle_threads(g, on);
  }
  g->throttled = on;
}

static void release_all(void) {
  for (int i = 0; i < R.ng; i++)
    throttle(&R.g[i], false);
}

/* ---- counters --------------------------------------------------------------------------------- */

static uint64_t group_count(const group_t *g) {
  uint64_t total = 0, v;
  for (int i = 0; i < g->nfd; i++)
    if (read(g->fd[i], &v, sizeof v) == (ssize_t)sizeof v)
      total += v;
  return total;
}

/* The first overflow of a period comes after each CPU's share of the budget. IOC_PERIOD
 * restarts the countdown, which IOC_RESET alone leaves where the last period stopped it. */
static void rearm(const group_t *g) {
  uint64_t share = R.budget / (uint64_t)g->nfd ? R.budget / (uint64_t)g->nfd : 1;
  for (int i = 0; i < g->nfd; i++) {
    ioctl(g->fd[i], PERF_EVENT_IOC_RESET, 0);
    ioctl(g->fd[i], PERF_EVENT_IOC_PERIOD, &share);
    ioctl(g->fd[i], PERF_EVENT_IOC_REFRESH, 1);
  }
}

static void disarm(const group_t *g) {
  for (int i = 0; i < g->nfd; i++)
    ioctl(g->fd[i], PERF_EVENT_IOC_DISABLE, 0);
}

static void open_counters(group_t *g, uint32_t type, uint64_t config, uint64_t config1) {
  int cpus[MAX_CPUS];
  int n = ic_online_cpus(cpus, MAX_CPUS);
  int cgfd = open(g->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (cgfd < 0)
    ic_die(IC_EXIT_FAIL, "%s: %s", g->dir, strerror(errno));
  struct perf_event_attr a;
  memset(&a, 0, sizeof a);
  a.size = sizeof a;
  a.type = type;
  a.config = config;
  a.config1 = config1;
  a.exclude_hv = 1;
  a.disabled = 1;
  /* Every CPU signals after its share of the budget; the group's total decides, and what is
   * left sets the next signal (on_overflow). */
  a.sample_period = R.budget / (uint64_t)n ? R.budget / (uint64_t)n : 1;
  a.wakeup_events = 1;
  struct f_owner_ex owner = {F_OWNER_TID, (pid_t)gettid()};
  for (int i = 0; i < n; i++) {
    int fd = ic_perf_event_open(&a, cgfd, cpus[i], -1, PERF_FLAG_PID_CGROUP);
    if (fd < 0) {
      char why[128];
      ic_perf_reason(-fd, INT_MIN, why, sizeof why);
      ic_die(IC_EXIT_UNSUPPORTED, "cannot count %s on CPU %d: %s", g->dir, cpus[i], why);
    }
    if (fcntl(fd, F_SETFL, O_ASYNC) || fcntl(fd, F_SETSIG, R.sig) ||
        fcntl(fd, F_SETOWN_EX, &owner))
      ic_die(IC_EXIT_FAIL, "cannot route overflow signals: %s", strerror(errno));
    g->fd[g->nfd++] = fd;
  }
  close(cgfd);
}

static group_t *group_of_fd(int fd) {
  for (int i = 0; i < R.ng; i++)
    for (int k = 0; k < R.g[i].nfd; k++)
      if (R.g[i].fd[k] == fd)
        return &R.g[i];
  return NULL;
}

/* One overflow: read the group's total; at the budget, throttle it until the period ends. */
static void on_overflow(int fd, uint64_t signal_ns) {
  group_t *g = group_of_fd(fd);
  R.signals++;
  if (!g || g->throttled)
    return;
  uint64_t count = group_count(g);
  if (count < R.budget) {
    /* Next signal when the group could have spent what is left, all of it here. */
    uint64_t left = R.budget - count;
    ioctl(fd, PERF_EVENT_IOC_PERIOD, &left);
    ioctl(fd, PERF_EVENT_IOC_REFRESH, 1);
    return;
  }
  throttle(g, true);
  uint64_t now = ic_now_ns();
  g->throttles++;
  g->throttled_at_ns = now;
  g->count_at_throttle = count;
  ic_latency_add(&g->react, (int64_t)(now - signal_ns));
}

/* ---- periods ---------------------------------------------------------------------------------- */

static void log_period(const group_t *g, uint64_t period, uint64_t count) {
  if (!R.log)
    return;
  ic_json_t j;
  ic_json_begin(&j, R.log);
  ic_json_u64(&j, "period", period);
  ic_json_str(&j, "group", g->dir);
  ic_json_u64(&j, "count", count);
  ic_json_u64(&j, "budget", R.budget);
  ic_json_u64(&j, "throttled_ns", g->throttled_at_ns);
  ic_json_u64(&j, "count_at_throttle", g->count_at_throttle);
  ic_json_close(&j); /* not ic_json_end: a flush every period would cost the regulator */
  fputc('\n', R.log);
}

/* The end of a period: record overshoots, thaw, reset and re-arm. */
static void period_end(bool regulating) {
  R.periods++;
  for (int i = 0; i < R.ng; i++) {
    group_t *g = &R.g[i];
    if (!R.probe_mode) {
      uint64_t count = group_count(g);
      if (g->throttled) {
        ic_latency_add(&g->overshoot, (int64_t)(count > R.budget ? count - R.budget : 0));
        log_period(g, R.periods, count);
      }
    } else if (g->throttled) {
      log_period(g, R.periods, 0);
    }
    if (g->throttled)
      throttle(g, false);
    if (!R.probe_mode) {
      if (regulating)
        rearm(g);
      else
        disarm(g);
    }
  }
}

static bool gate_open(void) { return !R.gate || __atomic_load_n(R.gate, __ATOMIC_ACQUIRE); }

/* Counter mode: sleep in sigtimedwait until an overflow or the period's end. */
static void wait_counters(uint64_t until_ns, const sigset_t *set) {
  for (;;) {
    uint64_t now = ic_now_ns();
    if (now >= until_ns || ic_stop_requested)
      return;
    uint64_t left = until_ns - now;
    struct timespec ts = {(time_t)(left / 1000000000u), (long)(left % 1000000000u)};
    siginfo_t si;
    int s = sigtimedwait(set, &si, &ts);
    if (s == R.sig)
      on_overflow(si.si_fd, ic_now_ns());
    else if (s == SIGINT || s == SIGTERM)
      ic_stop_requested = 1;
  }
}

/* Probe mode: chase on our own core until the period's end; a window over the threshold
 * throttles every group at once. */
static void wait_probe(uint64_t until_ns, uint64_t *window_buf, uint32_t *fill) {
  while (!ic_stop_requested) {
    uint64_t now = ic_now_ns();
    if (now >= until_ns)
      return;
    uint64_t t = ic_src_read(&R.probe);
    R.probe_samples++;
    window_buf[(*fill)++ % R.window] = t;
    if (*fill >= R.window) {
      uint64_t tmp[1024];
      memcpy(tmp, window_buf, R.window * sizeof *tmp);
      /* Insertion sort: the window is small. */
      for (uint32_t i = 1; i < R.window; i++)
        for (uint32_t k = i; k > 0 && tmp[k - 1] > tmp[k]; k--) {
          uint64_t x = tmp[k];
          tmp[k] = tmp[k - 1];
          tmp[k - 1] = x;
        }
      if (tmp[R.window / 2] > R.threshold_ticks) {
        R.pressure_windows++;
        uint64_t seen = ic_now_ns();
        for (int i = 0; i < R.ng; i++) {
          group_t *g = &R.g[i];
          if (g->throttled)
            continue;
          throttle(g, true);
          g->throttles++;
          g->throttled_at_ns = ic_now_ns();
          ic_latency_add(&g->react, (int64_t)(g->throttled_at_ns - seen));
        }
        *fill = 0;
      }
    }
    uint64_t next = now + R.probe_interval_ns;
    while (ic_now_ns() < next && ic_now_ns() < until_ns && !ic_stop_requested)
      ic_arch_relax();
  }
}

/* ---- set-up ----------------------------------------------------------------------------------- */

static bool inside(const char *a, const char *b) {
  size_t n = strlen(b);
  return !strncmp(a, b, n) && (a[n] == '/' || a[n] == '\0');
}

static void add_groups(const ic_arglist_t *best, const ic_arglist_t *critical) {
  for (size_t i = 0; i < best->n; i++) {
    if (R.ng == MAX_GROUPS)
      ic_usage_error("--best-effort", "at most %d groups", MAX_GROUPS);
    group_t *g = &R.g[R.ng];
    if (!realpath(best->items[i], g->dir))
      ic_usage_error("--best-effort", "%s: %s", best->items[i], strerror(errno));
    for (size_t k = 0; k < critical->n; k++) {
      char crit[PATH_MAX];
      if (realpath(critical->items[k], crit) && (inside(g->dir, crit) || inside(crit, g->dir)))
        ic_usage_error("--best-effort", "%s overlaps the critical group %s: critical groups "
                       "are never touched", g->dir, crit);
    }
    char why[256];
    memcpy(g->spec, g->dir, sizeof g->spec); /* same size: realpath filled dir */
    if (!ic_cgroup_open(&g->cg, g->spec, IC_ROLE_BEST_EFFORT, why, sizeof why))
      ic_usage_error("--best-effort", "%s", why);
    if (R.action == ACT_FREEZE && g->cg.freezer == IC_FREEZER_NONE)
      ic_usage_error("--best-effort", "%s has no freezer (use --action idle)", g->dir);
    if (ic_cgroup_holds(&g->cg, getpid()))
      ic_usage_error("--best-effort", "%s holds the regulator itself", g->dir);
    if (!ic_latency_init(&g->overshoot, 1 << 16) || !ic_latency_init(&g->react, 1 << 16))
      ic_die(IC_EXIT_FAIL, "out of memory");
    R.ng++;
  }
}

static void print_ready(const ic_wd_t *w, bool rt, const ic_optval_t *o) {
  ic_json_t j;
  ic_json_begin(&j, stdout);
  ic_json_str(&j, "event", "ready");
  ic_json_i64(&j, "pid", getpid());
  ic_json_i64(&j, "watchdog_pid", w->pid);
  ic_json_bool(&j, "watchdog_rt", w->rt);
  ic_json_str(&j, "mode", R.probe_mode ? "probe" : "counter");
  ic_json_str(&j, "action", actions[R.action]);
  ic_json_u64(&j, "period_ns", R.period_ns);
  ic_json_u64(&j, "budget", R.budget);
  ic_json_array(&j, "groups");
  for (int i = 0; i < R.ng; i++) {
    ic_json_object(&j, NULL);
    ic_json_str(&j, "path", R.g[i].dir);
    ic_json_str(&j, "freezer", ic_freezer_name(R.g[i].cg.freezer));
    ic_json_i64(&j, "counters", R.g[i].nfd);
    ic_json_pop(&j);
  }
  ic_json_pop(&j);
  ic_json_i64(&j, "cpu", o[O_CPU].set ? (int64_t)o[O_CPU].u : -1);
  ic_json_bool(&j, "rt", rt);
  ic_json_bool(&j, "gated", R.gate != NULL);
  ic_json_end(&j);
}

/* {"n","p50","p99","max"} of a sample set (nearest rank); nulls when empty. */
static void latency_json(ic_json_t *j, const char *key, ic_latency_t *l) {
  ic_latency_sort(l);
  ic_json_object(j, key);
  ic_json_u64(j, "n", l->n);
  if (!l->n) {
    ic_json_null(j, "p50");
    ic_json_null(j, "p99");
    ic_json_null(j, "max");
  } else {
    ic_json_i64(j, "p50", ic_percentile_sorted(l->ns, l->n, 50));
    ic_json_i64(j, "p99", ic_percentile_sorted(l->ns, l->n, 99));
    ic_json_i64(j, "max", l->ns[l->n - 1]);
  }
  ic_json_pop(j);
}

static void print_stats(uint64_t wall_ns, uint64_t cpu_ns, uint64_t wd_cpu_ns, uint64_t expiries) {
  ic_json_t j;
  ic_json_begin(&j, stdout);
  ic_json_str(&j, "event", "stats");
  ic_json_str(&j, "mode", R.probe_mode ? "probe" : "counter");
  ic_json_u64(&j, "wall_ns", wall_ns);
  ic_json_u64(&j, "cpu_ns", cpu_ns);
  ic_json_f64(&j, "overhead_pct", wall_ns ? 100.0 * (double)cpu_ns / (double)wall_ns : NAN);
  ic_json_u64(&j, "watchdog_cpu_ns", wd_cpu_ns);
  ic_json_u64(&j, "periods", R.periods);
  ic_json_u64(&j, "gated_periods", R.gated_periods);
  ic_json_u64(&j, "signals", R.signals);
  ic_json_u64(&j, "probe_samples", R.probe_samples);
  ic_json_u64(&j, "pressure_windows", R.pressure_windows);
  ic_json_u64(&j, "lease_expiries", expiries);
  ic_json_end(&j);
  for (int i = 0; i < R.ng; i++) {
    group_t *g = &R.g[i];
    ic_json_begin(&j, stdout);
    ic_json_str(&j, "event", "group");
    ic_json_str(&j, "path", g->dir);
    ic_json_u64(&j, "throttles", g->throttles);
    ic_json_u64(&j, "write_errors", g->write_errors);
    latency_json(&j, "overshoot", &g->overshoot);
    latency_json(&j, "react_ns", &g->react);
    ic_json_end(&j);
  }
}

int main(int argc, char **argv) {
  ic_set_progname("ic-regulate");
  ic_optval_t o[IC_NOPTS(opts)];
  ic_arglist_t best, critical;
  ic_arglist_collect(&best, argc, argv, "best-effort");
  ic_arglist_collect(&critical, argc, argv, "critical");
  ic_opts_main(&(ic_optset_t){opts, IC_NOPTS(opts), o}, argc, argv, O_HELP, usage);
  R.action = (int)o[O_ACTION].u;
  R.period_ns = (uint64_t)(o[O_PERIOD].d * 1e9 + 0.5);
  R.probe_mode = o[O_PROBE].set;
  if (!best.n)
    ic_usage_error("--best-effort", "at least one group to regulate");
  if (R.period_ns < 100000 || R.period_ns > 1000000000)
    ic_usage_error("--period", "must be 100us..1s");
  if (R.probe_mode == o[O_EVENT].set)
    ic_usage_error("--event", "give --event with --budget, or --probe with --threshold");
  if (!R.probe_mode && !o[O_BUDGET].set)
    ic_usage_error("--budget", "events per period are needed with --event");
  if (R.probe_mode && !o[O_THRESHOLD].set)
    ic_usage_error("--threshold", "the probe needs a latency threshold");
  uint64_t lease = (uint64_t)(o[O_LEASE].d * 1e9);
  if (lease < 10000000 || lease > 10000000000ULL || lease < 2 * R.period_ns)
    ic_usage_error("--lease", "must be 10ms..10s and at least two periods");
  R.budget = o[O_BUDGET].u;
  uint64_t type = 0, config = 0, config1 = 0;
  if (!R.probe_mode) {
    char spec[128];
    snprintf(spec, sizeof spec, "%s", o[O_EVENT].s);
    char *f1 = strtok(spec, ":"), *f2 = strtok(NULL, ":"), *f3 = strtok(NULL, ":");
    if (!f1 || !f2 || !ic_parse_u64(f1, &type) || !ic_parse_u64(f2, &config) ||
        (f3 && !ic_parse_u64(f3, &config1)) || type > UINT32_MAX)
      ic_usage_error("--event", "'%s' is not TYPE:CONFIG[:CONFIG1]", o[O_EVENT].s);
  }
  add_groups(&best, &critical); /* copies the paths it keeps */
  ic_arglist_free(&best);
  ic_arglist_free(&critical);
  if (o[O_LOG].set) {
    int fd = open(o[O_LOG].s, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 || !(R.log = fdopen(fd, "a")))
      ic_usage_error("--log", "%s: %s", o[O_LOG].s, strerror(errno));
  }
  if (o[O_GATE].set) {
    int fd = open(o[O_GATE].s, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    void *p = fd < 0 ? MAP_FAILED : mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
      ic_usage_error("--gate", "%s: %s", o[O_GATE].s, strerror(errno));
    close(fd);
    R.gate = p;
  }

  /* The watchdog first: nothing is written before it guards every group. */
  char why[512];
  ic_wd_t w;
  int cpu = o[O_CPU].set ? (int)o[O_CPU].u : -1;
  if (!ic_wd_start(&w, &(ic_wd_config_t){.name = "regulator", .avoid_cpu = cpu,
                                          .lease_ns = lease, .log_fd = -1},
                   why, sizeof why))
    ic_die(IC_EXIT_FAIL, "cannot start the watchdog: %s", why);
  for (int i = 0; i < R.ng; i++)
    if (!ic_wd_guard(&w, R.g[i].dir, why, sizeof why))
      ic_die(IC_EXIT_FAIL, "%s", why);
  release_all(); /* whatever an earlier run left */

  ic_catch_stop_signals(0);
  R.sig = SIGRTMIN + 1;
  sigset_t set_sigs;
  sigemptyset(&set_sigs);
  sigaddset(&set_sigs, R.sig);
  sigaddset(&set_sigs, SIGINT);
  sigaddset(&set_sigs, SIGTERM);
  /* Counter mode takes every signal in sigtimedwait; the probe never sleeps, so it leaves the
   * stop signals to their handler and polls the flag. */
  if (R.probe_mode) {
    sigset_t rt;
    sigemptyset(&rt);
    sigaddset(&rt, R.sig);
    sigprocmask(SIG_BLOCK, &rt, NULL);
  } else {
    sigprocmask(SIG_BLOCK, &set_sigs, NULL);
  }

  if (cpu >= 0)
    ic_pin_cpu_or_die(cpu);
  if (R.probe_mode) {
    char spec[128];
    snprintf(spec, sizeof spec, "probe:%s", o[O_PROBE].s);
    if (!ic_src_parse(&R.probe, spec, why, sizeof why))
      ic_usage_error("--probe", "%s", why);
    if (!ic_src_open(&R.probe, 0, 1, why, sizeof why))
      ic_die(IC_EXIT_FAIL, "%s", why);
    R.window = (uint32_t)o[O_WINDOW].u;
    double hz = 0;
    uint64_t n0 = ic_now_ns(), t0 = ic_tick();
    while (ic_now_ns() - n0 < 10000000u)
      ic_arch_relax();
    hz = (double)(ic_tick() - t0) * 1e9 / (double)(ic_now_ns() - n0);
    R.threshold_ticks = (uint64_t)(o[O_THRESHOLD].d * hz * (double)ic_src_probe_lines(&R.probe));
    R.probe_interval_ns = (uint64_t)(o[O_PROBE_INTERVAL].d * 1e9);
  } else {
    for (int i = 0; i < R.ng; i++)
      open_counters(&R.g[i], (uint32_t)type, config, config1);
  }
  if (o[O_MLOCK].set)
    ic_lock_memory();
  bool rt = o[O_RT].set && ic_set_rt_priority((int)o[O_RT].u);
  if (!ic_wd_arm(&w, lease, why, sizeof why))
    ic_die(IC_EXIT_FAIL, "the watchdog refused the lease: %s", why);
  print_ready(&w, rt, o);

  uint64_t window_buf[1024];
  uint32_t fill = 0;
  uint64_t start = ic_now_ns(), next = start + R.period_ns;
  uint64_t end = o[O_DURATION].d > 0 ? start + (uint64_t)(o[O_DURATION].d * 1e9) : UINT64_MAX;
  bool regulating = gate_open();
  if (!R.probe_mode)
    for (int i = 0; i < R.ng; i++)
      regulating ? rearm(&R.g[i]) : disarm(&R.g[i]);
  uint64_t cpu0 = ic_process_cpu_ns();
  while (!ic_stop_requested && ic_now_ns() < end) {
    if (regulating) {
      if (R.probe_mode)
        wait_probe(next, window_buf, &fill);
      else
        wait_counters(next, &set_sigs);
    } else {
      wait_counters(next, &set_sigs); /* no counter is armed: only stop signals */
      R.gated_periods++;
    }
    ic_wd_beat(&w, ic_now_ns());
    if (ic_wd_expired(&w))
      for (int i = 0; i < R.ng; i++) /* the watchdog thawed them: start the period afresh */
        R.g[i].throttled = false;
    regulating = gate_open();
    period_end(regulating);
    next += R.period_ns;
    uint64_t now = ic_now_ns();
    if (now > next) /* we were late: the missed periods are gone, not repaid */
      next = now + R.period_ns;
  }
  uint64_t cpu_ns = ic_process_cpu_ns() - cpu0;
  release_all();
  uint64_t wall = ic_now_ns() - start;
  uint64_t expiries = ic_wd_expiries(&w);
  uint64_t wd_cpu = ic_wd_stop(&w);
  if (R.log)
    fclose(R.log);
  print_stats(wall, cpu_ns, wd_cpu, expiries);
  return IC_EXIT_OK;
}
