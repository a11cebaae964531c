#include <stdlib.h>
#include <string.h>

#include "chase.h"
#include "ic_test.h"

#define LINE 64

/* Each list is one cycle over its share of the lines, and together they cover every
 * line exactly once. */
static void check_lists(char *buf, size_t n, unsigned mlp) {
  char **lines = malloc(n * sizeof *lines);
  char *seen = calloc(n, 1);
  for (size_t i = 0; i < n; i++)
    lines[i] = buf + i * LINE;
  ic_rng_t rng;
  ic_rng_seed(&rng, mlp);
  chase_t c;
  chase_build(&c, lines, n, mlp, false, &rng);
  size_t total = 0;
  for (unsigned k = 0; k < mlp; k++) {
    size_t len = n * (k + 1) / mlp - n * k / mlp, steps = 0;
    chase_node_t *p = c.head[k];
    do {
      size_t i = (size_t)((char *)p - buf) / LINE;
      CHECK(!seen[i]);
      seen[i] = 1;
      p = p->next;
      steps++;
    } while (p != c.head[k] && steps <= len);
    CHECK(steps == len);
    total += steps;
  }
  CHECK(total == n);
  free(seen);
  free(lines);
}

static void check_step(char *buf, size_t n) {
  char **lines = malloc(n * sizeof *lines);
  for (size_t i = 0; i < n; i++) {
    lines[i] = buf + i * LINE;
    ((chase_node_t *)lines[i])->payload = UINT64_MAX;
  }
  ic_rng_t rng;
  ic_rng_seed(&rng, 1);
  chase_t c;
  chase_build(&c, lines, n, 3, true, &rng);
  CHECK(chase_step(&c, 4096) == 4095);
  CHECK(chase_step(&c, 2) == 3); /* at least one round */
  /* Write mode stored into every node: n/3 rounds cover each list's 1/3 of the lines. */
  chase_build(&c, lines, n, 3, true, &rng);
  chase_step(&c, n);
  size_t written = 0;
  for (size_t i = 0; i < n; i++)
    written += ((chase_node_t *)lines[i])->payload != UINT64_MAX;
  CHECK(written == n);
  free(lines);
}

int main(void) {
  size_t n = 3000;
  char *buf = aligned_alloc(LINE, n * LINE);
  memset(buf, 0, n * LINE);
  for (unsigned mlp = 1; mlp <= CHASE_MAX_MLP; mlp++)
    check_lists(buf, n, mlp);
  check_step(buf, n);
  free(buf);
  return TEST_RESULT();
}
