/* stream: the STREAM triad a[i] = b[i] + s·c[i] over doubles: two sequential read streams
 * and one write stream, the bandwidth-bound victim. --size is the footprint of all three
 * arrays together. */
#include "victim.h"

enum { R_TRIAD = 1 };
enum { O_SIZE };

typedef struct {
  size_t n;
  double *a, *b, *c;
  ic_mem_t ma, mb, mc;
} stream_t;

static const double scalar = 3.0;

/* Small integers are exact in a double, so the result (and checksum) cannot depend on
 * how the compiler vectorises the triad. */
static void fill(double *x, size_t n, ic_rng_t *r) {
  for (size_t i = 0; i < n; i++)
    x[i] = (double)(ic_rng_next(r) % 1024);
}

static void *init(const ic_optval_t *opt, uint64_t seed) {
  stream_t *s = ic_victim_state(sizeof *s);
  s->n = (size_t)(opt[O_SIZE].u / (3 * sizeof(double)));
  s->a = ic_victim_alloc(&s->ma, s->n, sizeof(double), "array a");
  s->b = ic_victim_alloc(&s->mb, s->n, sizeof(double), "array b");
  s->c = ic_victim_alloc(&s->mc, s->n, sizeof(double), "array c");
  ic_rng_t r;
  ic_rng_seed(&r, seed);
  fill(s->b, s->n, &r);
  fill(s->c, s->n, &r);
  return s;
}

static void run_rep(void *state, int rep) {
  stream_t *s = state;
  (void)rep;
  const size_t n = s->n;
  double *restrict a = s->a;
  const double *restrict b = s->b, *restrict c = s->c;
  IC_REGION_BEGIN(R_TRIAD);
  for (size_t i = 0; i < n; i++)
    a[i] = b[i] + scalar * c[i];
  IC_REGION_END(R_TRIAD);
}

static uint64_t checksum(const void *state) {
  const stream_t *s = state;
  return ic_fold(IC_FOLD_INIT, s->a, s->n * sizeof(double));
}

static void fini(void *state) {
  stream_t *s = state;
  ic_mem_free(&s->ma);
  ic_mem_free(&s->mb);
  ic_mem_free(&s->mc);
  free(s);
}

static const ic_opt_t opts[] = {
    [O_SIZE] = {.name = "size", .type = IC_OPT_SIZE, .def = "32M", .min = 4096,
                .max = 1ull << 40, .help = "footprint of the three arrays together"},
};

static const char *const regions[] = {"stream.triad", NULL};

IC_VICTIM(stream, "STREAM triad a = b + s*c over doubles (bandwidth-bound)");
