/* ic-gang: partitioned real-time gang scheduling from user space (RT-Gang++, paper 002 §6;
 * docs/native-contract.md, "Gang scheduler").
 *
 *   ic-gang --gang NAME,PRIORITY,PARTITION,CGROUP ... --member NAME,NOTIFY ...
 *           [--best-effort DIR[,DIR]] [--throttle freeze|gate|none] [--gate-out FILE]
 *
 * A gang is a cgroup holding the jobs of one or more periodic tasks (several: a virtual
 * gang) that run together. Within a partition at most one gang runs at a time: the highest-
 * priority gang with work due; the others stay frozen, and a gang running when a higher one
 * becomes due is frozen (preempted) until that one is done. Partitions are independent.
 * While any gang runs, best-effort groups are frozen (--throttle freeze) or a shared word
 * tells ic-regulate --gate to enforce its budgets (--throttle gate).
 *
 * The members' runners (ic-periodic --notify) announce each release before they sleep
 * until it, so the scheduler decides before a job can start: a gang that must not run is
 * frozen while its runners sleep, and thawed (--lead before the release, if asked) when it
 * is its turn. A member between a completion and its next announcement is never frozen, so
 * announcements always get through. The scheduler waits on every member's sequence word at
 * once (futex_waitv) with the earliest due release as its timeout.
 *
 * Fail-safe: ic-watchdog guards every gang and best-effort group before anything is frozen,
 * and thaws them all if the scheduler dies or stops renewing its lease. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "arglist.h"
#include "client.h"
#include "ic_cgroup.h"
#include "ic_common.h"
#include "ic_opts.h"
#include "notify.h"

enum { MAX_GANGS = 32, MAX_MEMBERS = 64, MAX_BE = 16, MAX_PARTITIONS = 16 };

enum {
  O_GANG, O_MEMBER, O_BEST_EFFORT, O_THROTTLE, O_GATE_OUT, O_LEAD, O_LEASE, O_DURATION,
  O_EXIT_WITH_RUNNERS, O_LOG, O_CPU, O_RT, O_MLOCK, O_HELP
};

static const char *const throttles[] = {"freeze", "gate", "none", NULL};
enum { TH_FREEZE, TH_GATE, TH_NONE };

static const ic_opt_t opts[] = {
    [O_GANG] = {.name = "gang", .type = IC_OPT_STRING, .metavar = "NAME,PRIO,PARTITION,DIR",
                .help = "a gang: its name, priority (higher runs first), partition and the "
                        "cgroup its members' runners joined; repeatable"},
    [O_MEMBER] = {.name = "member", .type = IC_OPT_STRING, .metavar = "GANG,NOTIFY",
                  .help = "a member task: its gang and its runner's notification block "
                          "(ic-periodic --notify); repeatable"},
    [O_BEST_EFFORT] = {.name = "best-effort", .type = IC_OPT_STRING, .metavar = "DIR[,DIR]",
                       .help = "cgroups throttled while any gang runs; repeatable"},
    [O_THROTTLE] = {.name = "throttle", .type = IC_OPT_ENUM, .def = "freeze",
                    .choices = throttles,
                    .help = "best-effort while a gang runs: freeze, gate (a word for "
                            "ic-regulate --gate: budgets only then), none"},
    [O_GATE_OUT] = {.name = "gate-out", .type = IC_OPT_STRING, .metavar = "FILE",
                    .help = "gate: the 4 KiB file holding the running-gang count (u32 at 0); "
                            "created, never overwritten"},
    [O_LEAD] = {.name = "lead", .type = IC_OPT_DURATION, .def = "0",
                .help = "grant (thaw) a gang this long before its release, to hide the "
                        "thaw's latency"},
    [O_LEASE] = {.name = "lease", .type = IC_OPT_DURATION, .def = "100ms",
                 .help = "the watchdog thaws everything when the heartbeat is older, 10ms..10s"},
    [O_DURATION] = {.name = "duration", .type = IC_OPT_DURATION, .def = "0",
                    .help = "exit after this long; 0: until SIGINT/SIGTERM"},
    [O_EXIT_WITH_RUNNERS] = {.name = "exit-with-runners", .type = IC_OPT_FLAG,
                             .help = "exit once every member's runner has ended"},
    [O_LOG] = {.name = "log", .type = IC_OPT_STRING, .metavar = "FILE",
               .help = "one JSON line per freeze and thaw of a gang or best-effort group"},
    [O_CPU] = IC_OPT_ENTRY_CPU,
    [O_RT] = IC_OPT_ENTRY_RT_PRIORITY,
    [O_MLOCK] = IC_OPT_ENTRY_MLOCK,
    [O_HELP] = IC_OPT_ENTRY_HELP,
};

typedef struct {
  char name[64];
  int gang;
  ic_notify_t *n;
  ic_notify_snap_t s;
} member_t;

typedef struct {
  char name[64];
  int priority, partition;
  char dir[PATH_MAX];
  char spec[PATH_MAX]; /* ic_cgroup_open keeps pointers into it */
  ic_cgroup_t cg;
  bool frozen, wants;
  uint64_t grants, preemptions;
} gang_t;

