/* The periodic release loop (runner.h). Releases are absolute CLOCK_MONOTONIC instants on a
 * fixed grid; every job's times go into a preallocated array and are printed only after the
 * last job, so nothing but the work runs between a job's start and its end. */
#include "runner.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ic_prefault.h"
#include "intr.h"
#include "region_watch.h"

static const char *const overrun_names[] = {[IC_OVERRUN_SKIP] = "skip", [IC_OVERRUN_LATE] = "late", NULL};

const ic_opt_t ic_runner_opts[IC_RUNNER_NOPTS] = {
    [IC_RUNNER_NAME] = {.name = "name", .type = IC_OPT_STRING,
                        .help = "task name echoed in every output line; unset: the kind"},
    [IC_RUNNER_PERIOD] = {.name = "period", .type = IC_OPT_DURATION, .def = "100ms",
                          .help = "release period T"},
    [IC_RUNNER_DEADLINE] = {.name = "deadline", .type = IC_OPT_DURATION,
                            .help = "relative deadline D: a job whose response time exceeds "
                                    "it is a miss; unset: the period"},
    [IC_RUNNER_OFFSET] = {.name = "offset", .type = IC_OPT_DURATION, .def = "0",
                          .help = "first release this long after the start time"},
    [IC_RUNNER_JOBS] = {.name = "jobs", .type = IC_OPT_U64, .def = "100", .min = 1,
                        .max = 10000000, .help = "jobs to run (skipped releases do not count)"},
    [IC_RUNNER_OVERRUN] = {.name = "overrun", .type = IC_OPT_ENUM, .def = "skip",
                           .choices = overrun_names,
                           .help = "a job that ends after the next release: skip = drop the "
                                   "passed releases, late = start the next job at once "
                                   "(recorded per job)"},
    [IC_RUNNER_START_AT] = {.name = "start-at", .type = IC_OPT_STRING, .metavar = "NS|stdin",
                            .help = "start time (absolute CLOCK_MONOTONIC ns) shared by several "
                                    "runners; stdin: after the ready line read 'start NS' from "
                                    "stdin; unset: 10 ms after the ready line"},
    [IC_RUNNER_NOTIFY] = {.name = "notify", .type = IC_OPT_STRING, .metavar = "PATH",
                          .help = "publish releases and completions in the 4 KiB notification "
                                  "block at PATH (e.g. /dev/shm/x.notify) for ic-monitor; "
                                  "created if missing"},
    [IC_RUNNER_CGROUP] = {.name = "cgroup", .type = IC_OPT_STRING, .metavar = "DIR[,DIR]",
                          .help = "join these cgroup directories (v2, or v1 hierarchies) before "
                                  "initialising; repeatable"},
    [IC_RUNNER_CPU] = IC_OPT_ENTRY_CPU,
    [IC_RUNNER_RT] = IC_OPT_ENTRY_RT_PRIORITY,
    [IC_RUNNER_MLOCK] = IC_OPT_ENTRY_MLOCK,
    [IC_RUNNER_HELP] = IC_OPT_ENTRY_HELP,
};

/* Start margin when --start-at is unset: time for the reader of the ready line. */
#define AUTO_START_NS 10000000ULL

typedef struct {
  uint64_t release_ns, start_ns, end_ns, cpu_ns, skipped, accesses;
} job_t;

bool ic_runner_stopped(void) { return ic_intr_pending() & IC_INTR_STOP; }

static void on_stop(int sig) {
  (void)sig;
  ic_intr_raise(IC_INTR_STOP);
}

/* The sleep until a release is a wait on the interrupt word (intr.h), so a stop that
 * arrives just before it still ends it. */
void ic_runner_signals(void) {
  struct sigaction sa = {.sa_handler = on_stop};
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
}

static bool takes_value(const ic_opt_t *opts, size_t n, const char *name, size_t len) {
  for (size_t o = 0; o < n; o++)
    if (strlen(opts[o].name) == len && !strncmp(opts[o].name, name, len))
      return opts[o].type != IC_OPT_FLAG;
  return false;
}

