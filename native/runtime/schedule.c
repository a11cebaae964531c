#include "schedule.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ic_common.h"

uint64_t ic_next_release(const ic_schedule_t *s, ic_overrun_t policy, uint64_t k,
                         uint64_t end_ns, uint64_t *skipped) {
  uint64_t next = k + 1;
  *skipped = 0;
  if (policy == IC_OVERRUN_LATE || end_ns <= ic_release_ns(s, next))
    return next;
  /* The first release not earlier than end_ns: ceil((end - origin) / period). */
  uint64_t due = (end_ns - s->origin_ns + s->period_ns - 1) / s->period_ns;
  *skipped = due - next;
  return due;
}

bool ic_work_parse(const char *text, ic_work_t *w, char *why, size_t cap) {
  const char *colon = strchr(text, ':');
  if (!colon) {
    snprintf(why, cap, "'%s' is not passes:N or time:DURATION", text);
    return false;
  }
  const char *value = colon + 1;
  size_t key = (size_t)(colon - text);
  if (key == 6 && !strncmp(text, "passes", key)) {
    if (!ic_parse_u64(value, &w->amount) || !w->amount) {
      snprintf(why, cap, "passes:N needs a whole number N >= 1, got '%s'", value);
      return false;
    }
    w->kind = IC_WORK_PASSES;
    return true;
  }
  if (key == 4 && !strncmp(text, "time", key)) {
    double s;
    if (!ic_parse_duration(value, &s) || !(s > 0) || s > 3600) {
      snprintf(why, cap, "time:DURATION needs a duration in (0, 1h], got '%s'", value);
      return false;
    }
    w->kind = IC_WORK_CPU_TIME;
    /* At least 1 ns: the parser keeps nine decimals of a second. */
    w->amount = (uint64_t)llround(s * 1e9);
    return true;
  }
  snprintf(why, cap, "unknown work '%.*s' (use passes:N or time:DURATION)", (int)key, text);
  return false;
}

const char *ic_work_format(const ic_work_t *w, char *buf, size_t cap) {
  if (w->kind == IC_WORK_PASSES)
    snprintf(buf, cap, "passes:%llu", (unsigned long long)w->amount);
  else if (w->amount % 1000000 == 0)
    snprintf(buf, cap, "time:%llums", (unsigned long long)(w->amount / 1000000));
  else if (w->amount % 1000 == 0)
    snprintf(buf, cap, "time:%lluus", (unsigned long long)(w->amount / 1000));
  else
    snprintf(buf, cap, "time:%llu.%09llus", (unsigned long long)(w->amount / 1000000000),
             (unsigned long long)(w->amount % 1000000000));
  return buf;
}

uint64_t ic_work_accesses(uint64_t passes, uint64_t bytes, size_t line) {
  uint64_t per_pass = line ? bytes / line : 0;
  if (per_pass && passes > UINT64_MAX / per_pass)
    return UINT64_MAX;
  return passes * per_pass;
}
