#include "client.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ic_common.h"

/* The watchdog answers at once; this only bounds a broken or stopped one. */
#define REPLY_TIMEOUT_MS 5000

/* Descriptors the watchdog finds its channel, page and log at. */
enum { CHILD_CHAN = 3, CHILD_PAGE = 4, CHILD_LOG = 5 };

static bool fail(char *why, size_t cap, const char *what) {
  snprintf(why, cap, "%s: %s", what, strerror(errno));
  return false;
}

/* One request, one reply; "ok..." is success, anything else the reason. */
static bool call(ic_wd_t *w, const char *msg, char *answer, size_t acap, char *why, size_t cap) {
  if (msg && send(w->chan, msg, strlen(msg), MSG_NOSIGNAL) < 0)
    return fail(why, cap, "watchdog channel");
  struct pollfd p = {.fd = w->chan, .events = POLLIN};
  int r;
  while ((r = poll(&p, 1, REPLY_TIMEOUT_MS)) < 0 && errno == EINTR)
    ;
  if (r == 0) {
    snprintf(why, cap, "the watchdog did not answer within %d ms", REPLY_TIMEOUT_MS);
    return false;
  }
  ssize_t n = recv(w->chan, answer, acap - 1, 0);
  if (n <= 0) {
    snprintf(why, cap, "the watchdog exited (see its stderr)");
    return false;
  }
  answer[n] = '\0';
  return true;
}

static bool watchdog_path(char *out, size_t cap) {
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0)
    return false;
  self[n] = '\0';
  char *slash = strrchr(self, '/');
  if (!slash)
    return false;
  *slash = '\0';
  return snprintf(out, cap, "%s/ic-watchdog", self) < (int)cap;
}

/* Moves `fd` to number `to` in the child, without close-on-exec. Sources are first lifted
 * above the targets, so that moving one cannot clobber another. */
static void place_fd(int fd, int to) {
  if (fd < 0 || dup2(fd, to) < 0)
    _exit(127);
}

static _Noreturn void exec_child(int chan, int page, const ic_wd_config_t *c, const char *exe) {
  int lifted[3] = {fcntl(chan, F_DUPFD, 10), page >= 0 ? fcntl(page, F_DUPFD, 10) : -1,
                   c->log_fd >= 0 ? fcntl(c->log_fd, F_DUPFD, 10) : -1};
  place_fd(lifted[0], CHILD_CHAN);
  if (page >= 0)
    place_fd(lifted[1], CHILD_PAGE);
  if (c->log_fd >= 0)
    place_fd(lifted[2], CHILD_LOG);
  char avoid[16];
  const char *argv[12] = {"ic-watchdog", "--channel", "3"};
  int a = 3;
  if (page >= 0) {
    argv[a++] = "--heartbeat";
    argv[a++] = "4";
  }
  if (c->log_fd >= 0) {
    argv[a++] = "--log-fd";
    argv[a++] = "5";
  }
  if (c->avoid_cpu >= 0) {
    snprintf(avoid, sizeof avoid, "%d", c->avoid_cpu);
    argv[a++] = "--avoid-cpu";
    argv[a++] = avoid;
  }
  argv[a] = NULL;
  execv(exe, (char *const *)argv);
  _exit(127);
}

bool ic_wd_start(ic_wd_t *w, const ic_wd_config_t *c, char *why, size_t cap) {
  *w = (ic_wd_t){.pid = -1, .chan = -1};
  char exe[PATH_MAX];
  if (c->exe)
    snprintf(exe, sizeof exe, "%s", c->exe);
  else if (!watchdog_path(exe, sizeof exe))
    return fail(why, cap, "ic-watchdog beside this executable");
  if (access(exe, X_OK))
    return fail(why, cap, exe);
  int sv[2], page = -1;
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
    return fail(why, cap, "socketpair");
  if (c->lease_ns) {
    page = memfd_create("ic-watchdog-heartbeat", MFD_CLOEXEC);
    if (page < 0 || ftruncate(page, IC_WD_PAGE_SIZE))
      return fail(why, cap, "heartbeat page");
    w->page = mmap(NULL, IC_WD_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, page, 0);
    if (w->page == MAP_FAILED)
      return fail(why, cap, "heartbeat page");
    atomic_store(&w->page->version, IC_WD_VERSION);
    atomic_store(&w->page->heartbeat_ns, ic_now_ns());
    atomic_store(&w->page->magic, IC_WD_MAGIC);
  }
  pid_t pid = fork();
  if (pid < 0)
    return fail(why, cap, "fork");
  if (pid == 0)
    exec_child(sv[1], page, c, exe);
  close(sv[1]);
  if (page >= 0)
    close(page);
  w->pid = pid;
  w->chan = sv[0];
  char answer[IC_WD_MSG_MAX], msg[IC_WD_MSG_MAX];
  int rt = 0, locked = 0, wpid = 0;
  if (!call(w, NULL, answer, sizeof answer, why, cap))
    return false;
  if (sscanf(answer, "ready %d rt=%d mlock=%d", &wpid, &rt, &locked) != 3 || wpid != pid) {
    snprintf(why, cap, "unexpected first line from the watchdog: %.200s", answer);
    return false;
  }
  w->rt = rt;
  w->mlock = locked;
  snprintf(msg, sizeof msg, "name %s", c->name);
  if (!call(w, msg, answer, sizeof answer, why, cap))
    return false;
  return true;
}

bool ic_wd_arm(ic_wd_t *w, uint64_t lease_ns, char *why, size_t cap) {
  char msg[64], answer[IC_WD_MSG_MAX];
  ic_wd_beat(w, ic_now_ns());
  snprintf(msg, sizeof msg, "lease %llu", (unsigned long long)lease_ns);
  if (!call(w, msg, answer, sizeof answer, why, cap))
    return false;
  if (strncmp(answer, "ok", 2)) {
    snprintf(why, cap, "%s", answer);
    return false;
  }
  return true;
}

bool ic_wd_guard(ic_wd_t *w, const char *dir, char *why, size_t cap) {
  char msg[IC_WD_MSG_MAX], answer[IC_WD_MSG_MAX];
  if (snprintf(msg, sizeof msg, "guard %s", dir) >= (int)sizeof msg) {
    snprintf(why, cap, "%s: path too long", dir);
    return false;
  }
  if (!call(w, msg, answer, sizeof answer, why, cap))
    return false;
  if (strncmp(answer, "ok", 2)) {
    snprintf(why, cap, "the watchdog refused %s: %s", dir, answer + (strncmp(answer, "error ", 6) ? 0 : 6));
    return false;
  }
  return true;
}

uint64_t ic_wd_expiries(const ic_wd_t *w) {
  return w->page ? atomic_load(&w->page->expiries) : 0;
}

bool ic_wd_expired(ic_wd_t *w) {
  uint64_t now = ic_wd_expiries(w);
  if (now == w->expiries)
    return false;
  w->expiries = now;
  return true;
}

uint64_t ic_wd_stop(ic_wd_t *w) {
  if (w->chan >= 0) {
    char answer[64], why[128];
    call(w, "quit", answer, sizeof answer, why, sizeof why);
    close(w->chan);
    w->chan = -1;
  }
  struct rusage ru = {0};
  if (w->pid > 0) {
    while (wait4(w->pid, NULL, 0, &ru) < 0 && errno == EINTR)
      ;
    w->pid = -1;
  }
  return ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * 1000000000u +
         ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000u;
}
