/* A user's program under ic-run (ic_user.h): its markers write into ic-run's block. */
#include "ic_user.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "ic_run_block.h"

static ic_run_block_t *block;

/* Marker calls outside the declared regions are counted in this process only. */
static void publish_dropped(void) {
  if (block)
    block->dropped = ic_regions_dropped();
}

static ic_run_block_t *map_block(const char *text) {
  char *end;
  long fd = strtol(text, &end, 10);
  struct stat st;
  if (*text == '\0' || *end != '\0' || fd < 0 || fd > 1 << 20 || fstat((int)fd, &st) ||
      (size_t)st.st_size < sizeof(ic_run_block_t)) {
    ic_warn("%s=%s: not ic-run's block; regions are not recorded", IC_RUN_FD_ENV, text);
    return NULL;
  }
  void *p = mmap(NULL, sizeof(ic_run_block_t), PROT_READ | PROT_WRITE, MAP_SHARED, (int)fd, 0);
  if (p == MAP_FAILED) {
    ic_warn("%s=%s: cannot map it; regions are not recorded", IC_RUN_FD_ENV, text);
    return NULL;
  }
  ic_run_block_t *b = p;
  if (b->magic != IC_RUN_MAGIC || b->version != IC_RUN_VERSION) {
    munmap(p, sizeof *b);
    ic_warn("%s=%s: not ic-run's block; regions are not recorded", IC_RUN_FD_ENV, text);
    return NULL;
  }
  return b;
}

static bool names_ok(const char *const *names, int nregions) {
  if (nregions < 1 || nregions > IC_RUN_MAX_REGIONS) {
    ic_warn("ic_user_regions: %d regions; 1..%d can be recorded", nregions, IC_RUN_MAX_REGIONS);
    return false;
  }
  for (int i = 0; i < nregions; i++) {
    if (!names[i] || !names[i][0] || strlen(names[i]) >= IC_RUN_NAME_LEN ||
        !strcmp(names[i], "total")) {
      ic_warn("ic_user_regions: region %d needs a name of 1..%d characters other than "
              "\"total\"", i, IC_RUN_NAME_LEN - 1);
      return false;
    }
    for (int k = 0; k < i; k++)
      if (!strcmp(names[k], names[i])) {
        ic_warn("ic_user_regions: regions %d and %d are both named \"%s\"", k, i, names[i]);
        return false;
      }
  }
  return true;
}

bool ic_user_regions(const char *const *names, int nregions) {
  const char *fd = getenv(IC_RUN_FD_ENV);
  if (!names_ok(names, nregions))
    return false;
  ic_regions_declare(names, nregions, 0);
  if (!fd)
    return true; /* not under ic-run: nothing to record into */
  ic_run_block_t *b = map_block(fd);
  /* The program's own children are not the measured run: they must not write the block. */
  unsetenv(IC_RUN_FD_ENV);
  if (!b)
    return false;
  const char *clock = getenv(IC_RUN_CLOCK_ENV);
  if (!ic_regions_attach_row(names, nregions, b->samples, clock && !strcmp(clock, "wall"))) {
    munmap(b, sizeof *b);
    return false;
  }
  for (int i = 0; i < nregions; i++)
    strcpy(b->names[i], names[i]);
  b->nregions = (uint32_t)nregions;
  block = b;
  atexit(publish_dropped);
  return true;
}
