#include "ic_lifecycle.h"

#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ic_arch.h"
#include "ic_ctl.h"

enum { C_CPU, C_RT, C_MLOCK, C_DURATION, C_RATE, C_CONTROL, C_SEED, C_HELP };

static const ic_opt_t common_opts[] = {
    [C_CPU] = IC_OPT_ENTRY_CPU,
    [C_RT] = IC_OPT_ENTRY_RT_PRIORITY,
    [C_MLOCK] = IC_OPT_ENTRY_MLOCK,
    [C_DURATION] = {.name = "duration", .type = IC_OPT_DURATION, .def = "0",
                    .help = "stop by itself after this wall-clock time (paused time "
                            "included); 0: run until stopped"},
    [C_RATE] = {.name = "rate", .type = IC_OPT_U64, .def = "0",
                .help = "throttle to N accesses/s (one access = one cache line), spinning "
                        "without memory traffic when ahead; 0: unthrottled"},
    [C_CONTROL] = {.name = "control", .type = IC_OPT_STRING, .metavar = "PATH",
                   .help = "shared 4 KiB control block (e.g. /dev/shm/ic-aggr.ctl) for "
                           "pause/resume/stop and live counters; created if missing"},
    [C_SEED] = {.name = "seed", .type = IC_OPT_U64, .def = "1",
                .help = "seed of the random memory layout: same seed, same layout"},
    [C_HELP] = IC_OPT_ENTRY_HELP,
};

/* Rate-limited runs pace in steps of about this long: short enough for a smooth rate,
 * long enough that the clock reads cost nothing. */
#define PACE_NS 1000000ULL
/* Behind schedule by more than this (preempted, or the rate is unreachable): forget the
 * debt instead of bursting to repay it. */
#define MAX_LAG_NS 10000000ULL
/* Heartbeat period while no chunk runs (paused or ahead of the rate). */
#define IDLE_HEARTBEAT_NS 1000000ULL
/* Multiply-adds per idle slice: well under a microsecond on any core of interest. */
#define IDLE_SPIN 256u

typedef struct {
  int cpu;  /* -1: not pinned */
  bool rt;  /* SCHED_FIFO obtained */
  uint64_t rate;
  double duration_s;
  const char *control;
} settings_t;

typedef struct {
  const ic_aggressor_t *kind;
  void *state;
  size_t line;
  ic_ctl_t *ctl;
  uint64_t rate, deadline_ns;
  uint64_t accesses, start_ns, end_ns, paused_ns, last_pub_ns;
  uint64_t burn; /* the spinner's register value */
  uint64_t cpus_seen[CPU_SETSIZE / 64];
} run_t;

static ic_ctl_t *signal_ctl;

/* Only a lock-free atomic store: async-signal-safe, and the run loop sees it within one
 * chunk. */
static void on_signal(int sig) {
  ic_ctl_command(signal_ctl, sig == SIGUSR1   ? IC_CMD_PAUSE
                             : sig == SIGUSR2 ? IC_CMD_RUN
                                              : IC_CMD_STOP);
}

static void install_signals(ic_ctl_t *ctl) {
  static const int sigs[] = {SIGINT, SIGTERM, SIGUSR1, SIGUSR2};
  struct sigaction sa = {.sa_handler = on_signal, .sa_flags = SA_RESTART};
  sigemptyset(&sa.sa_mask);
  signal_ctl = ctl;
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
    sigaction(sigs[i], &sa, NULL);
}

static void publish(run_t *r, uint64_t now) {
  int cpu = sched_getcpu();
  if (cpu >= 0 && cpu < CPU_SETSIZE)
    r->cpus_seen[cpu / 64] |= 1ULL << (cpu % 64);
  ic_ctl_publish(r->ctl, r->accesses, r->accesses * r->line, now, cpu);
  r->last_pub_ns = now;
}

/* One slice of register-only spinning; the CPU stays busy, the memory system idle. */
static uint64_t idle(run_t *r) {
  r->burn = ic_spin(r->burn, IDLE_SPIN);
  uint64_t now = ic_now_ns();
  if (now - r->last_pub_ns >= IDLE_HEARTBEAT_NS)
    publish(r, now);
  return now;
}

