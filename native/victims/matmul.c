/* matmul: C[N×M] = A[N×K] · B[K×M] over int32 in i-j-k order, the TACLe/paper "matrix1"
 * shape by default (256×4096×9): A streams through once per repetition and B's column walk
 * strides by M, so it is compute-bound and a low-sensitivity control victim. */
#include "victim.h"

enum { R_IJK = 1 };
enum { O_N, O_K, O_M };

typedef struct {
  size_t n, k, m;
  int32_t *a, *b, *c;
  ic_mem_t ma, mb, mc;
} matmul_t;

/* Values in [-8, 7]: |C| <= 64·K stays inside int32 for every allowed K, so no signed
 * overflow (undefined behaviour) can creep into the kernel. */
static void fill(int32_t *x, size_t n, ic_rng_t *r) {
  for (size_t i = 0; i < n; i++)
    x[i] = (int32_t)(ic_rng_next(r) & 15) - 8;
}

static void *init(const ic_optval_t *opt, uint64_t seed) {
  matmul_t *s = ic_victim_state(sizeof *s);
  s->n = (size_t)opt[O_N].u;
  s->k = (size_t)opt[O_K].u;
  s->m = (size_t)opt[O_M].u;
  s->a = ic_victim_alloc(&s->ma, (uint64_t)s->n * s->k, sizeof(int32_t), "matrix A");
  s->b = ic_victim_alloc(&s->mb, (uint64_t)s->k * s->m, sizeof(int32_t), "matrix B");
  s->c = ic_victim_alloc(&s->mc, (uint64_t)s->n * s->m, sizeof(int32_t), "matrix C");
  ic_rng_t r;
  ic_rng_seed(&r, seed);
  fill(s->a, s->n * s->k, &r);
  fill(s->b, s->k * s->m, &r);
  return s;
}

static void run_rep(void *state, int rep) {
  matmul_t *s = state;
  (void)rep;
  const size_t n = s->n, k = s->k, m = s->m;
  const int32_t *a = s->a, *b = s->b;
  int32_t *c = s->c;
  IC_REGION_BEGIN(R_IJK);
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < m; j++) {
      int32_t sum = 0;
      for (size_t x = 0; x < k; x++)
        sum += a[i * k + x] * b[x * m + j];
      c[i * m + j] = sum;
    }
  IC_REGION_END(R_IJK);
}

static uint64_t checksum(const void *state) {
  const matmul_t *s = state;
  return ic_fold(IC_FOLD_INIT, s->c, s->n * s->m * sizeof(int32_t));
}

static void fini(void *state) {
  matmul_t *s = state;
  ic_mem_free(&s->ma);
  ic_mem_free(&s->mb);
  ic_mem_free(&s->mc);
  free(s);
}

static const ic_opt_t opts[] = {
    [O_N] = {.name = "n", .type = IC_OPT_U64, .def = "256", .min = 1, .max = 1u << 16,
             .help = "rows of A and C"},
    [O_K] = {.name = "k", .type = IC_OPT_U64, .def = "4096", .min = 1, .max = 1u << 24,
             .help = "columns of A, rows of B"},
    [O_M] = {.name = "m", .type = IC_OPT_U64, .def = "9", .min = 1, .max = 1u << 16,
             .help = "columns of B and C"},
};

static const char *const regions[] = {"matmul.ijk", NULL};

IC_VICTIM(matmul, "int32 matrix product C = A·B in i-j-k order (compute-bound control)");
