#include "notify.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ic_region.h"
#include "ic_shmfile.h"
#include "intr.h"

/* Tries before ic_notify_read gives up on a publication that never ends. A live writer's
 * section is a handful of stores; the yields let a preempted one finish on our CPU. */
#define READ_TRIES 2000
#define SPINS_BEFORE_YIELD 64

ic_notify_t *ic_notify_map(const char *path) {
  /* Never shrink or rewrite a block the other side may already use. */
  int fd = ic_shm_open_file(path, true, IC_NOTIFY_SIZE);
  if (fd < 0)
    return NULL;
  void *p = mmap(NULL, IC_NOTIFY_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int e = errno;
  close(fd);
  errno = e;
  return p == MAP_FAILED ? NULL : p;
}

/* Opens a publication: seq odd (also when a killed runner left it odd), and the release
 * fence keeps the field stores that follow from becoming visible before it. */
static void write_begin(ic_notify_t *n) {
  uint32_t s = atomic_load_explicit(&n->seq, memory_order_relaxed);
  atomic_store_explicit(&n->seq, s | 1u, memory_order_relaxed);
  atomic_thread_fence(memory_order_release);
}

/* Closes it: seq even again. seq_cst on both sides (the increment here, the waiters
 * increment in ic_notify_wait) means either we see the waiter and wake it, or its
 * FUTEX_WAIT sees the new seq and returns at once: no wake-up is lost. */
static void publish(ic_notify_t *n) {
  atomic_fetch_add(&n->seq, 1);
  if (atomic_load(&n->waiters))
    syscall(SYS_futex, &n->seq, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* Inside begin's publication. A name the block cannot hold stays unnamed, so a monitor
 * never follows a region by a name the runner did not give it. */
static void publish_names(ic_notify_t *n) {
  ic_region_names_t d = ic_regions_declared();
  uint32_t count = 0;
  memset(n->names, 0, sizeof n->names);
  for (int i = 0; i < d.n; i++) {
    int id = d.first_id + i;
    size_t len = strlen(d.names[i]);
    if (id < 0 || id >= IC_NOTIFY_REGIONS || len >= IC_NOTIFY_NAME_LEN)
      continue;
    memcpy(n->names[id], d.names[i], len);
    count = (uint32_t)id + 1 > count ? (uint32_t)id + 1 : count;
  }
  atomic_store(&n->nregions, count);
}

void ic_notify_begin(ic_notify_t *n, uint64_t period_ns, uint64_t deadline_ns) {
  write_begin(n);
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
  publish_names(n);
  atomic_store(&n->open_mask, 0);
  atomic_store(&n->window_region, -1);
  atomic_store(&n->window_ns, 0);
  atomic_store(&n->window_events, 0);
  atomic_store(&n->state, IC_NOTIFY_RUNNING);
  atomic_store_explicit(&n->magic, IC_NOTIFY_MAGIC, memory_order_release);
  publish(n);
}

/* The release time before the job index: a monitor that reads next_job first (acquire)
 * then sees the release time that belongs to it. */
void ic_notify_next(ic_notify_t *n, uint64_t job, uint64_t release_ns) {
  write_begin(n);
  atomic_store_explicit(&n->next_release_ns, release_ns, memory_order_relaxed);
  atomic_store_explicit(&n->next_job, job, memory_order_release);
  publish(n);
}

void ic_notify_start(ic_notify_t *n, uint64_t job, uint64_t release_ns) {
  write_begin(n);
  atomic_store_explicit(&n->release_ns, release_ns, memory_order_relaxed);
  atomic_store_explicit(&n->active, 1, memory_order_relaxed);
  atomic_store_explicit(&n->released, job + 1, memory_order_release);
  publish(n);
}

void ic_notify_complete(ic_notify_t *n, uint64_t job, uint64_t end_ns) {
  write_begin(n);
  atomic_store_explicit(&n->end_ns, end_ns, memory_order_relaxed);
  atomic_store_explicit(&n->active, 0, memory_order_relaxed);
  atomic_store_explicit(&n->completed, job + 1, memory_order_release);
  publish(n);
}

uint64_t ic_notify_region(ic_notify_t *n, int id, bool enter) {
  if (id < 0 || id >= 32)
    return 0;
  uint32_t bit = 1u << id;
  /* The runner is the only writer of open_mask. */
  uint32_t open = atomic_load_explicit(&n->open_mask, memory_order_relaxed);
  open = enter ? open | bit : open & ~bit;
  /* seq_cst, paired with the monitor's store of the mask and its reading of `released`:
   * a job the monitor saw unstarted after installing its windows sees them here. */
  if (!(atomic_load(&n->window_mask) & bit)) {
    atomic_store_explicit(&n->open_mask, open, memory_order_relaxed);
    return 0;
  }
  uint64_t t = ic_now_ns();
  write_begin(n);
  atomic_store_explicit(&n->open_mask, open, memory_order_relaxed);
  atomic_store_explicit(&n->window_region, id, memory_order_relaxed);
  atomic_store_explicit(&n->window_ns, t, memory_order_relaxed);
  atomic_fetch_add_explicit(&n->window_events, 1, memory_order_relaxed);
  publish(n);
  return t;
}

void ic_notify_end(ic_notify_t *n) {
  write_begin(n);
  atomic_store_explicit(&n->state, IC_NOTIFY_DONE, memory_order_release);
  publish(n);
}

bool ic_notify_valid(ic_notify_t *n) {
  return atomic_load_explicit(&n->magic, memory_order_acquire) == IC_NOTIFY_MAGIC &&
         atomic_load_explicit(&n->version, memory_order_relaxed) == IC_NOTIFY_VERSION;
}

static uint64_t relaxed64(_Atomic uint64_t *p) {
  return atomic_load_explicit(p, memory_order_relaxed);
}

static uint32_t relaxed32(_Atomic uint32_t *p) {
  return atomic_load_explicit(p, memory_order_relaxed);
}

/* Runs copy(n, out) between two equal, even readings of seq. */
static bool read_consistent(ic_notify_t *n, void (*copy)(ic_notify_t *, uint32_t, void *),
                            void *out) {
  for (int i = 0; i < READ_TRIES; i++) {
    uint32_t before = atomic_load_explicit(&n->seq, memory_order_acquire);
    if (before & 1u) {
      if (i >= SPINS_BEFORE_YIELD)
        sched_yield();
      continue;
    }
    copy(n, before, out);
    /* The acquire fence keeps the loads of the copy from moving after the re-read. */
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&n->seq, memory_order_relaxed) == before)
      return true;
  }
  return false;
}

static void copy_fields(ic_notify_t *n, uint32_t seq, void *out) {
  *(ic_notify_snap_t *)out = (ic_notify_snap_t){
      .seq = seq,
      .valid = relaxed32(&n->magic) == IC_NOTIFY_MAGIC &&
               relaxed32(&n->version) == IC_NOTIFY_VERSION,
      .state = relaxed32(&n->state),
      .active = relaxed32(&n->active),
      .pid = atomic_load_explicit(&n->pid, memory_order_relaxed),
      .next_release_ns = relaxed64(&n->next_release_ns),
      .next_job = relaxed64(&n->next_job),
      .release_ns = relaxed64(&n->release_ns),
      .released = relaxed64(&n->released),
      .completed = relaxed64(&n->completed),
      .end_ns = relaxed64(&n->end_ns),
      .period_ns = relaxed64(&n->period_ns),
      .deadline_ns = relaxed64(&n->deadline_ns),
      .open_mask = relaxed32(&n->open_mask),
      .nregions = relaxed32(&n->nregions),
      .window_region = atomic_load_explicit(&n->window_region, memory_order_relaxed),
      .window_ns = relaxed64(&n->window_ns),
      .window_events = relaxed64(&n->window_events),
  };
}

bool ic_notify_read(ic_notify_t *n, ic_notify_snap_t *s) {
  return read_consistent(n, copy_fields, s);
}

typedef struct {
  int id;
  char *out;
} name_copy_t;

static void copy_name(ic_notify_t *n, uint32_t seq, void *out) {
  (void)seq;
  const name_copy_t *c = out;
  memcpy(c->out, n->names[c->id], IC_NOTIFY_NAME_LEN);
}

bool ic_notify_region_name(ic_notify_t *n, int id, char out[IC_NOTIFY_NAME_LEN]) {
  out[0] = '\0';
  if (id < 0 || id >= IC_NOTIFY_REGIONS)
    return true;
  if (!read_consistent(n, copy_name, &(name_copy_t){id, out}))
    return false;
  out[IC_NOTIFY_NAME_LEN - 1] = '\0';
  return true;
}

bool ic_notify_wait(ic_notify_t *n, uint32_t seen, uint64_t deadline_ns) {
  atomic_fetch_add(&n->waiters, 1);
  /* An absolute CLOCK_MONOTONIC timeout: waking exactly at a release needs no arithmetic
   * on "now" that could be stale by the time we sleep. The wait also ends on an interrupt
   * request (intr.h), even one raised just before it. */
  bool woke = ic_intr_wait_shared(&n->seq, seen, deadline_ns);
  atomic_fetch_sub(&n->waiters, 1);
  return woke;
}
