/* Minimal assertions for the native unit tests: report every failure, exit 1 if any. */
#ifndef IC_TEST_H
#define IC_TEST_H

#include <stdio.h>

static int ic_test_failures;

#define CHECK(cond)                                                                  \
  do {                                                                               \
    if (!(cond)) {                                                                   \
      fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond);       \
      ic_test_failures++;                                                            \
    }                                                                                \
  } while (0)

#define TEST_RESULT() (ic_test_failures ? 1 : 0)

#endif
