/* The heartbeat page a client shares with its ic-watchdog (docs/native-contract.md,
 * "Watchdog"): 4 KiB of anonymous shared memory (a memfd the watchdog receives as a
 * descriptor), little-endian, naturally aligned. The client renews `heartbeat_ns`; the
 * watchdog counts the leases that ran out in `expiries`, incremented BEFORE it thaws, so a
 * client that sees the count move knows its groups were thawed behind its back. */
#ifndef IC_WD_PAGE_H
#define IC_WD_PAGE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define IC_WD_MAGIC 0x31574349u /* "ICW1" little-endian */
#define IC_WD_VERSION 1u
#define IC_WD_PAGE_SIZE 4096u

typedef struct {
  _Atomic uint32_t magic;        /* set by the client before it starts the watchdog */
  _Atomic uint32_t version;
  _Atomic uint64_t heartbeat_ns; /* CLOCK_MONOTONIC of the client's last renewal */
  _Atomic uint64_t expiries;     /* leases that ran out (watchdog) */
  unsigned char reserved[IC_WD_PAGE_SIZE - 24];
} ic_wd_page_t;

_Static_assert(ATOMIC_INT_LOCK_FREE == 2 && ATOMIC_LLONG_LOCK_FREE == 2,
               "the heartbeat page needs lock-free 32- and 64-bit atomics");
_Static_assert(sizeof(ic_wd_page_t) == IC_WD_PAGE_SIZE, "heartbeat page must be 4 KiB");
_Static_assert(offsetof(ic_wd_page_t, heartbeat_ns) == 8 && offsetof(ic_wd_page_t, expiries) == 16,
               "heartbeat page offsets are fixed by docs/native-contract.md");

/* The longest command or reply on the channel (one SOCK_SEQPACKET message each). */
#define IC_WD_MSG_MAX 4200

#endif
