/* ic-manage: a run-time resource manager in the spirit of HARP (paper 000 §4.3.3).
 *
 *   ic-manage [options] -- APP [ARGS...]
 *
 * Launches APP (any OpenMP or pthread program), samples its threads every interval, ranks
 * them (rank.h: cache misses where a PMU exists, else CPU share, involuntary switches and the
 * predicted sensitivity given with --sensitivity NAME=DELTA) and gives the top ones a better
 * nice value (or SCHED_FIFO with --rt-priority), the others a worse one; with --pin also a
 * CPU each, the others the remaining CPUs. (Pinning helps on a quiet machine and hurts on a
 * shared one, where it takes the scheduler's freedom to dodge other load.) It never writes a cgroup file: a thread stays in
 * whatever group a plan put it, and its CPUs are only chosen among those it was allowed at
 * launch. Every decision is one JSON line on --log (stderr by default) with its inputs.
 *
 * Exit status: APP's; 2 for bad options; 3 when the host cannot do what was asked (reading
 * /proc/PID/task, SCHED_FIFO without the privilege), with the reason. */

#include <dirent.h>
#include <math.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "arglist.h"
#include "ic_common.h"
#include "ic_opts.h"
#include "rank.h"

#define MAX_THREADS 256
#define MAX_SENS 64

/* Rates are averaged from a thread's first sighting: a one-interval sample on a loaded
 * host is mostly scheduling noise. */
typedef struct {
  int tid;
  int perf_fd;
  uint64_t misses, cpu_ticks, nivcsw;
  double since;
  bool seen;
} track_t;

static struct {
  long interval_ms;
  cpu_set_t cpus;
  int ncpus;
  int top;
  int rt_priority;
  int omp_threads;
  bool pin; /* favoured threads get a CPU each; otherwise only their priority changes */
  FILE *log;
  char sens_name[MAX_SENS][16];
  double sens_value[MAX_SENS];
  int nsens;
} opt = {.interval_ms = 200, .top = -1};

static volatile sig_atomic_t forward_sig;
static pid_t child;

static void on_signal(int sig) {
  forward_sig = sig;
  if (child > 0)
    kill(child, sig);
}

enum { O_INTERVAL, O_CPUS, O_TOP, O_PIN, O_SENSITIVITY, O_OMP, O_RT, O_LOG, O_HELP };

static const ic_opt_t opts[] = {
    [O_INTERVAL] = {.name = "interval", .type = IC_OPT_U64, .def = "200", .min = 10,
                    .max = 60000, .metavar = "MS", .help = "sample and rank every MS ms"},
    [O_CPUS] = {.name = "cpus", .type = IC_OPT_STRING, .metavar = "LIST",
                .help = "the CPUs to share out (0-3,6), among those allowed at launch; "
                        "unset: all of those"},
    [O_TOP] = {.name = "top", .type = IC_OPT_U64, .max = 99, .metavar = "K",
               .help = "favour the K highest-ranked threads; unset: one less than the CPUs"},
    [O_PIN] = {.name = "pin", .type = IC_OPT_FLAG,
               .help = "also give each favoured thread a CPU of its own, the others the rest"},
    [O_SENSITIVITY] = {.name = "sensitivity", .type = IC_OPT_STRING, .metavar = "NAME=DELTA",
                       .help = "a thread whose name contains NAME has predicted slowdown DELTA "
                               "(> 0); repeatable or comma-separated"},
    [O_OMP] = {.name = "omp-threads", .type = IC_OPT_U64, .max = 99, .metavar = "N",
               .help = "set OMP_NUM_THREADS=N for APP; unset or 0: APP's own choice"},
    [O_RT] = {.name = "rt-priority", .type = IC_OPT_U64, .max = 99, .metavar = "P",
              .help = "favoured threads run SCHED_FIFO at P (refused: exit 3 before APP "
                      "starts); 0 or unset: nice -5 / +5 instead"},
    [O_LOG] = {.name = "log", .type = IC_OPT_STRING, .metavar = "FILE",
               .help = "one JSON line per decision; unset: stderr"},
    [O_HELP] = IC_OPT_ENTRY_HELP,
};

