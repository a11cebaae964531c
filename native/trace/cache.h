/* A cache hierarchy model: set-associative, true LRU, write-allocate, every level filled on
 * a miss (non-inclusive, non-exclusive), no prefetcher. It answers one question per access:
 * which level served this line. Simple on purpose: it is the "which accesses reach L2 and
 * beyond" of paper 000 §4.2 on any host whose sizes are known, not a timing model. */
#ifndef IC_TRACE_CACHE_H
#define IC_TRACE_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { IC_CACHE_MAX_LEVELS = 4 };

typedef struct {
  uint64_t size, ways; /* bytes, associativity */
  uint64_t sets;
  uint64_t *tags;   /* sets × ways line numbers; UINT64_MAX = invalid */
  uint64_t *stamps; /* last use of each way */
  uint64_t clock;
} ic_cache_level_t;

typedef struct {
  int nlevels;
  unsigned line_shift;
  ic_cache_level_t level[IC_CACHE_MAX_LEVELS];
} ic_cache_t;

/* Sizes in bytes from the innermost level out; line a power of two. Returns false with a
 * reason in err when a geometry is impossible (size not a multiple of ways × line, sets not
 * a power of two) or memory cannot be had. */
bool ic_cache_init(ic_cache_t *c, int nlevels, const uint64_t *size, const uint64_t *ways,
                   uint64_t line, char *err, size_t errcap);
void ic_cache_free(ic_cache_t *c);
/* Looks up one line number (address >> line_shift) and returns the level that held it
 * (0 = innermost) or nlevels when it came from memory; every level is updated. */
int ic_cache_access(ic_cache_t *c, uint64_t line);

#endif
