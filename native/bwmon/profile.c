/* ic-profile: the periodic memory-bandwidth profiler of paper 004 (docs/native-contract.md,
 * "Profiler").
 *
 *   ic-profile [options] --source SPEC [--source SPEC]... -- COMMAND [ARG]...
 *   ic-profile [options] --source SPEC --self-test DURATION
 *
 * The profiler runs on its own core and busy-waits on the cycle counter from one sample
 * time to the next (a timer would fire late by a good part of a 10 µs interval); each
 * sample stores the cycle counter and one reading per source in a buffer allocated and
 * faulted in before the command starts. Nothing is written until the command has ended:
 * the samples go to --out as a binary array, the command's region tags (ic_tag.h) to
 * --tags-out, and one JSON line on stdout says how to read both. Python turns counts into
 * bytes and ticks into nanoseconds (the end line carries two clock pairs for that). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ic_arch.h"
#include "ic_common.h"
#include "ic_opts.h"
#include "ic_tag.h"
#include "source.h"

enum { MAX_SOURCES = 4, TAG_CAPACITY_MAX = 1u << 24 };

enum {
  O_SOURCE, O_INTERVAL, O_CPU, O_TARGET_CPU, O_RT, O_TARGET_RT, O_DURATION, O_MAX_SAMPLES,
  O_OUT, O_TAGS_OUT, O_TAG_CAPACITY, O_COMMAND_OUTPUT, O_SELF_TEST, O_SEED, O_MLOCK, O_HELP
};

static const ic_opt_t opts[] = {
    [O_SOURCE] = {.name = "source", .type = IC_OPT_STRING, .metavar = "SPEC",
                  .help = "what to sample, repeatable (up to 4): perf:TYPE:CONFIG[:CONFIG1]/"
                          "SCOPE, file:PATH or probe:SIZE:LINES (docs/native-contract.md)"},
    [O_INTERVAL] = {.name = "interval", .type = IC_OPT_DURATION, .def = "10us",
                    .help = "time between samples, 1us..1s"},
    [O_CPU] = {.name = "cpu", .type = IC_OPT_U64, .max = CPU_SETSIZE - 1,
               .help = "the profiler's own core (dedicate it: nothing else should run there)"},
    [O_TARGET_CPU] = {.name = "target-cpu", .type = IC_OPT_U64, .max = CPU_SETSIZE - 1,
                      .help = "pin the command to this CPU; unset: wherever the kernel puts it"},
    [O_RT] = IC_OPT_ENTRY_RT_PRIORITY,
    [O_TARGET_RT] = {.name = "target-rt-priority", .type = IC_OPT_U64, .min = 1, .max = 99,
                     .metavar = "P", .help = "run the command SCHED_FIFO at priority P"},
    [O_DURATION] = {.name = "duration", .type = IC_OPT_DURATION, .def = "0",
                    .help = "stop profiling after this long and stop the command "
                            "(SIGTERM); 0: until the command exits"},
    [O_MAX_SAMPLES] = {.name = "max-samples", .type = IC_OPT_U64, .def = "2000000", .min = 1,
                       .max = 100000000,
                       .help = "samples kept in memory; profiling stops (truncated) when full"},
    [O_OUT] = {.name = "out", .type = IC_OPT_STRING, .metavar = "FILE",
               .help = "samples as little-endian u64 records {tick, reading per source}; "
                       "created, never overwritten"},
    [O_TAGS_OUT] = {.name = "tags-out", .type = IC_OPT_STRING, .metavar = "FILE",
                    .help = "the command's region tags as 16-byte records (ic_tag.h); "
                            "created, never overwritten; unset: tags are not collected"},
    [O_TAG_CAPACITY] = {.name = "tag-capacity", .type = IC_OPT_U64, .def = "65536", .min = 16,
                        .max = TAG_CAPACITY_MAX, .help = "tags kept; later ones are counted "
                                                         "as dropped"},
    [O_COMMAND_OUTPUT] = {.name = "command-output", .type = IC_OPT_STRING, .metavar = "FILE",
                          .help = "the command's stdout and stderr go to this new file; "
                                  "unset: inherited"},
    [O_SELF_TEST] = {.name = "self-test", .type = IC_OPT_DURATION,
                     .help = "profile a counting loop on --target-cpu for this long instead "
                             "of a command (paper 004's flat profile)"},
    [O_SEED] = {.name = "seed", .type = IC_OPT_U64, .def = "1",
                .help = "seed of the probe's chase layout"},
    [O_MLOCK] = IC_OPT_ENTRY_MLOCK,
    [O_HELP] = IC_OPT_ENTRY_HELP,
};

static volatile sig_atomic_t child_done;

static void on_chld(int sig) {
  (void)sig;
  child_done = 1;
}

static void usage(FILE *f) {
  fprintf(f, "usage: ic-profile [options] --source SPEC... --out FILE -- COMMAND [ARG]...\n"
             "       ic-profile [options] --source SPEC... --out FILE --self-test DURATION\n\n"
             "Samples memory traffic every --interval on a dedicated core while COMMAND runs.\n\n"
             "options:\n");
  ic_opts_help(f, opts, IC_NOPTS(opts));
  ic_opts_units_help(f);
}

/* Created exclusively and never through a symlink: the profiler runs as root. */
static int create_output(const char *path, const char *opt) {
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0)
    ic_usage_error(opt, "cannot create %s: %s", path, strerror(errno));
  return fd;
}

