/* ic-monitor --policy poll|event --critical DIR --best-effort DIR [options]: freezes
 * best-effort cgroups while critical work runs (docs/native-contract.md, "Monitor").
 *
 * Fail-safe by construction: every managed group is thawed at start-up, at exit and on
 * SIGINT/SIGTERM, and an ic-watchdog process (native/watchdog/), started before the monitor
 * pins itself, raises its priority or freezes anything, thaws them when the monitor dies,
 * stops or starves. The monitor refuses to run without its watchdog. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "arglist.h"
#include "intr.h"
#include "ic_common.h"
#include "ic_opts.h"
#include "monitor.h"
#include "windows.h"

enum {
  O_POLICY, O_CRITICAL, O_BEST_EFFORT, O_NOTIFY, O_INTERVAL, O_WINDOW, O_THRESHOLD,
  O_IDLE_AFTER, O_MAX_FREEZE, O_LEAD, O_LEASE, O_DURATION, O_EXIT_WITH_RUNNER, O_LOG, O_CPU,
  O_RT, O_MLOCK, O_WINDOW_REGION, O_HELP
};

static const char *const policies[] = {[POLICY_POLL] = "poll", [POLICY_EVENT] = "event", NULL};

static const ic_opt_t opts[] = {
    [O_POLICY] = {.name = "policy", .type = IC_OPT_ENUM, .def = "poll", .choices = policies,
                  .help = "poll = paper 000's usage threshold; event = freeze at each release "
                          "announced through --notify, thaw at its completion"},
    [O_CRITICAL] = {.name = "critical", .type = IC_OPT_STRING, .metavar = "DIR[,DIR]",
                    .help = "cgroup directories of the critical tasks (never frozen); "
                            "repeatable; poll without --notify watches their usage; "
                            "DIR+USAGE_DIR when the usage lives in another hierarchy"},
    [O_BEST_EFFORT] = {.name = "best-effort", .type = IC_OPT_STRING, .metavar = "DIR[,DIR]",
                       .help = "cgroup directories the monitor freezes; repeatable; "
                               "DIR+USAGE_DIR as for --critical"},
    [O_NOTIFY] = {.name = "notify", .type = IC_OPT_STRING, .metavar = "PATH",
                  .help = "the critical runner's notification block (ic-periodic --notify); "
                          "required by event, optional for poll (exact activity)"},
    [O_INTERVAL] = {.name = "interval", .type = IC_OPT_DURATION, .def = "50ms",
                    .help = "poll: time between usage readings, 1ms..10s"},
    [O_WINDOW] = {.name = "window", .type = IC_OPT_DURATION, .def = "20ms",
                  .help = "poll: usage is averaged over at least this long (and at least one "
                          "interval), because cpu.stat moves in scheduler-tick steps"},
    [O_THRESHOLD] = {.name = "threshold", .type = IC_OPT_U64, .def = "30", .min = 0, .max = 100000,
                     .metavar = "PCT",
                     .help = "poll: freeze a best-effort group using more than PCT% of one CPU"},
    [O_IDLE_AFTER] = {.name = "idle-after", .type = IC_OPT_DURATION, .def = "10ms",
                      .help = "poll without --notify: a critical group whose usage has not "
                              "moved for this long is idle (keep it above the tick, 1/HZ)"},
    [O_MAX_FREEZE] = {.name = "max-freeze", .type = IC_OPT_STRING, .metavar = "PCT%|DURATION|none",
                      .help = "longest freeze per critical period, as a share of the period "
                              "in the notification block or a duration; unset: 50% with "
                              "--notify, none without"},
    [O_LEAD] = {.name = "lead", .type = IC_OPT_DURATION, .def = "0",
                .help = "event: freeze this long before each release, to absorb the "
                        "monitor's own wake-up latency"},
    [O_LEASE] = {.name = "lease", .type = IC_OPT_DURATION, .def = "100ms",
                 .help = "the watchdog thaws everything when the monitor has not renewed its "
                         "heartbeat for this long (a stopped or starved monitor), 10ms..10s; "
                         "the monitor freezes again when it resumes"},
    [O_DURATION] = {.name = "duration", .type = IC_OPT_DURATION, .def = "0",
                    .help = "exit by itself after this long; 0: run until SIGINT/SIGTERM"},
    [O_EXIT_WITH_RUNNER] = {.name = "exit-with-runner", .type = IC_OPT_FLAG,
                            .help = "with --notify: exit once the runner has finished and its "
                                    "last release is handled"},
    [O_LOG] = {.name = "log", .type = IC_OPT_STRING, .metavar = "FILE",
               .help = "append one JSON line per freeze and thaw (written after acting)"},
    [O_CPU] = IC_OPT_ENTRY_CPU,
    [O_RT] = IC_OPT_ENTRY_RT_PRIORITY,
    [O_MLOCK] = IC_OPT_ENTRY_MLOCK,
    [O_WINDOW_REGION] = {.name = "window-region", .type = IC_OPT_STRING,
                         .metavar = "REGION[,REGION]",
                         .help = "with --notify: protect a critical job from its entry into "
                                 "one of these regions (IC_REGION markers, named as the "
                                 "runner publishes them) to its exit, instead of as a whole "
                                 "(event: freeze; poll: the usage threshold applies within "
                                 "it); repeatable; a runner without markers is protected "
                                 "whole (said once)"},
    [O_HELP] = IC_OPT_ENTRY_HELP,
};

/* Latency samples kept; one per critical job (event) or freeze (poll). */
#define LATENCY_CAP (1u << 18)
#define LOG_BUFFER (1u << 16)

