/* The manager's decision, kept pure so it can be tested with planted numbers. */
#ifndef IC_MANAGE_RANK_H
#define IC_MANAGE_RANK_H

#include <stdbool.h>
#include <stdint.h>

typedef struct {
  int tid;
  char name[16];
  double misses_per_s; /* PMU cache misses; < 0 when there is no PMU */
  double nivcsw_per_s; /* involuntary context switches */
  double cpu_share;    /* CPU time / wall time over the interval, 0..1 per thread */
  double sensitivity;  /* predicted slowdown under interference (heatmap); 1 unknown */
  double score;        /* filled by ic_manage_score */
} ic_thread_t;

/* Higher first. With a PMU: misses/s weighted by the predicted sensitivity; without one:
 * the CPU share weighted by sensitivity, raised by how often the thread is preempted (a
 * preempted cache-hungry thread refills its cache on every switch). */
double ic_manage_score(const ic_thread_t *t);

/* Sort threads by score, highest first; ties keep the lower tid first. */
void ic_manage_rank(ic_thread_t *threads, int n);

/* Hysteresis: keep `current` on top unless `challenger` scores this much higher. */
bool ic_manage_should_switch(double current, double challenger);

#endif
