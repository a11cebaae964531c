#include "windows.h"

#include <stdio.h>
#include <string.h>

ic_windows_result_t ic_windows_resolve(char *const *wanted, size_t nwanted,
                                       const char table[][IC_NOTIFY_NAME_LEN], uint32_t nregions,
                                       uint32_t *mask, const char **unknown) {
  *mask = 0;
  *unknown = NULL;
  if (!nregions)
    return IC_WINDOWS_UNMARKED;
  for (size_t i = 0; i < nwanted; i++) {
    uint32_t id = 0;
    while (id < nregions && (!table[id][0] || strcmp(table[id], wanted[i])))
      id++;
    if (id == nregions) {
      *mask = 0;
      *unknown = wanted[i];
      return IC_WINDOWS_UNKNOWN;
    }
    *mask |= 1u << id;
  }
  return IC_WINDOWS_OK;
}

int ic_windows_open(uint32_t open_mask, uint32_t window_mask) {
  uint32_t open = open_mask & window_mask;
  return open ? __builtin_ctz(open) : -1;
}

void ic_windows_list(const char table[][IC_NOTIFY_NAME_LEN], uint32_t nregions, char *out,
                     size_t cap) {
  size_t len = 0;
  out[0] = '\0';
  for (uint32_t id = 0; id < nregions && len < cap; id++)
    if (table[id][0])
      len += (size_t)snprintf(out + len, cap - len, "%s%s", len ? ", " : "", table[id]);
}
