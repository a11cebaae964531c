/* Options that name several things (--cgroup, --critical, --best-effort) take a
 * comma-separated list and may also be repeated; ic_opts keeps only the last value of a
 * repeated option, so the lists are collected from argv here. */
#ifndef IC_ARGLIST_H
#define IC_ARGLIST_H

#include <stddef.h>

#include "ic_common.h" /* ic_json_t */

typedef struct {
  char **items; /* malloc'd copies, in command-line order */
  size_t n;
} ic_arglist_t;

/* Every value of --name (as "--name V" or "--name=V") among argv[0..argc), split at
 * commas. An empty item ("a,,b", "--name=") is a usage error naming the option. */
void ic_arglist_collect(ic_arglist_t *list, int argc, char **argv, const char *name);
/* The list as the next value of j (under key): a JSON array of strings. */
void ic_arglist_json(ic_json_t *j, const char *key, const ic_arglist_t *list);
void ic_arglist_free(ic_arglist_t *list);

#endif