int ic_runner_front(int argc, char **argv, const ic_opt_t *extra, size_t nextra) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strncmp(a, "--", 2) || !a[2])
      return i;
    const char *eq = strchr(a, '=');
    size_t len = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
    if (!eq && (takes_value(ic_runner_opts, IC_RUNNER_NOPTS, a + 2, len) ||
                takes_value(extra, nextra, a + 2, len)))
      i++;
  }
  return argc;
}

static uint64_t to_ns(double seconds) { return (uint64_t)llround(seconds * 1e9); }

void ic_runner_join_cgroups(const ic_arglist_t *dirs) {
  for (size_t i = 0; i < dirs->n; i++) {
    char path[4096], pid[32];
    snprintf(path, sizeof path, "%s/cgroup.procs", dirs->items[i]);
    int len = snprintf(pid, sizeof pid, "%d\n", (int)getpid());
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0 && (errno == ENOENT || errno == ENOTDIR))
      ic_usage_error("--cgroup", "%s is not a cgroup directory", dirs->items[i]);
    if (fd < 0 || write(fd, pid, (size_t)len) != len)
      ic_die(IC_EXIT_FAIL, "--cgroup: cannot join %s: %s", dirs->items[i], strerror(errno));
    close(fd);
  }
}

void ic_runner_setup(ic_runner_t *r, const ic_optval_t *o, const char *default_name, int argc,
                     char **argv) {
  *r = (ic_runner_t){.cpu = -1};
  r->name = o[IC_RUNNER_NAME].set ? o[IC_RUNNER_NAME].s : default_name;
  r->period_ns = to_ns(o[IC_RUNNER_PERIOD].d);
  r->deadline_ns = o[IC_RUNNER_DEADLINE].set ? to_ns(o[IC_RUNNER_DEADLINE].d) : r->period_ns;
  r->offset_ns = to_ns(o[IC_RUNNER_OFFSET].d);
  r->jobs = o[IC_RUNNER_JOBS].u;
  r->overrun = (ic_overrun_t)o[IC_RUNNER_OVERRUN].u;
  r->cpu = o[IC_RUNNER_CPU].set ? (int)o[IC_RUNNER_CPU].u : -1;
  r->rt_priority = o[IC_RUNNER_RT].set ? (int)o[IC_RUNNER_RT].u : 0;
  r->mlock = o[IC_RUNNER_MLOCK].set;
  r->notify_path = o[IC_RUNNER_NOTIFY].set ? o[IC_RUNNER_NOTIFY].s : NULL;
  /* A grid this coarse keeps k * period far from overflow for any job count allowed. */
  if (!r->period_ns || r->period_ns > 3600000000000ULL)
    ic_usage_error("--period", "must be in (0, 1h]");
  if (!r->deadline_ns)
    ic_usage_error("--deadline", "must be above 0");
  if (r->offset_ns > 3600000000000ULL)
    ic_usage_error("--offset", "must be at most 1h");
  if (o[IC_RUNNER_START_AT].set) {
    const char *s = o[IC_RUNNER_START_AT].s;
    if (!strcmp(s, "stdin"))
      r->start = IC_START_STDIN;
    else if (ic_parse_u64(s, &r->start_ns))
      r->start = IC_START_GIVEN;
    else
      ic_usage_error("--start-at", "'%s' is neither a CLOCK_MONOTONIC time in ns nor 'stdin'", s);
  }
  ic_arglist_collect(&r->cgroups, argc, argv, "cgroup");
  ic_runner_join_cgroups(&r->cgroups);
  if (r->cpu >= 0)
    ic_pin_cpu_or_die(r->cpu);
}

/* Job records faulted in before the first release; a longer run faults each further page
 * in before the sleep that precedes its first job (touch_ahead), so a run of 10^7 jobs (the
 * "until stopped" of tests and stressors) neither starts a second late nor holds 480 MB. */
#define PREFAULT_BYTES (16u << 20)

static job_t *alloc_jobs(uint64_t n) {
  job_t *jobs = calloc(n, sizeof *jobs);
  if (!jobs)
    ic_die(IC_EXIT_FAIL, "cannot allocate the record of %llu jobs", (unsigned long long)n);
  /* calloc may hand out untouched zero pages: fault them in now, not inside a job. */
  size_t bytes = n * sizeof *jobs;
  ic_prefault(jobs, bytes < PREFAULT_BYTES ? bytes : PREFAULT_BYTES);
  return jobs;
}