static struct {
  gang_t g[MAX_GANGS];
  int ng;
  member_t m[MAX_MEMBERS];
  int nm;
  char partitions[MAX_PARTITIONS][64];
  int np;
  int holder[MAX_PARTITIONS];
  ic_cgroup_t be[MAX_BE];
  int nbe;
  bool be_throttled;
  int throttle;
  _Atomic uint32_t *gate;
  uint64_t lead_ns;
  FILE *log;
  uint64_t wakeups, write_errors, freezes, thaws;
} S;

static void usage(FILE *f) {
  fprintf(f, "usage: ic-gang --gang NAME,PRIO,PARTITION,DIR ... --member GANG,NOTIFY ... "
             "[options]\n\nAt most one real-time gang per partition at a time; best-effort "
             "throttled meanwhile.\n\noptions:\n");
  ic_opts_help(f, opts, IC_NOPTS(opts));
  ic_opts_units_help(f);
}

static void log_line(const char *what, const char *name, const char *reason) {
  if (!S.log)
    return;
  ic_json_t j;
  ic_json_begin(&j, S.log);
  ic_json_u64(&j, "t_ns", ic_now_ns());
  ic_json_str(&j, "action", what);
  ic_json_str(&j, "group", name);
  ic_json_str(&j, "reason", reason);
  ic_json_end(&j);
}

static void set_gang(gang_t *g, bool frozen, const char *reason) {
  if (g->frozen == frozen)
    return;
  if (ic_cgroup_set_frozen(&g->cg, frozen))
    S.write_errors++;
  g->frozen = frozen;
  frozen ? S.freezes++ : S.thaws++;
  log_line(frozen ? "freeze" : "thaw", g->name, reason);
}

static void set_best_effort(bool throttled) {
  if (S.be_throttled == throttled)
    return;
  S.be_throttled = throttled;
  if (S.throttle == TH_FREEZE)
    for (int i = 0; i < S.nbe; i++) {
      if (ic_cgroup_set_frozen(&S.be[i], throttled))
        S.write_errors++;
      log_line(throttled ? "freeze" : "thaw", S.be[i].path, throttled ? "gang" : "no-gang");
    }
}

/* ---- member states ---------------------------------------------------------------------------- */

static bool member_done(const member_t *m) { return m->s.valid && m->s.state == IC_NOTIFY_DONE; }

/* May the member's gang be frozen now? Not before its runner has announced a release, nor
 * between a completion and the next announcement: a frozen runner could not announce, and
 * its gang would never be due again. A member in a job may be (that is preemption). */
static bool member_parkable(const member_t *m) {
  if (!m->s.valid)
    return false;
  if (m->s.state == IC_NOTIFY_DONE || m->s.released > m->s.completed)
    return true;
  return m->s.state == IC_NOTIFY_RUNNING && m->s.next_release_ns &&
         m->s.next_job >= m->s.released;
}

static bool member_running(const member_t *m) {
  return m->s.valid && m->s.released > m->s.completed;
}

