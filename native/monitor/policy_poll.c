/* --policy poll, paper 000's monitor: every --interval read each group's CPU usage; while
 * a critical group is active, freeze each best-effort group whose usage over the
 * smoothing window (usage.h) exceeds --threshold; thaw when the critical job completes.
 *
 * "Active" and "completed" come from the critical groups' usage (it moved within
 * --idle-after), or, with --notify, from the runner's active flag, which is exact. A freeze
 * lasts at most --max-freeze; a group thawed by the cap stays thawed until the critical
 * work has gone idle once, so the cap cannot turn into a freeze/thaw oscillation.
 *
 * With --window-region (and --notify) "active" is narrower: a job followed by region is
 * active only while one of its window regions executes, from the entry the runner
 * published; a freeze then comes at the first round after the entry (within --interval)
 * and the cap bounds each window's freeze. */
#include "ic_common.h"
#include "intr.h"
#include "monitor.h"
#include "windows.h"

/* One stretch of critical activity. */
typedef struct {
  uint64_t frozen_at[IC_MAX_GROUPS];
  bool capped[IC_MAX_GROUPS];
} episode_t;

/* When the round after the one sampled at `sampled` (due at `due`) is due. With --notify
 * and the critical task between jobs, nothing can need a freeze before its next release:
 * the monitor sleeps until one window before it (to have the usage over the window at the
 * release) and then until the release, instead of waking every interval. Each wake-up
 * costs ~20 us of CPU in a VM, so this is what keeps 1 ms polling cheap. */
static uint64_t next_round(const monitor_t *m, uint64_t due, uint64_t sampled) {
  uint64_t next = due + m->interval_ns;
  if (next + m->interval_ns < sampled) /* a whole round late: restart the grid, no burst */
    next = sampled + m->interval_ns;
  ic_notify_snap_t s;
  if (!m->notify || !ic_notify_read(m->notify, &s) || !s.valid || s.active ||
      s.state != IC_NOTIFY_RUNNING)
    return next;
  uint64_t release = s.next_release_ns;
  if (release <= next)
    return next;
  uint64_t warm = release > m->window_ns ? release - m->window_ns : 0;
  if (sampled < warm)
    return warm > next ? warm : next;
  return release;
}

/* Reads every group's usage; with --notify the critical groups' is not needed. */
static void sample(monitor_t *m, uint64_t now) {
  for (size_t i = 0; i < m->ngroups; i++) {
    uint64_t used;
    if (m->notify && m->groups[i].role == IC_ROLE_CRITICAL)
      continue;
    if (ic_cgroup_usage(&m->groups[i], &used))
      ic_usage_add(&m->usage[i], now, used, m->idle_after_ns);
  }
}

/* With --window-region, for a job followed by region: whether one of its window regions
 * executes, since its entry; m->region names it (NULL outside). */
static bool window_active(monitor_t *m, const ic_notify_snap_t *s, uint64_t *onset) {
  int id = ic_windows_open(s->open_mask, m->windows.mask);
  m->region = id >= 0 ? m->windows.names[id] : NULL;
  *onset = s->window_ns;
  return id >= 0;
}

/* Whether the critical work runs, and since when (the onset a freeze's latency is
 * measured from), with the job index when the runner tells it; *idle: the reason a thaw
 * gives when it does not. */
static bool critical_active(monitor_t *m, uint64_t *onset, int64_t *job, const char **idle) {
  *job = -1;
  *idle = m->notify ? "complete" : "idle";
  m->region = NULL;
  if (m->notify) {
    ic_notify_snap_t s;
    if (!ic_notify_read(m->notify, &s) || !s.valid)
      return false;
    *job = (int64_t)s.released - 1;
    *onset = s.release_ns;
    mon_adopt_runner(m, s.pid);
    if (s.active && mon_follows(m, s.pid, (uint64_t)*job)) {
      *idle = "region-exit";
      return window_active(m, &s, onset);
    }
    if (s.active)
      return true;
    /* Released but not started: a runner sharing its CPU with the noise cannot even run to
     * set `active` until the noise lets it, which is exactly when a freeze is needed. The
     * announced job is due once its release time has passed and it has not started. */
    if (s.state == IC_NOTIFY_RUNNING && s.next_release_ns && s.next_job >= s.released &&
        ic_now_ns() >= s.next_release_ns && !mon_follows(m, s.pid, s.next_job)) {
      *job = (int64_t)s.next_job;
      *onset = s.next_release_ns;
      return true;
    }
    return false;
  }
  bool active = false;
  for (size_t i = 0; i < m->ngroups; i++)
    if (m->groups[i].role == IC_ROLE_CRITICAL && ic_usage_active(&m->usage[i], m->idle_after_ns)) {
      *onset = active && *onset < m->usage[i].onset_ns ? *onset : m->usage[i].onset_ns;
      active = true;
    }
  return active;
}

static uint64_t period_ns(const monitor_t *m) {
  ic_notify_snap_t s;
  return m->notify && ic_notify_read(m->notify, &s) ? s.period_ns : 0;
}

static void round_(monitor_t *m, episode_t *e, uint64_t now) {
  uint64_t onset = 0;
  int64_t job;
  const char *idle;
  bool active = critical_active(m, &onset, &job, &idle);
  if (!active) {
    mon_thaw_all(m, idle, job, false);
    *e = (episode_t){0};
    return;
  }
  uint64_t cap = mon_cap_ns(m, period_ns(m));
  for (size_t i = 0; i < m->ngroups; i++) {
    ic_cgroup_t *g = &m->groups[i];
    if (g->role != IC_ROLE_BEST_EFFORT || e->capped[i])
      continue;
    if (g->frozen && cap != UINT64_MAX && now - e->frozen_at[i] >= cap) {
      mon_thaw(m, g, "cap", job);
      m->count.cap_hits++;
      e->capped[i] = true;
    } else if (!g->frozen && ic_usage_pct(&m->usage[i], m->window_ns) > m->threshold_pct) {
      e->frozen_at[i] = mon_freeze(m, g, "usage", job, true, onset);
    }
  }
  m->region = NULL;
}

/* --exit-with-runner: the critical runner has finished and its last job is complete. */
static bool runner_over(const monitor_t *m) {
  ic_notify_snap_t s;
  return m->exit_with_runner && m->notify && ic_notify_read(m->notify, &s) && s.valid &&
         s.state == IC_NOTIFY_DONE && !s.active;
}

void mon_run_poll(monitor_t *m) {
  episode_t e = {0};
  uint64_t due = ic_now_ns();
  for (;;) {
    uint64_t now = ic_now_ns();
    if (mon_tick(m, now))
      return;
    if (now < due) {
      uint64_t slice = mon_slice_end(m, now);
      ic_intr_sleep_until(due < slice ? due : slice); /* a stop or a lost watchdog ends it */
      continue;
    }
    m->count.polls++;
    m->count.poll_overruns += now > due + m->interval_ns;
    sample(m, now);
    round_(m, &e, now);
    ic_log_flush(&m->log);
    if (runner_over(m))
      return;
    due = next_round(m, due, now);
  }
}