static void usage(FILE *f) {
  fprintf(f, "usage: ic-manage [options] -- APP [ARGS...]\n\n"
             "Runs APP and, every interval, ranks its threads (cache misses where a PMU exists,\n"
             "else CPU share, involuntary switches and --sensitivity) and favours the top ones.\n"
             "Exit status: APP's; 2 for bad options; 3 when the host cannot do what was asked.\n\n"
             "options:\n");
  ic_opts_help(f, opts, IC_NOPTS(opts));
}

static int parse_cpus(const char *s, cpu_set_t *set) {
  CPU_ZERO(set);
  char *copy = strdup(s), *save = NULL;
  int n = 0;
  for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    char *dash = strchr(tok, '-');
    char *end;
    long a = strtol(tok, &end, 10), b = a;
    if (end == tok || (dash && *end != '-') || (!dash && *end)) {
      free(copy);
      return -1;
    }
    if (dash) {
      b = strtol(dash + 1, &end, 10);
      if (*end || b < a) {
        free(copy);
        return -1;
      }
    }
    for (long c = a; c <= b && c < CPU_SETSIZE; c++, n++)
      CPU_SET((int)c, set);
  }
  free(copy);
  return n;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int open_misses(int tid) {
  struct perf_event_attr a;
  memset(&a, 0, sizeof a);
  a.size = sizeof a;
  a.type = PERF_TYPE_HARDWARE;
  a.config = PERF_COUNT_HW_CACHE_MISSES;
  a.exclude_kernel = 1;
  a.exclude_hv = 1;
  return (int)syscall(SYS_perf_event_open, &a, tid, -1, -1, 0);
}