/* Before sleeping until job n's release: its record's page beyond the prefaulted part. */
static void touch_ahead(job_t *jobs, uint64_t n) {
  if ((n + 1) * sizeof *jobs > PREFAULT_BYTES)
    ic_prefault(&jobs[n], sizeof jobs[n]);
}

/* The release loop: everything here is arithmetic, clocks, the notification block and
 * the work; output waits until it returns. Returns the number of jobs run. */
static uint64_t run_jobs(ic_runner_t *r, const ic_runner_work_t *w, job_t *jobs) {
  uint64_t k = 0, skipped = 0, n = 0;
  while (n < r->jobs && !ic_runner_stopped()) {
    uint64_t release = ic_release_ns(&r->sched, k);
    if (r->notify)
      ic_notify_next(r->notify, n, release);
    touch_ahead(jobs, n);
    if (!ic_intr_sleep_until(release)) /* false: a stop came first */
      break;
    job_t *j = &jobs[n];
    j->release_ns = release;
    j->skipped = skipped;
    uint64_t cpu0 = ic_thread_cpu_ns();
    j->start_ns = ic_now_ns();
    if (r->notify) {
      ic_region_watch_job(n);
      ic_notify_start(r->notify, n, release);
    }
    j->accesses = w->job(w->ctx, n, cpu0);
    j->end_ns = ic_now_ns();
    if (r->notify)
      ic_notify_complete(r->notify, n, j->end_ns);
    j->cpu_ns = ic_thread_cpu_ns() - cpu0;
    k = ic_next_release(&r->sched, r->overrun, k, j->end_ns, &skipped);
    n++;
  }
  if (r->notify)
    ic_notify_end(r->notify);
  return n;
}

static void task_fields(ic_json_t *j, const ic_runner_t *r, const ic_runner_work_t *w) {
  ic_json_str(j, "name", r->name);
  ic_json_str(j, "family", w->family);
  ic_json_str(j, "kind", w->kind);
}

static void print_ready(const ic_runner_t *r, const ic_runner_work_t *w) {
  static const char *const starts[] = {"auto", "given", "stdin"};
  ic_json_t j;
  ic_json_begin(&j, stdout);
  ic_json_str(&j, "event", "ready");
  ic_json_i64(&j, "pid", (int64_t)getpid());
  task_fields(&j, r, w);
  if (r->cpu >= 0)
    ic_json_i64(&j, "cpu", r->cpu);
  else
    ic_json_null(&j, "cpu");
  ic_json_bool(&j, "rt", r->rt);
  ic_json_bool(&j, "mlock", r->locked);
  ic_json_u64(&j, "period_ns", r->period_ns);
  ic_json_u64(&j, "deadline_ns", r->deadline_ns);
  ic_json_u64(&j, "offset_ns", r->offset_ns);
  ic_json_u64(&j, "jobs", r->jobs);
  ic_json_str(&j, "overrun", overrun_names[r->overrun]);
  ic_json_str(&j, "start", starts[r->start]);
  if (r->notify_path)
    ic_json_str(&j, "notify", r->notify_path);
  else
    ic_json_null(&j, "notify");
  ic_arglist_json(&j, "cgroups", &r->cgroups);
  if (w->ready)
    w->ready(w->ctx, &j);
  ic_json_end(&j);
}

static void print_job(const ic_runner_t *r, const ic_runner_work_t *w, uint64_t n,
                      const job_t *job) {
  uint64_t response = job->end_ns - job->release_ns;
  ic_json_t j;
  ic_json_begin(&j, stdout);
  ic_json_str(&j, "event", "job");
  ic_json_str(&j, "name", r->name);
  ic_json_u64(&j, "job", n);
  ic_json_u64(&j, "release_ns", job->release_ns);
  ic_json_u64(&j, "start_ns", job->start_ns);
  ic_json_u64(&j, "end_ns", job->end_ns);
  ic_json_u64(&j, "response_ns", response);
  ic_json_u64(&j, "cpu_ns", job->cpu_ns);
  ic_json_bool(&j, "missed", response > r->deadline_ns);
  ic_json_u64(&j, "skipped", job->skipped);
  if (w->counts_accesses)
    ic_json_u64(&j, "accesses", job->accesses);
  ic_json_end(&j);
}

