/* The notification block: a 4 KiB shared file through which a periodic runner tells a
 * monitor when its jobs are released and completed, and when the next one will be.
 * Layout is binding: docs/native-contract.md, "Notification block" (tests read it at
 * fixed offsets from Python).
 *
 * `seq` is both a seqlock and the futex word. A publication makes it odd, stores its
 * fields, then makes it even again and, when a monitor waits (`waiters` > 0), wakes it with
 * FUTEX_WAKE on the shared mapping: +2 per publication. A reader copies the fields between
 * two equal, even readings of seq (ic_notify_read), so it never acts on the release time of
 * one job and the index of another. A monitor blocks until "something changed or the next
 * release is due", never polls. */
#ifndef IC_NOTIFY_H
#define IC_NOTIFY_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IC_NOTIFY_MAGIC 0x314e4349u /* "ICN1" little-endian */
#define IC_NOTIFY_VERSION 1u
#define IC_NOTIFY_SIZE 4096u
/* Region ids the block can name, and the longest name (with its NUL). */
enum { IC_NOTIFY_REGIONS = 16, IC_NOTIFY_NAME_LEN = 48 };

enum ic_notify_state { IC_NOTIFY_INIT = 0, IC_NOTIFY_RUNNING = 1, IC_NOTIFY_DONE = 2 };

typedef struct ic_notify {
  _Atomic uint32_t magic;
  _Atomic uint32_t version;
  _Atomic uint32_t seq;             /* seqlock and futex word: odd while publishing, +2 each */
  _Atomic uint32_t waiters;         /* monitors blocked on seq */
  _Atomic uint32_t state;           /* enum ic_notify_state */
  _Atomic uint32_t active;          /* 1 from a job's start to its completion */
  _Atomic uint64_t next_release_ns; /* release of job next_job, published before sleeping;
                                       0 before the first announcement */
  _Atomic uint64_t next_job;        /* index of the job released at next_release_ns */
  _Atomic uint64_t release_ns;      /* release of the last started job */
  _Atomic uint64_t released;        /* jobs started */
  _Atomic uint64_t completed;       /* jobs completed */
  _Atomic uint64_t end_ns;          /* completion time of the last completed job */
  _Atomic uint64_t period_ns;
  _Atomic uint64_t deadline_ns;
  _Atomic int32_t pid;              /* the runner */
  uint32_t reserved0;
  /* Regions ("Region windows" in docs/native-contract.md). The monitor owns window_mask
   * (bit i: region i is a window it freezes in); the runner owns the rest. */
  _Atomic uint32_t window_mask;
  _Atomic uint32_t open_mask;       /* bit i: region i is executing (ids below 32) */
  _Atomic uint32_t nregions;        /* slots of names[] the runner filled; 0: no markers */
  _Atomic int32_t window_region;    /* the window region entered or left last, -1: none */
  _Atomic uint64_t window_ns;       /* when (CLOCK_MONOTONIC) */
  _Atomic uint64_t window_events;   /* window entries and exits published */
  char names[IC_NOTIFY_REGIONS][IC_NOTIFY_NAME_LEN]; /* by region id; "" for an unused id */
  unsigned char reserved[IC_NOTIFY_SIZE - 128 - IC_NOTIFY_REGIONS * IC_NOTIFY_NAME_LEN];
} ic_notify_t;

_Static_assert(ATOMIC_INT_LOCK_FREE == 2 && ATOMIC_LLONG_LOCK_FREE == 2,
               "the shared notification block needs lock-free 32- and 64-bit atomics");
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the notification block is little-endian");
_Static_assert(sizeof(ic_notify_t) == IC_NOTIFY_SIZE, "notification block must be 4 KiB");
_Static_assert(offsetof(ic_notify_t, seq) == 8 && offsetof(ic_notify_t, waiters) == 12 &&
                   offsetof(ic_notify_t, state) == 16 && offsetof(ic_notify_t, active) == 20 &&
                   offsetof(ic_notify_t, next_release_ns) == 24 &&
                   offsetof(ic_notify_t, next_job) == 32 &&
                   offsetof(ic_notify_t, release_ns) == 40 &&
                   offsetof(ic_notify_t, released) == 48 &&
                   offsetof(ic_notify_t, completed) == 56 && offsetof(ic_notify_t, end_ns) == 64 &&
                   offsetof(ic_notify_t, period_ns) == 72 &&
                   offsetof(ic_notify_t, deadline_ns) == 80 && offsetof(ic_notify_t, pid) == 88 &&
                   offsetof(ic_notify_t, window_mask) == 96 &&
                   offsetof(ic_notify_t, open_mask) == 100 &&
                   offsetof(ic_notify_t, nregions) == 104 &&
                   offsetof(ic_notify_t, window_region) == 108 &&
                   offsetof(ic_notify_t, window_ns) == 112 &&
                   offsetof(ic_notify_t, window_events) == 120 &&
                   offsetof(ic_notify_t, names) == 128,
               "notification block offsets are fixed by docs/native-contract.md");

