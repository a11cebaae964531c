/* ic-periodic [runner options] victim|aggr KIND [kind options]: runs one victim or
 * aggressor kernel as a periodic real-time task (docs/native-contract.md, "Periodic
 * runner"). Releases are absolute CLOCK_MONOTONIC instants on a fixed grid; every job's
 * times go into a preallocated array and are printed only after the last job, so nothing
 * but the kernel runs between a job's start and its end. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "aggressors.h"
#include "arglist.h"
#include "ic_prefault.h"
#include "intr.h"
#include "notify.h"
#include "schedule.h"
#include "victims.h"

enum {
  R_NAME, R_PERIOD, R_DEADLINE, R_OFFSET, R_JOBS, R_OVERRUN, R_START_AT, R_WORK, R_NOTIFY,
  R_CGROUP, R_SEED, R_CPU, R_RT, R_MLOCK, R_HELP
};

static const char *const overrun_names[] = {[IC_OVERRUN_SKIP] = "skip", [IC_OVERRUN_LATE] = "late", NULL};

static const ic_opt_t runner_opts[] = {
    [R_NAME] = {.name = "name", .type = IC_OPT_STRING,
                .help = "task name echoed in every output line; unset: the kind"},
    [R_PERIOD] = {.name = "period", .type = IC_OPT_DURATION, .def = "100ms",
                  .help = "release period T"},
    [R_DEADLINE] = {.name = "deadline", .type = IC_OPT_DURATION,
                    .help = "relative deadline D: a job whose response time exceeds it is "
                            "a miss; unset: the period"},
    [R_OFFSET] = {.name = "offset", .type = IC_OPT_DURATION, .def = "0",
                  .help = "first release this long after the start time"},
    [R_JOBS] = {.name = "jobs", .type = IC_OPT_U64, .def = "100", .min = 1, .max = 10000000,
                .help = "jobs to run (skipped releases do not count)"},
    [R_OVERRUN] = {.name = "overrun", .type = IC_OPT_ENUM, .def = "skip", .choices = overrun_names,
                   .help = "a job that ends after the next release: skip = drop the passed "
                           "releases, late = start the next job at once (recorded per job)"},
    [R_START_AT] = {.name = "start-at", .type = IC_OPT_STRING, .metavar = "NS|stdin",
                    .help = "start time (absolute CLOCK_MONOTONIC ns) shared by several "
                            "runners; stdin: after the ready line read 'start NS' from stdin; "
                            "unset: 10 ms after the ready line"},
    [R_WORK] = {.name = "work", .type = IC_OPT_STRING, .metavar = "passes:N|time:DURATION",
                .help = "aggressors only: one job's work, N sweeps over the footprint or a "
                        "thread-CPU-time budget; unset: passes:1"},
    [R_NOTIFY] = {.name = "notify", .type = IC_OPT_STRING, .metavar = "PATH",
                  .help = "publish releases and completions in the 4 KiB notification block "
                          "at PATH (e.g. /dev/shm/x.notify) for ic-monitor; created if missing"},
    [R_CGROUP] = {.name = "cgroup", .type = IC_OPT_STRING, .metavar = "DIR[,DIR]",
                  .help = "join these cgroup directories (v2, or v1 hierarchies) before "
                          "initialising; repeatable"},
    [R_SEED] = {.name = "seed", .type = IC_OPT_U64, .def = "1",
                .help = "seed of the kernel's synthetic input or memory layout"},
    [R_CPU] = IC_OPT_ENTRY_CPU,
    [R_RT] = IC_OPT_ENTRY_RT_PRIORITY,
    [R_MLOCK] = IC_OPT_ENTRY_MLOCK,
    [R_HELP] = IC_OPT_ENTRY_HELP,
};

/* Start margin when --start-at is unset: time for the reader of the ready line. */
#define AUTO_START_NS 10000000ULL

typedef struct {
  uint64_t release_ns, start_ns, end_ns, cpu_ns, skipped, accesses;
} job_t;

/* One kernel behind one interface: a victim repetition or an aggressor's work. */
typedef struct {
  const char *family; /* "victim" or "aggr" */
  const char *kind;
  const ic_victim_t *victim;
  const ic_aggressor_t *aggr;
  const ic_opt_t *opts;
  size_t nopts;
  void *state;
  ic_aggr_info_t info;
  ic_work_t work;
  size_t line;
} task_t;

typedef struct {
  const char *name;
  ic_schedule_t sched;
  uint64_t period_ns, deadline_ns, offset_ns, start_ns;
  uint64_t jobs;
  ic_overrun_t overrun;
  int cpu;
  bool rt, locked;
  ic_notify_t *notify;
  const char *notify_path;
  ic_arglist_t cgroups;
  enum { START_AUTO, START_GIVEN, START_STDIN } start;
} runner_t;

