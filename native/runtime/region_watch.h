/* The periodic runner's side of region windows (docs/native-contract.md, "Region windows"):
 * while it runs with --notify, every IC_REGION_BEGIN/END of its work goes to the
 * notification block (ic_notify_region), and the entries and exits of the monitor's window
 * regions are kept, with their job, in memory allocated beforehand, to be printed as
 * "window" lines after the run: the record a test or a benchmark sets the monitor's freezes
 * against. */
#ifndef IC_REGION_WATCH_H
#define IC_REGION_WATCH_H

#include <stdint.h>

#include "notify.h"

/* Installs the watcher for a run of at most `jobs` jobs publishing to n. */
void ic_region_watch_begin(ic_notify_t *n, uint64_t jobs);
/* The job whose markers run from now on. */
void ic_region_watch_job(uint64_t job);
/* Removes the watcher (the markers cost one branch again). */
void ic_region_watch_end(void);
/* One "window" line per window region execution (name: the task's), then frees them;
 * returns the executions that found the record full. */
uint64_t ic_region_watch_print(const char *name);

#endif