/* Parked and due: announced, not started, release time within the lead. */
static bool member_due(const member_t *m, uint64_t now) {
  return m->s.valid && m->s.state == IC_NOTIFY_RUNNING && m->s.released == m->s.completed &&
         m->s.next_job >= m->s.released && m->s.next_release_ns &&
         m->s.next_release_ns <= now + S.lead_ns;
}

/* The next moment a parked member becomes due (UINT64_MAX: none). */
static uint64_t next_due(uint64_t now) {
  uint64_t t = UINT64_MAX;
  for (int i = 0; i < S.nm; i++) {
    const member_t *m = &S.m[i];
    if (m->s.valid && m->s.state == IC_NOTIFY_RUNNING && m->s.released == m->s.completed &&
        m->s.next_job >= m->s.released && m->s.next_release_ns) {
      uint64_t at = m->s.next_release_ns > S.lead_ns ? m->s.next_release_ns - S.lead_ns : 0;
      if (at > now && at < t)
        t = at;
    }
  }
  return t;
}

/* ---- the policy ------------------------------------------------------------------------------- */

static void schedule(uint64_t now) {
  bool unparkable[MAX_GANGS] = {0};
  for (int i = 0; i < S.ng; i++)
    S.g[i].wants = false;
  for (int i = 0; i < S.nm; i++) {
    member_t *m = &S.m[i];
    gang_t *g = &S.g[m->gang];
    g->wants |= member_running(m) || member_due(m, now);
    unparkable[m->gang] |= !member_parkable(m);
  }
  bool any_running = false;
  for (int p = 0; p < S.np; p++) {
    int best = -1;
    for (int i = 0; i < S.ng; i++) {
      const gang_t *g = &S.g[i];
      if (g->partition != p || !g->wants)
        continue;
      /* The higher priority wins; at equal priority the holder keeps its turn. */
      if (best < 0 || g->priority > S.g[best].priority ||
          (g->priority == S.g[best].priority && i == S.holder[p]))
        best = i;
    }
    int old = S.holder[p];
    if (best != old && old >= 0 && S.g[old].wants) {
      S.g[old].preemptions++;
      set_gang(&S.g[old], true, "preempted");
    }
    S.holder[p] = best;
    for (int i = 0; i < S.ng; i++) {
      gang_t *g = &S.g[i];
      if (g->partition != p)
        continue;
      if (i == best) {
        if (g->frozen)
          g->grants++;
        set_gang(g, false, "grant");
      } else if (!unparkable[i] && !g->frozen) {
        set_gang(g, true, g->wants ? "wait" : "idle");
      }
    }
    any_running |= best >= 0;
  }
  if (S.throttle == TH_GATE && S.gate)
    atomic_store_explicit(S.gate, any_running ? 1u : 0u, memory_order_release);
  set_best_effort(any_running);
}

/* ---- waiting ---------------------------------------------------------------------------------- */

struct waitv {
  uint64_t val;
  uint64_t uaddr;
  uint32_t flags;
  uint32_t reserved;
};

/* Until some member publishes (its seq moves) or CLOCK_MONOTONIC reaches `until`. Falls
 * back to short sleeps on kernels without futex_waitv (before 5.16). */
static void wait_any(uint64_t until) {
#ifndef SYS_futex_waitv
#define SYS_futex_waitv 449
#endif
  static bool no_waitv;
  struct waitv w[MAX_MEMBERS];
  for (int i = 0; i < S.nm; i++) {
    w[i] = (struct waitv){.val = S.m[i].s.seq, .uaddr = (uintptr_t)&S.m[i].n->seq,
                          .flags = 2 /* FUTEX2_SIZE_U32, shared */};
    atomic_fetch_add(&S.m[i].n->waiters, 1);
  }
  struct timespec ts = {(time_t)(until / 1000000000u), (long)(until % 1000000000u)};
  if (!no_waitv) {
    long r = syscall(SYS_futex_waitv, w, (unsigned)S.nm, 0, &ts, CLOCK_MONOTONIC);
    if (r < 0 && errno == ENOSYS)
      no_waitv = true;
  }
  if (no_waitv) {
    uint64_t now = ic_now_ns(), step = 200000;
    uint64_t t = until < now + step ? until : now + step;
    struct timespec abs = {(time_t)(t / 1000000000u), (long)(t % 1000000000u)};
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &abs, NULL);
  }
  for (int i = 0; i < S.nm; i++)
    atomic_fetch_sub(&S.m[i].n->waiters, 1);
  S.wakeups++;
}

