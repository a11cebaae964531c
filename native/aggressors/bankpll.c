/* bankpll: pll restricted to cache lines whose PHYSICAL address satisfies
 * (pa & --bank-mask) == --bank-value, so every miss lands in one DRAM bank (or LLC
 * slice/set colour): the bank-aware attack of Bechtel & Yun. Masks always come from the
 * command line; the per-platform tables live in Python. */
#include <stdio.h>
#include <stdlib.h>

#include "chase.h"
#include "ic_lifecycle.h"

enum { O_OP, O_SIZE, O_MLP, O_MASK, O_VALUE, O_POOL_MAX, O_PAGEMAP };
enum { OP_READ, OP_WRITE };

static const char *const ops[] = {"read", "write", NULL};

static const ic_opt_t opts[] = {
    [O_OP] = {.name = "op", .type = IC_OPT_ENUM, .def = "read", .choices = ops,
              .help = "read = follow the pointer; write = also store into each node visited"},
    [O_SIZE] = {.name = "size", .type = IC_OPT_SIZE, .def = "1M", .min = 4096,
                .max = 1ULL << 36,
                .help = "bytes of SELECTED lines in the lists; the pool allocated is about "
                        "size x 2^(mask bits)"},
    [O_MLP] = {.name = "mlp", .type = IC_OPT_U64, .def = "4", .min = 1, .max = CHASE_MAX_MLP,
               .help = "lists walked in lockstep = misses in flight"},
    [O_MASK] = {.name = "bank-mask", .type = IC_OPT_U64, .metavar = "MASK",
                .help = "physical-address bits that select the bank (required; e.g. 0x6000)"},
    [O_VALUE] = {.name = "bank-value", .type = IC_OPT_U64, .def = "0", .metavar = "VALUE",
                 .help = "required value of those bits: keep lines with (pa & MASK) == VALUE"},
    [O_POOL_MAX] = {.name = "pool-max", .type = IC_OPT_SIZE, .def = "1G", .min = 4096,
                    .help = "largest pool to search for matching lines"},
    [O_PAGEMAP] = {.name = "pagemap", .type = IC_OPT_STRING, .def = "/proc/self/pagemap",
                   .metavar = "PATH",
                   .help = "where physical addresses come from; an unreadable PATH simulates "
                           "a host that hides PFNs (for tests)"},
};

#define SAMPLE_LINES 8

typedef struct {
  ic_mem_t pool;
  chase_t chase;
  uint64_t mask, value;
  size_t selected;
  bool pagemap; /* false: physical bits taken from the page offset (mask fits in it) */
  char *sample[SAMPLE_LINES];
} bankpll_t;

static unsigned popcount(uint64_t v) { return (unsigned)__builtin_popcountll(v); }

static void check_mask(uint64_t mask, uint64_t value, size_t line) {
  if (!mask)
    ic_usage_error("--bank-mask", "must select at least one address bit (use pll for none)");
  if (mask & (line - 1))
    ic_usage_error("--bank-mask", "%#llx has bits below the %zu-byte cache line; those select "
                   "bytes, not lines", (unsigned long long)mask, line);
  if (value & ~mask)
    ic_usage_error("--bank-value", "%#llx has bits outside --bank-mask %#llx",
                   (unsigned long long)value, (unsigned long long)mask);
}

/* Physical addresses from pagemap when readable; else only the page offset is known, and
 * that is enough exactly when no mask bit lies above it (exit 3 otherwise). */
static bool use_pagemap(const ic_mem_t *pool, uint64_t mask) {
  uint64_t pa;
  if (ic_virt_to_phys(pool->ptr, &pa))
    return true;
  if (mask & ~(uint64_t)(pool->page - 1)) {
    char page[32];
    ic_format_size(pool->page, page, sizeof page);
    ic_die(IC_EXIT_UNSUPPORTED,
           "bankpll: cannot read physical addresses (%s), and --bank-mask %#llx has bits above "
           "the %s page offset of the pages obtained; run as root on a kernel that exposes "
           "PFNs in pagemap, or use only mask bits below %#llx",
           ic_pagemap_error(), (unsigned long long)mask, page,
           (unsigned long long)pool->page);
  }
  return false;
}

/* Up to need lines of the pool with (pa & mask) == value, in address order. */
static size_t select_lines(const ic_mem_t *pool, bool pagemap, uint64_t mask, uint64_t value,
                           size_t line, char **lines, size_t need) {
  char *base = pool->ptr;
  size_t count = 0;
  for (size_t off = 0; off < pool->size && count < need; off += pool->page) {
    /* Without pagemap the page-aligned offset 0 stands in: mask < page here. */
    uint64_t pa = 0;
    if (pagemap && !ic_virt_to_phys(base + off, &pa))
      ic_die(IC_EXIT_FAIL, "bankpll: %s", ic_pagemap_error());
    for (size_t l = 0; l < pool->page && count < need; l += line)
      if (((pa + l) & mask) == value)
        lines[count++] = base + off + l;
  }
  return count;
}

