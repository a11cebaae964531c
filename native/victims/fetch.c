/* fetch: paper 003's memory-fetch workloads for the MBA design of experiments. A repetition
 * prepares the caches, then times one sequential read of --lines cache lines (region
 * fetch.read), the latency L_{k;d} of the paper:
 *
 *   r1  R^I:  the lines are flushed from every cache, nothing else is resident: each read
 *             is one DRAM read and evicts nothing dirty (no L2 or LLC write-backs);
 *   r2  R^II: as r1, after reading --fill bytes of other lines so the private caches are
 *             full of clean lines: each read also evicts one (an L2 write-back on
 *             non-inclusive LLCs);
 *   w2  W^II: as r1, after writing --fill bytes of other lines so the caches are full of
 *             dirty lines: each read also causes a write to DRAM (LLC write-back).
 *
 * Size --fill from the host: twice the private cache for r2, twice the LLC for w2. The paper
 * disabled the hardware prefetcher, which user space cannot; the reads are one dependent
 * chase step per line so that prefetching cannot hide them either. */
#include "ic_arch.h"
#include "victim.h"

enum { R_READ = 1 };
enum { O_MODE, O_LINES, O_FILL };
enum { M_R1, M_R2, M_W2 };

static const char *const modes[] = {"r1", "r2", "w2", NULL};

typedef struct {
  ic_mem_t mem, fill;
  size_t lines, line, fill_lines;
  int mode;
  uint64_t fold;
} fetch_t;

static char *line_at(ic_mem_t *m, size_t line, size_t i) { return (char *)m->ptr + i * line; }

static void *init(const ic_optval_t *opt, uint64_t seed) {
  fetch_t *s = ic_victim_state(sizeof *s);
  s->line = ic_line_size();
  s->lines = (size_t)opt[O_LINES].u;
  s->mode = (int)opt[O_MODE].u;
  s->fill_lines = (size_t)(opt[O_FILL].u / s->line);
  ic_victim_alloc(&s->mem, s->lines, s->line, "the fetched lines");
  ic_victim_alloc(&s->fill, s->fill_lines, s->line, "the cache-filling lines");
  ic_victim_cycle(s->mem.ptr, s->lines, s->line, seed);
  s->fold = IC_FOLD_INIT;
  return s;
}

static void flush(fetch_t *s) {
#ifdef IC_ARCH_HAVE_FLUSH
  for (size_t i = 0; i < s->lines; i++)
    ic_arch_flush_line(line_at(&s->mem, s->line, i));
  ic_arch_load_fence();
#else
  (void)s; /* no user-space flush here: the fill below is all there is */
#endif
}

static void prepare(fetch_t *s, int rep) {
  flush(s);
  volatile uint64_t sink = 0;
  for (size_t i = 0; s->mode != M_R1 && i < s->fill_lines; i++) {
    volatile uint64_t *p = (volatile uint64_t *)line_at(&s->fill, s->line, i);
    if (s->mode == M_W2)
      *p = (uint64_t)rep + i;
    else
      sink += *p;
  }
  (void)sink;
}

static void run_rep(void *state, int rep) {
  fetch_t *s = state;
  prepare(s, rep);
  void *const *p = (void *const *)s->mem.ptr;
  const size_t n = s->lines;
  IC_REGION_BEGIN(R_READ);
  for (size_t i = 0; i < n; i++)
    p = *p;
  IC_REGION_END(R_READ);
  s->fold = ic_fold(s->fold, &p, sizeof p);
}

static uint64_t checksum(const void *state) { return ((const fetch_t *)state)->fold; }

static void fini(void *state) {
  fetch_t *s = state;
  ic_mem_free(&s->mem);
  ic_mem_free(&s->fill);
  free(s);
}

static const ic_opt_t opts[] = {
    [O_MODE] = {.name = "mode", .type = IC_OPT_ENUM, .def = "r1", .choices = modes,
                .help = "r1 = R^I (no write-backs), r2 = R^II (clean evictions), w2 = W^II "
                        "(dirty evictions: a DRAM write per read)"},
    [O_LINES] = {.name = "lines", .type = IC_OPT_U64, .def = "8192", .min = 2, .max = 1u << 30,
                 .help = "cache lines read per repetition (8192 x 64 B = the paper's 512 KB)"},
    [O_FILL] = {.name = "fill", .type = IC_OPT_SIZE, .def = "4M", .min = 4096,
                .max = 1ull << 40,
                .help = "r2/w2: bytes read (r2) or written (w2) before the fetch to fill the "
                        "caches"},
};

static const char *const regions[] = {"fetch.read", NULL};

IC_VICTIM(fetch, "paper 003's R^I / R^II / W^II memory fetch: the latency of reading N lines "
                 "from DRAM after a given cache state (MBA design of experiments)");
