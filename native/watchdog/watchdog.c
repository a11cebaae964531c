/* ic-watchdog --channel FD [options]: the fail-safe of a process that freezes cgroups or
 * creates them (docs/native-contract.md, "Watchdog").
 *
 * It shares nothing with its client that the client's failure could take down: it is a
 * process of its own, started by the client before it does anything dangerous, in a
 * session and process group of its own (setsid: `kill -9 -PGID` of the client's command
 * does not reach it), on every online CPU but the ones the client runs on, at SCHED_FIFO
 * 99, with its memory locked. It learns the client's death from the kernel (end of file on
 * a socket only the client holds, whatever killed it) and its hang from a heartbeat lease
 * in shared memory (a SIGSTOP, or a FIFO-99 hog on the client's CPU). Then it thaws every
 * group it guards and, when the client is dead, removes the cgroup trees it was told the
 * client owns: only directories that carry the client's creation token, never a path that
 * intercore did not create. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "ic_cgroup.h"
#include "ic_common.h"
#include "ic_freezelog.h"
#include "ic_opts.h"
#include "wd_page.h"

enum { O_CHANNEL, O_HEARTBEAT, O_LOG_FD, O_AVOID_CPU, O_RT, O_HELP };

static const ic_opt_t opts[] = {
    [O_CHANNEL] = {.name = "channel", .type = IC_OPT_U64, .max = 1023, .metavar = "FD",
                   .help = "the SOCK_SEQPACKET socket shared with the client (required): "
                           "commands in, replies out; its end of file is the client's death"},
    [O_HEARTBEAT] = {.name = "heartbeat", .type = IC_OPT_U64, .max = 1023, .metavar = "FD",
                     .help = "the client's 4 KiB heartbeat page (a memfd); needed by 'lease'"},
    [O_LOG_FD] = {.name = "log-fd", .type = IC_OPT_U64, .max = 1023, .metavar = "FD",
                  .help = "append one JSON line per thaw and removal to this descriptor"},
    [O_AVOID_CPU] = {.name = "avoid-cpu", .type = IC_OPT_STRING, .metavar = "N[,N]",
                     .help = "run on any online CPU but these (the client's), when one is left"},
    [O_RT] = {.name = "rt-priority", .type = IC_OPT_U64, .def = "99", .min = 1, .max = 99,
              .metavar = "P", .help = "SCHED_FIFO priority; if refused: a warning, \"rt\":false"},
    [O_HELP] = IC_OPT_ENTRY_HELP,
};

#define MAX_GUARDED 64
#define MAX_OWNED 16
#define MAX_SCRATCH 4
#define TOKEN_XATTR "trusted.intercore.token"
/* Removing an owned tree waits this long for the client's children to leave it. */
#define REMOVE_PATIENCE_NS 3000000000ULL

typedef struct {
  char path[4096];
  char token[80];
} owned_t;

static struct {
  int chan, log_fd;
  ic_wd_page_t *page;
  uint64_t lease_ns;
  char name[64];
  ic_cgroup_t guarded[MAX_GUARDED];
  char *guarded_paths[MAX_GUARDED];
  size_t nguarded;
  owned_t owned[MAX_OWNED];
  size_t nowned;
  struct {
    int fd; /* opened at registration: O_DIRECTORY|O_NOFOLLOW */
    char path[4096];
  } scratch[MAX_SCRATCH];
  size_t nscratch;
} wd = {.chan = -1, .log_fd = -1};

static void logline(const char *action, const char *group, const char *why, int err) {
  ic_log_write_now(wd.log_fd, &(ic_log_entry_t){.t_ns = ic_now_ns(), .action = action,
                                                .group = group, .reason = why, .job = -1,
                                                .error = err, .by = "watchdog"});
}

