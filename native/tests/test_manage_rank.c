/* The ranking: the thread with the most cache misses first when there is a PMU; without
 * one, CPU share x predicted sensitivity x preemption; hysteresis keeps a close favourite. */
#include <string.h>

#include "ic_test.h"
#include "rank.h"

static ic_thread_t mk(int tid, double misses, double nivcsw, double share, double sens) {
  ic_thread_t t;
  memset(&t, 0, sizeof t);
  t.tid = tid, t.misses_per_s = misses, t.nivcsw_per_s = nivcsw, t.cpu_share = share,
  t.sensitivity = sens;
  return t;
}

int main(void) {
  /* PMU: the planted cache-hungry thread (many misses) first, though it has less CPU. */
  ic_thread_t a[] = {mk(10, 1e5, 50, 0.9, 1), mk(11, 4e7, 50, 0.5, 1), mk(12, 2e5, 5, 0.9, 1)};
  ic_manage_rank(a, 3);
  CHECK(a[0].tid == 11);
  CHECK(a[1].tid == 12 && a[2].tid == 10);
  /* no PMU: equal CPU and preemption, the predicted sensitivity decides */
  ic_thread_t b[] = {mk(20, -1, 40, 0.5, 1.0), mk(21, -1, 40, 0.5, 2.5), mk(22, -1, 40, 0.5, 1.0)};
  ic_manage_rank(b, 3);
  CHECK(b[0].tid == 21);
  CHECK(b[1].tid == 20); /* ties: lower tid first */
  /* no PMU: a preempted thread outranks an equally busy undisturbed one */
  ic_thread_t c[] = {mk(30, -1, 0, 0.5, 1.0), mk(31, -1, 300, 0.5, 1.0)};
  ic_manage_rank(c, 2);
  CHECK(c[0].tid == 31);
  CHECK(!ic_manage_should_switch(1.0, 1.1));
  CHECK(ic_manage_should_switch(1.0, 1.5));
  return TEST_RESULT();
}