/* Ticks per second, measured against CLOCK_MONOTONIC over `ms` milliseconds. */
static double tick_hz(unsigned ms) {
  uint64_t n0 = ic_now_ns(), t0 = ic_tick();
  while (ic_now_ns() - n0 < (uint64_t)ms * 1000000u)
    ic_arch_relax();
  uint64_t n1 = ic_now_ns(), t1 = ic_tick();
  return (double)(t1 - t0) * 1e9 / (double)(n1 - n0);
}

static const char *tick_name(void) {
#if defined(IC_ARCH_HAVE_CYCLES) && defined(__x86_64__)
  return "tsc";
#elif defined(IC_ARCH_HAVE_CYCLES) && defined(__aarch64__)
  return "cntvct";
#else
  return "monotonic_ns";
#endif
}

typedef struct {
  ic_src_t src[MAX_SOURCES];
  int nsrc;
  uint64_t *buf; /* max_samples records of 1 + nsrc words */
  uint64_t max_samples, nsamples, missed, failed_reads;
  bool truncated;
  uint64_t interval_ticks;
  uint64_t t0_tick, t0_ns, t1_tick, t1_ns;
  ic_tag_ring_t *ring;
  size_t ring_bytes;
  int ring_fd;
} profile_t;

/* The counting loop of paper 004 §3.2: register-only arithmetic, no memory traffic. */
static uint64_t count_for(double seconds, uint64_t x) {
  uint64_t end = ic_now_ns() + (uint64_t)(seconds * 1e9);
  while (ic_now_ns() < end)
    x = ic_spin(x, 4096);
  return x;
}

typedef struct {
  pid_t pid;
  int go_fd;   /* write end: one byte releases the child */
  int err_fd;  /* read end: errno of a failed exec; EOF on success */
} child_t;

