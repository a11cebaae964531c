/* Observation points: IC_REGION_BEGIN(id) / IC_REGION_END(id) around a victim's loop nests.
 *
 * A marker takes one timestamp (wall and thread CPU time) and writes it into a buffer
 * allocated and prefaulted by ic_regions_init(): no allocation, no I/O, no lock, so the
 * measured code is disturbed as little as the clocks allow. Samples are flushed as the
 * JSON lines of docs/native-contract.md once the timed work is over.
 *
 * Thread CPU time comes from the fastest exact source this host offers:
 *  - "perf_mmap": the user page of a task-bound perf software event. The kernel refreshes
 *    time_running whenever the thread is scheduled in; the time since then is extrapolated
 *    from the CPU's cycle counter with time_mult/time_shift/time_offset (perf_event_open(2),
 *    cap_user_time). No system call. It counts the time the thread held a CPU as the
 *    scheduler sees it, hypervisor steal included. Needs the cycle counter the kernel
 *    uses, which ic_arch.h provides as ic_arch_cycles() where it defines
 *    IC_ARCH_HAVE_CYCLES.
 *  - "clock_gettime": CLOCK_THREAD_CPUTIME_ID, a system call (slow in a VM), used when the
 *    kernel does not expose cap_user_time (e.g. a paravirtualised sched_clock) or when
 *    IC_REGION_CPUTIME=clock is set in the environment.
 *
 * Under ic-profile the markers also append a tag (time, region, source line) to the
 * profiler's ring (ic_tag.h); the tag is taken outside the region's own stamps.
 *
 * Wall-clock mode (ic_regions_use_wall_clock): markers read only the free-running counter
 * (rdtsc / cntvct_el0) and keep raw ticks, converted to ns at the flush. For a board whose
 * kernel gives user space no syscall-free CPU clock: a marker stays a few ns. A wall clock
 * also counts time the thread spent descheduled, so a repetition with an involuntary context
 * switch is marked "descheduled" and the analysis discards it; cpu_ns then repeats wall_ns
 * (a repetition that held its CPU throughout used exactly its wall time).
 *
 * Regions are single-threaded: the markers must run on the thread that called
 * ic_regions_init(), because the perf event is bound to it. A region entered several
 * times in one repetition accumulates its times. Ids or repetitions outside the buffer are
 * counted in ic_regions_dropped() instead of being written.
 *
 * The header compiles as strict C11 (-std=c11, no _GNU_SOURCE) in a user's program: what
 * needs POSIX or GNU declarations (clock_gettime, sched_getcpu) lives in ic_region.c.
 *
 * Each marker also carries a trace mark (ic_arch.h: one no-op instruction naming the
 * region), so the learning stage's tracer splits a trace into the same regions; ids must
 * therefore be compile-time constants. */
#ifndef IC_REGION_H
#define IC_REGION_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "ic_arch.h"
#include "ic_common.h"
#include "ic_tag.h"

typedef struct {
  uint64_t wall_ns;
  uint64_t cpu_ns;
  int64_t nivcsw; /* -1: not measured for this region */
  int32_t cpu;    /* CPU the region last ended on */
  uint32_t entries;
} ic_sample_t;

typedef struct {
  uint64_t wall_ns;
  uint64_t cpu_ns;
} ic_stamp_t;

typedef enum { IC_CPUTIME_CLOCK, IC_CPUTIME_PERF_MMAP, IC_CPUTIME_WALL } ic_cputime_mode_t;

/* The region names this process declared (a victim's table, ic_user_regions), for whoever
 * publishes region events by name: names[i] names region first_id + i. */
typedef struct {
  const char *const *names;
  int n, first_id;
} ic_region_names_t;
void ic_regions_declare(const char *const *names, int n, int first_id);
ic_region_names_t ic_regions_declared(void);

/* Watcher of region entries and exits (a periodic runner that publishes them to ic-monitor,
 * runtime/region_watch.h); NULL when nobody watches, which costs the markers one
 * predictable branch. Called outside the region's timed span, on the marking thread. */
