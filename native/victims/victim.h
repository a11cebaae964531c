/* What a victim is: a name, typed options, named regions and four hooks. The driver
 * (main.c) owns the process lifecycle of docs/native-contract.md; a victim only builds its
 * synthetic input, runs one repetition between its own region markers, and folds its
 * result into a checksum so the compiler cannot delete the work. */
#ifndef IC_VICTIM_H
#define IC_VICTIM_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "ic_common.h"
#include "ic_opts.h"
#include "ic_region.h"

typedef struct {
  const char *name;
  const char *help;
  const ic_opt_t *opts;
  size_t nopts;
  const char *const *regions; /* the victim's regions, ids 1…; NULL-terminated */
  /* Builds the input from seed (opt is indexed like opts); returns the state or exits
   * through ic_die/ic_usage_error. */
  void *(*init)(const ic_optval_t *opt, uint64_t seed);
  void (*run_rep)(void *state, int rep);
  uint64_t (*checksum)(const void *state);
  void (*fini)(void *state);
} ic_victim_t;

#define IC_FOLD_INIT 14695981039346656037ULL

/* Folds n bytes of a result into a running 64-bit hash (FNV-1a). */
static inline uint64_t ic_fold(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) {
    h ^= b[i];
    h *= 1099511628211ULL;
  }
  return h;
}

/* A victim file defines static `opts` and `regions` tables and static init, run_rep,
 * checksum and fini hooks; IC_VICTIM(name, help) then exports them as `ic_victim_<name>`,
 * the descriptor victims.h lists. */
#define IC_VICTIM(id, help_text)                                                             \
  const ic_victim_t ic_victim_##id = {                                                       \
      .name = #id, .help = help_text, .opts = opts, .nopts = IC_NOPTS(opts),                 \
      .regions = regions, .init = init, .run_rep = run_rep, .checksum = checksum,            \
      .fini = fini}

/* count × elem bytes of prefaulted memory on 4 KiB pages, as an ordinary program gets;
 * exits with IC_EXIT_FAIL when the size overflows or the host cannot give it. */
void *ic_victim_alloc(ic_mem_t *m, uint64_t count, size_t elem, const char *what);
/* calloc or die: a victim's small state. */
void *ic_victim_state(size_t bytes);
/* Links n slots of `stride` bytes from base into one random cycle (Sattolo, from seed): the
 * first word of each slot points to the next. Each load then depends on the one before,
 * so neither the prefetchers nor out-of-order execution can overlap them. */
void ic_victim_cycle(void *base, size_t n, size_t stride, uint64_t seed);

#endif
