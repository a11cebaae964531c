/* Parallel linked lists (PLL): the kernel shared by pll and bankpll. Each node is one
 * cache line whose first word points to the next node of its list; N lists are walked
 * in lockstep so that N independent misses are in flight (memory-level parallelism). */
#ifndef IC_CHASE_H
#define IC_CHASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ic_common.h"

#define CHASE_MAX_MLP 16

typedef struct chase_node {
  struct chase_node *next;
  uint64_t payload; /* written by --op write so each visit dirties the line */
} chase_node_t;

typedef struct {
  chase_node_t *head[CHASE_MAX_MLP];
  unsigned mlp;
  bool write;
} chase_t;

/* Splits lines[0..n) into mlp lists of consecutive entries and links each into one
 * random cycle (Sattolo), so no prefetcher can predict the next line. */
void chase_build(chase_t *c, char *const *lines, size_t n, unsigned mlp, bool write,
                 ic_rng_t *rng);
/* Walks about n nodes (whole rounds of mlp, at least one); returns how many. */
uint64_t chase_step(chase_t *c, uint64_t n);

#endif