static uint64_t pause_until_resumed(run_t *r, uint64_t now) {
  uint64_t from = now;
  ic_ctl_set_state(r->ctl, IC_STATE_PAUSED);
  while (ic_ctl_cmd(r->ctl) == IC_CMD_PAUSE && now < r->deadline_ns)
    now = idle(r);
  r->paused_ns += now - from;
  return now;
}

static uint64_t chunk_size(uint64_t rate) {
  if (!rate)
    return IC_AGGR_MAX_CHUNK;
  uint64_t per_pace = rate / (1000000000ULL / PACE_NS);
  return per_pace < 1 ? 1 : per_pace > IC_AGGR_MAX_CHUNK ? IC_AGGR_MAX_CHUNK : per_pace;
}

/* --rate: the schedule says when the next access is due; ns_per_access 0 = unthrottled. */
typedef struct {
  double ns_per_access;
  uint64_t base_ns, done;
} pacer_t;

static void pacer_restart(pacer_t *p, uint64_t now) {
  p->base_ns = now;
  p->done = 0;
}

/* True when the next chunk is due. */
static bool pacer_due(pacer_t *p, uint64_t now) {
  if (!p->ns_per_access)
    return true;
  double due = (double)p->base_ns + (double)p->done * p->ns_per_access;
  if ((double)now < due)
    return false;
  if ((double)now > due + (double)MAX_LAG_NS)
    pacer_restart(p, now);
  return true;
}

static void run(run_t *r, double duration_s) {
  const uint64_t chunk = chunk_size(r->rate);
  uint64_t now = ic_now_ns();
  pacer_t pace = {.ns_per_access = r->rate ? 1e9 / (double)r->rate : 0.0, .base_ns = now};
  bool running = false;
  r->start_ns = r->last_pub_ns = now;
  r->deadline_ns = duration_s > 0 ? now + (uint64_t)(duration_s * 1e9) : UINT64_MAX;
  for (;;) {
    uint32_t cmd = ic_ctl_cmd(r->ctl);
    if (cmd == IC_CMD_STOP || now >= r->deadline_ns)
      break;
    if (cmd == IC_CMD_PAUSE) {
      now = pause_until_resumed(r, now);
      running = false;
      pacer_restart(&pace, now);
      continue;
    }
    if (!running) {
      ic_ctl_set_state(r->ctl, IC_STATE_RUNNING);
      running = true;
    }
    if (!pacer_due(&pace, now)) {
      now = idle(r);
      continue;
    }
    uint64_t did = r->kind->step(r->state, chunk);
    r->accesses += did;
    pace.done += did;
    now = ic_now_ns();
    publish(r, now);
  }
  r->end_ns = now;
  publish(r, now);
  ic_ctl_set_state(r->ctl, IC_STATE_STOPPED);
}

static void cpus_json(ic_json_t *j, const run_t *r) {
  ic_json_array(j, "cpu_seen");
  for (int c = 0; c < CPU_SETSIZE; c++)
    if (r->cpus_seen[c / 64] & (1ULL << (c % 64)))
      ic_json_i64(j, NULL, c);
  ic_json_pop(j);
}

/* The fields that identify a run, shared by the ready and stats lines. */
static void identity(ic_json_t *j, const ic_aggressor_t *k, const ic_aggr_info_t *info,
                     const settings_t *s) {
  char page[32];
  ic_json_str(j, "kind", k->name);
  ic_json_str(j, "op", info->op);
  ic_json_u64(j, "size", info->size);
  ic_json_u64(j, "mlp", info->mlp);
  if (s->cpu >= 0)
    ic_json_i64(j, "cpu", s->cpu);
  else
    ic_json_null(j, "cpu");
  ic_json_str(j, "pages", ic_format_size(info->page, page, sizeof page));
}

static void print_ready(const ic_aggressor_t *k, const void *state, const ic_aggr_info_t *info,
                        const settings_t *s, size_t line) {
  ic_json_t j;
  ic_json_begin(&j, stdout);
  ic_json_str(&j, "event", "ready");
  ic_json_i64(&j, "pid", getpid());
  identity(&j, k, info, s);
  ic_json_bool(&j, "rt", s->rt);
  ic_json_u64(&j, "line", line);
  ic_json_u64(&j, "rate", s->rate);
  ic_json_f64(&j, "duration_s", s->duration_s);
  if (s->control)
    ic_json_str(&j, "control", s->control);
  else
    ic_json_null(&j, "control");
  ic_json_str(&j, "arch", IC_ARCH_NAME);
  if (k->report)
    k->report(state, &j);
  ic_json_end(&j);
}