static bool read_thread(pid_t pid, int tid, uint64_t *ticks, uint64_t *nivcsw, char *name) {
  char path[96], buf[1024];
  snprintf(path, sizeof path, "/proc/%d/task/%d/stat", (int)pid, tid);
  FILE *f = fopen(path, "r");
  if (!f)
    return false;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  char *open = strchr(buf, '('), *close = strrchr(buf, ')');
  if (!open || !close)
    return false;
  size_t len = (size_t)(close - open - 1);
  if (len > 15)
    len = 15;
  memcpy(name, open + 1, len);
  name[len] = 0;
  unsigned long long ut = 0, st = 0;
  /* after ") ": state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime */
  if (sscanf(close + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
    return false;
  *ticks = ut + st;
  snprintf(path, sizeof path, "/proc/%d/task/%d/status", (int)pid, tid);
  f = fopen(path, "r");
  if (!f)
    return false;
  *nivcsw = 0;
  while (fgets(buf, sizeof buf, f))
    if (sscanf(buf, "nonvoluntary_ctxt_switches: %llu", &ut) == 1)
      *nivcsw = ut;
  fclose(f);
  return true;
}

/* The largest predicted slowdown of the regions the thread's name mentions: a compiled
 * program names each task thread after its fused process (p_fir_fft runs fir and fft). */
static double sensitivity_of(const char *name) {
  double best = 0;
  for (int i = 0; i < opt.nsens; i++)
    if (strstr(name, opt.sens_name[i]) && opt.sens_value[i] > best)
      best = opt.sens_value[i];
  return best > 0 ? best : 1.0;
}

static void inputs_json(ic_json_t *j, const ic_thread_t *t, bool pmu) {
  ic_json_object(j, "inputs");
  ic_json_bool(j, "pmu", pmu);
  /* no PMU: no number (null), not 0 */
  ic_json_f64(j, "misses_per_s", t->misses_per_s >= 0 ? t->misses_per_s : NAN);
  ic_json_f64(j, "nivcsw_per_s", t->nivcsw_per_s);
  ic_json_f64(j, "cpu_share", t->cpu_share);
  ic_json_f64(j, "sensitivity", t->sensitivity);
  ic_json_pop(j);
}

static void action_json(ic_json_t *j, bool favoured, const cpu_set_t *cpus, int aff, int prio) {
  ic_json_object(j, "action");
  ic_json_bool(j, "favoured", favoured);
  ic_json_array(j, "cpus");
  for (int c = 0; c < CPU_SETSIZE; c++)
    if (CPU_ISSET(c, cpus))
      ic_json_i64(j, NULL, c);
  ic_json_pop(j);
  if (favoured && opt.rt_priority > 0) {
    ic_json_str(j, "policy", "SCHED_FIFO");
    ic_json_i64(j, "priority", opt.rt_priority);
  } else {
    ic_json_i64(j, "nice", favoured ? -5 : 5);
  }
  ic_json_object(j, "errors");
  ic_json_i64(j, "affinity", aff);
  ic_json_i64(j, "priority", prio);
  ic_json_pop(j);
  ic_json_pop(j);
}

static void log_decision(const ic_thread_t *t, int rank, double elapsed, bool pmu,
                         bool favoured, const cpu_set_t *set, int aff, int prio) {
  ic_json_t j;
  ic_json_begin(&j, opt.log);
  ic_json_str(&j, "event", "decision");
  ic_json_f64(&j, "t", elapsed);
  ic_json_i64(&j, "rank", rank);
  ic_json_i64(&j, "tid", t->tid);
  ic_json_str(&j, "name", t->name);
  inputs_json(&j, t, pmu);
  ic_json_f64(&j, "score", t->score);
  action_json(&j, favoured, set, aff, prio);
  ic_json_end(&j);
}

/* Apply one ranking: the first `top` threads a CPU each and priority, the rest the others. */
static int apply(ic_thread_t *t, int n, double elapsed, bool pmu) {
  int cpu_list[CPU_SETSIZE], k = 0;
  for (int c = 0; c < CPU_SETSIZE && k < opt.ncpus; c++)
    if (CPU_ISSET(c, &opt.cpus))
      cpu_list[k++] = c;
  int top = opt.top >= 0 ? opt.top : (opt.ncpus > 1 ? opt.ncpus - 1 : 1);
  if (top > n)
    top = n;
  cpu_set_t rest;
  CPU_ZERO(&rest);
  for (int c = top < opt.ncpus ? top : 0; c < opt.ncpus; c++)
    CPU_SET(cpu_list[c], &rest);
  if (top >= opt.ncpus)
    rest = opt.cpus;
  for (int i = 0; i < n; i++) {
    bool favoured = i < top;
    cpu_set_t set = opt.cpus;
    if (opt.pin && favoured && top < opt.ncpus) {
      CPU_ZERO(&set);
      CPU_SET(cpu_list[i], &set);
    } else if (opt.pin && !favoured) {
      set = rest;
    }
    int aff = sched_setaffinity(t[i].tid, sizeof set, &set) ? errno : 0;
    int prio_err = 0;
    if (favoured && opt.rt_priority > 0) {
      struct sched_param sp = {.sched_priority = opt.rt_priority};
      prio_err = sched_setscheduler(t[i].tid, SCHED_FIFO, &sp) ? errno : 0;
    } else {
      struct sched_param sp = {.sched_priority = 0};
      sched_setscheduler(t[i].tid, SCHED_OTHER, &sp);
      prio_err = setpriority(PRIO_PROCESS, (id_t)t[i].tid, favoured ? -5 : 5) ? errno : 0;
    }
    log_decision(&t[i], i + 1, elapsed, pmu, favoured, &set, aff, prio_err);
  }
  fflush(opt.log);
  return top;
}

static int manage(pid_t pid) {
  track_t track[MAX_THREADS];
  int ntrack = 0;
  bool pmu = true;
  int last_top_tid = -1;
  double last_top_score = 0, start = now_s(), last = start;
  long ticks_per_s = sysconf(_SC_CLK_TCK);
  for (;;) {
    struct timespec pause = {opt.interval_ms / 1000, (opt.interval_ms % 1000) * 1000000L};
    while (nanosleep(&pause, &pause) && errno == EINTR)
      ;
    int status;
    pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid)
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    double t = now_s(), dt = t - last;
    last = t;
    char dir[64];
    snprintf(dir, sizeof dir, "/proc/%d/task", (int)pid);
    DIR *d = opendir(dir);
    if (!d) {
      if (errno == ENOENT)
        continue; /* exiting: waitpid reports it next round */
      ic_warn("this host cannot do that: cannot read %s: %s", dir, strerror(errno));
      kill(pid, SIGTERM);
      waitpid(pid, &status, 0);
      return 3;
    }
    ic_thread_t threads[MAX_THREADS];
    int n = 0;
    for (int i = 0; i < ntrack; i++)
      track[i].seen = false;
    struct dirent *e;
    while ((e = readdir(d)) && n < MAX_THREADS) {
      int tid = atoi(e->d_name);
      if (tid <= 0)
        continue;
      uint64_t ticks, nivcsw;
      ic_thread_t *th = &threads[n];
      if (!read_thread(pid, tid, &ticks, &nivcsw, th->name))
        continue;
      track_t *tr = NULL;
      for (int i = 0; i < ntrack; i++)
        if (track[i].tid == tid)
          tr = &track[i];
      bool fresh = tr == NULL;
      if (fresh && ntrack < MAX_THREADS) {
        tr = &track[ntrack++];
        memset(tr, 0, sizeof *tr);
        tr->tid = tid;
        tr->perf_fd = pmu ? open_misses(tid) : -1;
        if (pmu && tr->perf_fd < 0) {
          pmu = false;
          ic_json_t j;
          ic_json_begin(&j, opt.log);
          ic_json_str(&j, "event", "note");
          ic_json_bool(&j, "pmu", false);
          ic_json_str(&j, "reason", strerror(errno));
          ic_json_str(&j, "fallback", "cpu share x sensitivity x (1 + nivcsw/s / 100)");
          ic_json_end(&j);
        }
      }
      if (!tr)
        continue;
      tr->seen = true;
      uint64_t misses = 0;
      if (pmu && tr->perf_fd >= 0 && read(tr->perf_fd, &misses, sizeof misses) != sizeof misses)
        misses = tr->misses;
      if (fresh) {
        tr->misses = misses, tr->cpu_ticks = ticks, tr->nivcsw = nivcsw, tr->since = t;
        continue;
      }
      double span = t - tr->since;
      if (span < 1.5 * dt)
        continue; /* at least two intervals before it is ranked */
      th->tid = tid;
      th->misses_per_s = pmu ? (double)(misses - tr->misses) / span : -1.0;
      th->nivcsw_per_s = (double)(nivcsw - tr->nivcsw) / span;
      th->cpu_share = (double)(ticks - tr->cpu_ticks) / (double)ticks_per_s / span;
      th->sensitivity = sensitivity_of(th->name);
      n++;
    }
    closedir(d);
    if (n == 0)
      continue;
    ic_manage_rank(threads, n);
    bool change = last_top_tid < 0 || threads[0].tid != last_top_tid;
    if (change && last_top_tid >= 0) { /* hysteresis against the current favourite */
      double current = 0;
      for (int i = 0; i < n; i++)
        if (threads[i].tid == last_top_tid)
          current = threads[i].score;
      change = current == 0 || ic_manage_should_switch(current, threads[0].score);
    }
    if (change) {
      apply(threads, n, t - start, pmu);
      last_top_tid = threads[0].tid;
      last_top_score = threads[0].score;
    }
    (void)last_top_score;
  }
}

static void parse_sensitivities(int argc, char **argv) {
  ic_arglist_t list;
  ic_arglist_collect(&list, argc, argv, "sensitivity");
  for (size_t k = 0; k < list.n; k++) {
    const char *v = list.items[k], *eq = strchr(v, '=');
    char *end;
    double d = eq ? strtod(eq + 1, &end) : 0;
    if (!eq || eq == v || *end || !(d > 0) || opt.nsens == MAX_SENS)
      ic_usage_error("--sensitivity", "'%s' is not NAME=DELTA with DELTA > 0 (at most %d)", v,
                     MAX_SENS);
    size_t len = (size_t)(eq - v) < 15 ? (size_t)(eq - v) : 15;
    memcpy(opt.sens_name[opt.nsens], v, len);
    opt.sens_name[opt.nsens][len] = 0;
    opt.sens_value[opt.nsens++] = d;
  }
  ic_arglist_free(&list);
}

int main(int argc, char **argv) {
  ic_set_progname("ic-manage");
  /* Our options end at "--"; APP and its own arguments follow. */
  int dashes = 1;
  while (dashes < argc && strcmp(argv[dashes], "--"))
    dashes++;
  ic_optval_t o[IC_NOPTS(opts)];
  ic_opts_main(&(ic_optset_t){opts, IC_NOPTS(opts), o}, dashes, argv, O_HELP, usage);
  if (dashes + 1 >= argc)
    ic_usage_error("--", "no program to run: ic-manage [options] -- APP [ARGS...]");
  parse_sensitivities(dashes - 1, argv + 1);
  opt.interval_ms = (long)o[O_INTERVAL].u;
  opt.top = o[O_TOP].set ? (int)o[O_TOP].u : -1;
  opt.pin = o[O_PIN].set;
  opt.omp_threads = (int)o[O_OMP].u;
  opt.rt_priority = (int)o[O_RT].u;
  sched_getaffinity(0, sizeof opt.cpus, &opt.cpus);
  if (o[O_CPUS].set) {
    cpu_set_t want, allowed = opt.cpus;
    if (parse_cpus(o[O_CPUS].s, &want) <= 0)
      ic_usage_error("--cpus", "'%s' is not a CPU list (0-3,6)", o[O_CPUS].s);
    CPU_AND(&opt.cpus, &want, &allowed);
    if (CPU_COUNT(&opt.cpus) == 0)
      ic_usage_error("--cpus", "none of %s is allowed here", o[O_CPUS].s);
  }
  opt.log = stderr;
  if (o[O_LOG].set && !(opt.log = fopen(o[O_LOG].s, "w")))
    ic_usage_error("--log", "%s: %s", o[O_LOG].s, strerror(errno));
  int i = dashes;
  opt.ncpus = CPU_COUNT(&opt.cpus);
  if (opt.rt_priority > 0) { /* ask before launching: no half-managed run */
    struct sched_param sp = {.sched_priority = opt.rt_priority}, old = {0};
    int policy = sched_getscheduler(0);
    sched_getparam(0, &old);
    if (sched_setscheduler(0, SCHED_FIFO, &sp)) {
      ic_die(IC_EXIT_UNSUPPORTED, "this host cannot do that: SCHED_FIFO %d: %s (run as root "
             "or grant CAP_SYS_NICE)", opt.rt_priority, strerror(errno));
    }
    sched_setscheduler(0, policy, &old);
  }
  if (opt.omp_threads > 0) {
    char buf[16];
    snprintf(buf, sizeof buf, "%d", opt.omp_threads);
    setenv("OMP_NUM_THREADS", buf, 1);
  }
  struct sigaction sa = {.sa_handler = on_signal};
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  child = fork();
  if (child < 0) {
    perror("ic-manage: fork");
    return 1;
  }
  if (child == 0) {
    execvp(argv[i + 1], &argv[i + 1]);
    ic_warn("cannot run %s: %s", argv[i + 1], strerror(errno));
    _exit(127);
  }
  ic_json_t j;
  ic_json_begin(&j, opt.log);
  ic_json_str(&j, "event", "start");
  ic_json_i64(&j, "pid", child);
  ic_json_i64(&j, "cpus", opt.ncpus);
  ic_json_i64(&j, "interval_ms", opt.interval_ms);
  ic_json_end(&j);
  int rc = manage(child);
  ic_json_begin(&j, opt.log);
  ic_json_str(&j, "event", "exit");
  ic_json_i64(&j, "status", rc);
  ic_json_end(&j);
  return rc;
}
