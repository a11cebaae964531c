/* qsort: sort random 32-bit keys (MiBench qsort's job on a scalable, in-memory input).
 * The unsorted input is copied back before each repetition, outside the sort region, so
 * every repetition sorts the same permutation; a second region checks the result. */
#include <string.h>

#include "victim.h"

enum { R_SORT = 1, R_VERIFY = 2, INSERTION_MAX = 16 };
enum { O_COUNT };

typedef struct {
  size_t n;
  uint32_t *orig, *work;
  ic_mem_t mo, mw;
} qsort_t;

static void swap(uint32_t *a, uint32_t *b) {
  uint32_t t = *a;
  *a = *b;
  *b = t;
}

static void insertion_sort(uint32_t *a, size_t n) {
  for (size_t i = 1; i < n; i++) {
    uint32_t v = a[i];
    size_t j = i;
    for (; j > 0 && a[j - 1] > v; j--)
      a[j] = a[j - 1];
    a[j] = v;
  }
}

/* Median of first, middle and last moved to a[0]: Hoare's partition with the pivot in
 * front always splits [0, n) into two non-empty parts. */
static void pivot_to_front(uint32_t *a, size_t n) {
  uint32_t *lo = &a[0], *mid = &a[n / 2], *hi = &a[n - 1];
  if (*mid < *lo)
    swap(mid, lo);
  if (*hi < *mid)
    swap(hi, mid);
  if (*mid < *lo)
    swap(mid, lo);
  swap(lo, mid);
}

/* Returns j such that a[0..j] <= pivot <= a[j+1..n), 0 <= j < n-1. */
static size_t partition(uint32_t *a, size_t n) {
  const uint32_t x = a[0];
  ptrdiff_t i = -1, j = (ptrdiff_t)n;
  for (;;) {
    do
      j--;
    while (a[j] > x);
    do
      i++;
    while (a[i] < x);
    if (i >= j)
      return (size_t)j;
    swap(&a[i], &a[j]);
  }
}

/* Recursing into the smaller part and looping on the larger bounds the stack at
 * log2(n) frames. */
static void quicksort(uint32_t *a, size_t n) {
  while (n > INSERTION_MAX) {
    pivot_to_front(a, n);
    size_t left = partition(a, n) + 1;
    if (left < n - left) {
      quicksort(a, left);
      a += left;
      n -= left;
    } else {
      quicksort(a + left, n - left);
      n = left;
    }
  }
  insertion_sort(a, n);
}

static uint64_t count_unsorted(const uint32_t *a, size_t n) {
  uint64_t bad = 0;
  for (size_t i = 1; i < n; i++)
    bad += a[i - 1] > a[i];
  return bad;
}

static void *init(const ic_optval_t *opt, uint64_t seed) {
  qsort_t *s = ic_victim_state(sizeof *s);
  s->n = (size_t)opt[O_COUNT].u;
  s->orig = ic_victim_alloc(&s->mo, s->n, sizeof(uint32_t), "the keys");
  s->work = ic_victim_alloc(&s->mw, s->n, sizeof(uint32_t), "the sort buffer");
  ic_rng_t r;
  ic_rng_seed(&r, seed);
  for (size_t i = 0; i < s->n; i++)
    s->orig[i] = (uint32_t)(ic_rng_next(&r) >> 32);
  return s;
}

static void run_rep(void *state, int rep) {
  qsort_t *s = state;
  memcpy(s->work, s->orig, s->n * sizeof(uint32_t));
  IC_REGION_BEGIN(R_SORT);
  quicksort(s->work, s->n);
  IC_REGION_END(R_SORT);
  IC_REGION_BEGIN(R_VERIFY);
  uint64_t unsorted = count_unsorted(s->work, s->n);
  IC_REGION_END(R_VERIFY);
  if (unsorted)
    ic_die(IC_EXIT_FAIL, "qsort: repetition %d left %llu keys out of order", rep,
           (unsigned long long)unsorted);
}

static uint64_t checksum(const void *state) {
  const qsort_t *s = state;
  return ic_fold(IC_FOLD_INIT, s->work, s->n * sizeof(uint32_t));
}

static void fini(void *state) {
  qsort_t *s = state;
  ic_mem_free(&s->mo);
  ic_mem_free(&s->mw);
  free(s);
}

static const ic_opt_t opts[] = {
    [O_COUNT] = {.name = "count", .type = IC_OPT_SIZE, .def = "1M", .min = 2,
                 .max = 1ull << 34, .metavar = "N",
                 .help = "number of 32-bit keys (units allowed: 1M = 1048576)"},
};

static const char *const regions[] = {"qsort.sort", "qsort.verify", NULL};

IC_VICTIM(qsort, "quicksort of random 32-bit keys, then a sortedness check");
