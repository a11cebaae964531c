#include "reuse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { INITIAL_SLOTS = 1 << 16, INITIAL_TIMES = 1 << 20 };

static uint64_t hash(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return x;
}

bool ic_reuse_init(ic_reuse_t *r) {
  memset(r, 0, sizeof *r);
  r->cap = INITIAL_SLOTS;
  r->tcap = INITIAL_TIMES;
  r->keys = calloc(r->cap, sizeof *r->keys);
  r->when = calloc(r->cap, sizeof *r->when);
  r->last = calloc(r->cap, sizeof *r->last);
  r->tree = calloc(r->tcap + 1, sizeof *r->tree);
  if (!r->keys || !r->when || !r->last || !r->tree) {
    ic_reuse_free(r);
    return false;
  }
  return true;
}

void ic_reuse_free(ic_reuse_t *r) {
  free(r->keys);
  free(r->when);
  free(r->last);
  free(r->tree);
  memset(r, 0, sizeof *r);
}

static void tree_add(ic_reuse_t *r, uint64_t t, int32_t v) {
  for (; t <= r->tcap; t += t & (~t + 1))
    r->tree[t] += v;
}

static uint64_t tree_prefix(const ic_reuse_t *r, uint64_t t) {
  uint64_t s = 0;
  for (; t; t -= t & (~t + 1))
    s += (uint64_t)r->tree[t];
  return s;
}

static uint64_t *slot_of(ic_reuse_t *r, uint64_t key) {
  uint64_t mask = r->cap - 1;
  for (uint64_t i = hash(key) & mask;; i = (i + 1) & mask)
    if (r->keys[i] == key || r->keys[i] == 0)
      return &r->keys[i];
}

static void die_oom(void) {
  fputs("reuse distances: out of memory\n", stderr);
  exit(1);
}

static void grow_slots(ic_reuse_t *r) {
  uint64_t *keys = r->keys, *when = r->when, *last = r->last, cap = r->cap;
  r->cap *= 2;
  r->keys = calloc(r->cap, sizeof *r->keys);
  r->when = calloc(r->cap, sizeof *r->when);
  r->last = calloc(r->cap, sizeof *r->last);
  if (!r->keys || !r->when || !r->last)
    die_oom();
  for (uint64_t i = 0; i < cap; i++)
    if (keys[i]) {
      uint64_t *k = slot_of(r, keys[i]);
      *k = keys[i];
      r->when[k - r->keys] = when[i];
      r->last[k - r->keys] = last[i];
    }
  free(keys);
  free(when);
  free(last);
}

typedef struct {
  uint64_t when, slot;
} stamp_t;

static int by_when(const void *a, const void *b) {
  uint64_t x = ((const stamp_t *)a)->when, y = ((const stamp_t *)b)->when;
  return x < y ? -1 : x > y;
}

/* Time ran out: renumber the live marks 1..used in order (distances only depend on their
 * order) and rebuild the tree, doubling it when the live lines fill more than half. */
static void compact(ic_reuse_t *r) {
  stamp_t *s = malloc(r->used * sizeof *s);
  if (!s)
    die_oom();
  uint64_t n = 0;
  for (uint64_t i = 0; i < r->cap; i++)
    if (r->keys[i])
      s[n++] = (stamp_t){r->when[i], i};
  qsort(s, n, sizeof *s, by_when);
  if (2 * n > r->tcap) {
    r->tcap *= 2;
    free(r->tree);
    r->tree = malloc((r->tcap + 1) * sizeof *r->tree);
    if (!r->tree)
      die_oom();
  }
  memset(r->tree, 0, (r->tcap + 1) * sizeof *r->tree);
  for (uint64_t i = 0; i < n; i++) {
    r->when[s[i].slot] = i + 1;
    r->tree[i + 1] = 1;
  }
  for (uint64_t t = 1; t <= r->tcap; t++) { /* linear-time Fenwick build */
    uint64_t up = t + (t & (~t + 1));
    if (up <= r->tcap)
      r->tree[up] += r->tree[t];
  }
  r->now = n;
  free(s);
}

uint64_t ic_reuse_access(ic_reuse_t *r, uint64_t line, uint64_t *prev) {
  if (r->now == r->tcap)
    compact(r);
  uint64_t *k = slot_of(r, line + 1);
  uint64_t *last = &r->last[k - r->keys];
  uint64_t d;
  ++r->ticks;
  if (*k) {
    uint64_t *w = &r->when[k - r->keys];
    *prev = *last;
    *last = r->ticks;
    d = r->used - tree_prefix(r, *w); /* marks after the line's own: distinct others */
    tree_add(r, *w, -1);
    *w = ++r->now;
    tree_add(r, *w, 1);
    return d;
  }
  *k = line + 1;
  *prev = 0;
  *last = r->ticks;
  r->when[k - r->keys] = ++r->now;
  tree_add(r, r->now, 1);
  if (2 * ++r->used > r->cap)
    grow_slots(r);
  return IC_REUSE_COLD;
}
