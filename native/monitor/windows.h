/* Region windows (--window-region): the names the user gave, resolved against the regions a
 * runner published in its notification block; pure, so the unit tests take it apart. */
#ifndef IC_MONITOR_WINDOWS_H
#define IC_MONITOR_WINDOWS_H

#include <stddef.h>
#include <stdint.h>

#include "notify.h"

typedef enum {
  IC_WINDOWS_OK,       /* every name is one of the runner's regions */
  IC_WINDOWS_UNMARKED, /* the runner published no region: follow its releases instead */
  IC_WINDOWS_UNKNOWN,  /* a name is none of the runner's regions */
} ic_windows_result_t;

/* The mask of the regions named in wanted[0..nwanted) among the runner's `nregions` names
 * (table[id], "" for an id it did not name). On IC_WINDOWS_UNKNOWN *unknown is the first
 * name not found. */
ic_windows_result_t ic_windows_resolve(char *const *wanted, size_t nwanted,
                                       const char table[][IC_NOTIFY_NAME_LEN], uint32_t nregions,
                                       uint32_t *mask, const char **unknown);
/* The lowest window region that is executing, -1 when none. */
int ic_windows_open(uint32_t open_mask, uint32_t window_mask);
/* The runner's region names, comma-separated, for a message. */
void ic_windows_list(const char table[][IC_NOTIFY_NAME_LEN], uint32_t nregions, char *out,
                     size_t cap);

#endif