typedef void (*ic_region_watch_fn)(int id, bool enter);
extern ic_region_watch_fn ic_region_watch_g;

static inline void ic_region_watch(int id, bool enter) {
  if (__builtin_expect(ic_region_watch_g != NULL, 0))
    ic_region_watch_g(id, enter);
}

/* The markers' state, exposed only so they can be inlined; use the functions below. */
struct ic_regions {
  ic_sample_t *row;   /* the current repetition's row, NULL outside the buffer */
  ic_stamp_t *open;   /* start stamp per region */
  int nregions;
  const volatile struct perf_event_mmap_page *page; /* set in perf_mmap mode */
  uint64_t dropped;
  ic_sample_t *samples; /* max_reps rows of nregions */
  const char *const *names;
  int max_reps;
  int reps; /* 1 + the highest repetition selected */
  int perf_fd;
  bool borrowed; /* samples belong to someone else (ic_regions_attach_row) */
  ic_cputime_mode_t mode;
  double ns_per_tick; /* wall-clock mode: the counter's period */
};
extern struct ic_regions ic_regions_g;

/* Allocates and prefaults the buffer for max_reps × nregions samples and chooses the CPU
 * time source. names[id] names region id and must outlive the flush. Returns false (with
 * a message) when memory cannot be had or the arguments make no sense. */
bool ic_regions_init(const char *const *names, int nregions, int max_reps);
/* A program run by ic-run (ic_user.h): one repetition whose row lives in memory shared with
 * ic-run, which reads it once the program has exited. `raw_wall`: the markers keep raw
 * counter ticks, which ic-run converts with its own calibration. */
bool ic_regions_attach_row(const char *const *names, int nregions, ic_sample_t *row,
                           bool raw_wall);
/* Writes a sample measured elsewhere (ic-run: the program's times) into the current row. */
void ic_regions_record(int region, const ic_sample_t *s);
/* Selects the row later markers write into. */
void ic_regions_set_rep(int rep);
/* Records a repetition-level context-switch count for one region of the current row. */
void ic_regions_set_nivcsw(int region, int64_t nivcsw);
/* Optional per-sample fields (e.g. perf counters); called while the sample's JSON object
 * is open. */
typedef void (*ic_regions_extra_fn)(ic_json_t *j, int rep, int region, void *ctx);
/* Writes one JSON line per recorded (repetition, region), in order. */
void ic_regions_flush(FILE *f, ic_regions_extra_fn extra, void *ctx);
/* Switches the markers to the wall clock of the free-running counter (see above); call after
 * ic_regions_init. Returns false, with *why saying so, where no such counter exists or it
 * does not tick at a constant rate. On success *why names the counter and its frequency. */
bool ic_regions_use_wall_clock(char *why, size_t cap);
/* Releases the buffer and the perf event. */
void ic_regions_fini(void);

/* How many repetitions were selected, how many marker calls fell outside the buffer, and
 * which time source is in use ("perf_mmap" or "clock_gettime": thread CPU time; "wall": the
 * counter's wall clock). */
int ic_regions_reps(void);
uint64_t ic_regions_dropped(void);
const char *ic_regions_cputime_mode(void);
/* A sample's time in ns: ticks converted in wall-clock mode, unchanged otherwise. */
uint64_t ic_regions_ticks_to_ns(uint64_t ticks);
/* Sample of (rep, region) or NULL when outside the buffer (for tests and tools). */
const ic_sample_t *ic_regions_sample(int rep, int region);

static inline uint64_t ic_region_timespec_ns(const struct timespec *t) {
  return (uint64_t)t->tv_sec * 1000000000u + (uint64_t)t->tv_nsec;
}

/* CLOCK_MONOTONIC and CLOCK_THREAD_CPUTIME_ID: two system calls already, so the call out
 * of line costs nothing that matters. */
ic_stamp_t ic_region_stamp_clock(void);
/* sched_getcpu(), which strict C11 does not declare. */
int ic_regions_cpu(void);

