/* A user's program as a child (spawn.h). */
#include "spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "ic_common.h"

enum { STDERR_TAIL = 2000 };

/* In the child, between fork and exec. Only async-signal-safe calls. */
static _Noreturn void child(char **argv, pid_t parent, int err_fd, int exec_pipe,
                            const sigset_t *old) {
  struct sigaction dfl = {.sa_handler = SIG_DFL};
  sigaction(SIGINT, &dfl, NULL);
  sigaction(SIGTERM, &dfl, NULL);
  sigprocmask(SIG_SETMASK, old, NULL);
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) /* the tool died before the prctl took hold */
    _exit(127);
  int null = open("/dev/null", O_RDWR);
  if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(err_fd, 2) < 0)
    _exit(127);
  execv(argv[0], argv);
  int e = errno;
  if (write(exec_pipe, &e, sizeof e) < 0)
    _exit(127);
  _exit(127);
}

pid_t ic_spawn(char **argv, int err_fd, volatile pid_t *running,
               volatile sig_atomic_t *stop, int *exec_errno) {
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC))
    ic_die(IC_EXIT_FAIL, "pipe: %s", strerror(errno));
  sigset_t stops, old;
  sigemptyset(&stops);
  sigaddset(&stops, SIGINT);
  sigaddset(&stops, SIGTERM);
  sigprocmask(SIG_BLOCK, &stops, &old);
  if (*stop) { /* arrived after the caller looked: no run starts */
    sigprocmask(SIG_SETMASK, &old, NULL);
    close(pipefd[0]);
    close(pipefd[1]);
    return -1;
  }
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0)
    ic_die(IC_EXIT_FAIL, "fork: %s", strerror(errno));
  if (pid == 0)
    child(argv, parent, err_fd, pipefd[1], &old);
  setpgid(pid, pid); /* also here: the stop handler may kill the group before the child ran */
  *running = pid;
  sigprocmask(SIG_SETMASK, &old, NULL);
  close(pipefd[1]);
  *exec_errno = 0;
  ssize_t got;
  while ((got = read(pipefd[0], exec_errno, sizeof *exec_errno)) < 0 && errno == EINTR)
    ;
  close(pipefd[0]);
  if (got != (ssize_t)sizeof *exec_errno)
    *exec_errno = 0;
  return pid;
}

void ic_spawn_fail(int err_fd, const char *fmt, const char *prog, int code) {
  char tail[STDERR_TAIL + 1];
  off_t size = lseek(err_fd, 0, SEEK_END);
  off_t from = size > STDERR_TAIL ? size - STDERR_TAIL : 0;
  ssize_t n = pread(err_fd, tail, (size_t)(size - from), from);
  tail[n > 0 ? n : 0] = '\0';
  while (n > 0 && (tail[n - 1] == '\n' || tail[n - 1] == '\r'))
    tail[--n] = '\0';
  char what[64];
  snprintf(what, sizeof what, fmt, code);
  ic_die(IC_EXIT_FAIL, "%s %s%s%s", prog, what, n > 0 ? ": " : "", n > 0 ? tail : "");
}

char **ic_spawn_args(const ic_optset_t *set, int argc, char **argv, size_t help,
                     void (*usage)(FILE *f)) {
  int end = 1;
  while (end < argc && strcmp(argv[end], "--"))
    end++;
  ic_opts_main(set, end, argv, help, usage);
  if (end + 1 >= argc)
    ic_usage_error(NULL, "missing -- PROG [ARGS...]");
  const char *prog = argv[end + 1];
  struct stat st;
  if (stat(prog, &st))
    ic_usage_error(NULL, "%s: %s", prog, strerror(errno));
  if (!S_ISREG(st.st_mode) || access(prog, X_OK))
    ic_usage_error(NULL, "%s: not an executable file", prog);
  return argv + end + 1;
}