static void print_summary(const ic_runner_t *r, const ic_runner_work_t *w, const job_t *jobs,
                          uint64_t n, uint64_t windows_lost) {
  uint64_t misses = 0, skipped = 0, max_response = 0, cpu = 0, accesses = 0;
  for (uint64_t i = 0; i < n; i++) {
    uint64_t response = jobs[i].end_ns - jobs[i].release_ns;
    misses += response > r->deadline_ns;
    skipped += jobs[i].skipped;
    max_response = response > max_response ? response : max_response;
    cpu += jobs[i].cpu_ns;
    accesses += jobs[i].accesses;
  }
  ic_json_t j;
  ic_json_begin(&j, stdout);
  ic_json_str(&j, "event", "summary");
  task_fields(&j, r, w);
  ic_json_u64(&j, "jobs", n);
  ic_json_u64(&j, "planned", r->jobs);
  ic_json_u64(&j, "misses", misses);
  ic_json_u64(&j, "skipped", skipped);
  ic_json_bool(&j, "stopped", ic_runner_stopped());
  ic_json_bool(&j, "rt", r->rt);
  ic_json_u64(&j, "start_at_ns", r->start_ns);
  ic_json_u64(&j, "max_response_ns", max_response);
  ic_json_u64(&j, "cpu_ns", cpu);
  ic_json_u64(&j, "windows_lost", windows_lost);
  if (w->summary)
    w->summary(w->ctx, &j, accesses);
  ic_json_end(&j);
}

bool ic_runner_read_start(uint64_t *start_ns) {
  char line[128], word[16];
  unsigned long long ns;
  if (ic_runner_stopped() || !fgets(line, sizeof line, stdin) || ic_runner_stopped())
    return false;
  if (sscanf(line, "%15s %llu", word, &ns) == 2 && !strcmp(word, "start")) {
    *start_ns = ns;
    return true;
  }
  line[strcspn(line, "\r\n")] = '\0';
  if (strcmp(line, "quit"))
    ic_warn("--start-at stdin: expected 'start NS', got '%s'; stopping", line);
  return false;
}

static bool start_time(ic_runner_t *r) {
  if (r->start == IC_START_AUTO)
    r->start_ns = ic_now_ns() + AUTO_START_NS;
  else if (r->start == IC_START_STDIN && !ic_runner_read_start(&r->start_ns))
    return false;
  r->sched = (ic_schedule_t){.origin_ns = r->start_ns + r->offset_ns, .period_ns = r->period_ns};
  uint64_t now = ic_now_ns();
  if (r->sched.origin_ns < now)
    ic_die(IC_EXIT_FAIL, "--start-at: the first release is %.3f ms in the past",
           (double)(now - r->sched.origin_ns) / 1e6);
  return true;
}

uint64_t ic_runner_run(ic_runner_t *r, const ic_runner_work_t *w) {
  job_t *jobs = alloc_jobs(r->jobs);
  if (r->notify_path) {
    if (!(r->notify = ic_notify_map(r->notify_path)))
      ic_die(IC_EXIT_FAIL, "--notify: cannot map %s: %s", r->notify_path, strerror(errno));
    ic_notify_begin(r->notify, r->period_ns, r->deadline_ns);
    ic_region_watch_begin(r->notify, r->jobs);
  }
  r->locked = r->mlock && ic_lock_memory();
  /* Last, so initialisation does not run at real-time priority. */
  r->rt = r->rt_priority && ic_set_rt_priority(r->rt_priority);
  print_ready(r, w);

  uint64_t done = 0;
  if (start_time(r))
    done = run_jobs(r, w, jobs);
  else if (r->notify)
    ic_notify_end(r->notify);
  uint64_t windows_lost = 0;
  if (r->notify) {
    ic_region_watch_end();
    windows_lost = ic_region_watch_print(r->name);
  }
  for (uint64_t n = 0; n < done; n++)
    print_job(r, w, n, &jobs[n]);
  print_summary(r, w, jobs, done, windows_lost);
  free(jobs);
  return done;
}

void ic_runner_free(ic_runner_t *r) { ic_arglist_free(&r->cgroups); }
