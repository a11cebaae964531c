/* ic-run [options] -- PROG [ARGS...]: a user's program as a victim (docs/native-contract.md,
 * "User programs"). It speaks the victim protocol (ready, --sync, rep, sample, end) and runs
 * the program once per repetition: region 0 ("total") is the whole run, timed from outside
 * (CPU time from the program's rusage, every thread, exec and exit included; wall time from
 * fork to reap), and the regions the program marks with ic_user.h reach it through a shared
 * block. The program runs in a process group of its own, with stdin and stdout on /dev/null
 * (stdout is the protocol's pipe) and stderr kept for the message when it fails. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ic_protocol.h"
#include "ic_run_block.h"
#include "spawn.h"

enum { C_CPU, C_RT, C_REPS, C_SYNC, C_SEED, C_CLOCK, C_HELP };

static const ic_opt_t opts[] = {
    [C_CPU] = IC_OPT_ENTRY_CPU,
    [C_RT] = IC_OPT_ENTRY_RT_PRIORITY,
    [C_REPS] = IC_OPT_ENTRY_REPS,
    [C_SYNC] = IC_OPT_ENTRY_SYNC,
    [C_SEED] = {.name = "seed", .type = IC_OPT_U64, .def = "1",
                .help = "recorded in the ready line (the harness gives every victim one); the "
                        "program gets its own arguments only"},
    [C_CLOCK] = IC_OPT_ENTRY_CLOCK,
    [C_HELP] = IC_OPT_ENTRY_HELP,
};

enum { NREGIONS = 1 + IC_RUN_MAX_REGIONS };

/* Region names: "total", then the program's, learnt from its first run. */
static const char *names[NREGIONS] = {"total"};
static char learnt[IC_RUN_MAX_REGIONS][IC_RUN_NAME_LEN];
static int nlearnt = -1; /* -1: no run finished yet */

static volatile sig_atomic_t stop_signal;
static volatile pid_t running; /* the program's pid (and process group) while it runs */

/* The program dies with its group as soon as a stop arrives, even mid-wait. */
static void on_stop(int sig) {
  stop_signal = sig;
  if (running > 0)
    kill(-running, SIGKILL);
}

static void usage(FILE *f) {
  fprintf(f, "usage: %s [options] -- PROG [ARGS...]\n\nruns PROG once per repetition as a "
             "victim; its regions come from ic_user.h's markers\noptions:\n", ic_progname());
  ic_opts_help(f, opts, IC_NOPTS(opts));
  ic_opts_units_help(f);
}

static int memfd(const char *name, size_t size, unsigned flags) {
  int fd = memfd_create(name, flags);
  if (fd < 0 || ftruncate(fd, (off_t)size))
    ic_die(IC_EXIT_FAIL, "memfd %s: %s", name, strerror(errno));
  return fd;
}

static void reset_block(ic_run_block_t *b) {
  memset(b, 0, sizeof *b);
  for (int i = 0; i < IC_RUN_MAX_REGIONS; i++)
    b->samples[i] = (ic_sample_t){.nivcsw = -1, .cpu = -1};
  b->version = IC_RUN_VERSION;
  b->magic = IC_RUN_MAGIC;
}

static uint64_t clock_now(bool wall) {
#ifdef IC_ARCH_HAVE_CYCLES
  if (wall)
    return ic_arch_cycles(); /* raw ticks, as the markers keep them; the flush converts */
#endif
  (void)wall;
  return ic_now_ns();
}

/* The program's regions, numbered from 1; every run must declare the same ones. */
static void take_regions(const ic_run_block_t *b, const char *prog) {
  int n = (int)b->nregions;
  if (n < 0 || n > IC_RUN_MAX_REGIONS)
    ic_die(IC_EXIT_FAIL, "%s declared %d regions in the shared block", prog, n);
  if (nlearnt < 0) {
    for (int i = 0; i < n; i++) {
      memcpy(learnt[i], b->names[i], IC_RUN_NAME_LEN);
      learnt[i][IC_RUN_NAME_LEN - 1] = '\0';
      names[i + 1] = learnt[i];
    }
    nlearnt = n;
    return;
  }
  bool same = n == nlearnt;
  for (int i = 0; same && i < n; i++)
    same = !strncmp(learnt[i], b->names[i], IC_RUN_NAME_LEN - 1);
  if (!same)
    ic_die(IC_EXIT_FAIL, "%s declared other regions than in its first run", prog);
}