static bool stop_requested(void) { return ic_intr_pending() & IC_INTR_STOP; }

static void on_stop(int sig) {
  (void)sig;
  ic_intr_raise(IC_INTR_STOP);
}

/* No SA_RESTART: a stop interrupts the read of the start line. The sleep until a release
 * is a wait on the interrupt word (intr.h), so a stop that arrives just before it still
 * ends it. */
static void install_signals(void) {
  struct sigaction sa = {.sa_handler = on_stop};
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
}

static uint64_t to_ns(double seconds) { return (uint64_t)llround(seconds * 1e9); }

static void usage(FILE *f) {
  fprintf(f,
          "usage: %s [runner options] victim KIND [kind options]\n"
          "       %s [runner options] aggr KIND [kind options]\n"
          "       %s victim|aggr KIND --help    the kind's own options\n\n"
          "Runs one kernel as periodic jobs released at start + offset + k*period; prints a\n"
          "ready line, then after the last job one JSON line per job and a summary.\n"
          "SIGINT/SIGTERM stop after the current job; the results are still printed.\n\n"
          "victims:",
          ic_progname(), ic_progname(), ic_progname());
  for (size_t i = 0; i < ic_nvictims; i++)
    fprintf(f, " %s", ic_victims[i]->name);
  fputs("\naggressors:", f);
  for (size_t i = 0; i < ic_aggr_nkinds; i++)
    fprintf(f, " %s", ic_aggr_kinds[i]->name);
  fputs("\n\nrunner options:\n", f);
  ic_opts_help(f, runner_opts, IC_NOPTS(runner_opts));
  ic_opts_units_help(f);
}

static void kind_usage(FILE *f, const task_t *t) {
  fprintf(f, "usage: %s [runner options] %s %s [options]\n\n%s\n\n%s options:\n",
          ic_progname(), t->family, t->kind, t->victim ? t->victim->help : t->aggr->help,
          t->kind);
  ic_opts_help(f, t->opts, t->nopts);
  fprintf(f, "\n(runner options: %s --help)\n", ic_progname());
}

/* Index of the family word (victim|aggr) in argv: the first argument that is neither a
 * runner option nor the value of one. */
static int family_index(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strncmp(a, "--", 2))
      return i;
    const char *eq = strchr(a, '=');
    size_t len = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
    for (size_t o = 0; o < IC_NOPTS(runner_opts); o++)
      if (strlen(runner_opts[o].name) == len && !strncmp(runner_opts[o].name, a + 2, len) &&
          runner_opts[o].type != IC_OPT_FLAG && !eq)
        i++;
  }
  return argc;
}

/* kind NULL: the command line ended after the family word. */
static task_t find_task(const char *family, const char *kind) {
  task_t t = {.family = family, .kind = kind};
  char names[256];
  bool known = !strcmp(family, "victim") || !strcmp(family, "aggr");
  if (known && !kind)
    ic_usage_error(NULL, "missing the %s kind after '%s' (see %s --help)", family, family,
                   ic_progname());
  if (!strcmp(family, "victim")) {
    if (!(t.victim = ic_victim_find(kind)))
      ic_usage_error(NULL, "unknown victim '%s' (ic-victim --list shows them)", kind);
    t.opts = t.victim->opts;
    t.nopts = t.victim->nopts;
  } else if (!strcmp(family, "aggr")) {
    if (!(t.aggr = ic_aggr_find(kind)))
      ic_usage_error(NULL, "unknown aggressor '%s' (one of: %s)", kind,
                     ic_aggr_kind_names(names, sizeof names));
    t.opts = t.aggr->opts;
    t.nopts = t.aggr->nopts;
  } else {
    ic_usage_error(NULL, "expected 'victim' or 'aggr' before the kind, got '%s' (see %s --help)",
                   family, ic_progname());
  }
  return t;
}

