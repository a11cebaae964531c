/* bw: bandwidth over a buffer, one access per cache line (IsolBench `bandwidth`, plus what
 * makes stress-ng's `cache` and `stream` stressors strong on x86 servers):
 *
 * - pattern seq: a sequential sweep, wrapping around. With --streams N the buffer is cut
 *   into N segments swept in lockstep, N independent streams for the hardware prefetchers
 *   and N times the misses in flight (STREAM's triad has three).
 * - pattern rand: every line once per period in a pseudo-random order whose addresses do not
 *   depend on loaded data, so an out-of-order core keeps many misses in flight where a
 *   pointer chase (pll) has one per list; no prefetcher can follow it, and a shared cache's
 *   scan-resistant replacement cannot tell it from a working set worth keeping.
 *
 * op nt writes with non-temporal stores: DRAM write bandwidth without reading the line first
 * and without occupying the caches. */
#include <stdlib.h>

#include "ic_arch.h"
#include "ic_lifecycle.h"
#include "lineperm.h"

enum { O_OP, O_SIZE, O_PATTERN, O_STREAMS };
enum { OP_READ, OP_WRITE, OP_RMW, OP_NT };
enum { PAT_SEQ, PAT_RAND };
#define BW_MAX_STREAMS 16

static const char *const ops[] = {"read", "write", "rmw", "nt", NULL};
static const char *const patterns[] = {"seq", "rand", NULL};

static const ic_opt_t opts[] = {
    [O_OP] = {.name = "op", .type = IC_OPT_ENUM, .def = "read", .choices = ops,
              .help = "per line: read = one load, write = one store, rmw = load then store "
                      "(write and rmw also cause write-backs), nt = one non-temporal store "
                      "(to DRAM, bypassing the caches)"},
    [O_SIZE] = {.name = "size", .type = IC_OPT_SIZE, .def = "4M", .min = 4096,
                .max = 1ULL << 40,
                .help = "bytes covered: above the LLC size it loads DRAM, within L2/LLC it "
                        "loads that cache"},
    [O_PATTERN] = {.name = "pattern", .type = IC_OPT_ENUM, .def = "seq", .choices = patterns,
                   .help = "seq = sequential sweep; rand = every line once per period in a "
                           "pseudo-random order of independent addresses"},
    [O_STREAMS] = {.name = "streams", .type = IC_OPT_U64, .def = "1", .min = 1,
                   .max = BW_MAX_STREAMS,
                   .help = "seq only: sequential streams swept in lockstep, each over its "
                           "own segment of the buffer"},
};

typedef struct {
  ic_mem_t mem;
  uint64_t *buf;
  size_t stride;  /* 64-bit words per line */
  size_t nlines;  /* lines covered: streams x seg for seq */
  size_t seg;     /* seq: lines per stream */
  size_t pos;     /* seq: offset within every segment */
  unsigned streams;
  uint64_t ctr;   /* rand: position in the period */
  lineperm_t perm;
  int op, pattern;
  uint64_t sum; /* keeps the loads of `read` alive */
} bw_t;

static void *bw_init(const ic_aggr_args_t *a, ic_aggr_info_t *info) {
  bw_t *b = calloc(1, sizeof *b);
  if (!b)
    ic_die(IC_EXIT_FAIL, "bw: out of memory");
  b->op = (int)a->opt[O_OP].u;
  b->pattern = (int)a->opt[O_PATTERN].u;
  b->streams = (unsigned)a->opt[O_STREAMS].u;
  if (b->pattern == PAT_RAND && b->streams > 1)
    ic_usage_error("--streams", "applies to --pattern seq only (rand has no streams)");
#if !defined(IC_ARCH_HAVE_NT_STORE)
  if (b->op == OP_NT)
    ic_die(IC_EXIT_UNSUPPORTED, "bw: --op nt: %s has no non-temporal store", IC_ARCH_NAME);
#endif
  size_t lines = a->opt[O_SIZE].u / a->line;
  if (lines < b->streams)
    ic_usage_error("--streams", "more streams (%u) than lines (%zu)", b->streams, lines);
  if (!ic_mem_alloc(&b->mem, a->opt[O_SIZE].u, true))
    ic_die(IC_EXIT_FAIL, "bw: cannot allocate %llu bytes", (unsigned long long)a->opt[O_SIZE].u);
  b->buf = b->mem.ptr;
  b->stride = a->line / sizeof(uint64_t);
  b->seg = lines / b->streams;
  b->nlines = b->pattern == PAT_SEQ ? b->seg * b->streams : lines;
  lineperm_init(&b->perm, b->nlines);
  info->op = ops[b->op];
  info->size = b->nlines * a->line;
  info->mlp = b->pattern == PAT_SEQ ? b->streams : 1;
  info->page = b->mem.page;
  return b;
}