static child_t spawn(char **argv, const ic_optval_t *o, int ring_fd, int output_fd) {
  int go[2], err[2];
  if (pipe2(go, O_CLOEXEC) || pipe2(err, O_CLOEXEC))
    ic_die(IC_EXIT_FAIL, "pipe: %s", strerror(errno));
  pid_t pid = fork();
  if (pid < 0)
    ic_die(IC_EXIT_FAIL, "fork: %s", strerror(errno));
  if (pid == 0) {
    close(go[1]);
    close(err[0]);
    /* The command does not outlive its profiler, whatever kills the profiler. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    signal(SIGCHLD, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    if (o[O_TARGET_CPU].set) {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET((int)o[O_TARGET_CPU].u, &set);
      if (sched_setaffinity(0, sizeof set, &set)) {
        int e = errno;
        (void)!write(err[1], &e, sizeof e);
        _exit(127);
      }
    }
    if (o[O_TARGET_RT].set) {
      struct sched_param sp = {.sched_priority = (int)o[O_TARGET_RT].u};
      if (sched_setscheduler(0, SCHED_FIFO, &sp))
        ic_warn("--target-rt-priority refused (%s); the command runs SCHED_OTHER",
                strerror(errno));
    }
    if (output_fd >= 0 && (dup2(output_fd, 1) < 0 || dup2(output_fd, 2) < 0))
      _exit(127);
    if (ring_fd >= 0) {
      char num[16];
      snprintf(num, sizeof num, "%d", ring_fd);
      setenv(IC_TAG_ENV, num, 1);
    }
    /* The loop's first page touches after fork (copy-on-write) belong to set-up. */
    uint64_t x = o[O_SELF_TEST].set ? count_for(0.005, 1) : 0;
    char c;
    if (read(go[0], &c, 1) != 1)
      _exit(127); /* the profiler died before releasing us */
    if (o[O_SELF_TEST].set)
      _exit(count_for(o[O_SELF_TEST].d, x | 1) == 0); /* never 0: keeps the work alive */
    execvp(argv[0], argv);
    int e = errno;
    (void)!write(err[1], &e, sizeof e);
    _exit(127);
  }
  close(go[0]);
  close(err[1]);
  /* Also from here: the child inherits our CPU and must not wait for it to move itself
   * while we already busy-wait there. */
  if (o[O_TARGET_CPU].set) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET((int)o[O_TARGET_CPU].u, &set);
    sched_setaffinity(pid, sizeof set, &set);
  }
  return (child_t){pid, go[1], err[0]};
}

/* A memfd the child inherits (not close-on-exec): no file under /dev/shm to clean up or
 * to be raced for. */
static void make_ring(profile_t *p, uint32_t capacity) {
  p->ring_bytes = (size_t)ic_tag_ring_bytes(capacity);
  p->ring_fd = memfd_create("ic-profile-tags", 0);
  if (p->ring_fd < 0 || ftruncate(p->ring_fd, (off_t)p->ring_bytes))
    ic_die(IC_EXIT_FAIL, "cannot create the tag ring: %s", strerror(errno));
  p->ring = mmap(NULL, p->ring_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, p->ring_fd, 0);
  if (p->ring == MAP_FAILED)
    ic_die(IC_EXIT_FAIL, "cannot map the tag ring: %s", strerror(errno));
  memset(p->ring, 0, sizeof *p->ring);
  p->ring->version = 1;
  p->ring->capacity = capacity;
  p->ring->magic = IC_TAG_MAGIC;
}

/* One sample for the slot at tick `slot`, kept only if its counters were read within half
 * an interval of the slot: a check made before the read alone would let a preemption (or a
 * vCPU the hypervisor took away) between the check and the read store a late sample, or an
 * on-time tick beside counters read much later. Returns whether the sample was kept. */
static bool store(profile_t *p, uint64_t slot, uint64_t half) {
  uint64_t *rec = &p->buf[p->nsamples * (uint64_t)(1 + p->nsrc)];
  uint64_t failed = 0;
  rec[0] = ic_tick();
  for (int i = 0; i < p->nsrc; i++) {
    rec[1 + i] = ic_src_read(&p->src[i]);
    failed += rec[1 + i] == UINT64_MAX;
  }
  if (ic_tick() - slot > half)
    return false;
  p->failed_reads += failed;
  p->nsamples++;
  return true;
}

/* The busy-wait loop: sample times are start + k·interval. A slot the profiler woke up for
 * more than half an interval late (it was preempted), or was preempted while sampling, is
 * skipped and counted as missed, never served late: every stored sample lies within half an
 * interval of its slot. */
static void sample(profile_t *p, uint64_t deadline_tick) {
  const uint64_t half = p->interval_ticks / 2;
  uint64_t next = ic_tick();
  p->t0_ns = ic_now_ns();
  p->t0_tick = ic_tick();
  while (!child_done && !ic_stop_requested) {
    uint64_t now;
    while ((now = ic_tick()) < next)
      ic_arch_relax();
    if (now >= deadline_tick)
      break;
    if (now - next > half) {
      uint64_t late = (now - next) / p->interval_ticks + 1;
      p->missed += late;
      next += late * p->interval_ticks;
      continue;
    }
    if (p->nsamples == p->max_samples) {
      p->truncated = true;
      break;
    }
    if (!store(p, next, half))
      p->missed++;
    next += p->interval_ticks;
  }
  p->t1_tick = ic_tick();
  p->t1_ns = ic_now_ns();
}

