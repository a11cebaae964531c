/* bw: sequential sweep over a buffer, one access per cache line, wrapping around
 * (IsolBench `bandwidth`). The strongest aggressor on out-of-order cores, where the
 * hardware prefetcher turns it into a stream of line fills (and, for write/rmw,
 * write-backs). */
#include <stdlib.h>

#include "ic_lifecycle.h"

enum { O_OP, O_SIZE };
enum { OP_READ, OP_WRITE, OP_RMW };

static const char *const ops[] = {"read", "write", "rmw", NULL};

static const ic_opt_t opts[] = {
    [O_OP] = {.name = "op", .type = IC_OPT_ENUM, .def = "read", .choices = ops,
              .help = "per line: read = one load, write = one store, rmw = load then store "
                      "(write and rmw also cause write-backs)"},
    [O_SIZE] = {.name = "size", .type = IC_OPT_SIZE, .def = "4M", .min = 4096,
                .max = 1ULL << 40,
                .help = "bytes swept: above the LLC size it loads DRAM, within L2/LLC it "
                        "loads that cache"},
};

typedef struct {
  ic_mem_t mem;
  uint64_t *buf;
  size_t stride; /* 64-bit words per line */
  size_t nlines, pos;
  int op;
  uint64_t sum; /* keeps the loads of `read` alive */
} bw_t;

static void *bw_init(const ic_aggr_args_t *a, ic_aggr_info_t *info) {
  bw_t *b = calloc(1, sizeof *b);
  if (!b || !ic_mem_alloc(&b->mem, a->opt[O_SIZE].u, true))
    ic_die(IC_EXIT_FAIL, "bw: cannot allocate %llu bytes", (unsigned long long)a->opt[O_SIZE].u);
  b->buf = b->mem.ptr;
  b->stride = a->line / sizeof(uint64_t);
  b->nlines = a->opt[O_SIZE].u / a->line;
  b->op = (int)a->opt[O_OP].u;
  info->op = ops[b->op];
  info->size = b->nlines * a->line;
  info->page = b->mem.page;
  return b;
}

static uint64_t read_lines(const uint64_t *p, size_t n, size_t stride, uint64_t sum) {
  for (size_t i = 0; i < n; i++, p += stride)
    sum += *p;
  return sum;
}

static void write_lines(uint64_t *p, size_t n, size_t stride, uint64_t v) {
  for (size_t i = 0; i < n; i++, p += stride)
    *p = v;
}

static void rmw_lines(uint64_t *p, size_t n, size_t stride) {
  for (size_t i = 0; i < n; i++, p += stride)
    *p += 1;
}

static uint64_t bw_step(void *state, uint64_t n) {
  bw_t *b = state;
  for (uint64_t left = n; left;) {
    size_t run = b->nlines - b->pos < left ? b->nlines - b->pos : (size_t)left;
    uint64_t *p = b->buf + b->pos * b->stride;
    switch (b->op) {
    case OP_READ: b->sum = read_lines(p, run, b->stride, b->sum); break;
    case OP_WRITE: write_lines(p, run, b->stride, b->pos); break;
    case OP_RMW: rmw_lines(p, run, b->stride); break;
    }
    b->pos = b->pos + run == b->nlines ? 0 : b->pos + run;
    left -= run;
  }
  return n;
}

static void bw_fini(void *state) {
  bw_t *b = state;
  ic_mem_free(&b->mem);
  free(b);
}

const ic_aggressor_t ic_aggr_bw = {
    .name = "bw",
    .help = "sequential read/write/rmw bandwidth over --size, one access per cache line",
    .opts = opts,
    .nopts = IC_NOPTS(opts),
    .init = bw_init,
    .step = bw_step,
    .fini = bw_fini,
};
