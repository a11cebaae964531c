/* The aggressor kind table, shared by every driver. */
#include <stdio.h>
#include <string.h>

#include "aggressors.h"

#define IC_AGGR_ENTRY(name) &ic_aggr_##name,
const ic_aggressor_t *const ic_aggr_kinds[] = {IC_AGGRESSORS(IC_AGGR_ENTRY)};
#undef IC_AGGR_ENTRY
const size_t ic_aggr_nkinds = sizeof ic_aggr_kinds / sizeof ic_aggr_kinds[0];

const ic_aggressor_t *ic_aggr_find(const char *name) {
  for (size_t i = 0; i < ic_aggr_nkinds; i++)
    if (!strcmp(ic_aggr_kinds[i]->name, name))
      return ic_aggr_kinds[i];
  return NULL;
}

const char *ic_aggr_kind_names(char *buf, size_t cap) {
  buf[0] = '\0';
  for (size_t i = 0; i < ic_aggr_nkinds; i++)
    snprintf(buf + strlen(buf), cap - strlen(buf), "%s%s", i ? ", " : "", ic_aggr_kinds[i]->name);
  return buf;
}
