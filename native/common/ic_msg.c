/* Messages on stderr, all prefixed with the program name so a log of several tools
 * still says who complained. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "ic_common.h"

static const char *progname = "intercore";

void ic_set_progname(const char *name) { progname = name; }

const char *ic_progname(void) { return progname; }

static void vmessage(const char *opt, const char *fmt, va_list ap) {
  fprintf(stderr, "%s: ", progname);
  if (opt)
    fprintf(stderr, "%s: ", opt);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
}

void ic_usage_error(const char *opt, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vmessage(opt, fmt, ap);
  va_end(ap);
  exit(IC_EXIT_USAGE);
}

void ic_die(int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vmessage(NULL, fmt, ap);
  va_end(ap);
  exit(code);
}

void ic_warn(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s: warning: ", progname);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}
