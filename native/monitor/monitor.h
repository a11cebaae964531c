/* The monitor's state, shared by its two policies (policy_event.c, policy_poll.c) and the
 * actuation and reporting around them (actuate.c, main.c). */
#ifndef IC_MONITOR_H
#define IC_MONITOR_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arglist.h"
#include "client.h"
#include "ic_cgroup.h"
#include "ic_freezelog.h"
#include "ic_latency.h"
#include "notify.h"
#include "usage.h"

#define IC_MAX_GROUPS 64

typedef enum { POLICY_POLL, POLICY_EVENT } policy_t;

/* --max-freeze: how long the best-effort groups may stay frozen per critical period. */
typedef struct {
  enum { CAP_NONE, CAP_FRACTION, CAP_NS } kind;
  double fraction; /* of the period published in the notification block */
  uint64_t ns;
} freeze_cap_t;

typedef struct {
  uint64_t freezes, thaws, cap_hits, write_errors;
  uint64_t polls, poll_overruns;  /* poll: rounds, and rounds started a whole interval late */
  /* event: releases the runner made while watched, those whose job had completed when the
   * monitor got there, and of those the ones it never saw announced at all */
  uint64_t releases, late_releases, missed_releases;
  uint64_t rearms; /* freezes again after the watchdog thawed a group we held (lease expiry) */
  /* event with --window-region: window executions frozen, and those that began and ended
   * while the monitor was away (ran unprotected) */
  uint64_t windows, missed_windows;
} counters_t;

/* --window-region: freeze from a critical job's entry into one of these regions to its
 * exit instead of for the whole job (follow.c, and each policy). */
typedef struct {
  ic_arglist_t wanted;   /* the names given */
  int32_t pid;           /* the runner they were resolved for, 0: none yet */
  bool follow;           /* resolved: jobs from `from_job` on are followed by region */
  uint64_t from_job;
  uint32_t mask;
  bool fell_back;        /* some runner had no markers or lacked a name: release freezing */
  char names[IC_NOTIFY_REGIONS][IC_NOTIFY_NAME_LEN]; /* the runner's, by id */
} windows_t;

typedef struct {
  policy_t policy;
  ic_cgroup_t groups[IC_MAX_GROUPS];
  ic_usage_t usage[IC_MAX_GROUPS];
  size_t ngroups;
  ic_notify_t *notify;
  bool exit_with_runner; /* return once the notified runner has ended */
  uint64_t interval_ns, window_ns, idle_after_ns, lead_ns;
  double threshold_pct;
  freeze_cap_t cap;
  uint64_t start_ns, end_ns; /* end: --duration, UINT64_MAX when unset */
  ic_log_t log;
  ic_latency_t latency;
  ic_wd_t watchdog;
  uint64_t lease_ns;
  counters_t count;
  windows_t windows;
  const char *region; /* the window region the actions being logged follow, or NULL */
} monitor_t;

extern volatile sig_atomic_t ic_monitor_stop;      /* SIGINT/SIGTERM */
extern volatile sig_atomic_t ic_monitor_orphaned;  /* the watchdog died: no fail-safe left */

/* Longest sleep between lease renewals. */
uint64_t mon_slice_end(const monitor_t *m, uint64_t now);
/* Renews the watchdog lease and takes note of an expired one (the groups we froze are
 * thawed and marked `rearm`, for the policy to freeze again while it still must); true when
 * the monitor must stop (signal, --duration, watchdog lost). */
bool mon_tick(monitor_t *m, uint64_t now);

/* Freezes one best-effort group (no-op when frozen already) and logs it; returns the time
 * the write returned. `has_latency` records now minus `from_ns` as a latency sample. */
uint64_t mon_freeze(monitor_t *m, ic_cgroup_t *g, const char *reason, int64_t job,
                    bool has_latency, uint64_t from_ns);
/* Freezes every best-effort group that is not frozen. One latency sample per call, taken
 * when the last write returned (every group frozen); each log line has its own. */
void mon_freeze_all(monitor_t *m, const char *reason, int64_t job, uint64_t release_ns);
void mon_thaw(monitor_t *m, ic_cgroup_t *g, const char *reason, int64_t job);
/* True when a best-effort group is frozen by us. */
bool mon_frozen_any(const monitor_t *m);
/* True when a group we froze was thawed by the watchdog and is still owed its freeze. */
bool mon_rearm_due(const monitor_t *m);
/* Thaws every group we froze; `all` also writes thaw to those we did not (start-up, exit). */
void mon_thaw_all(monitor_t *m, const char *reason, int64_t job, bool all);
/* The cap in ns for a critical period of period_ns; UINT64_MAX when there is none. */
uint64_t mon_cap_ns(const monitor_t *m, uint64_t period_ns);

/* --window-region: resolves the names against a runner first seen now (pid) and installs
 * them in its block, or falls back to its releases, saying so once (follow.c). */
void mon_adopt_runner(monitor_t *m, int32_t pid);
/* Whether job `job` of runner `pid` is protected in its windows (else: as a whole). */
bool mon_follows(const monitor_t *m, int32_t pid, uint64_t job);

void mon_run_event(monitor_t *m);
void mon_run_poll(monitor_t *m);

#endif
