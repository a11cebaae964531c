/* Options that name several things (--cgroup, --critical, --best-effort) take a
 * comma-separated list and may also be repeated; ic_opts keeps only the last value of a
 * repeated option, so the lists are collected from argv here. */
#ifndef IC_ARGLIST_H
#define IC_ARGLIST_H

#include <stddef.h>

typedef struct {
  char **items; /* malloc'd copies, in command-line order */
  size_t n;
} ic_arglist_t;

/* Every value of --name (as "--name V" or "--name=V") among argv[0..argc), split at
 * commas. An empty item ("a,,b", "--name=") is a usage error naming the option. */
void ic_arglist_collect(ic_arglist_t *list, int argc, char **argv, const char *name);
/* The list as a JSON array of strings (malloc'd; the caller frees it). */
char *ic_arglist_json(const ic_arglist_t *list);
void ic_arglist_free(ic_arglist_t *list);

#endif
