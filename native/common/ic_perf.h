/* Optional hardware counters for a thread: cycles, instructions, cache references and
 * misses, L1D and LLC read misses. Each event opens on its own, so one the PMU lacks
 * does not take the others with it; a missing event keeps the reason it failed.
 * Counts are user-space only (exclude_kernel), which perf_event_paranoid=2 allows.
 * Reads are system calls: take them outside timed regions (the driver brackets
 * region 0 with them). */
#ifndef IC_PERF_H
#define IC_PERF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ic_common.h"

enum { IC_PERF_NEVENTS = 6, IC_PERF_REASON_MAX = 128 };

typedef struct {
  int fd[IC_PERF_NEVENTS];
  char reason[IC_PERF_NEVENTS][IC_PERF_REASON_MAX];
  uint64_t start[IC_PERF_NEVENTS][3]; /* value, time enabled, time running */
  int64_t *counts; /* max_reps rows of IC_PERF_NEVENTS; -1: not counted */
  int max_reps;
} ic_perf_t;

/* Opens every event on the calling thread; returns false only when memory for
 * max_reps rows cannot be had. */
bool ic_perf_open(ic_perf_t *p, int max_reps);
void ic_perf_close(ic_perf_t *p);
int ic_perf_navailable(const ic_perf_t *p);
/* Bracket one repetition: snapshot, then store the (multiplex-scaled) deltas in row rep. */
void ic_perf_rep_begin(ic_perf_t *p);
void ic_perf_rep_end(ic_perf_t *p, int rep);

/* Adds "counters":{name:count|null,…} for row rep when any event is open. */
void ic_perf_json_counters(ic_json_t *j, const ic_perf_t *p, int rep);
/* Adds "counters_available":[…] and "counters_missing":{name:reason,…}. */
void ic_perf_json_summary(ic_json_t *j, const ic_perf_t *p);

/* Why perf_event_open failed with err, in words a user can act on; paranoid is
 * /proc/sys/kernel/perf_event_paranoid, or INT_MIN when unreadable. */
const char *ic_perf_reason(int err, int paranoid, char *buf, size_t cap);

#endif