/* One access of kind `op` (a constant wherever this is inlined, so every loop below is
 * compiled once per op, without a branch per access). */
static inline __attribute__((always_inline)) void touch(bw_t *b, uint64_t *p, uint64_t v,
                                                        const int op) {
  switch (op) {
  case OP_READ: b->sum += *p; break;
  case OP_WRITE: *p = v; break;
  case OP_RMW: *p += 1; break;
#if defined(IC_ARCH_HAVE_NT_STORE)
  case OP_NT: ic_arch_store_nt(p, v); break;
#endif
  }
}

static inline __attribute__((always_inline)) uint64_t step_rand(bw_t *b, uint64_t n,
                                                                const int op) {
  for (uint64_t done = 0; done < n; b->ctr = (b->ctr + 1) & b->perm.mask) {
    uint64_t line = lineperm_at(&b->perm, b->ctr);
    if (line >= b->nlines)
      continue;
    touch(b, b->buf + line * b->stride, done, op);
    done++;
  }
  return n;
}

static inline __attribute__((always_inline)) uint64_t step_seq(bw_t *b, uint64_t n,
                                                               const int op) {
  const size_t seg_words = b->seg * b->stride;
  uint64_t rounds = n / b->streams ? n / b->streams : 1;
  for (uint64_t r = 0; r < rounds; r++) {
    uint64_t *p = b->buf + b->pos * b->stride;
    for (unsigned s = 0; s < b->streams; s++, p += seg_words)
      touch(b, p, b->pos, op);
    b->pos = b->pos + 1 == b->seg ? 0 : b->pos + 1;
  }
  return rounds * b->streams;
}

#define BW_DISPATCH(OP) \
  done = b->pattern == PAT_RAND ? step_rand(b, n, OP) : step_seq(b, n, OP)

static uint64_t bw_step(void *state, uint64_t n) {
  bw_t *b = state;
  uint64_t done = 0;
  switch (b->op) {
  case OP_READ: BW_DISPATCH(OP_READ); break;
  case OP_WRITE: BW_DISPATCH(OP_WRITE); break;
  case OP_RMW: BW_DISPATCH(OP_RMW); break;
#if defined(IC_ARCH_HAVE_NT_STORE)
  case OP_NT:
    BW_DISPATCH(OP_NT);
    ic_arch_store_fence(); /* drain the write-combining buffers before publishing */
    break;
#endif
  }
  IC_OPAQUE(b->sum);
  return done;
}

static void bw_report(const void *state, ic_json_t *j) {
  const bw_t *b = state;
  ic_json_str(j, "pattern", patterns[b->pattern]);
  ic_json_u64(j, "streams", b->streams);
}

static void bw_fini(void *state) {
  bw_t *b = state;
  ic_mem_free(&b->mem);
  free(b);
}

const ic_aggressor_t ic_aggr_bw = {
    .name = "bw",
    .help = "read/write/rmw/nt bandwidth over --size, one access per cache line: sequential "
            "(--streams in lockstep) or pseudo-random",
    .opts = opts,
    .nopts = IC_NOPTS(opts),
    .init = bw_init,
    .step = bw_step,
    .report = bw_report,
    .fini = bw_fini,
};
