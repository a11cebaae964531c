/* One managed cgroup directory: how to freeze it and where its CPU usage is, found by
 * looking at the files it has. v2 (cgroup.freeze, cpu.stat) is preferred; a v1 freezer
 * directory (freezer.state) is the fallback, with cpuacct.usage when the freezer and
 * cpuacct hierarchies are mounted together. The files are opened once at start-up, so
 * acting is a single pwrite and reading a single pread. */
#ifndef IC_CGROUP_H
#define IC_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum { IC_ROLE_CRITICAL, IC_ROLE_BEST_EFFORT } ic_role_t;
typedef enum { IC_FREEZER_NONE, IC_FREEZER_V2, IC_FREEZER_V1 } ic_freezer_t;
typedef enum { IC_USAGE_NONE, IC_USAGE_CPU_STAT, IC_USAGE_CPUACCT } ic_usage_src_t;

typedef struct {
  const char *path;       /* the directory holding the freezer file */
  const char *usage_path; /* the directory holding the usage file (usually path) */
  ic_role_t role;
  ic_freezer_t freezer;
  ic_usage_src_t usage_src;
  int freeze_fd; /* -1 when the directory has no freezer file */
  int usage_fd;  /* -1 when it has no usage file */
  bool frozen;   /* what we last wrote */
  bool rearm;    /* we had frozen it when the watchdog thawed it (an expired lease) */
} ic_cgroup_t;

/* Opens the group's freezer and usage files, whichever exist; a directory with neither is
 * refused with a reason. Whether the role needs one is the caller's decision. spec is
 * "DIR", or "DIR+USAGE_DIR" where the usage lives in another hierarchy (pure v1 hosts
 * whose cpuacct is not mounted with the freezer); it is split in place. */
bool ic_cgroup_open(ic_cgroup_t *g, char *spec, ic_role_t role, char *why, size_t cap);
void ic_cgroup_close(ic_cgroup_t *g);
/* Writes the freeze (true) or thaw (false) command: the write is the actuation (a running
 * task stops within tens of microseconds on v2), so nothing waits for "frozen 1".
 * Returns 0 or an errno. Async-signal-safe (the watchdog calls it). */
int ic_cgroup_set_frozen(const ic_cgroup_t *g, bool frozen);
/* Cumulative CPU time of the group in ns; false when it cannot be read. */
bool ic_cgroup_usage(const ic_cgroup_t *g, uint64_t *ns);
/* True when pid is a member of the group (its cgroup.procs lists it). */
bool ic_cgroup_holds(const ic_cgroup_t *g, int pid);

/* "usage_usec N" in cpu.stat text, in ns. */
bool ic_cpu_stat_usage_ns(const char *text, uint64_t *ns);

const char *ic_freezer_name(ic_freezer_t f);
const char *ic_usage_src_name(ic_usage_src_t u);

#endif
