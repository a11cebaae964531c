#include "watchdog.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ic_common.h"
#include "log.h"

static void thaw_all(const ic_cgroup_t *groups, size_t n, const char *reason, int log_fd) {
  /* Every write first, then the log: the groups must not wait for the disk. */
  uint64_t t[n ? n : 1];
  int err[n ? n : 1];
  for (size_t i = 0; i < n; i++) {
    err[i] = groups[i].freeze_fd >= 0 ? ic_cgroup_set_frozen(&groups[i], false) : -1;
    t[i] = ic_now_ns();
  }
  for (size_t i = 0; i < n; i++)
    if (err[i] >= 0)
      ic_log_write_now(log_fd, &(ic_log_entry_t){.t_ns = t[i], .action = "thaw",
                                                 .group = groups[i].path, .reason = reason,
                                                 .job = -1, .error = err[i], .by = "watchdog"});
}

/* The watchdog's whole life. It ignores SIGINT/SIGTERM (a Ctrl-C reaches the whole
 * process group, and the watchdog must outlive the monitor's clean-up) and exits when the
 * monitor says 'q' or dies. */
static _Noreturn void watch(int rfd, ic_wd_shared_t *sh, const ic_cgroup_t *groups, size_t n,
                            uint64_t lease_ns, int log_fd) {
  signal(SIGINT, SIG_IGN);
  signal(SIGTERM, SIG_IGN);
  prctl(PR_SET_NAME, "ic-monitor-wd");
  int devnull = open("/dev/null", O_RDWR);
  if (devnull >= 0) { /* nobody waits on our stdout: EOF there must mean the monitor ended */
    dup2(devnull, STDIN_FILENO);
    dup2(devnull, STDOUT_FILENO);
    close(devnull);
  }
  int check_ms = (int)(lease_ns / 4000000u);
  bool expired = false;
  for (;;) {
    struct pollfd p = {.fd = rfd, .events = POLLIN};
    int r = poll(&p, 1, check_ms > 0 ? check_ms : 1);
    if (r < 0 && errno == EINTR)
      continue;
    if (r > 0) {
      char c = 0;
      ssize_t got = read(rfd, &c, 1);
      if (got == 1 && c == 'q')
        _exit(0);
      if (got == 0 || (got < 0 && errno != EINTR && errno != EAGAIN)) {
        thaw_all(groups, n, "monitor-died", log_fd);
        _exit(0);
      }
      continue;
    }
    uint64_t age = ic_now_ns() - atomic_load_explicit(&sh->heartbeat_ns, memory_order_acquire);
    if (age > lease_ns && !expired) {
      thaw_all(groups, n, "lease-expired", log_fd);
      atomic_fetch_add(&sh->expiries, 1);
    }
    expired = age > lease_ns;
  }
}

bool ic_watchdog_start(ic_watchdog_t *w, const ic_cgroup_t *groups, size_t n,
                       uint64_t lease_ns, int log_fd) {
  int fds[2];
  *w = (ic_watchdog_t){.pid = -1, .wfd = -1, .lease_ns = lease_ns};
  w->shared = mmap(NULL, sizeof *w->shared, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                   -1, 0);
  if (w->shared == MAP_FAILED || pipe2(fds, O_CLOEXEC))
    return false;
  atomic_store(&w->shared->heartbeat_ns, ic_now_ns());
  pid_t pid = fork();
  if (pid < 0)
    return false;
  if (pid == 0) {
    close(fds[1]);
    watch(fds[0], w->shared, groups, n, lease_ns, log_fd);
  }
  close(fds[0]);
  w->pid = pid;
  w->wfd = fds[1];
  return true;
}

uint64_t ic_watchdog_stop(ic_watchdog_t *w) {
  if (w->wfd >= 0) {
    ssize_t ignored = write(w->wfd, "q", 1);
    (void)ignored;
    close(w->wfd);
    w->wfd = -1;
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
