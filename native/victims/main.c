/* ic-victim KIND [options]: the victim lifecycle of docs/native-contract.md. The driver
 * owns everything around the work (pinning, scheduling, the sync protocol, region 0,
 * perf counters, output) so that a victim file holds nothing but its kernel. */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "ic_perf.h"
#include "ic_protocol.h"
#include "victim.h"
#include "victims.h"

enum { MAX_REGIONS = 16 };

enum { C_CPU, C_RT, C_MLOCK, C_REPS, C_SYNC, C_SEED, C_CLOCK, C_HELP };

static const ic_opt_t common_opts[] = {
    [C_CPU] = IC_OPT_ENTRY_CPU,
    [C_RT] = IC_OPT_ENTRY_RT_PRIORITY,
    [C_MLOCK] = IC_OPT_ENTRY_MLOCK,
    [C_REPS] = IC_OPT_ENTRY_REPS,
    [C_SYNC] = IC_OPT_ENTRY_SYNC,
    [C_SEED] = {.name = "seed", .type = IC_OPT_U64, .def = "1",
                .help = "seed of the synthetic input: same seed, same input"},
    [C_CLOCK] = IC_OPT_ENTRY_CLOCK,
    [C_HELP] = IC_OPT_ENTRY_HELP,
};

/* Region 0 is the driver's "total"; the victim's own regions follow from id 1. */
static int region_names(const ic_victim_t *v, const char *names[MAX_REGIONS]) {
  int n = 0;
  names[n++] = "total";
  for (int i = 0; v->regions[i]; i++) {
    if (n == MAX_REGIONS)
      ic_die(IC_EXIT_FAIL, "%s declares more than %d regions", v->name, MAX_REGIONS - 1);
    names[n++] = v->regions[i];
  }
  return n;
}

/* "regions": the names, or {id, name} objects for the ready line. */
static void regions_json(ic_json_t *j, const char *const *names, int n, bool with_ids) {
  ic_json_array(j, "regions");
  for (int r = 0; r < n; r++) {
    if (!with_ids) {
      ic_json_str(j, NULL, names[r]);
      continue;
    }
    ic_json_object(j, NULL);
    ic_json_i64(j, "id", r);
    ic_json_str(j, "name", names[r]);
    ic_json_pop(j);
  }
  ic_json_pop(j);
}

/* One --list line: the kind, its regions and its option table. */
static void describe(FILE *f, const ic_victim_t *v) {
  const char *names[MAX_REGIONS];
  ic_json_t j;
  ic_json_begin(&j, f);
  ic_json_str(&j, "kind", v->name);
  ic_json_str(&j, "help", v->help);
  regions_json(&j, names, region_names(v, names), false);
  ic_opts_json(&j, "options", v->opts, v->nopts);
  ic_json_end(&j);
}

static void usage(FILE *f, const ic_victim_t *v) {
  if (v) {
    fprintf(f, "usage: %s %s [options]\n\n%s\n\n%s options:\n", ic_progname(), v->name,
            v->help, v->name);
    ic_opts_help(f, v->opts, v->nopts);
  } else {
    fprintf(f, "usage: %s KIND [options] | --list | --help\nkinds:", ic_progname());
    for (size_t i = 0; i < ic_nvictims; i++)
      fprintf(f, " %s", ic_victims[i]->name);
    fputc('\n', f);
  }
  fputs("common options:\n", f);
  ic_opts_help(f, common_opts, IC_NOPTS(common_opts));
  ic_opts_units_help(f);
}

static int64_t nivcsw_now(void) {
  struct rusage ru;
  return getrusage(RUSAGE_THREAD, &ru) ? -1 : (int64_t)ru.ru_nivcsw;
}

/* Region 0 around the victim's repetition. The system calls for context switches and
 * counters stay outside it, so they never inflate "total". */
static void run_one(const ic_victim_t *v, void *state, int rep, ic_perf_t *perf) {
  ic_regions_set_rep(rep);
  ic_perf_rep_begin(perf);
  int64_t n0 = nivcsw_now();
  IC_REGION_BEGIN(0);
  v->run_rep(state, rep);
  IC_REGION_END(0);
  int64_t n1 = nivcsw_now();
  ic_perf_rep_end(perf, rep);
  ic_regions_set_nivcsw(0, n0 < 0 || n1 < 0 ? -1 : n1 - n0);
}

static int run_reps(const ic_victim_t *v, void *state, int reps, bool sync, ic_perf_t *perf) {
  int rep;
  for (rep = 0; rep < reps; rep++) {
    if (sync && !ic_protocol_go())
      break;
    run_one(v, state, rep, perf);
    if (sync)
      ic_protocol_rep_line(rep);
  }
  return rep;
}

