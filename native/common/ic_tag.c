/* The traced side of the tag ring (ic_tag.h); ic-profile owns the other side. */
#include "ic_tag.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

ic_tag_ring_t *ic_tags_g;

uint64_t ic_tag_ring_bytes(uint32_t capacity) {
  return sizeof(ic_tag_ring_t) + (uint64_t)capacity * sizeof(ic_tag_t);
}

static void copy_tail(char *dst, size_t cap, const char *src) {
  size_t n = strlen(src);
  if (n >= cap)
    src += n - (cap - 1); /* keep the end: the file name matters more than the directory */
  snprintf(dst, cap, "%s", src);
}

bool ic_tags_attach(const char *const *names, int nregions) {
  const char *env = getenv(IC_TAG_ENV);
  if (!env || !*env)
    return false;
  if (!ic_tags_g) {
    uint64_t fd;
    struct stat st;
    if (!ic_parse_u64(env, &fd) || fd > 1u << 20 || fstat((int)fd, &st) ||
        (uint64_t)st.st_size < sizeof(ic_tag_ring_t)) {
      ic_warn("%s=%s is not a tag ring; regions are not tagged", IC_TAG_ENV, env);
      return false;
    }
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, (int)fd, 0);
    if (p == MAP_FAILED) {
      ic_warn("cannot map the tag ring (%s); regions are not tagged", strerror(errno));
      return false;
    }
    ic_tag_ring_t *r = p;
    if (r->magic != IC_TAG_MAGIC || ic_tag_ring_bytes(r->capacity) > (uint64_t)st.st_size) {
      munmap(p, (size_t)st.st_size);
      ic_warn("%s=%s holds no tag ring; regions are not tagged", IC_TAG_ENV, env);
      return false;
    }
    /* Touch every page now, so no marker takes a page fault inside a timed region. */
    long page = sysconf(_SC_PAGESIZE);
    for (uint64_t off = 0; off < (uint64_t)st.st_size; off += (uint64_t)page)
      ((volatile char *)p)[off] = ((volatile char *)p)[off];
    r->pid = (uint32_t)getpid();
    ic_tags_g = r;
  }
  int n = nregions < IC_TAG_MAX_NAMES ? nregions : IC_TAG_MAX_NAMES;
  for (int i = 0; i < n; i++)
    snprintf(ic_tags_g->names[i], IC_TAG_NAME_LEN, "%s", names[i] ? names[i] : "");
  ic_tags_g->nnames = (uint32_t)n;
  return true;
}

uint16_t ic_tag_site(int32_t region, const char *file, int line) {
  ic_tag_ring_t *r = ic_tags_g;
  if (r->nsites >= IC_TAG_MAX_SITES)
    return 0xffff;
  ic_tag_site_t *s = &r->sites[r->nsites];
  copy_tail(s->file, sizeof s->file, file);
  s->line = (uint32_t)line;
  s->region = region;
  return (uint16_t)r->nsites++;
}
