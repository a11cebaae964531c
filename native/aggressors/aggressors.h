/* Every aggressor kind, once. A new kind is one line here plus native/aggressors/<kind>.c
 * exporting `const ic_aggressor_t ic_aggr_<kind>`; registry.c expands the list into the
 * table both drivers (ic-aggr, ic-periodic) look kinds up in. */
#ifndef IC_AGGRESSORS_H
#define IC_AGGRESSORS_H

#include "ic_lifecycle.h"

#define IC_AGGRESSORS(X) \
  X(bw)                  \
  X(pll)                 \
  X(bankpll)

#define IC_AGGR_DECLARE(name) extern const ic_aggressor_t ic_aggr_##name;
IC_AGGRESSORS(IC_AGGR_DECLARE)
#undef IC_AGGR_DECLARE

extern const ic_aggressor_t *const ic_aggr_kinds[];
extern const size_t ic_aggr_nkinds;

/* The kind called name, or NULL. */
const ic_aggressor_t *ic_aggr_find(const char *name);
/* "bw, pll, bankpll" into buf; returns buf. */
const char *ic_aggr_kind_names(char *buf, size_t cap);

#endif
