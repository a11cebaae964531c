#include "arglist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ic_common.h"

static void push(ic_arglist_t *l, const char *item, size_t len, const char *opt) {
  if (!len)
    ic_usage_error(opt, "empty item in the list");
  char **grown = realloc(l->items, (l->n + 1) * sizeof *grown);
  char *copy = strndup(item, len);
  if (!grown || !copy)
    ic_die(IC_EXIT_FAIL, "out of memory");
  l->items = grown;
  l->items[l->n++] = copy;
}

static void split(ic_arglist_t *l, const char *value, const char *opt) {
  for (const char *p = value;; ) {
    size_t len = strcspn(p, ",");
    push(l, p, len, opt);
    if (!p[len])
      return;
    p += len + 1;
  }
}

void ic_arglist_collect(ic_arglist_t *list, int argc, char **argv, const char *name) {
  char opt[128];
  snprintf(opt, sizeof opt, "--%s", name);
  size_t len = strlen(opt);
  *list = (ic_arglist_t){0};
  for (int i = 0; i < argc; i++) {
    if (strncmp(argv[i], opt, len))
      continue;
    if (argv[i][len] == '=')
      split(list, argv[i] + len + 1, opt);
    else if (!argv[i][len] && i + 1 < argc)
      split(list, argv[++i], opt);
  }
}

void ic_arglist_json(ic_json_t *j, const char *key, const ic_arglist_t *list) {
  ic_json_array(j, key);
  for (size_t i = 0; i < list->n; i++)
    ic_json_str(j, NULL, list->items[i]);
  ic_json_pop(j);
}

void ic_arglist_free(ic_arglist_t *list) {
  for (size_t i = 0; i < list->n; i++)
    free(list->items[i]);
  free(list->items);
  *list = (ic_arglist_t){0};
}
