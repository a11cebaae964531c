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
  unsigned char reserved[IC_NOTIFY_SIZE - 96];
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
                   offsetof(ic_notify_t, deadline_ns) == 80 && offsetof(ic_notify_t, pid) == 88,
               "notification block offsets are fixed by docs/native-contract.md");

/* Creates the file at path (O_EXCL|O_NOFOLLOW, mode 0600), or opens it when it already is
 * a private regular file of ours (ic_shm_open_file), and maps it shared, leaving its
 * contents alone: runner and monitor may start in either order. A symbolic link or someone
 * else's file at path is refused. NULL with errno set on failure. */
ic_notify_t *ic_notify_map(const char *path);

/* Runner side. Each call publishes its fields, then bumps seq and wakes the waiters. */
/* A new run: counters zero, state running, our pid; the magic is written last, so a
 * monitor that sees it sees the rest. */
void ic_notify_begin(ic_notify_t *n, uint64_t period_ns, uint64_t deadline_ns);
/* Job `job` will be released at release_ns (published before sleeping until then). */
void ic_notify_next(ic_notify_t *n, uint64_t job, uint64_t release_ns);
/* Job `job` (released at release_ns) starts now. */
void ic_notify_start(ic_notify_t *n, uint64_t job, uint64_t release_ns);
/* Job `job` completed at end_ns. */
void ic_notify_complete(ic_notify_t *n, uint64_t job, uint64_t end_ns);
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
} ic_notify_snap_t;

/* Copies the block under its seqlock. False when no consistent copy could be had within a
 * bounded number of tries: a runner killed in the middle of a publication leaves seq odd
 * for good, and a reader must not spin on it forever. */
bool ic_notify_read(ic_notify_t *n, ic_notify_snap_t *s);
/* Blocks until seq differs from `seen`, CLOCK_MONOTONIC reaches deadline_ns (absolute), or
 * an interrupt request is raised (intr.h; before the wait too); returns false on timeout. */
bool ic_notify_wait(ic_notify_t *n, uint32_t seen, uint64_t deadline_ns);

#endif
