/* The aggressor lifecycle, owned once for every kind (docs/native-contract.md,
 * "Aggressor lifecycle"): options, pinning, signals, ready line, the chunked run loop
 * with pause and throttle, and the final statistics. A kind supplies only its options
 * and four functions. */
#ifndef IC_LIFECYCLE_H
#define IC_LIFECYCLE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ic_common.h"
#include "ic_opts.h"

/* Upper bound on the accesses per step: the command word is checked between steps, so
 * this bounds the reaction time to a stop or pause. */
#define IC_AGGR_MAX_CHUNK 4096u

typedef struct {
  const ic_optval_t *opt; /* the kind's options, indexed like its table */
  uint64_t seed;          /* --seed: for reproducible layouts */
  size_t line;            /* cache line size: one access touches one line */
} ic_aggr_args_t;

/* What init reports about the memory it set up; shared fields of ready/stats. */
typedef struct {
  const char *op;
  uint64_t size;  /* footprint in bytes */
  unsigned mlp;   /* independent access streams */
  size_t page;    /* page size backing the footprint */
} ic_aggr_info_t;

typedef struct {
  const char *name;
  const char *help;
  const ic_opt_t *opts;
  size_t nopts;
  /* Allocates and prefaults everything; exits through ic_die/ic_usage_error on error. */
  void *(*init)(const ic_aggr_args_t *args, ic_aggr_info_t *info);
  /* Performs about n accesses (n <= IC_AGGR_MAX_CHUNK) and returns how many it did;
   * kinds with several streams round to whole rounds, at least one. */
  uint64_t (*step)(void *state, uint64_t n);
  /* Kind-specific fields for the ready and stats lines; may be NULL. */
  void (*report)(const void *state, ic_json_t *j);
  void (*fini)(void *state);
} ic_aggressor_t;

/* Runs one aggressor with argv holding only its options; returns the exit code. */
int ic_aggr_main(const ic_aggressor_t *kind, int argc, char **argv);
/* `PROG KIND --help` text. */
void ic_aggr_help(FILE *f, const ic_aggressor_t *kind);
/* Options shared by every kind, for the top-level --help. */
void ic_aggr_common_help(FILE *f);
/* One JSON line describing the kind and its own options (ic-aggr --list). */
void ic_aggr_describe(FILE *f, const ic_aggressor_t *kind);

#endif
