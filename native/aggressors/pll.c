/* pll: --mlp independent random linked lists over --size, walked in lockstep so that
 * --mlp misses are in flight at once. Weak on big out-of-order x86 cores, strong on
 * MSHR-limited Arm cores, where a few outstanding misses saturate the core's share. */
#include <stdlib.h>

#include "chase.h"
#include "ic_lifecycle.h"

enum { O_OP, O_SIZE, O_MLP };
enum { OP_READ, OP_WRITE };

static const char *const ops[] = {"read", "write", NULL};

static const ic_opt_t opts[] = {
    [O_OP] = {.name = "op", .type = IC_OPT_ENUM, .def = "read", .choices = ops,
              .help = "read = follow the pointer; write = also store into each node "
                      "visited, so every line is written back"},
    [O_SIZE] = {.name = "size", .type = IC_OPT_SIZE, .def = "64M", .min = 4096,
                .max = 1ULL << 40,
                .help = "bytes covered by the lists (one node per cache line); above the "
                        "LLC size every visit misses to DRAM"},
    [O_MLP] = {.name = "mlp", .type = IC_OPT_U64, .def = "4", .min = 1, .max = CHASE_MAX_MLP,
               .help = "lists walked in lockstep = misses in flight"},
};

typedef struct {
  ic_mem_t mem;
  chase_t chase;
} pll_t;

static void *pll_init(const ic_aggr_args_t *a, ic_aggr_info_t *info) {
  pll_t *p = calloc(1, sizeof *p);
  size_t n = a->opt[O_SIZE].u / a->line;
  char **lines = malloc(n * sizeof *lines);
  if (!p || !lines || !ic_mem_alloc(&p->mem, a->opt[O_SIZE].u, true))
    ic_die(IC_EXIT_FAIL, "pll: cannot allocate %llu bytes", (unsigned long long)a->opt[O_SIZE].u);
  for (size_t i = 0; i < n; i++)
    lines[i] = (char *)p->mem.ptr + i * a->line;
  ic_rng_t rng;
  ic_rng_seed(&rng, a->seed);
  chase_build(&p->chase, lines, n, (unsigned)a->opt[O_MLP].u, a->opt[O_OP].u == OP_WRITE, &rng);
  free(lines);
  info->op = ops[a->opt[O_OP].u];
  info->size = n * a->line;
  info->mlp = p->chase.mlp;
  info->page = p->mem.page;
  return p;
}

static uint64_t pll_step(void *state, uint64_t n) { return chase_step(&((pll_t *)state)->chase, n); }

static void pll_fini(void *state) {
  pll_t *p = state;
  ic_mem_free(&p->mem);
  free(p);
}

const ic_aggressor_t ic_aggr_pll = {
    .name = "pll",
    .help = "--mlp parallel random linked lists over --size (memory-level parallelism)",
    .opts = opts,
    .nopts = IC_NOPTS(opts),
    .init = pll_init,
    .step = pll_step,
    .fini = pll_fini,
};
