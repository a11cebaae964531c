/* A blocked matrix multiply as a periodic real-time task (ic_task.h), the example's second
 * critical task beside control_task: every job computes A·B for two --size x --size matrices
 * of doubles, in --block x --block tiles, and folds the product into a running result, as a
 * tracking filter or a neural layer does each period. Its three stages are marked with
 * ic_user.h's regions, and they differ in what they ask of the memory system:
 *
 *   pack        copies A and B into tile order (every tile contiguous): a stream of loads
 *               and stores over 2 matrices, which misses where another task evicted them;
 *   multiply    the tile products, compute-bound on tiles that stay in the private caches;
 *   accumulate  adds the product into the result, unpacking it: a stream over 2 matrices.
 *
 * At the defaults (192 x 192, 32 x 32 tiles: 6 matrices of 288 KiB, 1.7 MiB in all) a job
 * takes a few ms on a current x86 core and its data fit a 2 MiB L2 between jobs, unless a
 * co-runner on the same core streams through it.
 *
 *   ./matrix_task --period 20ms --deadline 10ms --jobs 100 -- --size 192 --block 32
 *
 * The runner's options come first (./matrix_task --help lists them); the program's own
 * follow. It prints ic-periodic's lines on stdout, then a checksum of the result on stderr. */
#include <ic_task.h>
#include <ic_user.h>

#include <stdio.h>
#include <stdlib.h>

#include "args.h"

enum { PACK, MULTIPLY, ACCUMULATE };
static const char *const regions[] = {"pack", "multiply", "accumulate"};

typedef struct {
  int n, b;              /* size, tile size; b divides n */
  double *a, *bm, *c;    /* row-major: the inputs and the running result */
  double *ap, *bp, *cp;  /* tile order: tile (i, j) of a tiles-wide matrix at (i*tiles + j)*b*b */
} matrix_state;

/* Copies the row-major n x n `src` into tile order. */
static void pack(double *dst, const double *src, int n, int b) {
  int tiles = n / b;
  for (int ti = 0; ti < tiles; ti++)
    for (int tj = 0; tj < tiles; tj++) {
      double *tile = dst + ((size_t)ti * tiles + tj) * b * b;
      for (int i = 0; i < b; i++)
        for (int j = 0; j < b; j++)
          tile[i * b + j] = src[(size_t)(ti * b + i) * n + tj * b + j];
    }
}

/* cp = ap · bp, all three in tile order. */
static void multiply(double *cp, const double *ap, const double *bp, int n, int b) {
  int tiles = n / b;
  size_t area = (size_t)b * b;
  for (int ti = 0; ti < tiles; ti++)
    for (int tj = 0; tj < tiles; tj++) {
      double *t = cp + ((size_t)ti * tiles + tj) * area;
      for (size_t e = 0; e < area; e++)
        t[e] = 0.0;
      for (int tk = 0; tk < tiles; tk++) {
        const double *x = ap + ((size_t)ti * tiles + tk) * area;
        const double *y = bp + ((size_t)tk * tiles + tj) * area;
        for (int i = 0; i < b; i++)
          for (int k = 0; k < b; k++) {
            double xik = x[i * b + k];
            for (int j = 0; j < b; j++)
              t[i * b + j] += xik * y[k * b + j];
          }
      }
    }
}

/* c = c/2 + cp, cp in tile order: the result tracks the product with a decay, so it stays
 * bounded over any number of jobs. */
static void accumulate(double *c, const double *cp, int n, int b) {
  int tiles = n / b;
  for (int ti = 0; ti < tiles; ti++)
    for (int tj = 0; tj < tiles; tj++) {
      const double *tile = cp + ((size_t)ti * tiles + tj) * b * b;
      for (int i = 0; i < b; i++)
        for (int j = 0; j < b; j++) {
          double *r = &c[(size_t)(ti * b + i) * n + tj * b + j];
          *r = 0.5 * *r + tile[i * b + j];
        }
    }
}

static void job(void *ctx, uint64_t n) {
  matrix_state *m = ctx;
  /* One input changes every job, as a new sample would: no two jobs compute the same. */
  m->a[n % ((size_t)m->n * m->n)] += 1.0 / 1024;
  IC_REGION_BEGIN(PACK);
  pack(m->ap, m->a, m->n, m->b);
  pack(m->bp, m->bm, m->n, m->b);
  IC_REGION_END(PACK);
  IC_REGION_BEGIN(MULTIPLY);
  multiply(m->cp, m->ap, m->bp, m->n, m->b);
  IC_REGION_END(MULTIPLY);
  IC_REGION_BEGIN(ACCUMULATE);
  accumulate(m->c, m->cp, m->n, m->b);
  IC_REGION_END(ACCUMULATE);
}

int main(int argc, char **argv) {
  argc = ic_task_options(argc, argv);
  matrix_state m = {.n = (int)arg_long(argc, argv, "--size", 192, 1, 4096),
                    .b = (int)arg_long(argc, argv, "--block", 32, 1, 512)};
  if (m.n % m.b) {
    fprintf(stderr, "%s: --block %d must divide --size %d\n", argv[0], m.b, m.n);
    return 2;
  }
  ic_user_regions(regions, 3);
  size_t area = (size_t)m.n * m.n;
  double **all[] = {&m.a, &m.bm, &m.c, &m.ap, &m.bp, &m.cp};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++)
    if (!(*all[i] = calloc(area, sizeof(double)))) {
      fprintf(stderr, "%s: cannot allocate six %dx%d matrices\n", argv[0], m.n, m.n);
      return 1;
    }
  /* Entries of order 1/n keep the product of order 1, whatever the size. */
  for (size_t e = 0; e < area; e++) {
    m.a[e] = (double)(e % 7 + 1) / m.n;
    m.bm[e] = (double)(e % 5 + 1) / m.n;
  }
  int status = ic_task_run(job, &m);
  double sum = 0.0;
  for (size_t e = 0; e < area; e++)
    sum += m.c[e];
  fprintf(stderr, "matrix_task: %dx%d in %dx%d tiles, result sum %.6f\n", m.n, m.n, m.b, m.b, sum);
  for (size_t i = 0; i < sizeof all / sizeof *all; i++)
    free(*all[i]);
  return status;
}
