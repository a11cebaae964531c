/* A user's job function as a periodic real-time task (docs/user-programs.md, "Your program
 * as a periodic task"). The program keeps its own main and its own arguments; the runtime
 * takes the runner's options from the front of the command line and then runs the job
 * function at every release, speaking exactly ic-periodic's protocol (ready line, start
 * time, notification block for ic-monitor, one line per job, summary), so a task set can
 * name the program as a task's workload.
 *
 *   #include <ic_task.h>
 *   static void step(void *ctx, uint64_t job) { ... one job's work ... }
 *   int main(int argc, char **argv) {
 *     argc = ic_task_options(argc, argv);   (runner options gone; your own are left)
 *     ... parse your arguments, allocate, initialise ...
 *     return ic_task_run(step, &state);
 *   }
 *
 *   ./prog [--period 10ms --deadline 5ms --jobs 100 --cpu 1 ...] [--] [your arguments]
 *   ./prog --help                            the runner's options
 *
 *   cc -std=c11 $(pkg-config --cflags intercore) prog.c $(pkg-config --libs intercore)
 *
 * IC_REGION_BEGIN/END markers (ic_user.h) keep working inside the job. SIGINT and SIGTERM
 * end the task after the job in hand; ic_task_run then prints the results and returns. */
#ifndef IC_TASK_H
#define IC_TASK_H

#include <stdint.h>

/* One job: `job` counts the jobs run so far (0, 1, ...); skipped releases do not count. */
typedef void (*ic_task_job_t)(void *ctx, uint64_t job);

/* Parses the runner options at the front of argv (up to the first other argument, or a
 * "--", which is dropped) and moves the program's own arguments down to argv[1..]; returns
 * the new argc. A bad runner option prints a one-line error and exits 2; --help prints the
 * runner's options and exits 0. Also joins --cgroup and pins to --cpu, so the program's
 * initialisation already runs where its jobs will. Call it first, once. */
int ic_task_options(int argc, char **argv);

/* Runs the jobs on the release grid and prints their results; returns the exit status
 * for main (0). Call it after ic_task_options, once the job's state is ready. */
int ic_task_run(ic_task_job_t job, void *ctx);

#endif