static void reply(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void reply(const char *fmt, ...) {
  char msg[IC_WD_MSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (n > 0)
    send(wd.chan, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1, MSG_NOSIGNAL);
}

/* Every write first, then the log: the groups must not wait for the disk. */
static void thaw_guarded(const char *why) {
  uint64_t t[MAX_GUARDED];
  int err[MAX_GUARDED];
  for (size_t i = 0; i < wd.nguarded; i++) {
    err[i] = ic_cgroup_set_frozen(&wd.guarded[i], false);
    t[i] = ic_now_ns();
  }
  for (size_t i = 0; i < wd.nguarded; i++)
    ic_log_write_now(wd.log_fd, &(ic_log_entry_t){.t_ns = t[i], .action = "thaw",
                                                  .group = wd.guarded[i].path, .reason = why,
                                                  .job = -1, .error = err[i], .by = "watchdog"});
}

/* ---- owned trees -------------------------------------------------------------------------- */

/* The directory carries the owner's creation token (written by the client right after
 * mkdir): a directory intercore did not create has none, so it is never touched. */
static bool has_token(const char *dir, const char *token) {
  char value[128];
  ssize_t n = lgetxattr(dir, TOKEN_XATTR, value, sizeof value - 1);
  if (n <= 0)
    return false;
  value[n] = '\0';
  return !strcmp(value, token);
}

static void write_file(const char *dir, const char *file, const char *text) {
  char path[4200];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  int fd = open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return;
  ssize_t ignored = write(fd, text, strlen(text));
  (void)ignored;
  close(fd);
}

/* Thaws the directory whatever its freezer: a frozen v1 task cannot even be killed. */
static void thaw_dir(const char *dir) {
  write_file(dir, "cgroup.freeze", "0");
  write_file(dir, "freezer.state", "THAWED");
}

/* Moves every task of dir to `parent_procs` (the owned root's parent's cgroup.procs). */
static void evacuate(const char *dir, const char *parent_procs) {
  char path[4200];
  snprintf(path, sizeof path, "%s/cgroup.procs", dir);
  FILE *f = fopen(path, "re");
  if (!f)
    return;
  int pid;
  while (fscanf(f, "%d", &pid) == 1) {
    int fd = open(parent_procs, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) {
      char text[32];
      int len = snprintf(text, sizeof text, "%d", pid);
      ssize_t ignored = write(fd, text, (size_t)len);
      (void)ignored;
      close(fd);
    }
  }
  fclose(f);
}

/* Thaws, empties and removes dir and the subdirectories that carry the token, deepest first.
 * Returns true when dir is gone. */
static bool remove_tree(const char *dir, const char *token, const char *parent_procs,
                        uint64_t give_up) {
  if (!has_token(dir, token))
    return false;
  thaw_dir(dir);
  DIR *d = opendir(dir);
  if (d) {
    struct dirent *e;
    while ((e = readdir(d))) {
      if (e->d_type != DT_DIR || e->d_name[0] == '.')
        continue;
      char sub[4200];
      if (snprintf(sub, sizeof sub, "%s/%s", dir, e->d_name) < (int)sizeof sub)
        remove_tree(sub, token, parent_procs, give_up);
    }
    closedir(d);
  }
  for (;;) {
    evacuate(dir, parent_procs);
    if (!rmdir(dir)) {
      logline("remove", dir, "owner-died", 0);
      return true;
    }
    /* EBUSY: the client's children are still leaving (they die with their parent). */
    if (errno != EBUSY || ic_now_ns() > give_up) {
      logline("remove", dir, "owner-died", errno);
      return false;
    }
    struct timespec ms = {.tv_nsec = 5000000};
    nanosleep(&ms, NULL);
  }
}

static void remove_owned(void) {
  uint64_t give_up = ic_now_ns() + REMOVE_PATIENCE_NS;
  for (size_t i = wd.nowned; i-- > 0;) {
    owned_t *o = &wd.owned[i];
    char parent[4200], *slash;
    snprintf(parent, sizeof parent, "%s", o->path);
    if (!(slash = strrchr(parent, '/')) || slash == parent)
      continue;
    strcpy(slash, "/cgroup.procs");
    remove_tree(o->path, o->token, parent, give_up);
  }
}

/* The client's private directory of shared-memory files: its files (never a directory,
 * never through a link: unlinkat on the descriptor taken at registration) and the
 * directory itself, if the name still leads to that same directory. */
static void remove_scratch(void) {
  for (size_t i = 0; i < wd.nscratch; i++) {
    int fd = wd.scratch[i].fd;
    DIR *d = fdopendir(dup(fd));
    struct dirent *e;
    while (d && (e = readdir(d)))
      if (e->d_type != DT_DIR)
        unlinkat(fd, e->d_name, 0);
    if (d)
      closedir(d);
    struct stat held, named;
    if (!fstat(fd, &held) && !lstat(wd.scratch[i].path, &named) && held.st_dev == named.st_dev &&
        held.st_ino == named.st_ino)
      rmdir(wd.scratch[i].path);
    close(fd);
  }
}

static void add_scratch(const char *dir) {
  struct stat st;
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (wd.nscratch == MAX_SCRATCH || fd < 0 || fstat(fd, &st) || st.st_uid != geteuid() ||
      (st.st_mode & 07777) != 0700 || strlen(dir) >= sizeof wd.scratch[0].path) {
    if (fd >= 0)
      close(fd);
    reply("error %s is not a private directory of ours (mode 0700, no link)", dir);
    return;
  }
  wd.scratch[wd.nscratch].fd = fd;
  snprintf(wd.scratch[wd.nscratch++].path, sizeof wd.scratch[0].path, "%s", dir);
  reply("ok");
}

/* ---- the channel -------------------------------------------------------------------------- */

static void add_guard(const char *dir) {
  if (wd.nguarded == MAX_GUARDED) {
    reply("error at most %d guarded groups", MAX_GUARDED);
    return;
  }
  char why[4352];
  char *copy = strdup(dir);
  ic_cgroup_t *g = &wd.guarded[wd.nguarded];
  if (!copy || !ic_cgroup_open(g, copy, IC_ROLE_BEST_EFFORT, why, sizeof why)) {
    reply("error %s", copy ? why : "out of memory");
    free(copy);
    return;
  }
  if (g->freezer == IC_FREEZER_NONE) {
    ic_cgroup_close(g);
    reply("error %s has no freezer (cgroup.freeze or freezer.state)", dir);
    free(copy);
    return;
  }
  wd.guarded_paths[wd.nguarded++] = copy;
  reply("ok");
}

static void add_owned(char *args) {
  char *token = strrchr(args, ' ');
  if (!token || args[0] != '/' || strlen(token + 1) >= sizeof wd.owned[0].token ||
      strlen(args) >= sizeof wd.owned[0].path + sizeof wd.owned[0].token) {
    reply("error usage: own /ABSOLUTE/DIR TOKEN");
    return;
  }
  *token++ = '\0';
  if (wd.nowned == MAX_OWNED) {
    reply("error at most %d owned trees", MAX_OWNED);
    return;
  }
  owned_t *o = &wd.owned[wd.nowned++];
  snprintf(o->path, sizeof o->path, "%s", args);
  snprintf(o->token, sizeof o->token, "%s", token);
  reply("ok");
}

static void disown(const char *dir) {
  for (size_t i = 0; i < wd.nowned; i++)
    if (!strcmp(wd.owned[i].path, dir)) {
      wd.owned[i] = wd.owned[--wd.nowned];
      reply("ok");
      return;
    }
  reply("error %s is not owned", dir);
}

/* One command; returns false for 'quit'. */
static bool command(char *msg) {
  char *arg = strchr(msg, ' ');
  if (arg)
    *arg++ = '\0';
  if (!strcmp(msg, "quit")) {
    reply("ok");
    return false;
  }
  if (!strcmp(msg, "guard") && arg)
    add_guard(arg);
  else if (!strcmp(msg, "own") && arg)
    add_owned(arg);
  else if (!strcmp(msg, "disown") && arg)
    disown(arg);
  else if (!strcmp(msg, "scratch") && arg)
    add_scratch(arg);
  else if (!strcmp(msg, "name") && arg) {
    snprintf(wd.name, sizeof wd.name, "%s", arg);
    reply("ok");
  } else if (!strcmp(msg, "lease") && arg) {
    uint64_t ns;
    if (!ic_parse_u64(arg, &ns) || (ns && !wd.page))
      reply("error lease needs nanoseconds and a --heartbeat page");
    else {
      wd.lease_ns = ns;
      reply("ok");
    }
  } else {
    reply("error unknown command '%s' (guard, own, disown, scratch, name, lease, quit)", msg);
  }
  return true;
}

/* ---- set-up ------------------------------------------------------------------------------- */

/* Any online CPU but the client's; all of them when nothing else is left. */
static void place(const char *avoid) {
  cpu_set_t set;
  CPU_ZERO(&set);
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  for (long c = 0; c < n && c < CPU_SETSIZE; c++)
    CPU_SET((int)c, &set);
  cpu_set_t all = set;
  for (const char *p = avoid; p && *p;) {
    char *end;
    long c = strtol(p, &end, 10);
    if (end == p)
      ic_usage_error("--avoid-cpu", "'%s' is not a list of CPU numbers", avoid);
    if (c >= 0 && c < CPU_SETSIZE)
      CPU_CLR((int)c, &set);
    p = *end == ',' ? end + 1 : end;
  }
  if (!CPU_COUNT(&set) || sched_setaffinity(0, sizeof set, &set))
    sched_setaffinity(0, sizeof all, &all); /* an offline CPU in the mask: take them all */
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: %s --channel FD [--heartbeat FD] [--log-fd FD] [--avoid-cpu N[,N]]\n\n"
          "The fail-safe of a process that freezes or creates cgroups. Started by that client\n"
          "(see docs/native-contract.md, \"Watchdog\"), never by hand. Thaws every guarded\n"
          "group when the client dies or its heartbeat lease runs out, and removes the cgroup\n"
          "trees the client owned when it dies.\n\noptions:\n",
          ic_progname());
  ic_opts_help(f, opts, IC_NOPTS(opts));
}

static int fd_option(const ic_optval_t *o) { return o->set ? (int)o->u : -1; }

int main(int argc, char **argv) {
  ic_set_progname("ic-watchdog");
  ic_optval_t o[IC_NOPTS(opts)];
  ic_opts_main(&(ic_optset_t){opts, IC_NOPTS(opts), o}, argc, argv, O_HELP, usage);
  if (!o[O_CHANNEL].set)
    ic_usage_error("--channel", "the client's socket is required (ic-watchdog is started by "
                                "its client, see --help)");
  wd.chan = fd_option(&o[O_CHANNEL]);
  wd.log_fd = fd_option(&o[O_LOG_FD]);
  int type = 0;
  socklen_t len = sizeof type;
  if (getsockopt(wd.chan, SOL_SOCKET, SO_TYPE, &type, &len) || type != SOCK_SEQPACKET)
    ic_usage_error("--channel", "descriptor %d is not a SOCK_SEQPACKET socket", wd.chan);
  if (o[O_HEARTBEAT].set) {
    wd.page = mmap(NULL, IC_WD_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
                   fd_option(&o[O_HEARTBEAT]), 0);
    if (wd.page == MAP_FAILED || atomic_load(&wd.page->magic) != IC_WD_MAGIC)
      ic_usage_error("--heartbeat", "descriptor %d is not a heartbeat page",
                     fd_option(&o[O_HEARTBEAT]));
    close(fd_option(&o[O_HEARTBEAT]));
  }
  /* Out of the client's session and process group, so that nothing aimed at them (a
   * Ctrl-C, kill -PGID, a hang-up) reaches us. Ignored as well, for a session leader. */
  setsid();
  signal(SIGINT, SIG_IGN);
  signal(SIGTERM, SIG_IGN);
  signal(SIGHUP, SIG_IGN);
  signal(SIGPIPE, SIG_IGN);
  prctl(PR_SET_NAME, "ic-watchdog");
  int devnull = open("/dev/null", O_RDWR);
  if (devnull >= 0) { /* nobody reads our stdout, and a closed pipe must not stop us */
    dup2(devnull, STDIN_FILENO);
    dup2(devnull, STDOUT_FILENO);
    close(devnull);
  }
  place(o[O_AVOID_CPU].set ? o[O_AVOID_CPU].s : NULL);
  bool locked = mlockall(MCL_CURRENT | MCL_FUTURE) == 0;
  struct sched_param sp = {.sched_priority = (int)o[O_RT].u};
  bool rt = sched_setscheduler(0, SCHED_FIFO, &sp) == 0;
  snprintf(wd.name, sizeof wd.name, "client");
  reply("ready %d rt=%d mlock=%d cpu=%d", (int)getpid(), rt, locked, sched_getcpu());
  /* From here on, problems go to the log: a client reading our stderr would otherwise wait
   * for our exit to see its end of file. */
  int quiet = open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (quiet >= 0) {
    dup2(quiet, STDERR_FILENO);
    close(quiet);
  }

  bool expired = false;
  for (;;) {
    struct timespec ts, *timeout = NULL;
    uint64_t now = ic_now_ns();
    if (wd.lease_ns) {
      uint64_t beat = atomic_load_explicit(&wd.page->heartbeat_ns, memory_order_acquire);
      uint64_t due = beat + wd.lease_ns;
      if (now >= due && !expired) {
        /* Counted first: a client that sees the count move knows its freezes are gone. */
        atomic_fetch_add(&wd.page->expiries, 1);
        thaw_guarded("lease-expired");
      }
      expired = now >= due;
      /* Expired: look for a renewal a few times per lease. Otherwise wake at the expiry. */
      uint64_t wait = expired ? wd.lease_ns / 4 : due - now;
      ts = (struct timespec){.tv_sec = (time_t)(wait / 1000000000u),
                             .tv_nsec = (long)(wait % 1000000000u)};
      timeout = &ts;
    }
    struct pollfd p = {.fd = wd.chan, .events = POLLIN};
    int r = ppoll(&p, 1, timeout, NULL);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      continue;
    char msg[IC_WD_MSG_MAX];
    ssize_t got = recv(wd.chan, msg, sizeof msg - 1, MSG_DONTWAIT);
    if (got < 0 && (errno == EAGAIN || errno == EINTR))
      continue;
    if (got <= 0) { /* end of file: every copy of the client's end is closed */
      char why[96];
      snprintf(why, sizeof why, "%s-died", wd.name);
      thaw_guarded(why);
      remove_owned();
      remove_scratch();
      return IC_EXIT_OK;
    }
    msg[got] = '\0';
    if (!command(msg))
      return IC_EXIT_OK;
  }
}