#ifdef IC_ARCH_HAVE_CYCLES
/* perf_event_open(2): ns = quot * mult + ((rem * mult) >> shift), split so the product
 * cannot overflow. */
static inline uint64_t ic_region_cyc_to_ns(uint64_t cyc, uint32_t mult, uint16_t shift) {
  uint64_t quot = cyc >> shift;
  uint64_t rem = cyc & (((uint64_t)1 << shift) - 1);
  return quot * mult + ((rem * mult) >> shift);
}

/* Wall time on the perf clock (time_zero) and CPU time (time_running extrapolated
 * since the kernel last refreshed the page) from one cycle-counter read. The seqlock
 * retries when the page changed under us, i.e. when we were scheduled out mid-read. */
static inline ic_stamp_t ic_region_stamp_perf(const volatile struct perf_event_mmap_page *pc) {
  uint32_t seq;
  uint64_t running, offset, zero, cyc;
  uint32_t mult;
  uint16_t shift;
  do {
    seq = __atomic_load_n(&pc->lock, __ATOMIC_ACQUIRE);
    running = pc->time_running;
    offset = pc->time_offset;
    zero = pc->time_zero;
    mult = pc->time_mult;
    shift = pc->time_shift;
    cyc = ic_arch_cycles();
    if (pc->cap_user_time_short)
      cyc = pc->time_cycles + ((cyc - pc->time_cycles) & pc->time_mask);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
  } while (pc->lock != seq);
  uint64_t ns = ic_region_cyc_to_ns(cyc, mult, shift);
  return (ic_stamp_t){zero + ns, running + offset + ns};
}
#endif

static inline ic_stamp_t ic_region_stamp(void) {
#ifdef IC_ARCH_HAVE_CYCLES
  if (ic_regions_g.mode == IC_CPUTIME_WALL) {
    uint64_t t = ic_arch_cycles();
    return (ic_stamp_t){t, t}; /* raw ticks; the flush converts them */
  }
  if (ic_regions_g.page)
    return ic_region_stamp_perf(ic_regions_g.page);
#endif
  return ic_region_stamp_clock();
}

static inline void ic_region_begin(int id) {
  if ((unsigned)id >= (unsigned)ic_regions_g.nregions) {
    ic_regions_g.dropped++;
    return;
  }
  ic_regions_g.open[id] = ic_region_stamp();
}

static inline void ic_region_end(int id) {
  ic_stamp_t now = ic_region_stamp();
  if (!ic_regions_g.row || (unsigned)id >= (unsigned)ic_regions_g.nregions) {
    ic_regions_g.dropped++;
    return;
  }
  ic_sample_t *s = &ic_regions_g.row[id];
  s->wall_ns += now.wall_ns - ic_regions_g.open[id].wall_ns;
  s->cpu_ns += now.cpu_ns - ic_regions_g.open[id].cpu_ns;
  s->cpu = ic_regions_cpu();
  s->entries++;
}

/* Each expansion keeps its own call-site index, so a profiler's tags name the source line.
 * The trace marks sit inside the timed span, next to the work, so a traced region holds the
 * region's own instructions and not the clock reads. */
#define IC_REGION_BEGIN(id)                                                                \
  do {                                                                                     \
    static int ic_site_ = -1;                                                              \
    ic_tag_push((id), &ic_site_, __FILE__, __LINE__, IC_TAG_BEGIN);                        \
    ic_region_watch((id), true);                                                           \
    ic_region_begin(id);                                                                   \
    IC_ARCH_TRACE_MARK(0, id);                                                             \
  } while (0)
#define IC_REGION_END(id)                                                                  \
  do {                                                                                     \
    static int ic_site_ = -1;                                                              \
    IC_ARCH_TRACE_MARK(1, id);                                                             \
    ic_region_end(id);                                                                     \
    ic_region_watch((id), false);                                                          \
    ic_tag_push((id), &ic_site_, __FILE__, __LINE__, IC_TAG_END);                          \
  } while (0)

#endif