/* ---- set-up ----------------------------------------------------------------------------------- */

static int partition_index(const char *name) {
  for (int p = 0; p < S.np; p++)
    if (!strcmp(S.partitions[p], name))
      return p;
  if (S.np == MAX_PARTITIONS)
    ic_usage_error("--gang", "at most %d partitions", MAX_PARTITIONS);
  snprintf(S.partitions[S.np], sizeof S.partitions[0], "%s", name);
  S.holder[S.np] = -1;
  return S.np++;
}

static int gang_index(const char *name) {
  for (int i = 0; i < S.ng; i++)
    if (!strcmp(S.g[i].name, name))
      return i;
  return -1;
}

static void add_gangs(const ic_arglist_t *gangs) {
  /* ic_arglist splits on commas: a gang's four fields arrive as four items. */
  if (gangs->n % 4)
    ic_usage_error("--gang", "each gang is NAME,PRIORITY,PARTITION,DIR");
  for (size_t i = 0; i < gangs->n; i += 4) {
    if (S.ng == MAX_GANGS)
      ic_usage_error("--gang", "at most %d gangs", MAX_GANGS);
    gang_t *g = &S.g[S.ng];
    uint64_t prio;
    if (gang_index(gangs->items[i]) >= 0)
      ic_usage_error("--gang", "gang %s given twice", gangs->items[i]);
    snprintf(g->name, sizeof g->name, "%s", gangs->items[i]);
    if (!ic_parse_u64(gangs->items[i + 1], &prio) || prio > 99)
      ic_usage_error("--gang", "priority '%s' is not 0..99", gangs->items[i + 1]);
    g->priority = (int)prio;
    g->partition = partition_index(gangs->items[i + 2]);
    if (!realpath(gangs->items[i + 3], g->dir))
      ic_usage_error("--gang", "%s: %s", gangs->items[i + 3], strerror(errno));
    char why[256];
    memcpy(g->spec, g->dir, sizeof g->spec); /* same size: realpath filled dir */
    if (!ic_cgroup_open(&g->cg, g->spec, IC_ROLE_BEST_EFFORT, why, sizeof why) ||
        g->cg.freezer == IC_FREEZER_NONE)
      ic_usage_error("--gang", "%s: %s", g->dir, why[0] ? why : "no freezer");
    if (ic_cgroup_holds(&g->cg, getpid()))
      ic_usage_error("--gang", "%s holds the scheduler itself", g->dir);
    S.ng++;
  }
}

static void add_members(const ic_arglist_t *members) {
  if (members->n % 2)
    ic_usage_error("--member", "each member is GANG,NOTIFY");
  for (size_t i = 0; i < members->n; i += 2) {
    if (S.nm == MAX_MEMBERS)
      ic_usage_error("--member", "at most %d members", MAX_MEMBERS);
    member_t *m = &S.m[S.nm];
    m->gang = gang_index(members->items[i]);
    if (m->gang < 0)
      ic_usage_error("--member", "no gang %s", members->items[i]);
    snprintf(m->name, sizeof m->name, "%s", members->items[i + 1]);
    if (!(m->n = ic_notify_map(members->items[i + 1])))
      ic_usage_error("--member", "%s: %s", members->items[i + 1], strerror(errno));
    S.nm++;
  }
}

