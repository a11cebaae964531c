#include "cache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool pow2(uint64_t x) { return x && !(x & (x - 1)); }

bool ic_cache_init(ic_cache_t *c, int nlevels, const uint64_t *size, const uint64_t *ways,
                   uint64_t line, char *err, size_t errcap) {
  memset(c, 0, sizeof *c);
  if (nlevels < 1 || nlevels > IC_CACHE_MAX_LEVELS) {
    snprintf(err, errcap, "between 1 and %d cache levels, got %d", IC_CACHE_MAX_LEVELS,
             nlevels);
    return false;
  }
  if (!pow2(line)) {
    snprintf(err, errcap, "line size %llu is not a power of two", (unsigned long long)line);
    return false;
  }
  c->nlevels = nlevels;
  c->line_shift = (unsigned)__builtin_ctzll(line);
  for (int i = 0; i < nlevels; i++) {
    ic_cache_level_t *l = &c->level[i];
    if (!ways[i] || size[i] % (ways[i] * line)) {
      snprintf(err, errcap, "level %d: %llu bytes is not a multiple of %llu ways × %llu-byte "
               "lines", i + 1, (unsigned long long)size[i], (unsigned long long)ways[i],
               (unsigned long long)line);
      ic_cache_free(c);
      return false;
    }
    l->size = size[i];
    l->ways = ways[i];
    l->sets = size[i] / (ways[i] * line);
    /* Hosts with a non-power-of-two set count (some LLC slices) are indexed modulo. */
    l->tags = malloc(l->sets * l->ways * sizeof *l->tags);
    l->stamps = calloc(l->sets * l->ways, sizeof *l->stamps);
    if (!l->tags || !l->stamps) {
      snprintf(err, errcap, "out of memory for level %d", i + 1);
      ic_cache_free(c);
      return false;
    }
    memset(l->tags, 0xff, l->sets * l->ways * sizeof *l->tags);
  }
  return true;
}

void ic_cache_free(ic_cache_t *c) {
  for (int i = 0; i < IC_CACHE_MAX_LEVELS; i++) {
    free(c->level[i].tags);
    free(c->level[i].stamps);
    c->level[i].tags = c->level[i].stamps = NULL;
  }
}

/* True on a hit; on a miss the least recently used way (or an invalid one) takes the line. */
static bool touch(ic_cache_level_t *l, uint64_t line) {
  uint64_t set = line % l->sets;
  uint64_t *tags = l->tags + set * l->ways;
  uint64_t *stamps = l->stamps + set * l->ways;
  uint64_t now = ++l->clock;
  uint64_t victim = 0;
  for (uint64_t w = 0; w < l->ways; w++) {
    if (tags[w] == line) {
      stamps[w] = now;
      return true;
    }
    if (stamps[w] < stamps[victim])
      victim = w;
  }
  tags[victim] = line;
  stamps[victim] = now;
  return false;
}

int ic_cache_access(ic_cache_t *c, uint64_t line) {
  for (int i = 0; i < c->nlevels; i++)
    if (touch(&c->level[i], line))
      return i;
  return c->nlevels;
}
