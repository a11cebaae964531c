/* --policy event: freeze the best-effort groups at each critical release and thaw them
 * at its completion, driven by the runner's notification block.
 *
 * The runner publishes the next release time before it sleeps, so the monitor sleeps on
 * the block's futex with that release as its absolute timeout and acts at the release
 * itself, even when the runner's own wake-up is late because the noise holds its CPU.
 * Completion arrives as a futex wake. --max-freeze bounds each freeze, so best-effort work
 * always gets the rest of the period. */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>

#include "ic_common.h"
#include "monitor.h"

typedef struct {
  uint64_t job, release_ns, period_ns;
  int32_t pid;
} release_t;

static uint64_t load(_Atomic uint64_t *p) { return atomic_load_explicit(p, memory_order_acquire); }

/* The next release not yet acted on, if the block announces one. A new runner (another
 * pid) restarts the job numbering. Once the run is over, only an announced release that
 * really happened is still due (to be counted late); a stop can leave one that never will. */
static bool announced(ic_notify_t *n, int32_t *pid, uint64_t *next_job, release_t *r) {
  uint32_t state = atomic_load(&n->state);
  if (!ic_notify_valid(n) || state == IC_NOTIFY_INIT)
    return false;
  int32_t p = atomic_load(&n->pid);
  if (p != *pid) {
    *pid = p;
    *next_job = 0;
  }
  r->job = load(&n->next_job);
  r->release_ns = load(&n->next_release_ns);
  r->period_ns = load(&n->period_ns);
  r->pid = p;
  if (!r->release_ns || r->job < *next_job)
    return false;
  return state == IC_NOTIFY_RUNNING || load(&n->released) > r->job;
}

/* --exit-with-runner: the run is over and nothing announced is left to handle. */
static bool runner_done(const monitor_t *m, ic_notify_t *n) {
  return m->exit_with_runner && ic_notify_valid(n) && atomic_load(&n->state) == IC_NOTIFY_DONE;
}

/* Why the freeze of job r ends: its completion, the cap, the runner going away, or NULL
 * for a stop of the monitor (whose exit path thaws everything). */
static const char *hold_frozen(monitor_t *m, const release_t *r, uint64_t cap_end) {
  ic_notify_t *n = m->notify;
  for (;;) {
    uint32_t seen = ic_notify_seq(n);
    if (load(&n->completed) > r->job)
      return "complete";
    /* A runner killed mid-job never publishes its completion. */
    if (!ic_notify_valid(n) || atomic_load(&n->pid) != r->pid ||
        atomic_load(&n->state) != IC_NOTIFY_RUNNING || (kill(r->pid, 0) && errno == ESRCH))
      return "runner-gone";
    uint64_t now = ic_now_ns();
    if (mon_tick(m, now))
      return NULL;
    if (now >= cap_end)
      return "cap";
    uint64_t until = mon_slice_end(m, now);
    ic_notify_wait(n, seen, until < cap_end ? until : cap_end);
  }
}

void mon_run_event(monitor_t *m) {
  ic_notify_t *n = m->notify;
  int32_t pid = 0;
  uint64_t next_job = 0;
  for (;;) {
    uint32_t seen = ic_notify_seq(n);
    uint64_t now = ic_now_ns();
    if (mon_tick(m, now))
      return;
    release_t r;
    uint64_t wake = mon_slice_end(m, now);
    if (!announced(n, &pid, &next_job, &r)) {
      if (runner_done(m, n))
        return;
      ic_notify_wait(n, seen, wake);
      continue;
    }
    uint64_t at = r.release_ns > m->lead_ns ? r.release_ns - m->lead_ns : 0;
    if (now < at) {
      ic_notify_wait(n, seen, at < wake ? at : wake);
      continue;
    }
    next_job = r.job + 1;
    m->count.releases++;
    if (load(&n->completed) > r.job) { /* we were later than the whole job */
      m->count.late_releases++;
      continue;
    }
    mon_freeze_all(m, "release", (int64_t)r.job, r.release_ns);
    uint64_t cap = mon_cap_ns(m, r.period_ns);
    uint64_t cap_end = cap == UINT64_MAX ? UINT64_MAX : r.release_ns + cap;
    const char *why = hold_frozen(m, &r, cap_end);
    if (!why)
      return;
    m->count.cap_hits += !strcmp(why, "cap");
    mon_thaw_all(m, why, (int64_t)r.job, false);
    ic_log_flush(&m->log);
  }
}