static void print_stats(const run_t *r, const ic_aggr_info_t *info, const settings_t *s) {
  double duration = (double)(r->end_ns - r->start_ns) / 1e9;
  double paused = (double)r->paused_ns / 1e9, active = duration - paused;
  uint64_t bytes = r->accesses * r->line;
  ic_json_t j;
  ic_json_begin(&j, stdout);
  ic_json_str(&j, "event", "stats");
  identity(&j, r->kind, info, s);
  cpus_json(&j, r);
  ic_json_bool(&j, "rt", s->rt);
  ic_json_f64(&j, "duration_s", duration);
  ic_json_f64(&j, "active_s", active);
  ic_json_f64(&j, "paused_s", paused);
  ic_json_u64(&j, "accesses", r->accesses);
  ic_json_u64(&j, "bytes", bytes);
  /* Over active time only; a zero-length run has no rate (null, not a fake 0). */
  ic_json_f64(&j, "mbps", active > 0 ? (double)bytes / active / 1e6 : NAN);
  ic_json_f64(&j, "accesses_per_s", active > 0 ? (double)r->accesses / active : NAN);
  if (r->kind->report)
    r->kind->report(r->state, &j);
  ic_json_end(&j);
}

void ic_aggr_common_help(FILE *f) {
  fputs("\ncommon options:\n", f);
  ic_opts_help(f, common_opts, IC_NOPTS(common_opts));
}

void ic_aggr_help(FILE *f, const ic_aggressor_t *k) {
  fprintf(f, "usage: %s %s [options]\n\n%s\n\n%s options:\n", ic_progname(), k->name, k->help,
          k->name);
  ic_opts_help(f, k->opts, k->nopts);
  ic_aggr_common_help(f);
  fputs("\nSignals: SIGUSR1 pauses (spinning, no memory traffic), SIGUSR2 resumes, "
        "SIGINT/SIGTERM stop\nand print one JSON stats line.\n",
        f);
  ic_opts_units_help(f);
}

void ic_aggr_describe(FILE *f, const ic_aggressor_t *k) {
  ic_json_t j;
  ic_json_begin(&j, f);
  ic_json_str(&j, "kind", k->name);
  ic_json_str(&j, "help", k->help);
  ic_opts_json(&j, "options", k->opts, k->nopts);
  ic_json_end(&j);
}

int ic_aggr_main(const ic_aggressor_t *k, int argc, char **argv) {
  ic_optval_t common[IC_NOPTS(common_opts)], own[k->nopts ? k->nopts : 1];
  const ic_optset_t sets[] = {{k->opts, k->nopts, own},
                              {common_opts, IC_NOPTS(common_opts), common}};
  char context[64];
  snprintf(context, sizeof context, "%s %s", ic_progname(), k->name);
  ic_opts_parse(sets, 2, argc, argv, context);
  if (common[C_HELP].set) {
    ic_aggr_help(stdout, k);
    return IC_EXIT_OK;
  }
  settings_t s = {
      .cpu = common[C_CPU].set ? (int)common[C_CPU].u : -1,
      .rate = common[C_RATE].u,
      .duration_s = common[C_DURATION].d,
      .control = common[C_CONTROL].set ? common[C_CONTROL].s : NULL,
  };
  run_t r = {.kind = k, .line = ic_line_size(), .rate = s.rate};
  r.ctl = s.control ? ic_ctl_open(s.control) : ic_ctl_private();
  /* Handlers before the (possibly long) initialisation: a stop sent meanwhile is kept
   * in the command word and honoured as soon as the run starts. */
  install_signals(r.ctl);
  if (s.cpu >= 0)
    ic_pin_cpu_or_die(s.cpu);
  ic_aggr_info_t info = {.mlp = 1};
  ic_aggr_args_t args = {.opt = own, .seed = common[C_SEED].u, .line = r.line};
  r.state = k->init(&args, &info);
  if (common[C_MLOCK].set)
    ic_lock_memory();
  /* Last, so initialisation does not run at real-time priority. */
  if (common[C_RT].set)
    s.rt = ic_set_rt_priority((int)common[C_RT].u);
  print_ready(k, r.state, &info, &s, r.line);
  run(&r, s.duration_s);
  print_stats(&r, &info, &s);
  k->fini(r.state);
  return IC_EXIT_OK;
}
