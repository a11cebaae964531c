/* A user's program as a child of a native tool: ic-run (once per repetition) and ic-corun
 * (again and again, as a co-runner) start it the same way. */
#ifndef IC_SPAWN_H
#define IC_SPAWN_H

#include <signal.h>
#include <sys/types.h>

/* Forks argv[0] into a process group of its own, stdin and stdout on /dev/null (stdout is
 * the tool's protocol pipe), stderr on err_fd, killed with the tool (PR_SET_PDEATHSIG); it
 * inherits the tool's CPU, priority and cgroups. SIGINT and SIGTERM are blocked from before
 * the fork until *running names the child, so a stop handler that kills -*running cannot
 * miss it; with a stop already noted in *stop it starts nothing and returns -1. Returns the pid
 * once the child has exec'd, or failed to: then *exec_errno says why (else 0) and the child
 * exits 127; the caller reaps it either way. */
pid_t ic_spawn(char **argv, int err_fd, volatile pid_t *running,
               volatile sig_atomic_t *stop, int *exec_errno);
/* A usage error (exit 2) unless prog is an executable regular file. */
void ic_spawn_check(const char *prog);
/* Dies (exit 1) with "PROG <what, from fmt and code>: <the tail of its stderr in err_fd>". */
_Noreturn void ic_spawn_fail(int err_fd, const char *fmt, const char *prog, int code);

#endif
