/* The interrupt word: a request raised before a sleep ends it at once (the race of checking
 * a stop flag and then calling clock_nanosleep), one raised during it ends it early, and
 * without one the sleep lasts exactly until its absolute time. */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ic_common.h"
#include "ic_test.h"
#include "intr.h"

#define S 1000000000ULL

static void on_alarm(int sig) {
  (void)sig;
  ic_intr_raise(IC_INTR_STOP);
}

/* Runs fn in a child (the word is sticky and process-wide); true when it exited 0. */
static bool in_child(int (*fn)(void)) {
  pid_t pid = fork();
  if (pid == 0)
    _exit(fn());
  int status;
  return waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static int sleeps_until_its_time(void) {
  uint64_t t = ic_now_ns() + 20000000;
  bool reached = ic_intr_sleep_until(t);
  return !(reached && ic_now_ns() >= t && ic_now_ns() < t + S / 2);
}

/* The signal lands after the caller's last check and before the sleep. */
static int raised_before_the_sleep(void) {
  ic_intr_raise(IC_INTR_STOP);
  uint64_t t0 = ic_now_ns();
  bool reached = ic_intr_sleep_until(t0 + 5 * S);
  _Atomic uint32_t word = 7;
  bool woke = ic_intr_wait_shared(&word, 7, ic_now_ns() + 5 * S);
  return !(!reached && woke && ic_now_ns() - t0 < S / 2 && ic_intr_pending() == IC_INTR_STOP);
}

static int raised_during_the_sleep(void) {
  struct sigaction sa = {.sa_handler = on_alarm};
  sigaction(SIGALRM, &sa, NULL);
  ualarm(20000, 0);
  uint64_t t0 = ic_now_ns();
  bool reached = ic_intr_sleep_until(t0 + 5 * S);
  return !(!reached && ic_now_ns() - t0 < S / 2);
}

static int raised_during_a_shared_wait(void) {
  struct sigaction sa = {.sa_handler = on_alarm};
  sigaction(SIGALRM, &sa, NULL);
  ualarm(20000, 0);
  _Atomic uint32_t word = 3;
  uint64_t t0 = ic_now_ns();
  ic_intr_wait_shared(&word, 3, t0 + 5 * S);
  return !(ic_now_ns() - t0 < S / 2 && ic_intr_pending());
}

int main(void) {
  CHECK(in_child(sleeps_until_its_time));
  CHECK(in_child(raised_before_the_sleep));
  CHECK(in_child(raised_during_the_sleep));
  CHECK(in_child(raised_during_a_shared_wait));
  return TEST_RESULT();
}
