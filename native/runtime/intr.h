/* Interrupt requests (a stop signal, a lost watchdog) that no sleep can miss.
 *
 * The classic pattern, "if (!stop) clock_nanosleep(until)", sleeps through a signal that
 * lands between the check and the sleep: the handler sets the flag, returns, and the
 * sleep starts anyway, until the next release. Here the flag is a futex word and every
 * sleep is a futex wait on it with an absolute CLOCK_MONOTONIC timeout: the kernel
 * compares the word with 0 under its own lock before it sleeps, so a request raised at any
 * point before the wait makes the wait return at once, and one raised during it
 * interrupts it (the handler also wakes the word). One system call per sleep, as before,
 * with the same absolute-time precision, and no signal mask to juggle; a self-pipe or
 * signalfd would add a descriptor and a second wake-up path for the same guarantee. */
#ifndef IC_INTR_H
#define IC_INTR_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* Bits a tool gives its own meaning (ic-periodic: stop; ic-monitor: stop, watchdog lost). */
#define IC_INTR_STOP 1u
#define IC_INTR_LOST 2u

/* Sets bits and wakes any sleeper. Async-signal-safe: call it from a signal handler. */
void ic_intr_raise(uint32_t bits);
/* The bits raised so far (0: none). */
uint32_t ic_intr_pending(void);
/* Sleeps until CLOCK_MONOTONIC t_ns; true when the time was reached, false when a
 * request was raised before or during the sleep. */
bool ic_intr_sleep_until(uint64_t t_ns);
/* Waits until the shared futex word `word` differs from `seen`, until t_ns, or until a
 * request is raised, whichever comes first (futex_waitv over both words). Returns false
 * on timeout. On kernels before 5.16 (no futex_waitv) it waits on `word` alone, so a
 * request raised just before the wait is seen when it returns, at t_ns at the latest. */
bool ic_intr_wait_shared(_Atomic uint32_t *word, uint32_t seen, uint64_t t_ns);

#endif
