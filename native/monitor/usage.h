/* A cgroup's CPU usage as the poll policy sees it: a ring of (time, cumulative usage)
 * samples and two questions asked of it, "how busy over the last window" and "still
 * active". Pure: the samples come from ic_cgroup.c, the tests feed synthetic ones.
 *
 * Why a window at all: cpu.stat's usage_usec is charged when the scheduler updates the
 * running task's runtime (at each tick, or when it switches), so for a busy task it moves
 * in steps of up to one tick (4-5 ms at HZ=250; 44% of 1 ms polls see no change on the
 * development host). A rate over one 1 ms poll is therefore 0% or 400%; over a window W it
 * is off by at most one tick per CPU, i.e. tick/W (20-25% at W = 20 ms, 8-10% at 50 ms).
 * The rate is taken over the newest samples spanning at least W, never fewer. */
#ifndef IC_USAGE_H
#define IC_USAGE_H

#include <stdbool.h>
#include <stdint.h>

/* Enough for a 1 s window polled every 1 ms. */
#define IC_USAGE_RING 1024u

typedef struct {
  uint64_t t_ns[IC_USAGE_RING];
  uint64_t usage_ns[IC_USAGE_RING];
  unsigned newest; /* index of the newest sample */
  unsigned count;
  uint64_t last_change_ns; /* time of the newest sample at which usage had moved */
  uint64_t onset_ns;       /* start of the current activity: the last still sample before it */
  bool changed;            /* usage has moved at least once */
} ic_usage_t;

void ic_usage_reset(ic_usage_t *u);
/* Adds a sample. Activity that starts after more than idle_after_ns without any change
 * sets onset_ns to the previous sample's time (the latest moment still known idle). A
 * counter that goes backwards (a group recreated) counts as no change. */
void ic_usage_add(ic_usage_t *u, uint64_t t_ns, uint64_t usage_ns, uint64_t idle_after_ns);
/* Percent of one CPU over the newest samples spanning at least window_ns (all of them
 * while fewer exist); NaN with fewer than two samples. */
double ic_usage_pct(const ic_usage_t *u, uint64_t window_ns);
/* True when usage moved within idle_after_ns of the newest sample. */
bool ic_usage_active(const ic_usage_t *u, uint64_t idle_after_ns);

#endif
