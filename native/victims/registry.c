/* The victim table that both drivers (ic-victim, ic-periodic) look kinds up in. */
#include <string.h>

#include "victims.h"

#define DECLARE(name) extern const ic_victim_t ic_victim_##name;
IC_VICTIMS(DECLARE)
#undef DECLARE

#define ENTRY(name) &ic_victim_##name,
const ic_victim_t *const ic_victims[] = {IC_VICTIMS(ENTRY)};
#undef ENTRY
const size_t ic_nvictims = sizeof ic_victims / sizeof ic_victims[0];

const ic_victim_t *ic_victim_find(const char *name) {
  for (size_t i = 0; i < ic_nvictims; i++)
    if (!strcmp(ic_victims[i]->name, name))
      return ic_victims[i];
  return NULL;
}
