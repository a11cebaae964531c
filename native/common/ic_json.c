/* One-line JSON objects with every string escaped: the output is parsed by Python, and
 * one unescaped quote in a path would break a whole run's results. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ic_common.h"

/* The JSON escape of c into out (at most 7 bytes incl. NUL); NULL when c needs none. */
static const char *escape_char(unsigned char c, char out[7]) {
  switch (c) {
  case '"': return "\\\"";
  case '\\': return "\\\\";
  case '\n': return "\\n";
  case '\r': return "\\r";
  case '\t': return "\\t";
  case '\b': return "\\b";
  case '\f': return "\\f";
  default:
    if (c >= 0x20)
      return NULL;
    snprintf(out, 7, "\\u%04x", c);
    return out;
  }
}

static void put_string(FILE *f, const char *s) {
  char tmp[7];
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    const char *e = escape_char(*p, tmp);
    if (e)
      fputs(e, f);
    else
      fputc(*p, f);
  }
  fputc('"', f);
}

char *ic_json_escape(const char *s, char *buf, size_t cap) {
  size_t n = 0;
  char tmp[7];
  if (!cap)
    return buf;
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    char one[2] = {(char)*p, '\0'};
    const char *e = escape_char(*p, tmp);
    if (!e)
      e = one;
    size_t len = strlen(e);
    /* Truncate only between escapes, never inside one, so the result stays valid. */
    if (n + len >= cap)
      break;
    memcpy(buf + n, e, len);
    n += len;
  }
  buf[n] = '\0';
  return buf;
}

void ic_json_begin(ic_json_t *j, FILE *f) {
  j->f = f;
  j->depth = 0;
  j->n[0] = 0;
  j->end[0] = '}';
  fputc('{', f);
}

static void key(ic_json_t *j, const char *k) {
  if (j->n[j->depth]++)
    fputc(',', j->f);
  if (k) {
    put_string(j->f, k);
    fputc(':', j->f);
  }
}

static void open_level(ic_json_t *j, const char *k, char begin, char end) {
  if (j->depth + 1 >= IC_JSON_DEPTH)
    ic_die(IC_EXIT_FAIL, "JSON nested deeper than %d levels", IC_JSON_DEPTH);
  key(j, k);
  fputc(begin, j->f);
  j->depth++;
  j->n[j->depth] = 0;
  j->end[j->depth] = end;
}

void ic_json_object(ic_json_t *j, const char *k) { open_level(j, k, '{', '}'); }

void ic_json_array(ic_json_t *j, const char *k) { open_level(j, k, '[', ']'); }

void ic_json_pop(ic_json_t *j) {
  if (j->depth > 0)
    fputc(j->end[j->depth--], j->f);
}

void ic_json_null(ic_json_t *j, const char *k) {
  key(j, k);
  fputs("null", j->f);
}

void ic_json_str(ic_json_t *j, const char *k, const char *val) {
  key(j, k);
  put_string(j->f, val);
}

void ic_json_u64(ic_json_t *j, const char *k, uint64_t val) {
  key(j, k);
  fprintf(j->f, "%llu", (unsigned long long)val);
}

void ic_json_i64(ic_json_t *j, const char *k, int64_t val) {
  key(j, k);
  fprintf(j->f, "%lld", (long long)val);
}

void ic_json_f64(ic_json_t *j, const char *k, double val) {
  key(j, k);
  /* JSON has no NaN or infinity; null says "no value" honestly. */
  if (isfinite(val))
    fprintf(j->f, "%.9g", val);
  else
    fputs("null", j->f);
}

void ic_json_bool(ic_json_t *j, const char *k, bool val) {
  key(j, k);
  fputs(val ? "true" : "false", j->f);
}

void ic_json_close(ic_json_t *j) { fputc('}', j->f); }

void ic_json_end(ic_json_t *j) {
  fputs("}\n", j->f);
  fflush(j->f);
}
