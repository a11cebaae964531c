/* Freezing and thawing with their bookkeeping. The write comes first, then the clock,
 * then the log line into memory; the log reaches the file only at ic_log_flush, called
 * by the policies once nothing is pending. */
#include "monitor.h"

#include "ic_common.h"

volatile sig_atomic_t ic_monitor_stop;
volatile sig_atomic_t ic_monitor_orphaned;

/* A sleeping monitor renews its lease at least four times per lease. */
uint64_t mon_slice_end(const monitor_t *m, uint64_t now) {
  uint64_t end = now + m->lease_ns / 4;
  return end < m->end_ns ? end : m->end_ns;
}

bool mon_tick(monitor_t *m, uint64_t now) {
  ic_wd_beat(&m->watchdog, now);
  if (ic_wd_expired(&m->watchdog))
    for (size_t i = 0; i < m->ngroups; i++) {
      ic_cgroup_t *g = &m->groups[i];
      g->rearm |= g->frozen;
      g->frozen = false;
    }
  return ic_monitor_stop || ic_monitor_orphaned || now >= m->end_ns;
}

static void log_action(monitor_t *m, const ic_cgroup_t *g, const char *action, const char *reason,
                       int64_t job, uint64_t t, int err, bool has_latency, int64_t latency) {
  ic_log_add(&m->log, &(ic_log_entry_t){.t_ns = t, .action = action, .group = g->path,
                                        .reason = reason, .job = job, .has_latency = has_latency,
                                        .latency_ns = latency, .error = err, .by = "monitor",
                                        .region = m->region});
}

static int set(monitor_t *m, ic_cgroup_t *g, bool frozen) {
  int err = ic_cgroup_set_frozen(g, frozen);
  if (err) {
    m->count.write_errors++;
  } else {
    g->frozen = frozen;
    g->rearm = false;
  }
  return err;
}

uint64_t mon_freeze(monitor_t *m, ic_cgroup_t *g, const char *reason, int64_t job,
                    bool has_latency, uint64_t from_ns) {
  if (g->frozen)
    return ic_now_ns();
  if (g->rearm) { /* not a reaction to the critical work: no latency sample */
    reason = "rearm";
    has_latency = false;
    m->count.rearms++;
  }
  int err = set(m, g, true);
  uint64_t t = ic_now_ns();
  int64_t latency = (int64_t)(t - from_ns);
  if (!err) {
    m->count.freezes++;
    if (has_latency)
      ic_latency_add(&m->latency, latency);
  }
  log_action(m, g, "freeze", reason, job, t, err, has_latency && !err, latency);
  return t;
}

void mon_freeze_all(monitor_t *m, const char *reason, int64_t job, uint64_t release_ns) {
  uint64_t t[IC_MAX_GROUPS];
  int err[IC_MAX_GROUPS];
  bool acted[IC_MAX_GROUPS] = {false};
  uint64_t last = 0;
  bool any = false;
  bool rearm[IC_MAX_GROUPS];
  for (size_t i = 0; i < m->ngroups; i++) {
    ic_cgroup_t *g = &m->groups[i];
    if (g->role != IC_ROLE_BEST_EFFORT || g->frozen)
      continue;
    rearm[i] = g->rearm; /* not a reaction to a release: no latency sample */
    err[i] = set(m, g, true);
    t[i] = ic_now_ns();
    if (!rearm[i])
      last = t[i];
    acted[i] = true;
    any |= !err[i] && !rearm[i];
    m->count.freezes += !err[i];
    m->count.rearms += rearm[i] && !err[i];
  }
  int64_t latency = (int64_t)(last - release_ns);
  if (any)
    ic_latency_add(&m->latency, latency);
  for (size_t i = 0; i < m->ngroups; i++)
    if (acted[i])
      log_action(m, &m->groups[i], "freeze", rearm[i] ? "rearm" : reason, job, t[i], err[i],
                 !err[i] && !rearm[i], (int64_t)(t[i] - release_ns));
}

void mon_thaw(monitor_t *m, ic_cgroup_t *g, const char *reason, int64_t job) {
  int err = set(m, g, false);
  m->count.thaws += !err;
  log_action(m, g, "thaw", reason, job, ic_now_ns(), err, false, 0);
}

void mon_thaw_all(monitor_t *m, const char *reason, int64_t job, bool all) {
  for (size_t i = 0; i < m->ngroups; i++) {
    ic_cgroup_t *g = &m->groups[i];
    g->rearm = false; /* the episode is over: nothing is owed a freeze any more */
    if (g->freeze_fd >= 0 && (g->frozen || all))
      mon_thaw(m, g, reason, job);
  }
}

bool mon_frozen_any(const monitor_t *m) {
  for (size_t i = 0; i < m->ngroups; i++)
    if (m->groups[i].frozen)
      return true;
  return false;
}

bool mon_rearm_due(const monitor_t *m) {
  for (size_t i = 0; i < m->ngroups; i++)
    if (m->groups[i].rearm)
      return true;
  return false;
}

uint64_t mon_cap_ns(const monitor_t *m, uint64_t period_ns) {
  switch (m->cap.kind) {
  case CAP_FRACTION: return (uint64_t)(m->cap.fraction * (double)period_ns);
  case CAP_NS: return m->cap.ns;
  default: return UINT64_MAX;
  }
}
