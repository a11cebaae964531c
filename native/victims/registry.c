/* The victim table and the helpers every victim's init uses, shared by every driver. */
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

void *ic_victim_alloc(ic_mem_t *m, uint64_t count, size_t elem, const char *what) {
  if (count > SIZE_MAX / elem || !ic_mem_alloc(m, (size_t)count * elem, false))
    ic_die(IC_EXIT_FAIL, "cannot allocate %llu × %zu bytes for %s", (unsigned long long)count,
           elem, what);
  return m->ptr;
}

void *ic_victim_state(size_t bytes) {
  void *p = calloc(1, bytes);
  if (!p)
    ic_die(IC_EXIT_FAIL, "out of memory");
  return p;
}
