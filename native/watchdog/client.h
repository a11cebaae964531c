/* The client side of ic-watchdog (docs/native-contract.md, "Watchdog"), for native clients:
 * the freezer monitor now, the bandwidth regulator and gang scheduler later. Python
 * clients use intercore.mitigate.watchdog, which speaks the same protocol.
 *
 *   ic_wd_t w;
 *   ic_wd_start(&w, &(ic_wd_config_t){.name = "monitor", .avoid_cpu = cpu, .lease_ns = ...});
 *   ic_wd_guard(&w, "/sys/fs/cgroup/ic/be");     // thawed on death or an expired lease
 *   ic_wd_arm(&w, lease_ns, ...);                 // set-up done: the lease runs from now
 *   for (;;) { ic_wd_beat(&w, now); if (ic_wd_expired(&w)) re-freeze...; }
 *   ic_wd_stop(&w);                               // clean exit: the watchdog does nothing
 */
#ifndef IC_WD_CLIENT_H
#define IC_WD_CLIENT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "wd_page.h"

typedef struct {
  const char *name;  /* in the reasons the watchdog logs: "<name>-died" */
  int avoid_cpu;     /* the client's CPU (-1: none): the watchdog runs elsewhere */
  uint64_t lease_ns; /* 0: no heartbeat page, only the client's death; see ic_wd_arm */
  int log_fd;        /* -1: no log; else an O_APPEND descriptor for the watchdog's lines */
  const char *exe;   /* NULL: ic-watchdog beside the running executable */
} ic_wd_config_t;

typedef struct {
  pid_t pid;
  int chan;          /* the client's end of the socket: only the client may hold it */
  ic_wd_page_t *page;
  uint64_t expiries; /* the count last seen by ic_wd_expired */
  bool rt, mlock;
} ic_wd_t;

/* Starts ic-watchdog (c->exe, or the one beside the running executable) and waits until it
 * is armed.
 * False with a reason in why. */
bool ic_wd_start(ic_wd_t *w, const ic_wd_config_t *c, char *why, size_t cap);
/* Starts the lease (c->lease_ns must have been given to ic_wd_start): from now on the
 * client renews its heartbeat at least every lease_ns, or the watchdog thaws what it guards.
 * Arm it once set-up is over, right before the client starts acting. */
bool ic_wd_arm(ic_wd_t *w, uint64_t lease_ns, char *why, size_t cap);
/* Registers a cgroup directory to thaw on the client's death or an expired lease. */
bool ic_wd_guard(ic_wd_t *w, const char *dir, char *why, size_t cap);
/* Renews the lease: one store to shared memory. */
static inline void ic_wd_beat(ic_wd_t *w, uint64_t now_ns) {
  if (w->page)
    atomic_store_explicit(&w->page->heartbeat_ns, now_ns, memory_order_release);
}
/* True once for every lease that ran out since the last call: the watchdog has thawed
 * every guarded group, so whatever the client believes frozen no longer is. */
bool ic_wd_expired(ic_wd_t *w);
uint64_t ic_wd_expiries(const ic_wd_t *w);
/* Clean shutdown ('quit': the watchdog leaves everything as it is), then reaps it. Returns
 * its CPU time in ns. */
uint64_t ic_wd_stop(ic_wd_t *w);

#endif
