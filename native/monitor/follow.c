/* --window-region, both policies: the names resolved against each runner that appears in
 * the block, and which of its jobs are followed by region (docs/native-contract.md,
 * "Region windows"). */
#include "ic_common.h"
#include "monitor.h"
#include "windows.h"

/* A new runner: its regions against --window-region. The mask goes into the block before
 * `released` is read, so every job not yet started then publishes its window entries
 * (ic_notify_region); those already started are protected from their release. */
void mon_adopt_runner(monitor_t *m, int32_t pid) {
  windows_t *w = &m->windows;
  ic_notify_snap_t s;
  if (!w->wanted.n || w->pid == pid || !ic_notify_read(m->notify, &s) || s.pid != pid)
    return; /* a block being rewritten is looked at again next time */
  w->pid = pid;
  w->follow = false;
  for (int id = 0; id < IC_NOTIFY_REGIONS; id++)
    ic_notify_region_name(m->notify, id, w->names[id]);
  const char *unknown;
  ic_windows_result_t r = ic_windows_resolve(w->wanted.items, w->wanted.n, w->names,
                                             s.nregions, &w->mask, &unknown);
  if (r != IC_WINDOWS_OK) {
    ic_notify_set_windows(m->notify, 0);
    if (!w->fell_back && r == IC_WINDOWS_UNMARKED)
      ic_warn("--window-region: the runner (pid %d) publishes no regions (no markers in its "
              "program): protecting each whole job instead", (int)pid);
    else if (!w->fell_back)
      ic_warn("--window-region: the runner (pid %d) has no region '%s': protecting each "
              "whole job instead", (int)pid, unknown);
    w->fell_back = true;
    return;
  }
  ic_notify_set_windows(m->notify, w->mask);
  w->from_job = ic_notify_read(m->notify, &s) ? s.released : UINT64_MAX;
  w->follow = w->from_job != UINT64_MAX;
}

bool mon_follows(const monitor_t *m, int32_t pid, uint64_t job) {
  const windows_t *w = &m->windows;
  return w->follow && w->pid == pid && job >= w->from_job;
}