static uint64_t to_ns(double s) { return (uint64_t)llround(s * 1e9); }

static void usage(FILE *f) {
  fprintf(f,
          "usage: %s --policy poll|event --best-effort DIR[,DIR] [--critical DIR[,DIR]] "
          "[options]\n\n"
          "Freezes the best-effort cgroups while critical work runs and thaws them when it\n"
          "completes. Thaws every group at start-up, at exit, on SIGINT/SIGTERM, and through\n"
          "its watchdog when killed. Prints a ready line, then one JSON stats line at exit.\n\n"
          "examples:\n"
          "  %s --policy poll --critical /sys/fs/cgroup/ic/rt --best-effort /sys/fs/cgroup/ic/be \\\n"
          "     --interval 1ms --cpu 0 --rt-priority 90\n"
          "  %s --policy event --notify /dev/shm/victim.notify --best-effort /sys/fs/cgroup/ic/be \\\n"
          "     --max-freeze 50%% --log freeze.jsonl\n\noptions:\n",
          ic_progname(), ic_progname(), ic_progname());
  ic_opts_help(f, opts, IC_NOPTS(opts));
  ic_opts_units_help(f);
}

/* Each handler also raises the interrupt word (intr.h), which ends any sleep at once, even
 * one that was about to start. */
static void on_stop(int sig) {
  (void)sig;
  ic_monitor_stop = 1;
  ic_intr_raise(IC_INTR_STOP);
}

/* The monitor's only child is its watchdog, so any SIGCHLD means the fail-safe is gone. */
static void on_child(int sig) {
  (void)sig;
  ic_monitor_orphaned = 1;
  ic_intr_raise(IC_INTR_LOST);
}

static void install_signals(void) {
  struct sigaction stop = {.sa_handler = on_stop}, child = {.sa_handler = on_child,
                                                            .sa_flags = SA_NOCLDSTOP};
  sigemptyset(&stop.sa_mask);
  sigemptyset(&child.sa_mask);
  sigaction(SIGINT, &stop, NULL);
  sigaction(SIGTERM, &stop, NULL);
  sigaction(SIGCHLD, &child, NULL);
}

static freeze_cap_t parse_cap(const ic_optval_t *o, bool have_notify) {
  if (!o->set)
    return have_notify ? (freeze_cap_t){.kind = CAP_FRACTION, .fraction = 0.5}
                       : (freeze_cap_t){.kind = CAP_NONE};
  const char *s = o->s;
  if (!strcmp(s, "none"))
    return (freeze_cap_t){.kind = CAP_NONE};
  size_t len = strlen(s);
  if (len && s[len - 1] == '%') {
    char *end;
    double pct = strtod(s, &end);
    if (end != s + len - 1 || !(pct > 0 && pct <= 100))
      ic_usage_error("--max-freeze", "'%s' is not a share in (0%%, 100%%]", s);
    if (!have_notify)
      ic_usage_error("--max-freeze", "a share of the period needs --notify (the period comes "
                                     "from the runner); give a duration instead");
    return (freeze_cap_t){.kind = CAP_FRACTION, .fraction = pct / 100.0};
  }
  double d;
  if (!ic_parse_duration(s, &d) || !(d > 0))
    ic_usage_error("--max-freeze", "'%s' is neither PCT%%, a duration above 0 nor 'none'", s);
  return (freeze_cap_t){.kind = CAP_NS, .ns = to_ns(d)};
}

