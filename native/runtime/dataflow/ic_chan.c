/* SPSC channels for the dataflow runtime (ic_chan.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* syscall(2) under -std=c11 */
#endif
#include "ic_chan.h"

#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__linux__)
#include <linux/futex.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#else
#include <sched.h>
#endif

/* Spins before sleeping: a token usually arrives within a few hundred ns when the other end
 * runs on another CPU; a sleeping wait costs a context switch on each side. */
#define SPIN 256
#define LINE 64

struct ic_chan {
  _Alignas(LINE) atomic_size_t head; /* tokens pushed */
  _Alignas(LINE) atomic_size_t tail; /* tokens pulled */
  _Alignas(LINE) atomic_uint seq;    /* futex word, bumped when a sleeper must look again */
  atomic_int sleepers;
  atomic_bool closed;
  size_t cap, elem;
  unsigned char *buf;
};

static void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

static void sleep_on(atomic_uint *word, unsigned seen) {
#if defined(__linux__)
  syscall(SYS_futex, (unsigned *)word, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
#else
  (void)word, (void)seen;
  sched_yield();
#endif
}

static void wake_all(atomic_uint *word) {
#if defined(__linux__)
  syscall(SYS_futex, (unsigned *)word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
#else
  (void)word;
#endif
}

static bool can_push(ic_chan_t *c) {
  return atomic_load(&c->head) - atomic_load(&c->tail) < c->cap || atomic_load(&c->closed);
}

static bool can_pull(ic_chan_t *c) {
  return atomic_load(&c->head) != atomic_load(&c->tail) || atomic_load(&c->closed);
}

/* Sleeper and waker follow Dekker's pattern with sequentially consistent operations: the
 * sleeper announces itself, then re-checks; the waker publishes, then looks for sleepers. One
 * of the two always sees the other, and FUTEX_WAIT returns at once if seq moved meanwhile. */
static void wait_until(ic_chan_t *c, bool (*ready)(ic_chan_t *)) {
  for (int i = 0; i < SPIN; i++) {
    if (ready(c))
      return;
    cpu_relax();
  }
  for (;;) {
    unsigned seen = atomic_load(&c->seq);
    atomic_fetch_add(&c->sleepers, 1);
    if (ready(c)) {
      atomic_fetch_sub(&c->sleepers, 1);
      return;
    }
    sleep_on(&c->seq, seen);
    atomic_fetch_sub(&c->sleepers, 1);
    if (ready(c))
      return;
  }
}

static void notify(ic_chan_t *c) {
  if (atomic_load(&c->sleepers) > 0) {
    atomic_fetch_add(&c->seq, 1);
    wake_all(&c->seq);
  }
}

ic_chan_t *ic_chan_new(size_t elem_size, size_t capacity) {
  if (!elem_size || !capacity)
    return NULL;
  ic_chan_t *c = aligned_alloc(LINE, (sizeof *c + LINE - 1) / LINE * LINE);
  if (!c)
    return NULL;
  memset(c, 0, sizeof *c);
  c->cap = capacity;
  c->elem = elem_size;
  c->buf = malloc(elem_size * capacity);
  if (!c->buf) {
    free(c);
    return NULL;
  }
  return c;
}

void ic_chan_free(ic_chan_t *c) {
  if (c) {
    free(c->buf);
    free(c);
  }
}

bool ic_chan_push(ic_chan_t *c, const void *elem) {
  wait_until(c, can_push);
  if (atomic_load(&c->closed))
    return false;
  size_t h = atomic_load_explicit(&c->head, memory_order_relaxed);
  memcpy(c->buf + (h % c->cap) * c->elem, elem, c->elem);
  atomic_store(&c->head, h + 1);
  notify(c);
  return true;
}

bool ic_chan_pull(ic_chan_t *c, void *elem) {
  wait_until(c, can_pull);
  size_t t = atomic_load_explicit(&c->tail, memory_order_relaxed);
  if (atomic_load(&c->head) == t)
    return false; /* closed and drained */
  memcpy(elem, c->buf + (t % c->cap) * c->elem, c->elem);
  atomic_store(&c->tail, t + 1);
  notify(c);
  return true;
}

void ic_chan_close(ic_chan_t *c) {
  atomic_store(&c->closed, true);
  atomic_fetch_add(&c->seq, 1);
  wake_all(&c->seq);
}

bool ic_chan_closed(const ic_chan_t *c) { return atomic_load(&((ic_chan_t *)c)->closed); }

ic_chan_t **ic_rt_channels(int n, const long *elem_sizes, const long *capacities) {
  ic_chan_t **chans = calloc(n > 0 ? (size_t)n : 1, sizeof *chans);
  if (!chans) {
    fprintf(stderr, "intercore runtime: out of memory\n");
    exit(1);
  }
  for (int i = 0; i < n; i++) {
    chans[i] = ic_chan_new((size_t)elem_sizes[i], (size_t)capacities[i]);
    if (!chans[i]) {
      fprintf(stderr, "intercore runtime: cannot allocate channel %d\n", i);
      exit(1);
    }
  }
  return chans;
}

void ic_rt_abort(int n, ic_chan_t **chans) {
  for (int i = 0; i < n; i++)
    ic_chan_close(chans[i]);
}

static atomic_int aborted;

void ic_rt_protocol_error(int n, ic_chan_t **chans, const char *task, const char *var) {
  if (!atomic_exchange(&aborted, 1))
    fprintf(stderr, "intercore runtime: task %s found the channel of '%s' closed; run "
                    "aborted\n", task, var);
  ic_rt_abort(n, chans);
}

ic_chan_t *ic_rt_chan(ic_chan_t **chans, long index) { return chans[index]; }

void ic_rt_pull_failed(int n, ic_chan_t **chans, int task, int channel) {
  char who[32], what[32];
  snprintf(who, sizeof who, "%d", task);
  snprintf(what, sizeof what, "channel %d", channel);
  ic_rt_protocol_error(n, chans, who, what);
}

int ic_rt_finish(int n, ic_chan_t **chans) {
  for (int i = 0; i < n; i++)
    ic_chan_free(chans[i]);
  free(chans);
  return atomic_exchange(&aborted, 0);
}

void ic_rt_name_thread(const char *name) {
#if defined(__linux__)
  prctl(PR_SET_NAME, name, 0, 0, 0);
#else
  (void)name;
#endif
}

bool ic_rt_task_thread(void) {
#if defined(__linux__)
  /* Only from the default policy: a real-time or SCHED_IDLE thread was put there on purpose
   * (intercore mitigate, ic-manage, the user). The nice value is kept. */
  if (sched_getscheduler(0) != SCHED_OTHER)
    return false;
  struct sched_param sp = {.sched_priority = 0};
  return sched_setscheduler(0, SCHED_BATCH, &sp) == 0;
#else
  return false;
#endif
}

static int thread_limit = 1 << 30;

void ic_rt_set_thread_limit(int limit) { thread_limit = limit > 0 ? limit : 1; }

int ic_rt_thread_limit(void) { return thread_limit; }

void ic_rt_note_fallback(int wanted, int got) {
  if (getenv("INTERCORE_RT_QUIET") == NULL)
    fprintf(stderr, "intercore runtime: %d threads for %d tasks; running the variant with "
                    "fewer tasks\n", got, wanted);
}
