/* --window-region's pure parts: names resolved against a runner's published regions, the
 * fallback cases, and which window is open. */
#include <string.h>

#include "ic_test.h"
#include "windows.h"

static void resolves(void) {
  char table[IC_NOTIFY_REGIONS][IC_NOTIFY_NAME_LEN] = {"", "phases.compute", "phases.stream"};
  char *wanted[] = {"phases.stream", "phases.compute"};
  uint32_t mask = 99;
  const char *unknown = "x";
  CHECK(ic_windows_resolve(wanted, 1, table, 3, &mask, &unknown) == IC_WINDOWS_OK);
  CHECK(mask == 4 && unknown == NULL);
  CHECK(ic_windows_resolve(wanted, 2, table, 3, &mask, &unknown) == IC_WINDOWS_OK && mask == 6);
  /* No markers: nothing to resolve against, the caller falls back to releases. */
  CHECK(ic_windows_resolve(wanted, 2, table, 0, &mask, &unknown) == IC_WINDOWS_UNMARKED);
  CHECK(mask == 0);
  /* The empty name of an unused id never matches, nor does a region beyond nregions. */
  char *empty[] = {""};
  CHECK(ic_windows_resolve(empty, 1, table, 3, &mask, &unknown) == IC_WINDOWS_UNKNOWN);
  CHECK(ic_windows_resolve(wanted, 1, table, 2, &mask, &unknown) == IC_WINDOWS_UNKNOWN);
  CHECK(mask == 0 && !strcmp(unknown, "phases.stream"));
  char *typo[] = {"phases.compute", "phases.strem"};
  CHECK(ic_windows_resolve(typo, 2, table, 3, &mask, &unknown) == IC_WINDOWS_UNKNOWN);
  CHECK(mask == 0 && !strcmp(unknown, "phases.strem"));
  char list[256];
  ic_windows_list(table, 3, list, sizeof list);
  CHECK(!strcmp(list, "phases.compute, phases.stream"));
}

static void open_window(void) {
  CHECK(ic_windows_open(0, 6) == -1);
  CHECK(ic_windows_open(2, 4) == -1); /* only a region that is not a window runs */
  CHECK(ic_windows_open(6, 4) == 2);
  CHECK(ic_windows_open(0xffffffffu, 6) == 1);
  CHECK(ic_windows_open(0x80000000u, 0x80000000u) == 31);
}

int main(void) {
  resolves();
  open_window();
  return TEST_RESULT();
}
