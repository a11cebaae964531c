/* The aggressor control block: a 4 KiB shared file through which a controller pauses,
 * resumes and stops an aggressor and a monitor reads its live counters without signals.
 * Layout is binding: docs/native-contract.md, "Control block", and
 * src/intercore/measure/control.py read it at fixed offsets. */
#ifndef IC_CTL_H
#define IC_CTL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define IC_CTL_MAGIC 0x31435449u /* "ITC1" little-endian */
#define IC_CTL_VERSION 2u
#define IC_CTL_SIZE 4096u

enum ic_ctl_cmd { IC_CMD_RUN = 0, IC_CMD_PAUSE = 1, IC_CMD_STOP = 2 };
enum ic_ctl_state { IC_STATE_INIT = 0, IC_STATE_RUNNING = 1, IC_STATE_PAUSED = 2, IC_STATE_STOPPED = 3 };

typedef struct ic_ctl {
  _Atomic uint32_t magic;
  _Atomic uint32_t version;
  _Atomic uint32_t cmd;
  _Atomic uint32_t state;
  _Atomic uint64_t accesses;
  _Atomic uint64_t bytes;
  _Atomic uint64_t heartbeat_ns;
  _Atomic int32_t pid;
  _Atomic int32_t cpu;
  _Atomic uint32_t stop; /* sticky: once 1 the run ends, whatever cmd says afterwards */
  uint32_t reserved0;
  unsigned char reserved[IC_CTL_SIZE - 56];
} ic_ctl_t;

/* Another process reads these words while we write them: a lock-based atomic would put
 * the lock in our address space only, and a big-endian writer would break the reader. */
_Static_assert(ATOMIC_INT_LOCK_FREE == 2 && ATOMIC_LLONG_LOCK_FREE == 2,
               "the shared control block needs lock-free 32- and 64-bit atomics");
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the control block is little-endian");
_Static_assert(sizeof(ic_ctl_t) == IC_CTL_SIZE, "control block must be 4 KiB");
_Static_assert(offsetof(ic_ctl_t, magic) == 0 && offsetof(ic_ctl_t, version) == 4 &&
                   offsetof(ic_ctl_t, cmd) == 8 && offsetof(ic_ctl_t, state) == 12 &&
                   offsetof(ic_ctl_t, accesses) == 16 && offsetof(ic_ctl_t, bytes) == 24 &&
                   offsetof(ic_ctl_t, heartbeat_ns) == 32 && offsetof(ic_ctl_t, pid) == 40 &&
                   offsetof(ic_ctl_t, cpu) == 44 && offsetof(ic_ctl_t, stop) == 48,
               "control block offsets are fixed by docs/native-contract.md");

/* Creates the file at path (O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600: an existing name, a
 * planted link included, is refused), maps it shared and initialises it: cmd run, state
 * init, counters zero, our pid; the magic is written last so a reader that sees it sees
 * the rest. Exits with IC_EXIT_FAIL when the file cannot be created or mapped. */
ic_ctl_t *ic_ctl_open(const char *path);
/* The same block in private memory, for runs without --control: signals still go
 * through its command word. */
ic_ctl_t *ic_ctl_private(void);

/* Publication after a chunk: counters first, heartbeat last with release order, so a
 * monitor that reads the heartbeat first sees counters at least that fresh. */
static inline void ic_ctl_publish(ic_ctl_t *c, uint64_t accesses, uint64_t bytes,
                                  uint64_t now_ns, int cpu) {
  atomic_store_explicit(&c->accesses, accesses, memory_order_relaxed);
  atomic_store_explicit(&c->bytes, bytes, memory_order_relaxed);
  atomic_store_explicit(&c->cpu, cpu, memory_order_relaxed);
  atomic_store_explicit(&c->heartbeat_ns, now_ns, memory_order_release);
}

/* The command in force: stop once the stop word is set, else the command word. */
static inline uint32_t ic_ctl_cmd(ic_ctl_t *c) {
  if (atomic_load_explicit(&c->stop, memory_order_acquire))
    return IC_CMD_STOP;
  return atomic_load_explicit(&c->cmd, memory_order_acquire);
}

static inline void ic_ctl_set_state(ic_ctl_t *c, enum ic_ctl_state s) {
  atomic_store_explicit(&c->state, (uint32_t)s, memory_order_release);
}

/* Async-signal-safe command write (lock-free atomics only). A stop is final: it sets the
 * sticky stop word, which a controller that cannot compare-and-swap (Python) never clears
 * by writing the command word, and a late resume or pause does not undo it here either. */
static inline void ic_ctl_command(ic_ctl_t *c, enum ic_ctl_cmd cmd) {
  if (cmd == IC_CMD_STOP)
    atomic_store_explicit(&c->stop, 1, memory_order_release);
  uint32_t cur = atomic_load_explicit(&c->cmd, memory_order_relaxed);
  while (cur != IC_CMD_STOP &&
         !atomic_compare_exchange_weak_explicit(&c->cmd, &cur, (uint32_t)cmd,
                                                memory_order_release, memory_order_relaxed))
    ;
}

#endif
