/* Every aggressor kind, once. A new kind is one line here plus native/aggressors/<kind>.c
 * exporting `const ic_aggressor_t ic_aggr_<kind>`. */
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

#endif
