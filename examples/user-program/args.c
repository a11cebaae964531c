#include "args.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

long arg_long(int argc, char **argv, const char *name, long def, long min, long max) {
  for (int i = 1; i + 1 < argc; i++)
    if (!strcmp(argv[i], name)) {
      char *end;
      long v = strtol(argv[i + 1], &end, 10);
      if (*end || v < min || v > max) {
        fprintf(stderr, "%s: %s: want %ld..%ld, got '%s'\n", argv[0], name, min, max, argv[i + 1]);
        exit(2);
      }
      return v;
    }
  return def;
}
