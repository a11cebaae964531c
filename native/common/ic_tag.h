/* Tags: region markers as time stamps for the bandwidth profiler (paper 004 §4.1).
 *
 * When a process runs under ic-profile, it inherits a shared ring (a memfd whose number is
 * in the environment variable IC_TAGS_FD). Every IC_REGION_BEGIN/END then also appends
 * {cycle counter, region, call site, begin|end} to the ring, so the profiler can say which
 * region, and which source line, each sample and each bandwidth spike falls in. Without
 * the variable the markers cost one predictable branch more and write nothing.
 *
 * The ring is written by one thread of one process (the markers are single-threaded, see
 * ic_region.h) and read by the profiler after that process has exited, so it needs no
 * lock. Entries beyond the capacity are counted in `dropped`, never wrapped: the first
 * tags of a run are as useful as the last, and a wrapped ring would lose the start. */
#ifndef IC_TAG_H
#define IC_TAG_H

#include <stdbool.h>
#include <stdint.h>

#include "ic_arch.h"
#include "ic_common.h"

#define IC_TAG_MAGIC 0x31474154u /* "TAG1" */
#define IC_TAG_ENV "IC_TAGS_FD"

enum {
  IC_TAG_MAX_NAMES = 32,
  IC_TAG_NAME_LEN = 48,
  IC_TAG_MAX_SITES = 128,
  IC_TAG_FILE_LEN = 56,
  IC_TAG_BEGIN = 0,
  IC_TAG_END = 1,
};

typedef struct {
  uint64_t tick;   /* ic_tick() when the marker ran */
  int32_t region;  /* region id */
  uint16_t site;   /* index into sites[]; 0xffff when the site table was full */
  uint16_t kind;   /* IC_TAG_BEGIN | IC_TAG_END */
} ic_tag_t;

typedef struct {
  char file[IC_TAG_FILE_LEN]; /* __FILE__ of the marker, truncated from the left */
  uint32_t line;
  int32_t region;
} ic_tag_site_t;

/* The shared layout, little-endian, naturally aligned (docs/native-contract.md, "Tags"). */
typedef struct {
  uint32_t magic;
  uint32_t version;   /* 1 */
  uint32_t capacity;  /* entries in tags[] */
  uint32_t nnames;    /* region names written by the traced process */
  uint32_t nsites;
  uint32_t pid;       /* the traced process */
  uint64_t head;      /* entries written (may exceed capacity: the rest were dropped) */
  char names[IC_TAG_MAX_NAMES][IC_TAG_NAME_LEN];
  ic_tag_site_t sites[IC_TAG_MAX_SITES];
  ic_tag_t tags[];
} ic_tag_ring_t;

/* Bytes of a ring holding `capacity` tags. */
uint64_t ic_tag_ring_bytes(uint32_t capacity);

/* The ring of this process, NULL when not profiled; set by ic_tags_attach(). */
extern ic_tag_ring_t *ic_tags_g;

/* Maps the ring named by IC_TAGS_FD (once) and records the region names; false when the
 * variable is unset or the ring is unusable (a warning says why). Called by
 * ic_regions_init(). */
bool ic_tags_attach(const char *const *names, int nregions);

/* The registration of a call site the first time its marker runs. */
uint16_t ic_tag_site(int32_t region, const char *file, int line);

/* The time base shared by tags and profiler samples: the cycle counter where ic_arch.h
 * provides one, CLOCK_MONOTONIC ns elsewhere. ic-profile reports how ticks map to ns. */
static inline uint64_t ic_tick(void) {
#ifdef IC_ARCH_HAVE_CYCLES
  return ic_arch_cycles();
#else
  return ic_now_ns();
#endif
}

static inline void ic_tag_push(int32_t region, int *site, const char *file, int line,
                               uint16_t kind) {
  ic_tag_ring_t *r = ic_tags_g;
  if (__builtin_expect(r == NULL, 1))
    return;
  if (*site < 0)
    *site = ic_tag_site(region, file, line);
  uint64_t i = r->head++;
  if (i < r->capacity)
    r->tags[i] = (ic_tag_t){ic_tick(), region, (uint16_t)*site, kind};
}

#endif
