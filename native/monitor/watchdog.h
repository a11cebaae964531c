/* The fail-safe for a monitor that dies or hangs while it holds groups frozen (a frozen
 * v2 group stays frozen when its controller dies; a v1 one leaves unkillable D-state
 * tasks).
 *
 * A watchdog process is forked at start-up. It blocks in poll() on the read end of a pipe
 * whose write end only the monitor holds, so the kernel itself reports the monitor's
 * death, however it dies (SIGKILL included), as end-of-file, and the watchdog thaws every
 * managed group at once. A clean exit writes 'q' first, so the watchdog leaves the groups
 * alone. For a monitor that is alive but stuck (stopped, or starved of CPU), the monitor
 * renews a heartbeat lease in a shared page; when the lease runs out, the watchdog thaws
 * the groups and keeps watching. */
#ifndef IC_WATCHDOG_H
#define IC_WATCHDOG_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cgroup.h"

typedef struct {
  _Atomic uint64_t heartbeat_ns; /* the monitor's last renewal */
  _Atomic uint64_t expiries;     /* leases that ran out (the watchdog thawed) */
} ic_wd_shared_t;

typedef struct {
  pid_t pid;
  int wfd; /* the monitor's end of the pipe */
  ic_wd_shared_t *shared;
  uint64_t lease_ns;
} ic_watchdog_t;

/* Forks the watchdog for groups[0..n). The groups' files must already be open; log_fd
 * (-1: none) receives the watchdog's own log lines. False with errno on failure. */
bool ic_watchdog_start(ic_watchdog_t *w, const ic_cgroup_t *groups, size_t n,
                       uint64_t lease_ns, int log_fd);
/* Renews the lease; a store to shared memory. */
static inline void ic_watchdog_beat(ic_watchdog_t *w, uint64_t now_ns) {
  atomic_store_explicit(&w->shared->heartbeat_ns, now_ns, memory_order_release);
}
static inline uint64_t ic_watchdog_expiries(const ic_watchdog_t *w) {
  return atomic_load(&w->shared->expiries);
}
/* Clean shutdown: 'q', close, reap. Returns the watchdog's CPU time in ns. */
uint64_t ic_watchdog_stop(ic_watchdog_t *w);

#endif