/* The groups keep pointers into the lists, which therefore live as long as the process. */
static void add_groups(monitor_t *m, const ic_arglist_t *dirs, ic_role_t role, const char *opt) {
  char why[4352];
  for (size_t i = 0; i < dirs->n; i++) {
    if (m->ngroups == IC_MAX_GROUPS)
      ic_usage_error(opt, "at most %d groups", IC_MAX_GROUPS);
    ic_cgroup_t *g = &m->groups[m->ngroups];
    if (!ic_cgroup_open(g, dirs->items[i], role, why, sizeof why))
      ic_usage_error(opt, "%s", why);
    if (role == IC_ROLE_BEST_EFFORT && g->freezer == IC_FREEZER_NONE)
      ic_usage_error(opt, "%s has no freezer (cgroup.freeze or freezer.state)", g->path);
    if (role == IC_ROLE_BEST_EFFORT && ic_cgroup_holds(g, (int)getpid()))
      ic_usage_error(opt, "%s holds the monitor itself; it would freeze its own controller",
                     g->path);
    ic_usage_reset(&m->usage[m->ngroups]);
    m->ngroups++;
  }
}

/* Groups whose usage the poll policy must read. */
static void require_usage(const monitor_t *m, ic_role_t role, const char *opt) {
  for (size_t i = 0; i < m->ngroups; i++)
    if (m->groups[i].role == role && m->groups[i].usage_src == IC_USAGE_NONE)
      ic_usage_error(opt, "%s has no cpu.stat or cpuacct.usage to poll (name the usage "
                          "directory as DIR+USAGE_DIR)", m->groups[i].path);
}

/* --window-region: checked against the runner's regions now when it has already published
 * them (a name it lacks is a usage error before anything is touched), else when it starts
 * (policy_event.c). */
static void configure_windows(monitor_t *m, int argc, char **argv) {
  windows_t *w = &m->windows;
  ic_arglist_collect(&w->wanted, argc, argv, "window-region");
  if (!w->wanted.n)
    return;
  if (!m->notify)
    ic_usage_error("--window-region", "needs --notify (the runner publishes its regions in "
                                      "its notification block)");
  for (size_t i = 0; i < w->wanted.n; i++)
    if (strlen(w->wanted.items[i]) >= IC_NOTIFY_NAME_LEN)
      ic_usage_error("--window-region", "'%s' is longer than a region name can be (%d)",
                     w->wanted.items[i], IC_NOTIFY_NAME_LEN - 1);
  ic_notify_snap_t s;
  if (!ic_notify_read(m->notify, &s) || !s.valid || s.state == IC_NOTIFY_INIT || !s.nregions)
    return;
  for (int id = 0; id < IC_NOTIFY_REGIONS; id++)
    ic_notify_region_name(m->notify, id, w->names[id]);
  uint32_t mask;
  const char *unknown;
  if (ic_windows_resolve(w->wanted.items, w->wanted.n, w->names, s.nregions, &mask,
                         &unknown) == IC_WINDOWS_UNKNOWN) {
    char list[IC_NOTIFY_REGIONS * (IC_NOTIFY_NAME_LEN + 2)];
    ic_windows_list(w->names, s.nregions, list, sizeof list);
    ic_usage_error("--window-region", "the runner (pid %d) has no region '%s' (its regions: "
                   "%s)", (int)s.pid, unknown, list);
  }
}