/* Which clock the markers use and why, for the ready line. */
static char clock_why[256];

static void print_ready(const ic_victim_t *v, const ic_optval_t *c, const char *const *names,
                        int nregions, bool rt, bool locked) {
  ic_json_t j;
  ic_json_begin(&j, stdout);
  ic_json_str(&j, "event", "ready");
  ic_json_i64(&j, "pid", (int64_t)getpid());
  ic_json_str(&j, "kind", v->name);
  ic_protocol_ready_fields(&j, &(ic_protocol_ready_t){
                                   .cpu = c[C_CPU].set ? (int64_t)c[C_CPU].u : -1,
                                   .rt = rt,
                                   .mlock = locked,
                                   .sync = c[C_SYNC].set,
                                   .reps = c[C_REPS].u,
                                   .seed = c[C_SEED].u,
                                   .clock_why = clock_why});
  regions_json(&j, names, nregions, true);
  ic_json_end(&j);
}

static void sample_counters(ic_json_t *j, int rep, int region, void *ctx) {
  if (region == 0)
    ic_perf_json_counters(j, ctx, rep);
}

/* nivcsw is read only around region 0: getrusage is a system call, too slow for the
 * markers; the other regions carry -1 ("not measured"). */
static void print_end(const ic_victim_t *v, int reps, uint64_t checksum, const ic_perf_t *perf) {
  ic_json_t j;
  ic_json_begin(&j, stdout);
  ic_json_str(&j, "event", "end");
  ic_json_str(&j, "kind", v->name);
  ic_json_i64(&j, "reps", reps);
  ic_json_u64(&j, "checksum", checksum);
  ic_protocol_end_fields(&j, ic_regions_dropped());
  ic_perf_json_summary(&j, perf);
  ic_json_end(&j);
}

static int run(const ic_victim_t *v, const ic_optval_t *c, const ic_optval_t *own) {
  if (c[C_CPU].set)
    ic_pin_cpu_or_die((int)c[C_CPU].u);
  void *state = v->init(own, c[C_SEED].u);
  const char *names[MAX_REGIONS];
  int nregions = region_names(v, names);
  int reps = (int)c[C_REPS].u;
  if (!ic_regions_init(names, nregions, reps))
    ic_die(IC_EXIT_FAIL, "cannot set up the sample buffer");
  ic_protocol_choose_clock(c[C_CLOCK].u, clock_why, sizeof clock_why);
  ic_perf_t perf;
  if (!ic_perf_open(&perf, reps))
    ic_die(IC_EXIT_FAIL, "cannot set up the counter buffer");
  bool locked = c[C_MLOCK].set && ic_lock_memory();
  /* Last, so initialisation does not run at real-time priority. */
  bool rt = c[C_RT].set && ic_set_rt_priority((int)c[C_RT].u);
  print_ready(v, c, names, nregions, rt, locked);
  int done = run_reps(v, state, reps, c[C_SYNC].set, &perf);
  ic_regions_flush(stdout, sample_counters, &perf);
  print_end(v, done, v->checksum(state), &perf);
  v->fini(state);
  ic_perf_close(&perf);
  ic_regions_fini();
  return IC_EXIT_OK;
}

int main(int argc, char **argv) {
  ic_set_progname("ic-victim");
  if (argc < 2)
    ic_usage_error(NULL, "missing victim kind (try --list or --help)");
  if (!strcmp(argv[1], "--list")) {
    for (size_t i = 0; i < ic_nvictims; i++)
      describe(stdout, ic_victims[i]);
    return IC_EXIT_OK;
  }
  if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
    usage(stdout, NULL);
    return IC_EXIT_OK;
  }
  const ic_victim_t *v = ic_victim_find(argv[1]);
  if (!v)
    ic_usage_error(NULL, "unknown victim '%s' (ic-victim --list shows them)", argv[1]);
  ic_optval_t common[IC_NOPTS(common_opts)], own[v->nopts ? v->nopts : 1];
  const ic_optset_t sets[] = {{v->opts, v->nopts, own},
                              {common_opts, IC_NOPTS(common_opts), common}};
  char context[64];
  snprintf(context, sizeof context, "%s %s", ic_progname(), v->name);
  ic_opts_parse(sets, 2, argc - 2, argv + 2, context);
  if (common[C_HELP].set) {
    usage(stdout, v);
    return IC_EXIT_OK;
  }
  return run(v, common, own);
}
