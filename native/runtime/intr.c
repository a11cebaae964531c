#include "intr.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* A futex word must be a naturally aligned 32-bit int: a lock-free atomic is one. */
static _Atomic uint32_t word;

static struct timespec abs_ts(uint64_t t_ns) {
  return (struct timespec){.tv_sec = (time_t)(t_ns / 1000000000u),
                           .tv_nsec = (long)(t_ns % 1000000000u)};
}

void ic_intr_raise(uint32_t bits) {
  atomic_fetch_or(&word, bits);
  syscall(SYS_futex, &word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

uint32_t ic_intr_pending(void) { return atomic_load(&word); }

bool ic_intr_sleep_until(uint64_t t_ns) {
  struct timespec until = abs_ts(t_ns);
  for (;;) {
    if (atomic_load(&word))
      return false;
    /* Returns EAGAIN when the word is no longer 0, EINTR on a signal, ETIMEDOUT at t. */
    long r = syscall(SYS_futex, &word, FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, 0, &until, NULL,
                     FUTEX_BITSET_MATCH_ANY);
    if (r < 0 && errno == ETIMEDOUT)
      return !atomic_load(&word);
  }
}

#if defined(SYS_futex_waitv) && defined(FUTEX_32)
#define HAVE_WAITV 1
static int waitv_state; /* 0 unknown, 1 works, -1 ENOSYS */
#endif

bool ic_intr_wait_shared(_Atomic uint32_t *shared, uint32_t seen, uint64_t t_ns) {
  struct timespec until = abs_ts(t_ns);
  if (atomic_load(&word))
    return true;
#ifdef HAVE_WAITV
  if (waitv_state >= 0) {
    struct futex_waitv w[2] = {
        {.val = seen, .uaddr = (uintptr_t)shared, .flags = FUTEX_32},
        {.val = 0, .uaddr = (uintptr_t)&word, .flags = FUTEX_32 | FUTEX_PRIVATE_FLAG},
    };
    long r = syscall(SYS_futex_waitv, w, 2, 0, &until, CLOCK_MONOTONIC);
    if (r >= 0 || errno != ENOSYS) {
      waitv_state = 1;
      return !(r < 0 && errno == ETIMEDOUT);
    }
    waitv_state = -1;
  }
#endif
  long r = syscall(SYS_futex, shared, FUTEX_WAIT_BITSET, seen, &until, NULL,
                   FUTEX_BITSET_MATCH_ANY);
  return !(r < 0 && errno == ETIMEDOUT);
}