static void configure(monitor_t *m, const ic_optval_t *o, int argc, char **argv) {
  ic_arglist_t critical, best_effort;
  ic_arglist_collect(&critical, argc, argv, "critical");
  ic_arglist_collect(&best_effort, argc, argv, "best-effort");
  m->policy = (policy_t)o[O_POLICY].u;
  if (!best_effort.n)
    ic_usage_error("--best-effort", "at least one group to freeze is required");
  if (m->policy == POLICY_EVENT && !o[O_NOTIFY].set)
    ic_usage_error("--notify", "the event policy needs the critical runner's notification block");
  if (m->policy == POLICY_POLL && !o[O_NOTIFY].set && !critical.n)
    ic_usage_error("--critical", "the poll policy needs --critical groups (or --notify)");
  add_groups(m, &critical, IC_ROLE_CRITICAL, "--critical");
  add_groups(m, &best_effort, IC_ROLE_BEST_EFFORT, "--best-effort");
  /* The groups point into the items (their paths, for the monitor's lifetime); only the
   * arrays holding them go. */
  free(critical.items);
  free(best_effort.items);
  m->interval_ns = to_ns(o[O_INTERVAL].d);
  m->window_ns = to_ns(o[O_WINDOW].d);
  if (m->window_ns < m->interval_ns)
    m->window_ns = m->interval_ns;
  m->threshold_pct = (double)o[O_THRESHOLD].u;
  m->idle_after_ns = to_ns(o[O_IDLE_AFTER].d);
  m->lead_ns = to_ns(o[O_LEAD].d);
  m->lease_ns = to_ns(o[O_LEASE].d);
  m->cap = parse_cap(&o[O_MAX_FREEZE], o[O_NOTIFY].set);
  if (m->interval_ns < 1000000 || m->interval_ns > 10000000000ULL)
    ic_usage_error("--interval", "must be within 1ms..10s");
  if (m->window_ns / m->interval_ns + 2 > IC_USAGE_RING)
    ic_usage_error("--window", "spans more than %u intervals", IC_USAGE_RING - 2);
  /* The heartbeat is renewed at least four times per lease whatever the policy sleeps
   * for (mon_slice_end), so any interval works with any lease. */
  if (m->lease_ns < 10000000 || m->lease_ns > 10000000000ULL)
    ic_usage_error("--lease", "must be within 10ms..10s");
  if (m->policy == POLICY_POLL) {
    require_usage(m, IC_ROLE_BEST_EFFORT, "--best-effort");
    if (!o[O_NOTIFY].set)
      require_usage(m, IC_ROLE_CRITICAL, "--critical");
  }
  if (o[O_NOTIFY].set && !(m->notify = ic_notify_map(o[O_NOTIFY].s)))
    ic_die(IC_EXIT_FAIL, "--notify: cannot map %s: %s", o[O_NOTIFY].s, strerror(errno));
  m->exit_with_runner = o[O_EXIT_WITH_RUNNER].set;
  if (m->exit_with_runner && !o[O_NOTIFY].set)
    ic_usage_error("--exit-with-runner", "needs --notify");
  configure_windows(m, argc, argv);
  double d = o[O_DURATION].d;
  m->end_ns = d > 0 ? ic_now_ns() + to_ns(d) : UINT64_MAX;
  if (!ic_log_open(&m->log, o[O_LOG].set ? o[O_LOG].s : NULL, LOG_BUFFER))
    ic_die(IC_EXIT_FAIL, "--log: cannot open %s: %s", o[O_LOG].s, strerror(errno));
  if (!ic_latency_init(&m->latency, LATENCY_CAP))
    ic_die(IC_EXIT_FAIL, "out of memory");
}

static const char *cap_text(const freeze_cap_t *c, char *buf, size_t cap) {
  if (c->kind == CAP_FRACTION)
    snprintf(buf, cap, "%g%%", c->fraction * 100);
  else if (c->kind == CAP_NS)
    snprintf(buf, cap, "%lluns", (unsigned long long)c->ns);
  else
    snprintf(buf, cap, "none");
  return buf;
}

