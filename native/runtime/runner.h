/* The periodic release loop, one definition for every periodic task: ic-periodic's kernels
 * and a user's job function (ic_task.h) alike (docs/native-contract.md, "Periodic runner").
 * The runner owns the protocol: its options, the ready line, the release grid, the
 * notification block, the job and summary lines. The caller owns the work: a job callback,
 * and the fields its kind adds to the ready and summary lines.
 *
 *   ic_runner_signals();
 *   int first = ic_runner_front(argc, argv, extra, nextra);   (first non-runner argument)
 *   ... parse argv[1..first) with ic_runner_optset() and any extra table ...
 *   ic_runner_setup(&r, vals, name, first - 1, argv + 1);     (cgroups, CPU)
 *   ... initialise the work ...
 *   uint64_t done = ic_runner_run(&r, &work);                 (ready .. summary)
 */
#ifndef IC_RUNNER_H
#define IC_RUNNER_H

#include <stdbool.h>
#include <stdint.h>

#include "arglist.h"
#include "ic_common.h"
#include "ic_opts.h"
#include "notify.h"
#include "schedule.h"

/* Indices into ic_runner_opts. */
enum {
  IC_RUNNER_NAME, IC_RUNNER_PERIOD, IC_RUNNER_DEADLINE, IC_RUNNER_OFFSET, IC_RUNNER_JOBS,
  IC_RUNNER_OVERRUN, IC_RUNNER_START_AT, IC_RUNNER_NOTIFY, IC_RUNNER_CGROUP, IC_RUNNER_CPU,
  IC_RUNNER_RT, IC_RUNNER_MLOCK, IC_RUNNER_HELP, IC_RUNNER_NOPTS
};
extern const ic_opt_t ic_runner_opts[IC_RUNNER_NOPTS];

typedef struct {
  const char *name;
  ic_schedule_t sched;
  uint64_t period_ns, deadline_ns, offset_ns, start_ns;
  uint64_t jobs;
  ic_overrun_t overrun;
  int cpu;
  int rt_priority; /* 0: SCHED_OTHER */
  bool rt, locked, mlock;
  ic_notify_t *notify;
  const char *notify_path;
  ic_arglist_t cgroups;
  enum { IC_START_AUTO, IC_START_GIVEN, IC_START_STDIN } start;
} ic_runner_t;

/* What runs in each job and what the lines say about it. */
typedef struct {
  const char *family, *kind;              /* echoed in the ready and summary lines */
  void *ctx;
  /* Job n's work; returns the accesses it made, printed per job when counts_accesses. */
  uint64_t (*job)(void *ctx, uint64_t n, uint64_t cpu0_ns);
  bool counts_accesses;
  void (*ready)(void *ctx, ic_json_t *j);  /* optional: the kind's own ready fields */
  void (*summary)(void *ctx, ic_json_t *j, uint64_t accesses); /* optional */
} ic_runner_work_t;

/* SIGINT and SIGTERM stop the loop after the job in hand (no SA_RESTART: a stop also ends
 * the wait for the start line). */
void ic_runner_signals(void);
bool ic_runner_stopped(void);
/* Index in argv of the first argument that is neither an option of ic_runner_opts or
 * `extra` nor the value of one; argc when there is none. */
int ic_runner_front(int argc, char **argv, const ic_opt_t *extra, size_t nextra);
/* Takes the parsed runner options (usage errors exit 2), joins the --cgroup directories
 * (collected from argv[0..argc)) and pins to --cpu: everything that must precede the
 * work's initialisation. */
/* Joins each directory of `dirs` (usage error, exit 2, when one is not a cgroup). */
void ic_runner_join_cgroups(const ic_arglist_t *dirs);
/* --start-at stdin: reads one line "start NS"; EOF, a stop or "quit" mean no job runs. */
bool ic_runner_read_start(uint64_t *start_ns);
void ic_runner_setup(ic_runner_t *r, const ic_optval_t *o, const char *default_name, int argc,
                     char **argv);
/* Maps the notification block, locks memory, raises the priority, prints the ready line,
 * waits for the start time, runs the jobs, and prints one line per job and the summary.
 * Returns the number of jobs run. */
uint64_t ic_runner_run(ic_runner_t *r, const ic_runner_work_t *w);
void ic_runner_free(ic_runner_t *r);

#endif