/* One run of the program as repetition `rep`. */
static void run_one(char **argv, int rep, ic_run_block_t *b, int err_fd, bool wall,
                    uint64_t *dropped) {
  reset_block(b);
  if (ftruncate(err_fd, 0))
    ic_die(IC_EXIT_FAIL, "cannot reset the program's stderr: %s", strerror(errno));
  uint64_t t0 = clock_now(wall);
  int exec_errno;
  pid_t pid = ic_spawn(argv, err_fd, &running, &stop_signal, &exec_errno);
  if (pid < 0)
    exit(128 + stop_signal);
  int status;
  struct rusage ru;
  while (wait4(pid, &status, 0, &ru) < 0 && errno == EINTR)
    ;
  uint64_t t1 = clock_now(wall);
  running = 0;
  if (stop_signal)
    exit(128 + stop_signal);
  if (exec_errno)
    ic_die(IC_EXIT_FAIL, "cannot run %s: %s", argv[0], strerror(exec_errno));
  if (WIFSIGNALED(status))
    ic_spawn_fail(err_fd, "was killed by signal %d", argv[0], WTERMSIG(status));
  if (WEXITSTATUS(status) != 0)
    ic_spawn_fail(err_fd, "exited with status %d", argv[0], WEXITSTATUS(status));
  take_regions(b, argv[0]);
  *dropped += b->dropped;
  ic_regions_set_rep(rep);
  uint64_t cpu = ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * 1000000000u +
                 ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000u;
  /* The program ran where ic-run is pinned: it inherits the affinity. */
  ic_sample_t total = {.wall_ns = t1 - t0, .cpu_ns = wall ? t1 - t0 : cpu,
                       .nivcsw = ru.ru_nivcsw, .cpu = ic_regions_cpu(), .entries = 1};
  ic_regions_record(0, &total);
  for (int i = 0; i < nlearnt; i++)
    if (b->samples[i].entries)
      ic_regions_record(i + 1, &b->samples[i]);
}

static void print_ready(const ic_optval_t *c, const char *prog, bool rt, const char *why) {
  ic_json_t j;
  ic_json_begin(&j, stdout);
  ic_json_str(&j, "event", "ready");
  ic_json_i64(&j, "pid", (int64_t)getpid());
  ic_json_str(&j, "kind", "program");
  ic_json_str(&j, "program", prog);
  ic_protocol_ready_fields(&j, &(ic_protocol_ready_t){
                                   .cpu = c[C_CPU].set ? (int64_t)c[C_CPU].u : -1,
                                   .rt = rt,
                                   .sync = c[C_SYNC].set,
                                   .reps = c[C_REPS].u,
                                   .seed = c[C_SEED].u,
                                   .clock_why = why});
  ic_json_str(&j, "total", "the whole run: rusage CPU time of every thread, fork to reap wall");
  ic_json_array(&j, "regions");
  ic_json_object(&j, NULL);
  ic_json_i64(&j, "id", 0);
  ic_json_str(&j, "name", "total");
  ic_json_pop(&j);
  ic_json_pop(&j);
  ic_json_end(&j);
}

static void print_end(int reps, uint64_t dropped) {
  ic_json_t j;
  ic_json_begin(&j, stdout);
  ic_json_str(&j, "event", "end");
  ic_json_str(&j, "kind", "program");
  ic_json_i64(&j, "reps", reps);
  ic_protocol_end_fields(&j, dropped + ic_regions_dropped());
  ic_json_end(&j);
}

int main(int argc, char **argv) {
  ic_set_progname("ic-run");
  ic_optval_t c[IC_NOPTS(opts)];
  const ic_optset_t set = {opts, IC_NOPTS(opts), c};
  char **prog = ic_spawn_args(&set, argc, argv, C_HELP, usage);
  if (c[C_CPU].set)
    ic_pin_cpu_or_die((int)c[C_CPU].u);
  int reps = (int)c[C_REPS].u;
  if (!ic_regions_init(names, NREGIONS, reps))
    ic_die(IC_EXIT_FAIL, "cannot set up the sample buffer");
  char why[256];
  ic_protocol_choose_clock(c[C_CLOCK].u, why, sizeof why);
  bool wall = ic_protocol_wall();
  /* The block is inherited (no close-on-exec); the program's stderr lands in err_fd. */
  int block_fd = memfd("ic-run-block", sizeof(ic_run_block_t), 0);
  ic_run_block_t *b = mmap(NULL, sizeof *b, PROT_READ | PROT_WRITE, MAP_SHARED, block_fd, 0);
  if (b == MAP_FAILED)
    ic_die(IC_EXIT_FAIL, "cannot map the shared block: %s", strerror(errno));
  int err_fd = memfd("ic-run-stderr", 0, MFD_CLOEXEC);
  char fdtext[16];
  snprintf(fdtext, sizeof fdtext, "%d", block_fd);
  if (setenv(IC_RUN_FD_ENV, fdtext, 1) || setenv(IC_RUN_CLOCK_ENV, wall ? "wall" : "cpu", 1))
    ic_die(IC_EXIT_FAIL, "cannot set the program's environment");
  /* No SA_RESTART: a stop ends the wait for "go" too. */
  struct sigaction sa = {.sa_handler = on_stop};
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  bool rt = c[C_RT].set && ic_set_rt_priority((int)c[C_RT].u);
  print_ready(c, prog[0], rt, why);
  uint64_t dropped = 0;
  int rep;
  for (rep = 0; rep < reps && !stop_signal; rep++) {
    if (c[C_SYNC].set && !ic_protocol_go())
      break;
    if (stop_signal)
      break;
    run_one(prog, rep, b, err_fd, wall, &dropped);
    if (c[C_SYNC].set)
      ic_protocol_rep_line(rep);
  }
  if (stop_signal)
    return 128 + stop_signal;
  ic_regions_flush(stdout, NULL, NULL);
  print_end(rep, dropped);
  ic_regions_fini();
  return IC_EXIT_OK;
}