static void add_best_effort(const ic_arglist_t *dirs) {
  for (size_t i = 0; i < dirs->n; i++) {
    if (S.nbe == MAX_BE)
      ic_usage_error("--best-effort", "at most %d groups", MAX_BE);
    char why[256];
    if (!ic_cgroup_open(&S.be[S.nbe], dirs->items[i], IC_ROLE_BEST_EFFORT, why, sizeof why))
      ic_usage_error("--best-effort", "%s", why);
    if (ic_cgroup_holds(&S.be[S.nbe], getpid()))
      ic_usage_error("--best-effort", "%s holds the scheduler itself", S.be[S.nbe].path);
    S.nbe++;
  }
}

static void print_ready(const ic_wd_t *w, bool rt) {
  ic_json_t j;
  ic_json_begin(&j, stdout);
  ic_json_str(&j, "event", "ready");
  ic_json_i64(&j, "pid", getpid());
  ic_json_i64(&j, "watchdog_pid", w->pid);
  ic_json_i64(&j, "gangs", S.ng);
  ic_json_i64(&j, "members", S.nm);
  ic_json_i64(&j, "partitions", S.np);
  ic_json_i64(&j, "best_effort", S.nbe);
  ic_json_str(&j, "throttle", throttles[S.throttle]);
  ic_json_u64(&j, "lead_ns", S.lead_ns);
  ic_json_bool(&j, "rt", rt);
  ic_json_end(&j);
}

static void print_stats(uint64_t wall, uint64_t cpu_ns, uint64_t wd_cpu, uint64_t expiries) {
  ic_json_t j;
  ic_json_begin(&j, stdout);
  ic_json_str(&j, "event", "stats");
  ic_json_u64(&j, "wall_ns", wall);
  ic_json_u64(&j, "cpu_ns", cpu_ns);
  ic_json_u64(&j, "watchdog_cpu_ns", wd_cpu);
  ic_json_u64(&j, "wakeups", S.wakeups);
  ic_json_u64(&j, "freezes", S.freezes);
  ic_json_u64(&j, "thaws", S.thaws);
  ic_json_u64(&j, "write_errors", S.write_errors);
  ic_json_u64(&j, "lease_expiries", expiries);
  ic_json_end(&j);
  for (int i = 0; i < S.ng; i++) {
    ic_json_begin(&j, stdout);
    ic_json_str(&j, "event", "gang");
    ic_json_str(&j, "name", S.g[i].name);
    ic_json_str(&j, "partition", S.partitions[S.g[i].partition]);
    ic_json_i64(&j, "priority", S.g[i].priority);
    ic_json_u64(&j, "grants", S.g[i].grants);
    ic_json_u64(&j, "preemptions", S.g[i].preemptions);
    ic_json_end(&j);
  }
}

static void thaw_everything(void) {
  for (int i = 0; i < S.ng; i++)
    set_gang(&S.g[i], false, "exit");
  set_best_effort(false);
  if (S.gate)
    atomic_store(S.gate, 0u);
}

