/* ic-corun [options] -- PROG [ARGS...]: an unmodified program as a best-effort task of a
 * task set (docs/native-contract.md, "Co-runner"). It takes the task's place as ic-periodic
 * would: it joins the task's cgroups, pins to its CPU and takes its priority (the program
 * inherits all three), prints its ready line, waits for the start time shared with the other
 * tasks, and from start + offset runs the program again and again until SIGINT/SIGTERM, so
 * the program presses on the others for the whole run. A program has no jobs to report: the
 * summary counts its runs and says nothing of its progress. A stop kills the program's
 * process group at once; a run that fails (exit status, signal, exec) ends the co-runner with
 * its message, as a co-runner that silently stopped would fake a quiet neighbour. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "intr.h"
#include "runner.h"
#include "spawn.h"

enum { C_NAME, C_OFFSET, C_START_AT, C_CGROUP, C_CPU, C_RT, C_HELP };

static const ic_opt_t opts[] = {
    [C_NAME] = {.name = "name", .type = IC_OPT_STRING,
                .help = "task name echoed in every output line; unset: the program's path"},
    [C_OFFSET] = {.name = "offset", .type = IC_OPT_DURATION, .def = "0",
                  .help = "first run this long after the start time"},
    [C_START_AT] = {.name = "start-at", .type = IC_OPT_STRING, .metavar = "NS|stdin",
                    .help = "start time (absolute CLOCK_MONOTONIC ns) shared with the other "
                            "tasks; stdin: after the ready line read 'start NS' from stdin; "
                            "unset: at once"},
    [C_CGROUP] = {.name = "cgroup", .type = IC_OPT_STRING, .metavar = "DIR[,DIR]",
                  .help = "join these cgroup directories before the first run; repeatable"},
    [C_CPU] = IC_OPT_ENTRY_CPU,
    [C_RT] = IC_OPT_ENTRY_RT_PRIORITY,
    [C_HELP] = IC_OPT_ENTRY_HELP,
};

static volatile sig_atomic_t stop_signal;
static volatile pid_t running; /* the program's pid (and process group) while it runs */

/* The program dies with its group as soon as a stop arrives, even mid-wait; the interrupt
 * word ends the wait for the start line and the sleep until the first run. */
static void on_stop(int sig) {
  stop_signal = sig;
  ic_intr_raise(IC_INTR_STOP);
  if (running > 0)
    kill(-running, SIGKILL);
}

static void usage(FILE *f) {
  fprintf(f, "usage: %s [options] -- PROG [ARGS...]\n\nruns PROG again and again from the "
             "start time until SIGINT/SIGTERM, as a best-effort\nco-runner in the task's "
             "cgroups, on its CPU, at its priority\noptions:\n", ic_progname());
  ic_opts_help(f, opts, IC_NOPTS(opts));
  ic_opts_units_help(f);
}

/* Runs of the program until a stop; dies with the message of a run that fails. */
static uint64_t run_until_stopped(char **prog, int err_fd) {
  uint64_t runs = 0;
  while (!stop_signal) {
    if (ftruncate(err_fd, 0))
      ic_die(IC_EXIT_FAIL, "cannot reset the program's stderr: %s", strerror(errno));
    int exec_errno, status;
    pid_t pid = ic_spawn(prog, err_fd, &running, &stop_signal, &exec_errno);
    if (pid < 0)
      break;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
      ;
    running = 0;
    if (stop_signal)
      break;
    if (exec_errno)
      ic_die(IC_EXIT_FAIL, "cannot run %s: %s", prog[0], strerror(exec_errno));
    if (WIFSIGNALED(status))
      ic_spawn_fail(err_fd, "was killed by signal %d", prog[0], WTERMSIG(status));
    if (WEXITSTATUS(status) != 0)
      ic_spawn_fail(err_fd, "exited with status %d", prog[0], WEXITSTATUS(status));
    runs++;
  }
  return runs;
}

static void task_fields(ic_json_t *j, const char *name, const char *prog) {
  ic_json_str(j, "name", name);
  ic_json_str(j, "family", "command");
  ic_json_str(j, "kind", prog);
}

int main(int argc, char **argv) {
  ic_set_progname("ic-corun");
  ic_optval_t c[IC_NOPTS(opts)];
  const ic_optset_t set = {opts, IC_NOPTS(opts), c};
  char **prog = ic_spawn_args(&set, argc, argv, C_HELP, usage);
  const char *name = c[C_NAME].set ? c[C_NAME].s : prog[0];
  uint64_t offset = (uint64_t)(c[C_OFFSET].d * 1e9 + 0.5), start = 0;
  bool from_stdin = false;
  if (c[C_START_AT].set) {
    from_stdin = !strcmp(c[C_START_AT].s, "stdin");
    if (!from_stdin && !ic_parse_u64(c[C_START_AT].s, &start))
      ic_usage_error("--start-at", "'%s' is neither a CLOCK_MONOTONIC time in ns nor 'stdin'",
                     c[C_START_AT].s);
  }
  ic_arglist_t cgroups;
  ic_arglist_collect(&cgroups, (int)(prog - argv) - 2, argv + 1, "cgroup"); /* before -- */
  ic_runner_join_cgroups(&cgroups);
  if (c[C_CPU].set)
    ic_pin_cpu_or_die((int)c[C_CPU].u);
  /* No SA_RESTART: a stop ends the wait for the start line and for the program. */
  struct sigaction sa = {.sa_handler = on_stop};
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  int err_fd = memfd_create("ic-corun-stderr", MFD_CLOEXEC);
  if (err_fd < 0)
    ic_die(IC_EXIT_FAIL, "memfd: %s", strerror(errno));
  bool rt = c[C_RT].set && ic_set_rt_priority((int)c[C_RT].u);

  ic_json_t j;
  ic_json_begin(&j, stdout);
  ic_json_str(&j, "event", "ready");
  ic_json_i64(&j, "pid", (int64_t)getpid());
  task_fields(&j, name, prog[0]);
  if (c[C_CPU].set)
    ic_json_i64(&j, "cpu", (int64_t)c[C_CPU].u);
  else
    ic_json_null(&j, "cpu");
  ic_json_bool(&j, "rt", rt);
  ic_json_u64(&j, "offset_ns", offset);
  ic_json_str(&j, "start", from_stdin ? "stdin" : c[C_START_AT].set ? "given" : "auto");
  ic_arglist_json(&j, "cgroups", &cgroups);
  ic_json_end(&j);
  ic_arglist_free(&cgroups);

  bool started = from_stdin ? ic_runner_read_start(&start) : true;
  if (!c[C_START_AT].set)
    start = ic_now_ns();
  uint64_t runs = 0;
  if (started && ic_intr_sleep_until(start + offset))
    runs = run_until_stopped(prog, err_fd);
  ic_json_begin(&j, stdout);
  ic_json_str(&j, "event", "summary");
  task_fields(&j, name, prog[0]);
  ic_json_u64(&j, "runs", runs);
  ic_json_bool(&j, "stopped", stop_signal != 0);
  ic_json_bool(&j, "rt", rt);
  ic_json_u64(&j, "start_at_ns", start);
  ic_json_end(&j);
  return IC_EXIT_OK;
}
