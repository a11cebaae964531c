/* The freeze/thaw log (--log FILE): one JSON line per action. Lines are formatted into a
 * memory buffer right after the actuation and written out afterwards (ic_log_flush), so
 * no file I/O ever sits between a release and the freeze. The file is opened O_APPEND,
 * which keeps the monitor's and the watchdog's lines whole when both write. */
#ifndef IC_FREEZELOG_H
#define IC_FREEZELOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
  uint64_t t_ns;      /* CLOCK_MONOTONIC, when the write returned */
  const char *action; /* "freeze" or "thaw" */
  const char *group;
  const char *reason; /* see docs/native-contract.md, "Monitor" */
  int64_t job;        /* critical job index, -1 when none applies */
  bool has_latency;
  int64_t latency_ns; /* freeze minus release (event) or activity onset (poll) */
  int error;          /* errno of a failed write, 0 when it worked */
  const char *by;     /* "monitor" or "watchdog" */
  const char *region; /* the window region the action follows, NULL when none */
} ic_log_entry_t;

typedef struct {
  int fd; /* -1: no log */
  char *buf;
  size_t len, cap;
  uint64_t lost; /* lines that found the buffer full */
} ic_log_t;

/* Opens path for appending (NULL: no log); false with errno on failure. */
bool ic_log_open(ic_log_t *log, const char *path, size_t cap);
/* One JSON line (with its newline) into out; returns its length, 0 when it does not fit. */
size_t ic_log_format(char *out, size_t cap, const ic_log_entry_t *e);
/* Buffers one line; no I/O. */
void ic_log_add(ic_log_t *log, const ic_log_entry_t *e);
/* Writes the buffered lines. */
void ic_log_flush(ic_log_t *log);
/* Formats and writes one line at once (the watchdog, which has nothing else to do). */
void ic_log_write_now(int fd, const ic_log_entry_t *e);
void ic_log_close(ic_log_t *log);

#endif
