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

static void usage(FILE *f) {
  fprintf(f,
          "usage: ic-manage [--interval MS] [--cpus LIST] [--top K] [--pin] [--sensitivity NAME=DELTA]...\n"
          "                 [--omp-threads N] [--rt-priority P] [--log FILE] -- APP [ARGS...]\n");
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

static void json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"' || *s == '\\')
      fputc('\\', f);
    if ((unsigned char)*s >= 0x20)
      fputc(*s, f);
  }
  fputc('"', f);
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
    fprintf(opt.log, "{\"event\":\"decision\",\"t\":%.3f,\"rank\":%d,\"tid\":%d,\"name\":", elapsed,
            i + 1, t[i].tid);
    json_str(opt.log, t[i].name);
    char misses[32] = "null"; /* no PMU: no number, not 0 */
    if (t[i].misses_per_s >= 0)
      snprintf(misses, sizeof misses, "%.0f", t[i].misses_per_s);
    fprintf(opt.log, ",\"inputs\":{\"pmu\":%s,\"misses_per_s\":%s,\"nivcsw_per_s\":%.1f,"
                     "\"cpu_share\":%.3f,\"sensitivity\":%.3f},\"score\":%.4g,"
                     "\"action\":{\"favoured\":%s,\"cpus\":[",
            pmu ? "true" : "false", misses, t[i].nivcsw_per_s, t[i].cpu_share,
            t[i].sensitivity, t[i].score, favoured ? "true" : "false");
    bool first = true;
    for (int c = 0; c < CPU_SETSIZE; c++)
      if (CPU_ISSET(c, &set)) {
        fprintf(opt.log, first ? "%d" : ",%d", c);
        first = false;
      }
    if (favoured && opt.rt_priority > 0)
      fprintf(opt.log, "],\"policy\":\"SCHED_FIFO\",\"priority\":%d", opt.rt_priority);
    else
      fprintf(opt.log, "],\"nice\":%d", favoured ? -5 : 5);
    fprintf(opt.log, ",\"errors\":{\"affinity\":%d,\"priority\":%d}}}\n", aff, prio_err);
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
      fprintf(stderr, "ic-manage: this host cannot do that: cannot read %s: %s\n", dir,
              strerror(errno));
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
          fprintf(opt.log, "{\"event\":\"note\",\"pmu\":false,\"reason\":");
          json_str(opt.log, strerror(errno));
          fprintf(opt.log, ",\"fallback\":\"cpu share x sensitivity x (1 + nivcsw/s / 100)\"}\n");
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

int main(int argc, char **argv) {
  opt.log = stderr;
  sched_getaffinity(0, sizeof opt.cpus, &opt.cpus);
  int i = 1;
  for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    char *end;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout);
      return 0;
    }
    if (!strcmp(a, "--pin")) {
      opt.pin = true;
      continue;
    }
    if (!v) {
      fprintf(stderr, "ic-manage: %s needs a value\n", a);
      return 2;
    }
    i++;
    if (!strcmp(a, "--interval")) {
      opt.interval_ms = strtol(v, &end, 10);
      if (*end || opt.interval_ms < 10 || opt.interval_ms > 60000) {
        fprintf(stderr, "ic-manage: --interval: 10..60000 ms\n");
        return 2;
      }
    } else if (!strcmp(a, "--cpus")) {
      cpu_set_t want, allowed = opt.cpus;
      if (parse_cpus(v, &want) <= 0) {
        fprintf(stderr, "ic-manage: --cpus: not a CPU list: %s\n", v);
        return 2;
      }
      CPU_AND(&opt.cpus, &want, &allowed);
      if (CPU_COUNT(&opt.cpus) == 0) {
        fprintf(stderr, "ic-manage: --cpus: none of %s is allowed here\n", v);
        return 2;
      }
    } else if (!strcmp(a, "--top") || !strcmp(a, "--omp-threads") ||
               !strcmp(a, "--rt-priority")) {
      long n = strtol(v, &end, 10);
      if (*end || n < 0 || n > 99) {
        fprintf(stderr, "ic-manage: %s: 0..99\n", a);
        return 2;
      }
      *(!strcmp(a, "--top") ? &opt.top : !strcmp(a, "--omp-threads") ? &opt.omp_threads
                                                                      : &opt.rt_priority) =
          (int)n;
    } else if (!strcmp(a, "--sensitivity")) {
      const char *eq = strchr(v, '=');
      double d = eq ? strtod(eq + 1, &end) : 0;
      if (!eq || eq == v || *end || d <= 0 || opt.nsens == MAX_SENS) {
        fprintf(stderr, "ic-manage: --sensitivity: NAME=DELTA with DELTA > 0: %s\n", v);
        return 2;
      }
      size_t len = (size_t)(eq - v) < 15 ? (size_t)(eq - v) : 15;
      memcpy(opt.sens_name[opt.nsens], v, len);
      opt.sens_name[opt.nsens][len] = 0;
      opt.sens_value[opt.nsens++] = d;
    } else if (!strcmp(a, "--log")) {
      opt.log = fopen(v, "w");
      if (!opt.log) {
        fprintf(stderr, "ic-manage: --log: %s: %s\n", v, strerror(errno));
        return 2;
      }
    } else {
      fprintf(stderr, "ic-manage: unknown option %s\n", a);
      usage(stderr);
      return 2;
    }
  }
  if (i + 1 >= argc) {
    usage(stderr);
    return 2;
  }
  opt.ncpus = CPU_COUNT(&opt.cpus);
  if (opt.rt_priority > 0) { /* ask before launching: no half-managed run */
    struct sched_param sp = {.sched_priority = opt.rt_priority}, old = {0};
    int policy = sched_getscheduler(0);
    sched_getparam(0, &old);
    if (sched_setscheduler(0, SCHED_FIFO, &sp)) {
      fprintf(stderr, "ic-manage: this host cannot do that: SCHED_FIFO %d: %s (run as root "
                      "or grant CAP_SYS_NICE)\n", opt.rt_priority, strerror(errno));
      return 3;
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
    fprintf(stderr, "ic-manage: cannot run %s: %s\n", argv[i + 1], strerror(errno));
    _exit(127);
  }
  fprintf(opt.log, "{\"event\":\"start\",\"pid\":%d,\"cpus\":%d,\"interval_ms\":%ld}\n",
          (int)child, opt.ncpus, opt.interval_ms);
  fflush(opt.log);
  int rc = manage(child);
  fprintf(opt.log, "{\"event\":\"exit\",\"status\":%d}\n", rc);
  fflush(opt.log);
  return rc;
}
