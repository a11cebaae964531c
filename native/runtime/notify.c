#include "notify.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

ic_notify_t *ic_notify_map(const char *path) {
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    return NULL;
  struct stat st;
  /* Never shrink or rewrite a block the other side may already use. */
  if (fstat(fd, &st) || (st.st_size < (off_t)IC_NOTIFY_SIZE && ftruncate(fd, IC_NOTIFY_SIZE))) {
    int e = errno;
    close(fd);
    errno = e;
    return NULL;
  }
  void *p = mmap(NULL, IC_NOTIFY_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int e = errno;
  close(fd);
  errno = e;
  return p == MAP_FAILED ? NULL : p;
}

/* seq_cst on both sides (the increment here, the waiters increment in ic_notify_wait)
 * means either we see the waiter and wake it, or its FUTEX_WAIT sees the new seq and
 * returns at once: no wake-up is lost. */
static void publish(ic_notify_t *n) {
  atomic_fetch_add(&n->seq, 1);
  if (atomic_load(&n->waiters))
    syscall(SYS_futex, &n->seq, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

void ic_notify_begin(ic_notify_t *n, uint64_t period_ns, uint64_t deadline_ns) {
  atomic_store(&n->magic, 0);
  atomic_store(&n->version, IC_NOTIFY_VERSION);
  atomic_store(&n->state, IC_NOTIFY_INIT);
  atomic_store(&n->active, 0);
  atomic_store(&n->next_release_ns, 0);
  atomic_store(&n->next_job, 0);
  atomic_store(&n->release_ns, 0);
  atomic_store(&n->released, 0);
  atomic_store(&n->completed, 0);
  atomic_store(&n->end_ns, 0);
  atomic_store(&n->period_ns, period_ns);
  atomic_store(&n->deadline_ns, deadline_ns);
  atomic_store(&n->pid, (int32_t)getpid());
  atomic_store(&n->state, IC_NOTIFY_RUNNING);
  atomic_store_explicit(&n->magic, IC_NOTIFY_MAGIC, memory_order_release);
  publish(n);
}

/* The release time before the job index: a monitor that reads next_job first (acquire)
 * then sees the release time that belongs to it. */
void ic_notify_next(ic_notify_t *n, uint64_t job, uint64_t release_ns) {
  atomic_store_explicit(&n->next_release_ns, release_ns, memory_order_relaxed);
  atomic_store_explicit(&n->next_job, job, memory_order_release);
  publish(n);
}

void ic_notify_start(ic_notify_t *n, uint64_t job, uint64_t release_ns) {
  atomic_store_explicit(&n->release_ns, release_ns, memory_order_relaxed);
  atomic_store_explicit(&n->active, 1, memory_order_relaxed);
  atomic_store_explicit(&n->released, job + 1, memory_order_release);
  publish(n);
}

void ic_notify_complete(ic_notify_t *n, uint64_t job, uint64_t end_ns) {
  atomic_store_explicit(&n->end_ns, end_ns, memory_order_relaxed);
  atomic_store_explicit(&n->active, 0, memory_order_relaxed);
  atomic_store_explicit(&n->completed, job + 1, memory_order_release);
  publish(n);
}

void ic_notify_end(ic_notify_t *n) {
  atomic_store_explicit(&n->state, IC_NOTIFY_DONE, memory_order_release);
  publish(n);
}

bool ic_notify_valid(ic_notify_t *n) {
  return atomic_load_explicit(&n->magic, memory_order_acquire) == IC_NOTIFY_MAGIC &&
         atomic_load_explicit(&n->version, memory_order_relaxed) == IC_NOTIFY_VERSION;
}

bool ic_notify_wait(ic_notify_t *n, uint32_t seen, uint64_t deadline_ns) {
  struct timespec until = {.tv_sec = (time_t)(deadline_ns / 1000000000u),
                           .tv_nsec = (long)(deadline_ns % 1000000000u)};
  atomic_fetch_add(&n->waiters, 1);
  /* FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC timeout: waking exactly at a
   * release needs no arithmetic on "now" that could be stale by the time we sleep. */
  long r = syscall(SYS_futex, &n->seq, FUTEX_WAIT_BITSET, seen, &until, NULL,
                   FUTEX_BITSET_MATCH_ANY);
  int e = errno;
  atomic_fetch_sub(&n->waiters, 1);
  return r == 0 || e != ETIMEDOUT;
}
