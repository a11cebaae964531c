/* A user's program as a child of a native tool: ic-run (once per repetition) and ic-corun
 * (again and again, as a co-runner) start it the same way. */
#ifndef IC_SPAWN_H
#define IC_SPAWN_H

#include <signal.h>
#include <stdio.h>
#include <sys/types.h>

#include "ic_opts.h"

/* Forks argv[0] into a process group of its own, stdin and stdout on /dev/null (stdout is
 * the tool's protocol pipe), stderr on err_fd, killed with the tool (PR_SET_PDEATHSIG); it
 * inherits the tool's CPU, priority and cgroups. SIGINT and SIGTERM are blocked from before
 * the fork until *running names the child, so a stop handler that kills -*running cannot
 * miss it; with a stop already noted in *stop it starts nothing and returns -1. Returns the pid
 * once the child has exec'd, or failed to: then *exec_errno says why (else 0) and the child
 * exits 127; the caller reaps it either way. */
pid_t ic_spawn(char **argv, int err_fd, volatile pid_t *running,
               volatile sig_atomic_t *stop, int *exec_errno);
/* The start of a launcher's main: its options, before "--" (ic_opts_main), and the
 * program after it, a usage error (exit 2) unless it is an executable regular file.
 * Returns the program's argv (its "--" is the argument before). */
char **ic_spawn_args(const ic_optset_t *set, int argc, char **argv, size_t help,
                     void (*usage)(FILE *f));
/* Dies (exit 1) with "PROG <what, from fmt and code>: <the tail of its stderr in err_fd>". */
_Noreturn void ic_spawn_fail(int err_fd, const char *fmt, const char *prog, int code);

#endif