int main(int argc, char **argv) {
  ic_set_progname("ic-gang");
  ic_optval_t o[IC_NOPTS(opts)];
  ic_arglist_t gangs, members, best;
  ic_arglist_collect(&gangs, argc, argv, "gang");
  ic_arglist_collect(&members, argc, argv, "member");
  ic_arglist_collect(&best, argc, argv, "best-effort");
  ic_opts_main(&(ic_optset_t){opts, IC_NOPTS(opts), o}, argc, argv, O_HELP, usage);
  if (!gangs.n || !members.n)
    ic_usage_error("--gang", "at least one gang with at least one member");
  S.throttle = (int)o[O_THROTTLE].u;
  S.lead_ns = (uint64_t)(o[O_LEAD].d * 1e9);
  uint64_t lease = (uint64_t)(o[O_LEASE].d * 1e9);
  if (lease < 10000000 || lease > 10000000000ULL)
    ic_usage_error("--lease", "must be 10ms..10s");
  add_gangs(&gangs);
  add_members(&members);
  add_best_effort(&best); /* the groups keep pointers into best's items, until exit */
  ic_arglist_free(&gangs); /* every name and path is copied */
  ic_arglist_free(&members);
  for (int i = 0; i < S.ng; i++) {
    bool has = false;
    for (int k = 0; k < S.nm; k++)
      has |= S.m[k].gang == i;
    if (!has)
      ic_usage_error("--member", "gang %s has no member", S.g[i].name);
  }
  if (S.throttle == TH_GATE) {
    if (!o[O_GATE_OUT].set)
      ic_usage_error("--gate-out", "--throttle gate needs the file to publish the gate in");
    int fd = open(o[O_GATE_OUT].s, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 || ftruncate(fd, 4096))
      ic_usage_error("--gate-out", "cannot create %s: %s", o[O_GATE_OUT].s, strerror(errno));
    void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED)
      ic_die(IC_EXIT_FAIL, "cannot map the gate: %s", strerror(errno));
    S.gate = p;
  }
  if (o[O_LOG].set) {
    int fd = open(o[O_LOG].s, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 || !(S.log = fdopen(fd, "a")))
      ic_usage_error("--log", "%s: %s", o[O_LOG].s, strerror(errno));
    setvbuf(S.log, NULL, _IOLBF, 0);
  }

  char why[512];
  ic_wd_t w;
  int cpu = o[O_CPU].set ? (int)o[O_CPU].u : -1;
  if (!ic_wd_start(&w, &(ic_wd_config_t){.name = "gang", .avoid_cpu = cpu, .lease_ns = lease,
                                          .log_fd = -1},
                   why, sizeof why))
    ic_die(IC_EXIT_FAIL, "cannot start the watchdog: %s", why);
  for (int i = 0; i < S.ng; i++)
    if (!ic_wd_guard(&w, S.g[i].dir, why, sizeof why))
      ic_die(IC_EXIT_FAIL, "%s", why);
  for (int i = 0; i < S.nbe; i++)
    if (!ic_wd_guard(&w, S.be[i].path, why, sizeof why))
      ic_die(IC_EXIT_FAIL, "%s", why);
  for (int i = 0; i < S.ng; i++) { /* whatever an earlier run left: start thawed */
    S.g[i].frozen = true;
    set_gang(&S.g[i], false, "startup");
  }
  S.be_throttled = true;
  set_best_effort(false);

  ic_catch_stop_signals(0);
  if (cpu >= 0)
    ic_pin_cpu_or_die(cpu);
  if (o[O_MLOCK].set)
    ic_lock_memory();
  bool rt = o[O_RT].set && ic_set_rt_priority((int)o[O_RT].u);
  if (!ic_wd_arm(&w, lease, why, sizeof why))
    ic_die(IC_EXIT_FAIL, "the watchdog refused the lease: %s", why);
  print_ready(&w, rt);
  fflush(stdout);

  uint64_t cpu0 = ic_process_cpu_ns();
  uint64_t start = ic_now_ns();
  uint64_t end = o[O_DURATION].d > 0 ? start + (uint64_t)(o[O_DURATION].d * 1e9) : UINT64_MAX;
  while (!ic_stop_requested) {
    uint64_t now = ic_now_ns();
    if (now >= end)
      break;
    bool all_done = true;
    for (int i = 0; i < S.nm; i++) {
      if (!ic_notify_read(S.m[i].n, &S.m[i].s))
        S.m[i].s.valid = false;
      all_done &= member_done(&S.m[i]);
    }
    if (all_done && o[O_EXIT_WITH_RUNNERS].set)
      break;
    schedule(now);
    ic_wd_beat(&w, now);
    if (ic_wd_expired(&w)) /* thawed behind our back: say so, and decide again at once */
      for (int i = 0; i < S.ng; i++)
        S.g[i].frozen = false;
    uint64_t until = next_due(now);
    uint64_t beat = now + lease / 4;
    wait_any(until < beat ? (until < end ? until : end) : (beat < end ? beat : end));
  }
  uint64_t cpu_ns = ic_process_cpu_ns() - cpu0;
  thaw_everything();
  uint64_t expiries = ic_wd_expiries(&w);
  uint64_t wd_cpu = ic_wd_stop(&w);
  if (S.log)
    fclose(S.log);
  print_stats(ic_now_ns() - start, cpu_ns, wd_cpu, expiries);
  ic_arglist_free(&best);
  return IC_EXIT_OK;
}