static void groups_json(ic_json_t *j, const monitor_t *m) {
  ic_json_array(j, "groups");
  for (size_t i = 0; i < m->ngroups; i++) {
    const ic_cgroup_t *g = &m->groups[i];
    ic_json_object(j, NULL);
    ic_json_str(j, "path", g->path);
    ic_json_str(j, "role", g->role == IC_ROLE_CRITICAL ? "critical" : "best-effort");
    ic_json_str(j, "freezer", ic_freezer_name(g->freezer));
    ic_json_str(j, "usage", ic_usage_src_name(g->usage_src));
    ic_json_str(j, "usage_path", g->usage_path);
    ic_json_pop(j);
  }
  ic_json_pop(j);
}

static void print_ready(const monitor_t *m, const ic_optval_t *o, int cpu, bool rt, bool locked) {
  char cap[64];
  ic_json_t j;
  ic_json_begin(&j, stdout);
  ic_json_str(&j, "event", "ready");
  ic_json_i64(&j, "pid", (int64_t)getpid());
  ic_json_i64(&j, "watchdog_pid", (int64_t)m->watchdog.pid);
  ic_json_bool(&j, "watchdog_rt", m->watchdog.rt);
  ic_json_str(&j, "policy", policies[m->policy]);
  groups_json(&j, m);
  if (o[O_NOTIFY].set)
    ic_json_str(&j, "notify", o[O_NOTIFY].s);
  else
    ic_json_null(&j, "notify");
  ic_json_u64(&j, "interval_ns", m->interval_ns);
  ic_json_u64(&j, "window_ns", m->window_ns);
  ic_json_f64(&j, "threshold_pct", m->threshold_pct);
  ic_json_u64(&j, "idle_after_ns", m->idle_after_ns);
  ic_json_str(&j, "max_freeze", cap_text(&m->cap, cap, sizeof cap));
  ic_json_u64(&j, "lead_ns", m->lead_ns);
  ic_json_u64(&j, "lease_ns", m->lease_ns);
  if (cpu >= 0)
    ic_json_i64(&j, "cpu", cpu);
  else
    ic_json_null(&j, "cpu");
  ic_json_bool(&j, "rt", rt);
  ic_json_bool(&j, "mlock", locked);
  ic_json_end(&j);
}

static uint64_t process_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void latency_json(ic_json_t *j, ic_latency_t *l) {
  ic_latency_sort(l);
  ic_json_object(j, "latency");
  ic_json_u64(j, "n", l->n);
  ic_json_u64(j, "dropped", l->dropped);
  static const struct { const char *key; double p; } ranks[] = {
      {"p50_ns", 50}, {"p90_ns", 90}, {"p99_ns", 99}, {"max_ns", 100}};
  if (l->n) {
    ic_json_i64(j, "min_ns", l->ns[0]);
    for (size_t i = 0; i < sizeof ranks / sizeof ranks[0]; i++)
      ic_json_i64(j, ranks[i].key, ic_percentile_sorted(l->ns, l->n, ranks[i].p));
  } else {
    ic_json_null(j, "min_ns");
    for (size_t i = 0; i < sizeof ranks / sizeof ranks[0]; i++)
      ic_json_null(j, ranks[i].key);
  }
  ic_json_pop(j);
}

static void print_stats(monitor_t *m, uint64_t wall_ns, uint64_t cpu_ns, uint64_t wd_cpu_ns) {
  const counters_t *c = &m->count;
  ic_json_t j;
  ic_json_begin(&j, stdout);
  ic_json_str(&j, "event", "stats");
  ic_json_str(&j, "policy", policies[m->policy]);
  ic_json_u64(&j, "wall_ns", wall_ns);
  ic_json_u64(&j, "cpu_ns", cpu_ns);
  ic_json_f64(&j, "overhead_pct", wall_ns ? 100.0 * (double)cpu_ns / (double)wall_ns : NAN);
  ic_json_u64(&j, "watchdog_cpu_ns", wd_cpu_ns);
  ic_json_u64(&j, "freezes", c->freezes);
  ic_json_u64(&j, "thaws", c->thaws);
  ic_json_u64(&j, "cap_hits", c->cap_hits);
  ic_json_u64(&j, "write_errors", c->write_errors);
  ic_json_u64(&j, "polls", c->polls);
  ic_json_u64(&j, "poll_overruns", c->poll_overruns);
  ic_json_u64(&j, "releases", c->releases);
  ic_json_u64(&j, "late_releases", c->late_releases);
  ic_json_u64(&j, "missed_releases", c->missed_releases);
  ic_json_u64(&j, "lease_expiries", ic_wd_expiries(&m->watchdog));
  ic_json_u64(&j, "rearms", c->rearms);
  ic_arglist_json(&j, "window_regions", &m->windows.wanted);
  ic_json_u64(&j, "windows", c->windows);
  ic_json_u64(&j, "missed_windows", c->missed_windows);
  ic_json_bool(&j, "window_fallback", m->windows.fell_back);
  ic_json_u64(&j, "log_lost", m->log.lost);
  ic_json_bool(&j, "watchdog_lost", ic_monitor_orphaned);
  ic_json_str(&j, "latency_from", m->windows.follow   ? "region-entry"
                                   : m->policy == POLICY_EVENT || m->notify ? "release"
                                                                          : "activity-onset");
  latency_json(&j, &m->latency);
  ic_json_end(&j);
}

