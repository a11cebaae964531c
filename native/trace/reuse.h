/* Exact LRU stack (reuse) distance of a stream of cache lines: for each access, how many
 * distinct other lines were touched since the previous access to the same line (Bennett &
 * Kruskal's method: a Fenwick tree over time holding a 1 at each line's latest access).
 * A fully associative LRU cache of C lines hits exactly the accesses with distance < C, so
 * the distance says which cache size would serve an access, whatever the host. */
#ifndef IC_TRACE_REUSE_H
#define IC_TRACE_REUSE_H

#include <stdbool.h>
#include <stdint.h>

#define IC_REUSE_COLD UINT64_MAX

typedef struct {
  uint64_t *keys; /* line + 1; 0 = empty slot */
  uint64_t *when; /* time of the line's latest access, renumbered by compaction */
  uint64_t *last; /* tick of the line's latest access, never renumbered */
  uint64_t cap, used;
  int32_t *tree; /* Fenwick tree over times 1..tcap */
  uint64_t tcap, now;
  uint64_t ticks; /* accesses so far */
} ic_reuse_t;

bool ic_reuse_init(ic_reuse_t *r);
void ic_reuse_free(ic_reuse_t *r);
/* Distance of this access to `line`, or IC_REUSE_COLD on its first access. *prev gets the
 * tick (1-based count of accesses) of the line's previous access, 0 on its first; the
 * access itself is tick r->ticks afterwards. */
uint64_t ic_reuse_access(ic_reuse_t *r, uint64_t line, uint64_t *prev);
/* Distinct lines seen so far. */
static inline uint64_t ic_reuse_lines(const ic_reuse_t *r) { return r->used; }

#endif