/* Fills lines[0..need) from a pool grown by doubling from the expected size until enough
 * lines match: physical frames are not uniformly spread over the banks. */
static void fill_pool(bankpll_t *b, const ic_aggr_args_t *a, char **lines, size_t need) {
  uint64_t size = a->opt[O_SIZE].u, cap = a->opt[O_POOL_MAX].u;
  unsigned bits = popcount(b->mask);
  char capbuf[32], sizebuf[32];
  ic_format_size(cap, capbuf, sizeof capbuf);
  ic_format_size(size, sizebuf, sizeof sizebuf);
  if (bits >= 64 || size > cap >> bits)
    ic_usage_error("--pool-max", "--size %s with %u mask bits needs a pool of size x 2^%u, "
                   "above the cap %s; lower --size or raise --pool-max",
                   sizebuf, bits, bits, capbuf);
  for (uint64_t pool = size << bits;; pool = pool > cap / 2 ? cap : pool * 2) {
    if (!ic_mem_alloc(&b->pool, pool, true))
      ic_die(IC_EXIT_FAIL, "bankpll: cannot allocate a pool of %llu bytes", (unsigned long long)pool);
    b->pagemap = use_pagemap(&b->pool, b->mask);
    b->selected = select_lines(&b->pool, b->pagemap, b->mask, b->value, a->line,
                               lines, need);
    if (b->selected == need)
      return;
    ic_mem_free(&b->pool);
    if (pool == cap)
      ic_die(IC_EXIT_FAIL, "bankpll: a pool of %s held only %zu of the %zu lines with "
             "(pa & %#llx) == %#llx; raise --pool-max", capbuf, b->selected, need,
             (unsigned long long)b->mask, (unsigned long long)b->value);
  }
}

static void *bankpll_init(const ic_aggr_args_t *a, ic_aggr_info_t *info) {
  if (!a->opt[O_MASK].set)
    ic_usage_error("--bank-mask", "required: the physical-address bits that select the bank");
  check_mask(a->opt[O_MASK].u, a->opt[O_VALUE].u, a->line);
  bankpll_t *b = calloc(1, sizeof *b);
  size_t need = a->opt[O_SIZE].u / a->line;
  char **lines = malloc(need * sizeof *lines);
  if (!b || !lines)
    ic_die(IC_EXIT_FAIL, "out of memory");
  b->mask = a->opt[O_MASK].u;
  b->value = a->opt[O_VALUE].u;
  ic_set_pagemap_path(a->opt[O_PAGEMAP].s);
  fill_pool(b, a, lines, need);
  for (size_t i = 0; i < SAMPLE_LINES; i++)
    b->sample[i] = lines[i * need / SAMPLE_LINES];
  ic_rng_t rng;
  ic_rng_seed(&rng, a->seed);
  chase_build(&b->chase, lines, need, (unsigned)a->opt[O_MLP].u, a->opt[O_OP].u == OP_WRITE,
              &rng);
  free(lines);
  info->op = ops[a->opt[O_OP].u];
  info->size = need * a->line;
  info->mlp = b->chase.mlp;
  info->page = b->pool.page;
  return b;
}

static uint64_t bankpll_step(void *state, uint64_t n) {
  return chase_step(&((bankpll_t *)state)->chase, n);
}

static void bankpll_report(const void *state, ic_json_t *j) {
  const bankpll_t *b = state;
  char hex[24];
  snprintf(hex, sizeof hex, "%#llx", (unsigned long long)b->mask);
  ic_json_str(j, "bank_mask", hex);
  snprintf(hex, sizeof hex, "%#llx", (unsigned long long)b->value);
  ic_json_str(j, "bank_value", hex);
  ic_json_u64(j, "pool_size", b->pool.size);
  ic_json_u64(j, "lines_selected", b->selected);
  ic_json_str(j, "phys_source", b->pagemap ? "pagemap" : "virtual");
  /* Virtual addresses of a few selected lines, so an outside reader of
   * /proc/PID/pagemap can check the selection independently. */
  ic_json_array(j, "line_sample");
  for (size_t i = 0; i < SAMPLE_LINES; i++) {
    snprintf(hex, sizeof hex, "%p", (void *)b->sample[i]);
    ic_json_str(j, NULL, hex);
  }
  ic_json_pop(j);
}

static void bankpll_fini(void *state) {
  bankpll_t *b = state;
  ic_mem_free(&b->pool);
  free(b);
}

const ic_aggressor_t ic_aggr_bankpll = {
    .name = "bankpll",
    .help = "pll over only the lines whose physical address matches --bank-mask/--bank-value",
    .opts = opts,
    .nopts = IC_NOPTS(opts),
    .init = bankpll_init,
    .step = bankpll_step,
    .report = bankpll_report,
    .fini = bankpll_fini,
};