static void sources_json(ic_json_t *j, const profile_t *p) {
  ic_json_array(j, "sources");
  for (int i = 0; i < p->nsrc; i++) {
    const ic_src_t *s = &p->src[i];
    ic_json_object(j, NULL);
    ic_json_str(j, "spec", s->spec);
    ic_json_str(j, "kind", ic_src_kind_name(s->kind));
    if (s->kind == IC_SRC_PROBE) {
      ic_json_u64(j, "lines", ic_src_probe_lines(s));
      ic_json_u64(j, "bytes", ic_src_probe_bytes(s));
      ic_json_u64(j, "page", ic_src_probe_page(s));
      ic_json_u64(j, "line", ic_line_size());
    }
    ic_json_pop(j);
  }
  ic_json_pop(j);
}

static void print_ready(const profile_t *p, const ic_optval_t *o, pid_t child, bool rt,
                        double hz) {
  ic_json_t j;
  ic_json_begin(&j, stdout);
  ic_json_str(&j, "event", "ready");
  ic_json_i64(&j, "pid", getpid());
  ic_json_i64(&j, "child_pid", child);
  ic_json_i64(&j, "cpu", o[O_CPU].set ? (int64_t)o[O_CPU].u : -1);
  ic_json_i64(&j, "target_cpu", o[O_TARGET_CPU].set ? (int64_t)o[O_TARGET_CPU].u : -1);
  ic_json_bool(&j, "rt", rt);
  ic_json_u64(&j, "interval_ns", (uint64_t)(o[O_INTERVAL].d * 1e9 + 0.5));
  ic_json_u64(&j, "interval_ticks", p->interval_ticks);
  ic_json_str(&j, "tick", tick_name());
  ic_json_f64(&j, "tick_hz", hz);
  ic_json_u64(&j, "max_samples", p->max_samples);
  ic_json_bool(&j, "self_test", o[O_SELF_TEST].set);
  sources_json(&j, p);
  ic_json_end(&j);
}

/* "ring": the tag ring's names and sites (for the end line), null without a ring. The
 * strings are copied out first: the profiled program wrote them, terminated or not. */
static void ring_json(ic_json_t *j, const ic_tag_ring_t *r) {
  if (!r) {
    ic_json_null(j, "ring");
    return;
  }
  ic_json_object(j, "ring");
  ic_json_array(j, "names");
  uint32_t nn = r->nnames < IC_TAG_MAX_NAMES ? r->nnames : IC_TAG_MAX_NAMES;
  for (uint32_t i = 0; i < nn; i++) {
    char name[IC_TAG_NAME_LEN];
    snprintf(name, sizeof name, "%s", r->names[i]);
    ic_json_str(j, NULL, name);
  }
  ic_json_pop(j);
  ic_json_array(j, "sites");
  uint32_t ns = r->nsites < IC_TAG_MAX_SITES ? r->nsites : IC_TAG_MAX_SITES;
  for (uint32_t i = 0; i < ns; i++) {
    char file[IC_TAG_FILE_LEN];
    snprintf(file, sizeof file, "%s", r->sites[i].file);
    ic_json_object(j, NULL);
    ic_json_str(j, "file", file);
    ic_json_u64(j, "line", r->sites[i].line);
    ic_json_i64(j, "region", r->sites[i].region);
    ic_json_pop(j);
  }
  ic_json_pop(j);
  ic_json_pop(j);
}

