/* Every victim, once. A new victim is one C file exporting `ic_victim_<name>` plus one
 * line here; registry.c expands the list into the table both drivers (ic-victim,
 * ic-periodic) look kinds up in. */
#ifndef IC_VICTIMS_H
#define IC_VICTIMS_H

#include "victim.h"

#define IC_VICTIMS(X) \
  X(matmul)           \
  X(ptrchase)         \
  X(stream)           \
  X(qsort)            \
  X(susan)            \
  X(phases)           \
  X(fetch)            \
  X(spin)

extern const ic_victim_t *const ic_victims[];
extern const size_t ic_nvictims;

/* The victim called name, or NULL. */
const ic_victim_t *ic_victim_find(const char *name);

#endif
