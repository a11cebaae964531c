/* ic_task.h: a user's job function on the shared periodic runner (runner.h). */
#include "ic_task.h"

#include <stdlib.h>
#include <string.h>

#include "runner.h"

/* Named in every ready line: intercore finds it in a program's file to tell a program built
 * with this runtime from one that is not (intercore.measure.taskset, RUNTIME_SIGNATURE). */
#define SIGNATURE "intercore-task-runtime/1"

static ic_runner_t runner;
static bool parsed;

static void usage(FILE *f) {
  fprintf(f,
          "usage: %s [runner options] [--] [the program's own arguments]\n\n"
          "Runs the program's job function as periodic jobs released at start + offset +\n"
          "k*period (intercore's task runtime, ic_task.h); prints a ready line, then after\n"
          "the last job one JSON line per job and a summary.\n"
          "SIGINT/SIGTERM stop after the current job; the results are still printed.\n\n"
          "runner options:\n",
          ic_progname());
  ic_opts_help(f, ic_runner_opts, IC_RUNNER_NOPTS);
  ic_opts_units_help(f);
}

int ic_task_options(int argc, char **argv) {
  const char *slash = strrchr(argv[0], '/');
  ic_set_progname(slash ? slash + 1 : argv[0]);
  ic_runner_signals();
  int first = ic_runner_front(argc, argv, NULL, 0);
  ic_optval_t o[IC_RUNNER_NOPTS];
  const ic_optset_t set = {ic_runner_opts, IC_RUNNER_NOPTS, o};
  ic_opts_parse(&set, 1, first - 1, argv + 1, ic_progname());
  if (o[IC_RUNNER_HELP].set) {
    usage(stdout);
    exit(IC_EXIT_OK);
  }
  ic_runner_setup(&runner, o, ic_progname(), first - 1, argv + 1);
  parsed = true;
  if (first < argc && !strcmp(argv[first], "--"))
    first++;
  int n = 1;
  for (int i = first; i < argc; i++)
    argv[n++] = argv[i];
  argv[n] = NULL;
  return n;
}

typedef struct {
  ic_task_job_t job;
  void *ctx;
} user_job_t;

static uint64_t run_job(void *ctx, uint64_t n, uint64_t cpu0_ns) {
  (void)cpu0_ns;
  const user_job_t *u = ctx;
  u->job(u->ctx, n);
  return 0;
}

static void ready_fields(void *ctx, ic_json_t *j) {
  (void)ctx;
  ic_json_str(j, "runtime", SIGNATURE);
}

int ic_task_run(ic_task_job_t job, void *ctx) {
  if (!parsed)
    ic_die(IC_EXIT_FAIL, "ic_task_run: call ic_task_options(argc, argv) first");
  user_job_t u = {job, ctx};
  const ic_runner_work_t work = {.family = "program", .kind = ic_progname(), .ctx = &u,
                                 .job = run_job, .ready = ready_fields};
  ic_runner_run(&runner, &work);
  ic_runner_free(&runner);
  return IC_EXIT_OK;
}
