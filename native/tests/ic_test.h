/* Minimal assertions for the native unit tests: report every failure, exit 1 if any. */
#ifndef IC_TEST_H
#define IC_TEST_H

#include <stdio.h>
#include <stdlib.h>

static int ic_test_failures;

#define CHECK(cond)                                                                  \
  do {                                                                               \
    if (!(cond)) {                                                                   \
      fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond);       \
      ic_test_failures++;                                                            \
    }                                                                                \
  } while (0)

#define TEST_RESULT() (ic_test_failures ? 1 : 0)

/* A stream into memory for checking output: *buf holds the text after fclose; free it. */
static inline FILE *test_memstream(char **buf, size_t *size) {
  FILE *f = open_memstream(buf, size);
  if (!f) {
    fprintf(stderr, "open_memstream failed\n");
    exit(1);
  }
  return f;
}

#endif
