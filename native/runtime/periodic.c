/* ic-periodic [runner options] victim|aggr KIND [kind options]: runs one victim or
 * aggressor kernel as a periodic real-time task (docs/native-contract.md, "Periodic
 * runner"). The release loop and its lines are the runner's (runner.h), shared with a
 * user's own job function (ic_task.h); this file supplies the kernel. */
#include <stdlib.h>
#include <string.h>

#include "aggressors.h"
#include "runner.h"
#include "victims.h"

/* The kernels' own runner options, beside the runner's. */
enum { K_WORK, K_SEED };

static const ic_opt_t kernel_opts[] = {
    [K_WORK] = {.name = "work", .type = IC_OPT_STRING, .metavar = "passes:N|time:DURATION",
                .help = "aggressors only: one job's work, N sweeps over the footprint or a "
                        "thread-CPU-time budget; unset: passes:1"},
    [K_SEED] = {.name = "seed", .type = IC_OPT_U64, .def = "1",
                .help = "seed of the kernel's synthetic input or memory layout"},
};

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
  uint64_t seed;
} task_t;

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
  ic_opts_help(f, ic_runner_opts, IC_RUNNER_NOPTS);
  ic_opts_help(f, kernel_opts, IC_NOPTS(kernel_opts));
  ic_opts_units_help(f);
}

static void kind_usage(FILE *f, const task_t *t) {
  fprintf(f, "usage: %s [runner options] %s %s [options]\n\n%s\n\n%s options:\n",
          ic_progname(), t->family, t->kind, t->victim ? t->victim->help : t->aggr->help,
          t->kind);
  ic_opts_help(f, t->opts, t->nopts);
  fprintf(f, "\n(runner options: %s --help)\n", ic_progname());
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

static void init_task(task_t *t, const ic_optval_t *own) {
  t->line = ic_line_size();
  if (t->victim) {
    int n = 0;
    while (t->victim->regions[n])
      n++;
    ic_regions_declare(t->victim->regions, n, 1); /* a victim's region ids start at 1 */
    t->state = t->victim->init(own, t->seed);
    return;
  }
  t->info = (ic_aggr_info_t){.mlp = 1};
  ic_aggr_args_t args = {.opt = own, .seed = t->seed, .line = t->line};
  t->state = t->aggr->init(&args, &t->info);
}

/* One job's kernel work; returns the accesses an aggressor did (0 for a victim). */
static uint64_t run_job(void *ctx, uint64_t job, uint64_t cpu0) {
  task_t *t = ctx;
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

static void kernel_settings(task_t *t, const ic_optval_t *o) {
  char why[256];
  t->seed = o[K_SEED].u;
  t->work = (ic_work_t){.kind = IC_WORK_PASSES, .amount = 1};
  if (o[K_WORK].set && t->victim)
    ic_usage_error("--work", "applies to aggressors only (a victim job is one repetition)");
  if (o[K_WORK].set && !ic_work_parse(o[K_WORK].s, &t->work, why, sizeof why))
    ic_usage_error("--work", "%s", why);
}

static void ready_fields(void *ctx, ic_json_t *j) {
  const task_t *t = ctx;
  char work[64], page[32];
  ic_json_u64(j, "seed", t->seed);
  if (!t->aggr)
    return;
  ic_json_str(j, "work", ic_work_format(&t->work, work, sizeof work));
  ic_json_str(j, "op", t->info.op);
  ic_json_u64(j, "size", t->info.size);
  ic_json_u64(j, "mlp", t->info.mlp);
  ic_json_str(j, "pages", ic_format_size(t->info.page, page, sizeof page));
  if (t->aggr->report)
    t->aggr->report(t->state, j);
}

static void summary_fields(void *ctx, ic_json_t *j, uint64_t accesses) {
  const task_t *t = ctx;
  if (t->victim) {
    ic_json_u64(j, "checksum", t->victim->checksum(t->state));
    return;
  }
  ic_json_u64(j, "accesses", accesses);
  ic_json_u64(j, "bytes", accesses * t->line);
}

int main(int argc, char **argv) {
  ic_set_progname("ic-periodic");
  ic_runner_signals();
  int fam = ic_runner_front(argc, argv, kernel_opts, IC_NOPTS(kernel_opts));
  ic_optval_t ropt[IC_RUNNER_NOPTS], kopt[IC_NOPTS(kernel_opts)];
  const ic_optset_t rsets[] = {{ic_runner_opts, IC_RUNNER_NOPTS, ropt},
                               {kernel_opts, IC_NOPTS(kernel_opts), kopt}};
  ic_opts_parse(rsets, 2, fam - 1, argv + 1, ic_progname());
  if (ropt[IC_RUNNER_HELP].set || fam >= argc) {
    if (!ropt[IC_RUNNER_HELP].set)
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

  kernel_settings(&t, kopt);
  ic_runner_t r;
  ic_runner_setup(&r, ropt, t.kind, fam - 1, argv + 1);
  init_task(&t, own);
  const ic_runner_work_t work = {.family = t.family, .kind = t.kind, .ctx = &t, .job = run_job,
                                 .counts_accesses = t.aggr != NULL, .ready = ready_fields,
                                 .summary = summary_fields};
  ic_runner_run(&r, &work);
  if (t.victim)
    t.victim->fini(t.state);
  else
    t.aggr->fini(t.state);
  ic_runner_free(&r);
  return IC_EXIT_OK;
}
