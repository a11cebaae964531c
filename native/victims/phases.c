/* phases: a known bandwidth shape for checking profilers and regulators. Each repetition
 * computes on registers for --compute, streams --size bytes (writes, one line at a time),
 * then computes again: a profile of it must show one burst per repetition, inside the
 * phases.stream region, and nothing in phases.compute.
 *
 * --fresh gives the stream back its pages before every repetition (MADV_DONTNEED, outside
 * any region), so the burst also takes one page fault per page: the kernel's page-fault
 * counter then sees the burst on hosts where no hardware counter does. */
#include <sys/mman.h>

#include "ic_arch.h"
#include "victim.h"

enum { R_COMPUTE = 1, R_STREAM };
enum { O_SIZE, O_COMPUTE, O_FRESH };

typedef struct {
  ic_mem_t mem;
  size_t lines, line;
  uint64_t compute_ns;
  bool fresh;
  uint64_t burn;
} phases_t;

static void *init(const ic_optval_t *opt, uint64_t seed) {
  phases_t *s = ic_victim_state(sizeof *s);
  s->line = ic_line_size();
  s->lines = (size_t)(opt[O_SIZE].u / s->line);
  s->compute_ns = (uint64_t)(opt[O_COMPUTE].d * 1e9);
  s->fresh = opt[O_FRESH].set;
  s->burn = seed | 1;
  ic_victim_alloc(&s->mem, s->lines, s->line, "the streamed buffer");
  return s;
}

/* Register-only work until `ns` of wall time have passed: no memory traffic. */
static void compute(phases_t *s, uint64_t ns) {
  uint64_t end = ic_now_ns() + ns;
  do
    s->burn = ic_spin(s->burn, 1024);
  while (ic_now_ns() < end);
}

static void run_rep(void *state, int rep) {
  phases_t *s = state;
  if (s->fresh)
    madvise(s->mem.ptr, s->lines * s->line, MADV_DONTNEED);
  IC_REGION_BEGIN(R_COMPUTE);
  compute(s, s->compute_ns);
  IC_REGION_END(R_COMPUTE);
  IC_REGION_BEGIN(R_STREAM);
  char *p = s->mem.ptr;
  for (size_t i = 0; i < s->lines; i++)
    *(volatile uint64_t *)(p + i * s->line) = (uint64_t)rep + i;
  IC_REGION_END(R_STREAM);
  IC_REGION_BEGIN(R_COMPUTE);
  compute(s, s->compute_ns);
  IC_REGION_END(R_COMPUTE);
}

static uint64_t checksum(const void *state) {
  const phases_t *s = state;
  return ic_fold(IC_FOLD_INIT, s->mem.ptr, s->line);
}

static void fini(void *state) {
  phases_t *s = state;
  ic_mem_free(&s->mem);
  free(s);
}

static const ic_opt_t opts[] = {
    [O_SIZE] = {.name = "size", .type = IC_OPT_SIZE, .def = "16M", .min = 4096,
                .max = 1ull << 40, .help = "bytes written by each stream phase"},
    [O_COMPUTE] = {.name = "compute", .type = IC_OPT_DURATION, .def = "2ms",
                   .help = "register-only work before and after each stream phase"},
    [O_FRESH] = {.name = "fresh", .type = IC_OPT_FLAG,
                 .help = "drop the buffer's pages before each repetition, so the stream "
                         "phase page-faults (visible to the page-faults software counter)"},
};

static const char *const regions[] = {"phases.compute", "phases.stream", NULL};

IC_VICTIM(phases, "compute, stream --size bytes, compute: one bandwidth burst per repetition "
                  "in a known region (profiler and regulator checks)");
