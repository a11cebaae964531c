#include "chase.h"

#include <stdlib.h>

void chase_build(chase_t *c, char *const *lines, size_t n, unsigned mlp, bool write,
                 ic_rng_t *rng) {
  size_t *idx = malloc((n / mlp + 1) * sizeof *idx);
  if (!idx)
    ic_die(IC_EXIT_FAIL, "out of memory building %zu-node lists", n);
  c->mlp = mlp;
  c->write = write;
  for (unsigned k = 0; k < mlp; k++) {
    char *const *part = lines + n * k / mlp;
    size_t len = n * (k + 1) / mlp - n * k / mlp;
    ic_sattolo(idx, len, rng);
    for (size_t i = 0; i < len; i++)
      ((chase_node_t *)part[i])->next = (chase_node_t *)part[idx[i]];
    c->head[k] = (chase_node_t *)part[0];
  }
  free(idx);
}

/* Inlined with constant mlp and write, so the cursors live in registers and the inner
 * loop unrolls into mlp independent loads per round: no call, no branch per access. */
static inline __attribute__((always_inline)) void walk(chase_node_t **head, const unsigned mlp,
                                                       uint64_t rounds, const bool write) {
  chase_node_t *p[CHASE_MAX_MLP];
  for (unsigned k = 0; k < mlp; k++)
    p[k] = head[k];
  for (uint64_t r = 0; r < rounds; r++) {
#pragma GCC unroll 16
    for (unsigned k = 0; k < mlp; k++) {
      chase_node_t *node = p[k];
      p[k] = node->next;
      if (write)
        node->payload = r;
    }
  }
  for (unsigned k = 0; k < mlp; k++)
    head[k] = p[k];
}

#define WALK_CASE(m)                                                                       \
  case m:                                                                                  \
    if (c->write)                                                                          \
      walk(c->head, m, rounds, true);                                                      \
    else                                                                                   \
      walk(c->head, m, rounds, false);                                                     \
    break;

uint64_t chase_step(chase_t *c, uint64_t n) {
  uint64_t rounds = n / c->mlp ? n / c->mlp : 1;
  switch (c->mlp) {
    WALK_CASE(1) WALK_CASE(2) WALK_CASE(3) WALK_CASE(4) WALK_CASE(5) WALK_CASE(6)
    WALK_CASE(7) WALK_CASE(8) WALK_CASE(9) WALK_CASE(10) WALK_CASE(11) WALK_CASE(12)
    WALK_CASE(13) WALK_CASE(14) WALK_CASE(15) WALK_CASE(16)
  default:
    ic_die(IC_EXIT_FAIL, "mlp %u outside 1..%d", c->mlp, CHASE_MAX_MLP);
  }
  return rounds * c->mlp;
}