/* First of all, before the monitor pins itself, raises its priority or touches a group:
 * from here on a monitor that dies, stops or starves leaves nothing frozen. The watchdog
 * avoids our CPU, outranks us and lives in a session of its own. */
static void start_watchdog(monitor_t *m, int cpu) {
  char why[4400];
  ic_wd_config_t c = {.name = "monitor", .avoid_cpu = cpu, .lease_ns = m->lease_ns,
                      .log_fd = m->log.fd};
  if (!ic_wd_start(&m->watchdog, &c, why, sizeof why))
    ic_die(IC_EXIT_FAIL, "cannot start the watchdog: %s", why);
  for (size_t i = 0; i < m->ngroups; i++)
    if (m->groups[i].freeze_fd >= 0 && !ic_wd_guard(&m->watchdog, m->groups[i].path, why,
                                                    sizeof why))
      ic_die(IC_EXIT_FAIL, "cannot start the watchdog: %s", why);
}

int main(int argc, char **argv) {
  ic_set_progname("ic-monitor");
  ic_optval_t o[IC_NOPTS(opts)];
  ic_opts_main(&(ic_optset_t){opts, IC_NOPTS(opts), o}, argc, argv, O_HELP, usage);
  static monitor_t m; /* the usage rings are large: static storage, not the stack */
  configure(&m, o, argc - 1, argv + 1);
  int cpu = o[O_CPU].set ? (int)o[O_CPU].u : -1;
  install_signals();
  start_watchdog(&m, cpu);
  if (cpu >= 0)
    ic_pin_cpu_or_die(cpu);
  bool locked = o[O_MLOCK].set && ic_lock_memory();
  bool rt = o[O_RT].set && ic_set_rt_priority((int)o[O_RT].u);
  mon_thaw_all(&m, "startup", -1, true);
  ic_log_flush(&m.log);
  char why[4400];
  if (!ic_wd_arm(&m.watchdog, m.lease_ns, why, sizeof why))
    ic_die(IC_EXIT_FAIL, "cannot arm the watchdog: %s", why);
  print_ready(&m, o, cpu, rt, locked);

  uint64_t wall0 = ic_now_ns(), cpu0 = process_cpu_ns();
  if (m.policy == POLICY_EVENT)
    mon_run_event(&m);
  else
    mon_run_poll(&m);
  uint64_t wall = ic_now_ns() - wall0, cpu_used = process_cpu_ns() - cpu0;
  if (m.windows.follow) /* the runner's markers need not publish for us any more */
    ic_notify_set_windows(m.notify, 0);
  mon_thaw_all(&m, ic_monitor_orphaned ? "watchdog-lost" : ic_monitor_stop ? "signal" : "exit",
               -1, true);
  ic_log_flush(&m.log);
  bool orphaned = ic_monitor_orphaned;
  uint64_t wd_cpu = ic_wd_stop(&m.watchdog);
  ic_monitor_orphaned = orphaned; /* the clean stop's own SIGCHLD is not a loss */
  print_stats(&m, wall, cpu_used, wd_cpu);
  if (orphaned)
    ic_warn("the watchdog died; thawed every group and stopped");
  ic_log_close(&m.log);
  ic_latency_free(&m.latency);
  ic_arglist_free(&m.windows.wanted);
  return orphaned ? IC_EXIT_FAIL : IC_EXIT_OK;
}
