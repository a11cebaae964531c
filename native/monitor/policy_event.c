/* --policy event: freeze the best-effort groups at each critical release and thaw them
 * at its completion, driven by the runner's notification block.
 *
 * The runner publishes the next release time before it sleeps, so the monitor sleeps on
 * the block's futex with that release as its absolute timeout and acts at the release
 * itself, even when the runner's own wake-up is late because the noise holds its CPU.
 * Completion arrives as a futex wake. --max-freeze bounds each freeze, so best-effort work
 * always gets the rest of the period.
 *
 * With --window-region the freeze follows the code instead: the monitor writes the window
 * regions' ids into the block, the runner's markers publish each entry into and exit from
 * one of them (and wake the monitor), and the best-effort groups are frozen from the entry
 * to the exit, inside each job's release + --max-freeze. A runner whose program declares no
 * regions, or lacks one of the names, is followed by its releases, as without the option,
 * and the monitor says so once. */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>

#include "ic_common.h"
#include "monitor.h"
#include "windows.h"

typedef struct {
  uint64_t job, release_ns, period_ns;
  int32_t pid;
} release_t;

/* The next release not yet acted on, if the block (read as one snapshot) announces one. A
 * new runner (another pid) restarts the job numbering. Once the run is over, only an
 * announced release that really happened is still due (to be counted late); a stop can
 * leave one that never will. */
static bool announced(const ic_notify_snap_t *s, int32_t *pid, uint64_t *next_job, release_t *r) {
  if (!s->valid || s->state == IC_NOTIFY_INIT)
    return false;
  if (s->pid != *pid) {
    *pid = s->pid;
    *next_job = 0;
  }
  *r = (release_t){.job = s->next_job, .release_ns = s->next_release_ns,
                   .period_ns = s->period_ns, .pid = s->pid};
  if (!r->release_ns || r->job < *next_job)
    return false;
  return s->state == IC_NOTIFY_RUNNING || s->released > r->job;
}

/* Jobs before `job` that the monitor never saw announced: it was held off its CPU for more
 * than a period, and the block holds only the next release. They ran unprotected, so they
 * count as releases and as late ones, and apart as missed, never silently dropped. */
static void count_missed(monitor_t *m, uint64_t *next_job, uint64_t job) {
  if (job <= *next_job)
    return;
  uint64_t missed = job - *next_job;
  m->count.releases += missed;
  m->count.late_releases += missed;
  m->count.missed_releases += missed;
  *next_job = job;
}

/* --exit-with-runner: the run is over and nothing announced is left to handle. */
static bool runner_done(const monitor_t *m, const ic_notify_snap_t *s) {
  return m->exit_with_runner && s->valid && s->state == IC_NOTIFY_DONE;
}

/* What job r's groups should be while following its windows: frozen while a window region
 * executes (and the cap allows), thawed otherwise. `seen`: the window events already
 * looked at; an entry and its exit that both came and went since then ran unprotected. */
static void follow_windows(monitor_t *m, const release_t *r, const ic_notify_snap_t *s,
                           bool may_freeze, bool *held, uint64_t *seen) {
  windows_t *w = &m->windows;
  int id = ic_windows_open(s->open_mask, w->mask);
  uint64_t events = s->window_events - *seen;
  *seen = s->window_events;
  if (id < 0 && !*held && events >= 2)
    m->count.missed_windows += events / 2;
  if (id >= 0 && may_freeze && (!*held || mon_rearm_due(m))) {
    m->region = w->names[id];
    m->count.windows += !*held;
    mon_freeze_all(m, "region", (int64_t)r->job, s->window_ns);
    *held = true;
  } else if (id < 0 && *held) {
    m->region = s->window_region >= 0 && s->window_region < IC_NOTIFY_REGIONS
                    ? w->names[s->window_region] : NULL;
    mon_thaw_all(m, "region-exit", (int64_t)r->job, false);
    *held = false;
  }
  m->region = NULL;
  ic_log_flush(&m->log);
}

/* Why job r's protection ends: its completion, the cap, the runner going away, or NULL for
 * a stop of the monitor (whose exit path thaws everything). Without `follow` the groups are
 * frozen already (at the release) and stay so; with it they follow the job's windows. */
static const char *hold_job(monitor_t *m, const release_t *r, uint64_t cap_end, bool follow) {
  ic_notify_t *n = m->notify;
  bool held = false;
  uint64_t seen = 0;
  ic_notify_snap_t s;
  if (follow && ic_notify_read(n, &s))
    seen = s.window_events;
  for (;;) {
    bool read = ic_notify_read(n, &s);
    if (read && s.completed > r->job)
      return "complete";
    /* A runner killed mid-job never publishes its completion (nor, killed mid-publication,
     * lets the block be read at all). */
    if ((read && (!s.valid || s.pid != r->pid || s.state != IC_NOTIFY_RUNNING)) ||
        (kill(r->pid, 0) && errno == ESRCH))
      return "runner-gone";
    uint64_t now = ic_now_ns();
    if (mon_tick(m, now))
      return NULL;
    if (follow && read) {
      follow_windows(m, r, &s, now < cap_end, &held, &seen);
    } else if (!follow && now < cap_end && mon_rearm_due(m)) {
      /* a lease ran out while we held the freeze */
      mon_freeze_all(m, "rearm", (int64_t)r->job, r->release_ns);
      ic_log_flush(&m->log);
    }
    if (!read) /* a publication in progress: look again shortly */
      s.seq = ic_notify_seq(n);
    if (now >= cap_end)
      return "cap";
    uint64_t until = mon_slice_end(m, now);
    ic_notify_wait(n, s.seq, until < cap_end ? until : cap_end);
  }
}

void mon_run_event(monitor_t *m) {
  ic_notify_t *n = m->notify;
  int32_t pid = 0;
  uint64_t next_job = 0;
  for (;;) {
    ic_notify_snap_t s;
    bool read = ic_notify_read(n, &s);
    uint64_t now = ic_now_ns();
    if (mon_tick(m, now))
      return;
    release_t r;
    uint64_t wake = mon_slice_end(m, now);
    bool news = read && announced(&s, &pid, &next_job, &r);
    if (news)
      mon_adopt_runner(m, pid);
    if (!news) {
      if (read && runner_done(m, &s)) {
        count_missed(m, &next_job, s.released); /* what ran after the last release we saw */
        return;
      }
      ic_notify_wait(n, read ? s.seq : ic_notify_seq(n), wake);
      continue;
    }
    bool follow = mon_follows(m, r.pid, r.job);
    uint64_t lead = follow ? 0 : m->lead_ns; /* the markers wake us: nothing to absorb */
    uint64_t at = r.release_ns > lead ? r.release_ns - lead : 0;
    if (now < at) {
      ic_notify_wait(n, s.seq, at < wake ? at : wake);
      continue;
    }
    count_missed(m, &next_job, r.job);
    next_job = r.job + 1;
    m->count.releases++;
    if (s.completed > r.job) { /* we were later than the whole job */
      m->count.late_releases++;
      continue;
    }
    if (!follow)
      mon_freeze_all(m, "release", (int64_t)r.job, r.release_ns);
    uint64_t cap = mon_cap_ns(m, r.period_ns);
    uint64_t cap_end = cap == UINT64_MAX ? UINT64_MAX : r.release_ns + cap;
    const char *why = hold_job(m, &r, cap_end, follow);
    if (!why)
      return;
    m->count.cap_hits += !strcmp(why, "cap") && (!follow || mon_frozen_any(m));
    mon_thaw_all(m, why, (int64_t)r.job, false);
    ic_log_flush(&m->log);
  }
}
