/* Memory-traffic sources: where a bandwidth reading comes from (docs/native-contract.md,
 * "Bandwidth sources"). Python resolves names (event tables per CPU model, resctrl
 * groups, calibrations); the C side only opens what it is given:
 *
 *   perf:TYPE:CONFIG[:CONFIG1]/SCOPE   a perf counter; SCOPE is `task` (the profiled
 *                                      command and its children), `cpu:N`, `system` (every
 *                                      online CPU, summed) or `cgroup:DIR` (per CPU, summed);
 *                                      several joined by `+` are summed into one reading
 *                                      (the channels of a memory controller)
 *   file:PATH                          a text file holding a growing byte count (resctrl
 *                                      MBM's mbm_total_bytes), read with pread
 *   probe:SIZE:LINES                   the PMU-free latency probe: a timed pointer chase of
 *                                      LINES lines through SIZE bytes of memory on the
 *                                      calling core; its reading is the chase time in ticks
 *
 * A perf or file reading is a running count (the caller takes differences); a probe
 * reading is the duration of one chase. */
#ifndef IC_BW_SOURCE_H
#define IC_BW_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ic_common.h"

enum { IC_SRC_MAX_FDS = 256, IC_SRC_MAX_TERMS = 16, IC_SRC_SPEC_LEN = 1024,
       IC_SRC_ERR_LEN = 512 };

typedef enum { IC_SRC_PERF, IC_SRC_FILE, IC_SRC_PROBE } ic_src_kind_t;
typedef enum { IC_SCOPE_TASK, IC_SCOPE_CPU, IC_SCOPE_SYSTEM, IC_SCOPE_CGROUP } ic_scope_t;

typedef struct ic_src_probe ic_src_probe_t;

typedef struct {
  ic_src_kind_t kind;
  char spec[IC_SRC_SPEC_LEN];
  /* perf: terms summed into one reading */
  struct ic_src_term {
    uint32_t type;
    uint64_t config, config1;
    ic_scope_t scope;
    int scope_cpu;
    char cgroup[256];
  } term[IC_SRC_MAX_TERMS];
  int nterms;
  int fd[IC_SRC_MAX_FDS];
  bool task_scoped; /* some term follows the task */
  int nfd;
  /* file */
  char path[IC_SRC_SPEC_LEN];
  /* probe */
  ic_src_probe_t *probe;
} ic_src_t;

/* Parses a spec; false with a reason in err. No system call. */
bool ic_src_parse(ic_src_t *s, const char *spec, char *err, size_t cap);
/* Opens it; `task` is the pid a task-scoped counter follows (counting starts at its exec,
 * children included). For a probe, builds the chase on the calling thread's memory.
 * False with a reason a user can act on. */
bool ic_src_open(ic_src_t *s, pid_t task, uint64_t seed, char *err, size_t cap);
/* Enables task-scoped counters now rather than at the task's exec. */
void ic_src_enable(ic_src_t *s);
/* One reading (see above); UINT64_MAX when a read failed. */
uint64_t ic_src_read(ic_src_t *s);
void ic_src_close(ic_src_t *s);
/* "perf" | "file" | "probe". */
const char *ic_src_kind_name(ic_src_kind_t k);

/* Probe geometry after open: lines per reading, bytes of its buffer, page size obtained. */
uint32_t ic_src_probe_lines(const ic_src_t *s);
uint64_t ic_src_probe_bytes(const ic_src_t *s);
size_t ic_src_probe_page(const ic_src_t *s);

/* Opens one perf event with the given attributes on (pid, cpu), with flags; -errno on
 * failure. Shared with the regulator, which adds overflow signalling. */
struct perf_event_attr;
int ic_perf_event_open(struct perf_event_attr *a, pid_t pid, int cpu, int group, unsigned long flags);

/* Online CPUs into cpus (at most cap); returns how many. */
int ic_online_cpus(int *cpus, int cap);

#endif
