/* The example's control law (controller.h) as a periodic real-time task: ic_task.h runs one
 * job per release, and each job is --steps-per-job steps of the controller. Built like
 * `control` and launched by intercore as a task set's workload (`program:`), or by hand:
 *
 *   ./control_task --period 10ms --deadline 5ms --jobs 100 -- --steps-per-job 200
 *
 * The runner's options come first (./control_task --help lists them); the program's own
 * follow. It prints ic-periodic's lines (ready, one per job, summary), then its own state on
 * stderr. */
#include <ic_task.h>

#include <stdio.h>

#include "args.h"
#include "controller.h"

typedef struct {
  controller c;
  long steps_per_job;
} task_state;

static void job(void *ctx, uint64_t n) {
  (void)n;
  task_state *t = ctx;
  for (long s = 0; s < t->steps_per_job; s++)
    controller_step(&t->c);
}

int main(int argc, char **argv) {
  argc = ic_task_options(argc, argv);
  task_state t = {.steps_per_job = arg_long(argc, argv, "--steps-per-job", 200, 1, 10000000)};
  if (!controller_init(&t.c, (int)arg_long(argc, argv, "--map", 512, 2, 8192)))
    return 1;
  int status = ic_task_run(job, &t);
  fprintf(stderr, "control_task: %ld steps, plant %.6f, last command %.6f\n", t.c.step,
          t.c.plant, t.c.u);
  controller_free(&t.c);
  return status;
}
