/* Parsers for the units every tool shares (rt-utils' parse_mem_string/parse_time_string).
 * Strict: anything left over, a sign, a blank or an overflow is an error, because a
 * silently misread "12XB" would measure the wrong thing. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ic_common.h"

/* Leading decimal digits into *out; returns the first unparsed char, NULL on overflow or
 * when there is no digit. */
static const char *parse_digits(const char *s, uint64_t *out) {
  uint64_t v = 0;
  const char *p = s;
  for (; isdigit((unsigned char)*p); p++) {
    unsigned d = (unsigned)(*p - '0');
    if (v > (UINT64_MAX - d) / 10)
      return NULL;
    v = v * 10 + d;
  }
  if (p == s)
    return NULL;
  *out = v;
  return p;
}

bool ic_parse_u64(const char *s, uint64_t *out) {
  if (!s || !isdigit((unsigned char)s[0]))
    return false;
  if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    if (!isxdigit((unsigned char)s[2]))
      return false;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s + 2, &end, 16);
    if (errno || *end)
      return false;
    *out = v;
    return true;
  }
  const char *end = parse_digits(s, out);
  return end && *end == '\0';
}

static const struct {
  const char *suffix;
  unsigned shift;
} size_units[] = {
    {"", 0},     {"B", 0},     {"K", 10},    {"KiB", 10},  {"M", 20},
    {"MiB", 20}, {"G", 30},    {"GiB", 30},  {"T", 40},    {"TiB", 40},
};

/* The unit letter may be either case ("4k"); "iB" must be spelt as such. */
static bool suffix_is(const char *rest, const char *unit) {
  if (!unit[0])
    return !rest[0];
  return toupper((unsigned char)rest[0]) == unit[0] && !strcmp(rest + 1, unit + 1);
}

bool ic_parse_size(const char *s, uint64_t *out) {
  uint64_t v;
  const char *rest = s ? parse_digits(s, &v) : NULL;
  if (!rest)
    return false;
  for (size_t i = 0; i < sizeof size_units / sizeof size_units[0]; i++) {
    if (!suffix_is(rest, size_units[i].suffix))
      continue;
    unsigned sh = size_units[i].shift;
    if (sh && v > (UINT64_MAX >> sh))
      return false;
    *out = v << sh;
    return true;
  }
  return false;
}

static const struct {
  const char *suffix;
  double seconds;
} time_units[] = {
    {"", 1.0}, {"s", 1.0}, {"ms", 1e-3}, {"us", 1e-6}, {"m", 60.0}, {"h", 3600.0},
};

bool ic_parse_duration(const char *s, double *out_seconds) {
  uint64_t whole = 0, frac = 0, scale = 1;
  const char *p = s ? parse_digits(s, &whole) : NULL;
  if (!p)
    return false;
  if (*p == '.') {
    const char *q = ++p;
    /* Nanosecond resolution is plenty; further digits would only risk overflow. */
    for (; isdigit((unsigned char)*p); p++)
      if (p - q < 9) {
        frac = frac * 10 + (uint64_t)(*p - '0');
        scale *= 10;
      }
    if (p == q)
      return false;
  }
  for (size_t i = 0; i < sizeof time_units / sizeof time_units[0]; i++) {
    if (strcmp(p, time_units[i].suffix))
      continue;
    *out_seconds = ((double)whole + (double)frac / (double)scale) * time_units[i].seconds;
    return true;
  }
  return false;
}

char *ic_format_size(uint64_t bytes, char *buf, size_t cap) {
  static const char letters[] = "KMGT";
  int unit = -1;
  while (unit < 3 && bytes && (bytes & 1023) == 0) {
    bytes >>= 10;
    unit++;
  }
  if (unit < 0)
    snprintf(buf, cap, "%llu", (unsigned long long)bytes);
  else
    snprintf(buf, cap, "%llu%c", (unsigned long long)bytes, letters[unit]);
  return buf;
}
