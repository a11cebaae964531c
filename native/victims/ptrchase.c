/* ptrchase: a dependent load chain through one random cycle of cache-line nodes (Sattolo),
 * so every access is a miss at the footprint's level and the prefetchers cannot help.
 * The most interference-sensitive victim when its footprint sits between private L2
 * and the LLC. */
#include "victim.h"

enum { R_WALK = 1 };
enum { O_SIZE, O_ACCESSES };
#define MIN_AUTO_ACCESSES (1ull << 20)

typedef struct {
  ic_mem_t mem;
  size_t nodes, line;
  uint64_t accesses;
  uint64_t fold; /* where every repetition stopped, folded */
} ptrchase_t;

static void *node(const ptrchase_t *s, size_t i) { return (char *)s->mem.ptr + i * s->line; }

static size_t node_index(const ptrchase_t *s, const void *p) {
  return (size_t)((const char *)p - (const char *)s->mem.ptr) / s->line;
}

/* The chase is only as good as its cycle: one short loop would shrink the footprint
 * silently, so check that node 0 comes back after exactly `nodes` hops. */
static void check_single_cycle(const ptrchase_t *s) {
  void *const *p = node(s, 0);
  for (size_t hop = 1; hop <= s->nodes; hop++) {
    p = *p;
    if ((const void *)p == node(s, 0) && hop != s->nodes)
      ic_die(IC_EXIT_FAIL, "ptrchase: cycle of %zu nodes instead of %zu", hop, s->nodes);
  }
  if ((const void *)p != node(s, 0))
    ic_die(IC_EXIT_FAIL, "ptrchase: the chain does not return to its start");
}

static void *init(const ic_optval_t *opt, uint64_t seed) {
  ptrchase_t *s = ic_victim_state(sizeof *s);
  s->line = ic_line_size();
  s->nodes = (size_t)(opt[O_SIZE].u / s->line);
  if (s->nodes < 2)
    ic_usage_error("--size", "must hold at least two %zu-byte cache lines", s->line);
  if (opt[O_ACCESSES].set) {
    s->accesses = opt[O_ACCESSES].u;
  } else {
    s->accesses = 2 * (uint64_t)s->nodes;
    if (s->accesses < MIN_AUTO_ACCESSES)
      s->accesses = MIN_AUTO_ACCESSES;
  }
  ic_victim_alloc(&s->mem, s->nodes, s->line, "the pointer-chase nodes");
  ic_victim_cycle(s->mem.ptr, s->nodes, s->line, seed);
  check_single_cycle(s);
  s->fold = IC_FOLD_INIT;
  return s;
}

static void run_rep(void *state, int rep) {
  ptrchase_t *s = state;
  (void)rep;
  void *const *p = node(s, 0);
  const uint64_t n = s->accesses;
  IC_REGION_BEGIN(R_WALK);
  for (uint64_t a = 0; a < n; a++)
    p = *p;
  IC_REGION_END(R_WALK);
  size_t at = node_index(s, p);
  s->fold = ic_fold(s->fold, &at, sizeof at);
}

static uint64_t checksum(const void *state) { return ((const ptrchase_t *)state)->fold; }

static void fini(void *state) {
  ptrchase_t *s = state;
  ic_mem_free(&s->mem);
  free(s);
}

static const ic_opt_t opts[] = {
    [O_SIZE] = {.name = "size", .type = IC_OPT_SIZE, .def = "8M", .min = 1024,
                .max = 1ull << 40, .help = "footprint of the cycle"},
    [O_ACCESSES] = {.name = "accesses", .type = IC_OPT_SIZE, .min = 1, .max = 1ull << 40,
                    .metavar = "N",
                    .help = "dependent loads per repetition (units allowed: 4M); "
                            "unset: two laps of the cycle, at least 1M"},
};

static const char *const regions[] = {"ptrchase.walk", NULL};

IC_VICTIM(ptrchase, "dependent loads around one random cycle of cache lines (latency-bound)");
