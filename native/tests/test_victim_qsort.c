/* The qsort victim's own quicksort on the inputs random keys rarely produce: runs of equal
 * keys, sorted and reversed input, every small size. Its static functions are reached by
 * including the victim file; main.c is not linked, so its two allocation helpers are
 * re-implemented below. */
#include "../victims/qsort.c"
#include "ic_test.h"

void *ic_victim_alloc(ic_mem_t *m, uint64_t count, size_t elem, const char *what) {
  (void)what;
  CHECK(ic_mem_alloc(m, (size_t)(count * elem), false));
  return m->ptr;
}

void *ic_victim_state(size_t bytes) { return calloc(1, bytes); }

static bool same_multiset_sorted(const uint32_t *in, const uint32_t *out, size_t n) {
  uint32_t *ref = malloc(n * sizeof *ref + 1);
  memcpy(ref, in, n * sizeof *ref);
  insertion_sort(ref, n);
  bool ok = !memcmp(ref, out, n * sizeof *ref);
  free(ref);
  return ok;
}

typedef uint32_t (*shape_fn)(size_t i, size_t n, ic_rng_t *r);
static uint32_t all_equal(size_t i, size_t n, ic_rng_t *r) { (void)i, (void)n, (void)r; return 7; }
static uint32_t ascending(size_t i, size_t n, ic_rng_t *r) { (void)n, (void)r; return (uint32_t)i; }
static uint32_t descending(size_t i, size_t n, ic_rng_t *r) { (void)r; return (uint32_t)(n - i); }
static uint32_t few_values(size_t i, size_t n, ic_rng_t *r) { (void)i, (void)n; return (uint32_t)(ic_rng_next(r) % 3); }
static uint32_t sawtooth(size_t i, size_t n, ic_rng_t *r) { (void)n, (void)r; return (uint32_t)(i % 17); }
static uint32_t random_key(size_t i, size_t n, ic_rng_t *r) { (void)i, (void)n; return (uint32_t)ic_rng_next(r); }

static void check_shape(shape_fn shape, size_t n) {
  ic_rng_t r;
  ic_rng_seed(&r, n);
  uint32_t *in = malloc(n * sizeof *in + 1), *out = malloc(n * sizeof *out + 1);
  for (size_t i = 0; i < n; i++)
    in[i] = shape(i, n, &r);
  memcpy(out, in, n * sizeof *in);
  quicksort(out, n);
  CHECK(count_unsorted(out, n) == 0);
  CHECK(same_multiset_sorted(in, out, n));
  free(in);
  free(out);
}

static void test_victim_checksum_is_seeded(void) {
  ic_optval_t opt[] = {[O_COUNT] = {.set = true, .u = 5000}};
  void *a = ic_victim_qsort.init(opt, 1), *b = ic_victim_qsort.init(opt, 1),
       *c = ic_victim_qsort.init(opt, 2);
  ic_victim_qsort.run_rep(a, 0);
  ic_victim_qsort.run_rep(b, 0);
  ic_victim_qsort.run_rep(c, 0);
  CHECK(ic_victim_qsort.checksum(a) == ic_victim_qsort.checksum(b));
  CHECK(ic_victim_qsort.checksum(a) != ic_victim_qsort.checksum(c));
  ic_victim_qsort.fini(a);
  ic_victim_qsort.fini(b);
  ic_victim_qsort.fini(c);
}

int main(void) {
  const shape_fn shapes[] = {all_equal, ascending, descending, few_values, sawtooth, random_key};
  CHECK(ic_regions_init((const char *const[]){"total", "sort", "verify"}, 3, 1));
  ic_regions_set_rep(0);
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    for (size_t n = 0; n <= 70; n++)
      check_shape(shapes[s], n);
    check_shape(shapes[s], 20000);
  }
  test_victim_checksum_is_seeded();
  return TEST_RESULT();
}