/* Creates the file at path (O_EXCL|O_NOFOLLOW, mode 0600), or opens it when it already is
 * a private regular file of ours (ic_shm_open_file), and maps it shared, leaving its
 * contents alone: runner and monitor may start in either order. A symbolic link or someone
 * else's file at path is refused. NULL with errno set on failure. */
ic_notify_t *ic_notify_map(const char *path);

/* Runner side. Each call publishes its fields, then bumps seq and wakes the waiters. */
/* A new run: counters zero, state running, our pid, the names of the regions the work
 * declared (ic_regions_declared; ids at or above IC_NOTIFY_REGIONS and longer names are
 * left out); the magic is written last, so a monitor that sees it sees the rest. The
 * monitor's window_mask is left alone: either side may start first. */
void ic_notify_begin(ic_notify_t *n, uint64_t period_ns, uint64_t deadline_ns);
/* Job `job` will be released at release_ns (published before sleeping until then). */
void ic_notify_next(ic_notify_t *n, uint64_t job, uint64_t release_ns);
/* Job `job` (released at release_ns) starts now. */
void ic_notify_start(ic_notify_t *n, uint64_t job, uint64_t release_ns);
/* Job `job` completed at end_ns. */
void ic_notify_complete(ic_notify_t *n, uint64_t job, uint64_t end_ns);
/* Region `id` is entered or left. Only a window region of the monitor's is published (at
 * its time, through the seqlock, waking a waiting monitor: one system call, only then);
 * any other updates open_mask with one store. Returns the time published, 0 for a region
 * that is not a window. */
uint64_t ic_notify_region(ic_notify_t *n, int id, bool enter);
/* No further release: the run is over (normally or stopped). The last announcement stays
 * in place: released tells whether that release really happened. */
void ic_notify_end(ic_notify_t *n);

/* Monitor side. */
static inline uint32_t ic_notify_seq(ic_notify_t *n) {
  return atomic_load_explicit(&n->seq, memory_order_acquire);
}
/* True when a runner has initialised the block (magic and version match). */
bool ic_notify_valid(ic_notify_t *n);

/* One consistent reading of every field. */
typedef struct {
  uint32_t seq; /* even: wait on it (ic_notify_wait) to sleep until the next publication */
  bool valid;   /* a runner has initialised the block */
  uint32_t state, active;
  int32_t pid;
  uint64_t next_release_ns, next_job, release_ns, released, completed, end_ns, period_ns,
      deadline_ns;
  uint32_t open_mask, nregions;
  int32_t window_region;
  uint64_t window_ns, window_events;
} ic_notify_snap_t;

/* Copies the block under its seqlock. False when no consistent copy could be had within a
 * bounded number of tries: a runner killed in the middle of a publication leaves seq odd
 * for good, and a reader must not spin on it forever. */
bool ic_notify_read(ic_notify_t *n, ic_notify_snap_t *s);
/* Copies region id's name (or "" when the runner named none) into out; false when no
 * consistent copy could be had (as ic_notify_read). */
bool ic_notify_region_name(ic_notify_t *n, int id, char out[IC_NOTIFY_NAME_LEN]);
/* Monitor: the regions it freezes in (bit i: region i); 0 when it follows none. */
static inline void ic_notify_set_windows(ic_notify_t *n, uint32_t mask) {
  atomic_store(&n->window_mask, mask);
}
/* Blocks until seq differs from `seen`, CLOCK_MONOTONIC reaches deadline_ns (absolute), or
 * an interrupt request is raised (intr.h; before the wait too); returns false on timeout. */
bool ic_notify_wait(ic_notify_t *n, uint32_t seen, uint64_t deadline_ns);

#endif