static void join_cgroups(const ic_arglist_t *dirs) {
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

static void settings(runner_t *r, task_t *t, const ic_optval_t *o) {
  r->name = o[R_NAME].set ? o[R_NAME].s : t->kind;
  r->period_ns = to_ns(o[R_PERIOD].d);
  r->deadline_ns = o[R_DEADLINE].set ? to_ns(o[R_DEADLINE].d) : r->period_ns;
  r->offset_ns = to_ns(o[R_OFFSET].d);
  r->jobs = o[R_JOBS].u;
  r->overrun = (ic_overrun_t)o[R_OVERRUN].u;
  r->cpu = o[R_CPU].set ? (int)o[R_CPU].u : -1;
  r->notify_path = o[R_NOTIFY].set ? o[R_NOTIFY].s : NULL;
  /* A grid this coarse keeps k * period far from overflow for any job count allowed. */
  if (!r->period_ns || r->period_ns > 3600000000000ULL)
    ic_usage_error("--period", "must be in (0, 1h]");
  if (!r->deadline_ns)
    ic_usage_error("--deadline", "must be above 0");
  if (r->offset_ns > 3600000000000ULL)
    ic_usage_error("--offset", "must be at most 1h");
  if (o[R_START_AT].set) {
    if (!strcmp(o[R_START_AT].s, "stdin"))
      r->start = START_STDIN;
    else if (ic_parse_u64(o[R_START_AT].s, &r->start_ns))
      r->start = START_GIVEN;
    else
      ic_usage_error("--start-at", "'%s' is neither a CLOCK_MONOTONIC time in ns nor 'stdin'",
                     o[R_START_AT].s);
  }
  char why[256];
  t->work = (ic_work_t){.kind = IC_WORK_PASSES, .amount = 1};
  if (o[R_WORK].set && t->victim)
    ic_usage_error("--work", "applies to aggressors only (a victim job is one repetition)");
  if (o[R_WORK].set && !ic_work_parse(o[R_WORK].s, &t->work, why, sizeof why))
    ic_usage_error("--work", "%s", why);
}

static void init_task(task_t *t, const ic_optval_t *own, uint64_t seed) {
  t->line = ic_line_size();
  if (t->victim) {
    t->state = t->victim->init(own, seed);
    return;
  }
  t->info = (ic_aggr_info_t){.mlp = 1};
  ic_aggr_args_t args = {.opt = own, .seed = seed, .line = t->line};
  t->state = t->aggr->init(&args, &t->info);
}

/* One job's kernel work; returns the accesses an aggressor did (0 for a victim). */
static uint64_t run_job(task_t *t, uint64_t job, uint64_t cpu0) {
  if (t->victim) {
    t->victim->run_rep(t->state, (int)job);
    return 0;
  }
  uint64_t done = 0;
  if (t->work.kind == IC_WORK_PASSES) {
    uint64_t target = ic_work_accesses(t->work.amount, t->info.size, t->line);
    while (done < target) {
      uint64_t left = target - done;
      done += t->aggr->step(t->state, left < IC_AGGR_MAX_CHUNK ? left : IC_AGGR_MAX_CHUNK);
    }
  } else {
    uint64_t until = cpu0 + t->work.amount;
    do
      done += t->aggr->step(t->state, IC_AGGR_MAX_CHUNK);
    while (ic_thread_cpu_ns() < until);
  }
  return done;
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
 * the kernel; output waits until it returns. Returns the number of jobs run. */
static uint64_t run_jobs(runner_t *r, task_t *t, job_t *jobs) {
  uint64_t k = 0, skipped = 0, n = 0;
  while (n < r->jobs && !stop_requested()) {
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
    if (r->notify)
      ic_notify_start(r->notify, n, release);
    j->accesses = run_job(t, n, cpu0);
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

static void task_fields(ic_json_t *j, const runner_t *r, const task_t *t) {
  ic_json_str(j, "name", r->name);
  ic_json_str(j, "family", t->family);
  ic_json_str(j, "kind", t->kind);
}

static void print_ready(const runner_t *r, const task_t *t, uint64_t seed) {
  char work[64], page[32];
  char *cgroups = ic_arglist_json(&r->cgroups);
  static const char *const starts[] = {"auto", "given", "stdin"};
  ic_json_t j;
  ic_json_begin(&j, stdout);
  ic_json_str(&j, "event", "ready");
  ic_json_i64(&j, "pid", (int64_t)getpid());
  task_fields(&j, r, t);
  if (r->cpu >= 0)
    ic_json_i64(&j, "cpu", r->cpu);
  else
    ic_json_raw(&j, "cpu", "null");
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
    ic_json_raw(&j, "notify", "null");
  ic_json_raw(&j, "cgroups", cgroups);
  ic_json_u64(&j, "seed", seed);
  if (t->aggr) {
    ic_json_str(&j, "work", ic_work_format(&t->work, work, sizeof work));
    ic_json_str(&j, "op", t->info.op);
    ic_json_u64(&j, "size", t->info.size);
    ic_json_u64(&j, "mlp", t->info.mlp);
    ic_json_str(&j, "pages", ic_format_size(t->info.page, page, sizeof page));
    if (t->aggr->report)
      t->aggr->report(t->state, &j);
  }
  ic_json_end(&j);
  free(cgroups);
}

static void print_job(const runner_t *r, const task_t *t, uint64_t n, const job_t *job) {
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
  if (t->aggr)
    ic_json_u64(&j, "accesses", job->accesses);
  ic_json_end(&j);
}

static void print_summary(const runner_t *r, const task_t *t, const job_t *jobs, uint64_t n) {
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
  task_fields(&j, r, t);
  ic_json_u64(&j, "jobs", n);
  ic_json_u64(&j, "planned", r->jobs);
  ic_json_u64(&j, "misses", misses);
  ic_json_u64(&j, "skipped", skipped);
  ic_json_bool(&j, "stopped", stop_requested());
  ic_json_bool(&j, "rt", r->rt);
  ic_json_u64(&j, "start_at_ns", r->start_ns);
  ic_json_u64(&j, "max_response_ns", max_response);
  ic_json_u64(&j, "cpu_ns", cpu);
  if (t->victim) {
    ic_json_u64(&j, "checksum", t->victim->checksum(t->state));
  } else {
    ic_json_u64(&j, "accesses", accesses);
    ic_json_u64(&j, "bytes", accesses * t->line);
  }
  ic_json_end(&j);
}

/* --start-at stdin: one line "start NS"; EOF, a stop or "quit" mean no job runs. */
static bool read_start(uint64_t *start_ns) {
  char line[128], word[16];
  unsigned long long ns;
  if (stop_requested() || !fgets(line, sizeof line, stdin) || stop_requested())
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

static bool start_time(runner_t *r) {
  if (r->start == START_AUTO)
    r->start_ns = ic_now_ns() + AUTO_START_NS;
  else if (r->start == START_STDIN && !read_start(&r->start_ns))
    return false;
  r->sched = (ic_schedule_t){.origin_ns = r->start_ns + r->offset_ns, .period_ns = r->period_ns};
  uint64_t now = ic_now_ns();
  if (r->sched.origin_ns < now)
    ic_die(IC_EXIT_FAIL, "--start-at: the first release is %.3f ms in the past",
           (double)(now - r->sched.origin_ns) / 1e6);
  return true;
}

int main(int argc, char **argv) {
  ic_set_progname("ic-periodic");
  install_signals();
  int fam = family_index(argc, argv);
  ic_optval_t ropt[IC_NOPTS(runner_opts)];
  const ic_optset_t rset = {runner_opts, IC_NOPTS(runner_opts), ropt};
  ic_opts_parse(&rset, 1, fam - 1, argv + 1, ic_progname());
  if (ropt[R_HELP].set || fam >= argc) {
    if (!ropt[R_HELP].set)
      ic_usage_error(NULL, "missing 'victim KIND' or 'aggr KIND' (see %s --help)", ic_progname());
    usage(stdout);
    return IC_EXIT_OK;
  }
  task_t t = find_task(argv[fam], fam + 1 < argc ? argv[fam + 1] : NULL);
  ic_optval_t own[t.nopts ? t.nopts : 1], help[1];
  static const ic_opt_t help_opt[] = {IC_OPT_ENTRY_HELP};
  const ic_optset_t kset[] = {{t.opts, t.nopts, own}, {help_opt, 1, help}};
  char context[64];
  snprintf(context, sizeof context, "%s %s %s", ic_progname(), t.family, t.kind);
  ic_opts_parse(kset, 2, argc - fam - 2, argv + fam + 2, context);
  if (help[0].set) {
    kind_usage(stdout, &t);
    return IC_EXIT_OK;
  }

  runner_t r = {0};
  settings(&r, &t, ropt);
  ic_arglist_collect(&r.cgroups, fam - 1, argv + 1, "cgroup");
  join_cgroups(&r.cgroups);
  if (r.cpu >= 0)
    ic_pin_cpu_or_die(r.cpu);
  init_task(&t, own, ropt[R_SEED].u);
  job_t *jobs = alloc_jobs(r.jobs);
  if (r.notify_path) {
    if (!(r.notify = ic_notify_map(r.notify_path)))
      ic_die(IC_EXIT_FAIL, "--notify: cannot map %s: %s", r.notify_path, strerror(errno));
    ic_notify_begin(r.notify, r.period_ns, r.deadline_ns);
  }
  r.locked = ropt[R_MLOCK].set && ic_lock_memory();
  /* Last, so initialisation does not run at real-time priority. */
  r.rt = ropt[R_RT].set && ic_set_rt_priority((int)ropt[R_RT].u);
  print_ready(&r, &t, ropt[R_SEED].u);

  uint64_t done = 0;
  if (start_time(&r))
    done = run_jobs(&r, &t, jobs);
  else if (r.notify)
    ic_notify_end(r.notify);
  for (uint64_t n = 0; n < done; n++)
    print_job(&r, &t, n, &jobs[n]);
  print_summary(&r, &t, jobs, done);
  if (t.victim)
    t.victim->fini(t.state);
  else
    t.aggr->fini(t.state);
  free(jobs);
  ic_arglist_free(&r.cgroups);
  return IC_EXIT_OK;
}