static int end_child(pid_t pid, double grace_s, int *status) {
  for (uint64_t end = ic_now_ns() + (uint64_t)(grace_s * 1e9);;) {
    pid_t r = waitpid(pid, status, WNOHANG);
    if (r == pid)
      return 0;
    if (r < 0)
      return -1;
    if (ic_now_ns() > end) {
      kill(pid, SIGKILL);
      return waitpid(pid, status, 0) == pid ? 0 : -1;
    }
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
}

int main(int argc, char **argv) {
  ic_set_progname("ic-profile");
  int dash = 0;
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--")) {
      dash = i;
      break;
    }
  ic_optval_t o[IC_NOPTS(opts)];
  const ic_optset_t set = {opts, IC_NOPTS(opts), o};
  /* --source repeats: collect them before the table parser, which keeps the last. */
  const char *specs[MAX_SOURCES];
  int nspecs = 0, nargs = dash ? dash : argc;
  char **args = malloc(sizeof *args * (size_t)nargs);
  int kept = 0;
  for (int i = 0; i < nargs; i++) {
    if (i > 0 && !strcmp(argv[i], "--source") && i + 1 < nargs) {
      if (nspecs == MAX_SOURCES)
        ic_usage_error("--source", "at most %d sources", MAX_SOURCES);
      specs[nspecs++] = argv[++i];
      continue;
    }
    if (i > 0 && !strncmp(argv[i], "--source=", 9)) {
      if (nspecs == MAX_SOURCES)
        ic_usage_error("--source", "at most %d sources", MAX_SOURCES);
      specs[nspecs++] = argv[i] + 9;
      continue;
    }
    args[kept++] = argv[i];
  }
  ic_opts_main(&set, kept, args, O_HELP, usage);
  free(args); /* the values point into argv, not into this array */
  char **command = dash ? argv + dash + 1 : NULL;
  bool self_test = o[O_SELF_TEST].set;
  if (self_test == (command && *command))
    ic_usage_error(NULL, "give either -- COMMAND or --self-test DURATION");
  if (!nspecs)
    ic_usage_error("--source", "at least one source is needed");
  if (!o[O_OUT].set)
    ic_usage_error("--out", "the samples file is needed");
  double interval = o[O_INTERVAL].d;
  if (interval < 1e-6 || interval > 1.0)
    ic_usage_error("--interval", "must be 1us..1s");
  if (self_test && o[O_SELF_TEST].d <= 0)
    ic_usage_error("--self-test", "must be a positive duration");

  profile_t p = {.nsrc = nspecs, .max_samples = o[O_MAX_SAMPLES].u, .ring_fd = -1};
  char err[IC_SRC_ERR_LEN];
  for (int i = 0; i < nspecs; i++)
    if (!ic_src_parse(&p.src[i], specs[i], err, sizeof err))
      ic_usage_error("--source", "%s", err);
  int out_fd = create_output(o[O_OUT].s, "--out");
  int tags_fd = o[O_TAGS_OUT].set ? create_output(o[O_TAGS_OUT].s, "--tags-out") : -1;
  int cmd_fd = o[O_COMMAND_OUTPUT].set ? create_output(o[O_COMMAND_OUTPUT].s, "--command-output")
                                       : -1;

  size_t bytes = (size_t)p.max_samples * (size_t)(1 + p.nsrc) * sizeof(uint64_t);
  p.buf = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
               -1, 0);
  if (p.buf == MAP_FAILED)
    ic_die(IC_EXIT_FAIL, "cannot allocate %zu bytes of samples", bytes);
  double hz = tick_hz(20);
  p.interval_ticks = (uint64_t)(interval * hz + 0.5);
  if (p.interval_ticks < 1)
    p.interval_ticks = 1;
  if (tags_fd >= 0)
    make_ring(&p, (uint32_t)o[O_TAG_CAPACITY].u);

  struct sigaction sa = {.sa_handler = on_chld, .sa_flags = SA_RESTART | SA_NOCLDSTOP};
  sigemptyset(&sa.sa_mask);
  sigaction(SIGCHLD, &sa, NULL);
  ic_catch_stop_signals(SA_RESTART);

  child_t child = spawn(self_test ? argv : command, o, p.ring_fd, cmd_fd);
  if (cmd_fd >= 0)
    close(cmd_fd);
  if (o[O_CPU].set)
    ic_pin_cpu_or_die((int)o[O_CPU].u);
  for (int i = 0; i < p.nsrc; i++)
    if (!ic_src_open(&p.src[i], child.pid, o[O_SEED].u + (uint64_t)i, err, sizeof err)) {
      kill(child.pid, SIGKILL);
      waitpid(child.pid, NULL, 0);
      unlink(o[O_OUT].s);
      if (tags_fd >= 0)
        unlink(o[O_TAGS_OUT].s);
      if (o[O_COMMAND_OUTPUT].set)
        unlink(o[O_COMMAND_OUTPUT].s);
      ic_die(IC_EXIT_UNSUPPORTED, "cannot open source: %s", err);
    }
  if (self_test) /* no exec will enable the task-scoped counters */
    for (int i = 0; i < p.nsrc; i++)
      ic_src_enable(&p.src[i]);
  if (o[O_MLOCK].set)
    ic_lock_memory();
  bool rt = o[O_RT].set && ic_set_rt_priority((int)o[O_RT].u);
  print_ready(&p, o, child.pid, rt, hz);
  uint64_t cpu0 = ic_process_cpu_ns();
  uint64_t deadline = o[O_DURATION].d > 0 ? ic_tick() + (uint64_t)(o[O_DURATION].d * hz)
                                          : UINT64_MAX;
  if (write(child.go_fd, "g", 1) != 1)
    ic_die(IC_EXIT_FAIL, "cannot release the command: %s", strerror(errno));
  close(child.go_fd);
  sample(&p, deadline);
  uint64_t cpu_ns = ic_process_cpu_ns() - cpu0;
  if (rt) { /* the rest is bookkeeping: give the core back */
    struct sched_param sp = {0};
    sched_setscheduler(0, SCHED_OTHER, &sp);
  }

  if (!child_done)
    kill(child.pid, SIGTERM);
  int status = 0;
  end_child(child.pid, 5.0, &status);
  /* After the child is gone: its end of the pipe closed at exec, or at its exit. */
  int exec_errno = 0;
  if (read(child.err_fd, &exec_errno, sizeof exec_errno) != (ssize_t)sizeof exec_errno)
    exec_errno = 0;

  bool ok = ic_write_all(out_fd, p.buf, (size_t)p.nsamples * (size_t)(1 + p.nsrc) * 8);
  uint64_t ntags = 0, tags_dropped = 0;
  if (p.ring) {
    ntags = p.ring->head < p.ring->capacity ? p.ring->head : p.ring->capacity;
    tags_dropped = p.ring->head - ntags;
    ok = ic_write_all(tags_fd, p.ring->tags, (size_t)ntags * sizeof(ic_tag_t)) && ok;
  }
  close(out_fd);
  if (tags_fd >= 0)
    close(tags_fd);
  if (!ok)
    ic_die(IC_EXIT_FAIL, "cannot write the samples: %s", strerror(errno));

  ic_json_t j;
  ic_json_begin(&j, stdout);
  ic_json_str(&j, "event", "end");
  ic_json_u64(&j, "samples", p.nsamples);
  ic_json_u64(&j, "record_words", (uint64_t)(1 + p.nsrc));
  ic_json_u64(&j, "missed", p.missed);
  ic_json_u64(&j, "failed_reads", p.failed_reads);
  ic_json_bool(&j, "truncated", p.truncated);
  ic_json_bool(&j, "stopped", ic_stop_requested);
  ic_json_bool(&j, "timed_out", !child_done && !ic_stop_requested && !p.truncated);
  ic_json_i64(&j, "exit_code", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  ic_json_i64(&j, "signal", WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  ic_json_i64(&j, "exec_errno", exec_errno);
  ic_json_u64(&j, "t0_tick", p.t0_tick);
  ic_json_u64(&j, "t0_ns", p.t0_ns);
  ic_json_u64(&j, "t1_tick", p.t1_tick);
  ic_json_u64(&j, "t1_ns", p.t1_ns);
  ic_json_u64(&j, "profiler_cpu_ns", cpu_ns);
  ic_json_u64(&j, "tags", ntags);
  ic_json_u64(&j, "tags_dropped", tags_dropped);
  ring_json(&j, p.ring);
  ic_json_end(&j);
  for (int i = 0; i < p.nsrc; i++)
    ic_src_close(&p.src[i]);
  if (exec_errno)
    ic_die(IC_EXIT_USAGE, "cannot run %s: %s", command ? command[0] : "?", strerror(exec_errno));
  return IC_EXIT_OK;
}
