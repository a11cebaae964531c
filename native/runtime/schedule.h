/* The pure arithmetic of a periodic task: where releases fall, what an overrun does to
 * the next one, and how much work one aggressor job does. No clock, no I/O: the runner
 * (periodic.c) supplies the times, and native/tests/test_runtime_schedule.c checks it. */
#ifndef IC_SCHEDULE_H
#define IC_SCHEDULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What happens to the releases a job overran (its end passed the next release). */
typedef enum {
  IC_OVERRUN_SKIP, /* drop every release that passed; the next job waits for a future one */
  IC_OVERRUN_LATE, /* keep every release; the next job starts late, right away */
} ic_overrun_t;

/* Release k happens at origin_ns + k * period_ns (CLOCK_MONOTONIC), whatever happened to
 * the jobs before it, so delays never accumulate into drift. */
typedef struct {
  uint64_t origin_ns; /* release 0: --start-at plus --offset */
  uint64_t period_ns; /* > 0 */
} ic_schedule_t;

static inline uint64_t ic_release_ns(const ic_schedule_t *s, uint64_t k) {
  return s->origin_ns + k * s->period_ns;
}

/* Index of the release the next job waits for, after the job of release k ended at
 * end_ns; *skipped counts the releases dropped in between (always 0 for LATE). A job
 * that ends exactly at the next release did not overrun it. */
uint64_t ic_next_release(const ic_schedule_t *s, ic_overrun_t policy, uint64_t k,
                         uint64_t end_ns, uint64_t *skipped);

/* One aggressor job's work: whole passes over the footprint, or a thread-CPU-time
 * budget (CPU time, so a job that is frozen or preempted still does all its work). */
typedef enum { IC_WORK_PASSES, IC_WORK_CPU_TIME } ic_work_kind_t;

typedef struct {
  ic_work_kind_t kind;
  uint64_t amount; /* passes, or nanoseconds of CPU time */
} ic_work_t;

/* "passes:N" (N >= 1) or "time:DURATION" (> 0, e.g. "time:20ms"); false with a reason. */
bool ic_work_parse(const char *text, ic_work_t *w, char *why, size_t cap);
/* A spelling ic_work_parse reads back exactly ("passes:4", "time:20ms") into buf. */
const char *ic_work_format(const ic_work_t *w, char *buf, size_t cap);
/* Accesses (one cache line each) of `passes` sweeps over a footprint of `bytes`;
 * saturates instead of overflowing. */
uint64_t ic_work_accesses(uint64_t passes, uint64_t bytes, size_t line);

#endif
