#include "ic_freezelog.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ic_common.h"

bool ic_log_open(ic_log_t *log, const char *path, size_t cap) {
  *log = (ic_log_t){.fd = -1};
  if (!path)
    return true;
  log->fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0644);
  log->buf = malloc(cap);
  if (log->fd < 0 || !log->buf) {
    int e = log->fd < 0 ? errno : ENOMEM;
    ic_log_close(log);
    errno = e;
    return false;
  }
  memset(log->buf, 0, cap); /* fault the pages in now, not after a freeze */
  log->cap = cap;
  return true;
}

/* By hand into the caller's fixed buffer, not through the JSON writer's stdio stream: this
 * runs right after a freeze, and a line that does not fit is dropped whole (counted as lost),
 * never half-written and never allocated for. */
size_t ic_log_format(char *out, size_t cap, const ic_log_entry_t *e) {
  char group[1024], latency[48] = "", job[40] = "", error[96] = "", region[128] = "",
                    name[104];
  if (e->job >= 0)
    snprintf(job, sizeof job, ",\"job\":%lld", (long long)e->job);
  if (e->has_latency)
    snprintf(latency, sizeof latency, ",\"latency_ns\":%lld", (long long)e->latency_ns);
  if (e->region)
    snprintf(region, sizeof region, ",\"region\":\"%s\"",
             ic_json_escape(e->region, name, sizeof name));
  if (e->error)
    snprintf(error, sizeof error, ",\"error\":\"%s\"", strerror(e->error));
  int n = snprintf(out, cap,
                   "{\"t_ns\":%llu,\"action\":\"%s\",\"group\":\"%s\",\"reason\":\"%s\"%s%s%s%s,"
                   "\"by\":\"%s\"}\n",
                   (unsigned long long)e->t_ns, e->action,
                   ic_json_escape(e->group, group, sizeof group), e->reason, job, region, latency, error,
                   e->by);
  return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

void ic_log_add(ic_log_t *log, const ic_log_entry_t *e) {
  if (log->fd < 0)
    return;
  size_t n = ic_log_format(log->buf + log->len, log->cap - log->len, e);
  if (n)
    log->len += n;
  else
    log->lost++;
}

void ic_log_flush(ic_log_t *log) {
  if (log->fd >= 0 && log->len)
    (void)ic_write_all(log->fd, log->buf, log->len); /* a log that cannot be written is lost */
  log->len = 0;
}

void ic_log_write_now(int fd, const ic_log_entry_t *e) {
  char line[2048];
  size_t n = ic_log_format(line, sizeof line, e);
  if (fd >= 0 && n)
    (void)ic_write_all(fd, line, n);
}

void ic_log_close(ic_log_t *log) {
  ic_log_flush(log);
  if (log->fd >= 0)
    close(log->fd);
  free(log->buf);
  *log = (ic_log_t){.fd = -1};
}
