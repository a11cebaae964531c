/* ic-region-bench: what one IC_REGION_BEGIN/IC_REGION_END pair costs on this host, with
 * the CPU-time source the victims would use. Each round times n marker pairs and n empty
 * iterations of the same loop; the difference over n is the per-pair cost. Rounds are
 * repeated so the spread shows how much to trust the median. */
#include <stdlib.h>
#include <string.h>

#include "ic_arch.h"
#include "ic_opts.h"
#include "ic_region.h"

enum { O_PAIRS, O_ROUNDS, O_CLOCK, O_HELP };

static const char *const clocks[] = {"cpu", "wall", NULL};

static const ic_opt_t opts[] = {
    [O_PAIRS] = {.name = "pairs", .type = IC_OPT_SIZE, .min = 1000, .max = 1ull << 32,
                 .metavar = "N",
                 .help = "marker pairs per round; unset: about 0.2 s worth, at most 10M"},
    [O_ROUNDS] = {.name = "rounds", .type = IC_OPT_U64, .def = "11", .min = 1, .max = 1000,
                  .help = "rounds; the median, min and max are over rounds"},
    [O_CLOCK] = {.name = "clock", .type = IC_OPT_ENUM, .def = "cpu", .choices = clocks,
                 .help = "marker clock: cpu (thread CPU time) or wall (the cycle counter)"},
    [O_HELP] = {.name = "help", .type = IC_OPT_FLAG, .help = "print this help and exit"},
};

#define ROUND_TARGET_NS 200000000ull
#define MAX_AUTO_PAIRS 10000000ull
#define CALIBRATION_PAIRS 10000ull

static const char *const names[] = {"total", "bench"};

/* The barrier keeps the empty loop from being deleted or collapsed; the marker loop
 * carries the same barrier so that only the markers differ. */
static uint64_t time_empty(uint64_t n) {
  uint64_t t0 = ic_now_ns();
  for (uint64_t i = 0; i < n; i++)
    ic_compiler_barrier();
  return ic_now_ns() - t0;
}

static uint64_t time_pairs(uint64_t n) {
  uint64_t t0 = ic_now_ns();
  for (uint64_t i = 0; i < n; i++) {
    IC_REGION_BEGIN(1);
    IC_REGION_END(1);
    ic_compiler_barrier();
  }
  return ic_now_ns() - t0;
}

static uint64_t auto_pairs(void) {
  uint64_t t = time_pairs(CALIBRATION_PAIRS);
  uint64_t n = t ? ROUND_TARGET_NS * CALIBRATION_PAIRS / t : MAX_AUTO_PAIRS;
  return n > MAX_AUTO_PAIRS ? MAX_AUTO_PAIRS : n < CALIBRATION_PAIRS ? CALIBRATION_PAIRS : n;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void print_result(uint64_t n, const double *ns, int rounds) {
  double sorted[1000]; /* --rounds' bound */
  memcpy(sorted, ns, (size_t)rounds * sizeof ns[0]);
  qsort(sorted, (size_t)rounds, sizeof ns[0], cmp_double);
  double median =
      rounds % 2 ? sorted[rounds / 2] : (sorted[rounds / 2 - 1] + sorted[rounds / 2]) / 2;
  ic_json_t j;
  ic_json_begin(&j, stdout);
  ic_json_str(&j, "event", "region_bench");
  ic_json_str(&j, "cputime_mode", ic_regions_cputime_mode());
  ic_json_u64(&j, "pairs", n);
  ic_json_i64(&j, "rounds", rounds);
  ic_json_f64(&j, "median_ns", median);
  ic_json_f64(&j, "min_ns", sorted[0]);
  ic_json_f64(&j, "max_ns", sorted[rounds - 1]);
  ic_json_array(&j, "rounds_ns"); /* in the order they ran */
  for (int r = 0; r < rounds; r++)
    ic_json_f64(&j, NULL, ns[r]);
  ic_json_pop(&j);
  ic_json_end(&j);
}

int main(int argc, char **argv) {
  ic_set_progname("ic-region-bench");
  ic_optval_t val[IC_NOPTS(opts)];
  const ic_optset_t set = {opts, IC_NOPTS(opts), val};
  ic_opts_parse(&set, 1, argc - 1, argv + 1, "ic-region-bench");
  if (val[O_HELP].set) {
    printf("usage: ic-region-bench [options]\n\ncost of one IC_REGION_BEGIN/END pair\n\n");
    ic_opts_help(stdout, opts, IC_NOPTS(opts));
    return IC_EXIT_OK;
  }
  if (!ic_regions_init(names, 2, 1))
    ic_die(IC_EXIT_FAIL, "cannot set up the sample buffer");
  char why[192] = "";
  if (val[O_CLOCK].u == 1 && !ic_regions_use_wall_clock(why, sizeof why))
    ic_die(IC_EXIT_UNSUPPORTED, "--clock wall: %s", why);
  ic_regions_set_rep(0);
  uint64_t n = val[O_PAIRS].set ? val[O_PAIRS].u : auto_pairs();
  int rounds = (int)val[O_ROUNDS].u;
  double *ns = malloc((size_t)rounds * sizeof *ns);
  if (!ns)
    ic_die(IC_EXIT_FAIL, "out of memory");
  for (int r = 0; r < rounds; r++) {
    uint64_t empty = time_empty(n);
    uint64_t pairs = time_pairs(n);
    ns[r] = ((double)pairs - (double)empty) / (double)n;
  }
  if (ic_regions_dropped())
    ic_die(IC_EXIT_FAIL, "%llu marker calls missed the buffer",
           (unsigned long long)ic_regions_dropped());
  print_result(n, ns, rounds);
  free(ns);
  ic_regions_fini();
  return IC_EXIT_OK;
}
