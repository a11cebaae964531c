/* Kernel buffers: prefaulted before anything is timed, on huge pages when the host has
 * them (fewer TLB misses muddying the measurement, and physical bits below the huge-page
 * offset are then known from the virtual address). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ic_common.h"

static size_t base_page(void) { return (size_t)sysconf(_SC_PAGESIZE); }

/* The PMD-level page size: 2 MiB with 4 KiB base pages, but 32 MiB/512 MiB on Arm
 * kernels built with 16/64 KiB granules. */
static size_t huge_page(void) {
  unsigned long v = 0;
  FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", "r");
  if (f) {
    if (fscanf(f, "%lu", &v) != 1)
      v = 0;
    fclose(f);
  }
  return v ? v : 2UL << 20;
}

static size_t round_up(size_t v, size_t align) { return (v + align - 1) / align * align; }

static int log2_exact(size_t v) {
  int n = 0;
  while ((1UL << n) < v)
    n++;
  return n;
}

static void prefault(char *p, size_t size) {
  /* A write, not a read: a read fault maps the shared zero page, and a "1 GiB" read
   * kernel would then hit one physical page in L1. */
  for (size_t off = 0; off < size; off += base_page())
    p[off] = 0;
}

static bool map_hugetlb(ic_mem_t *m, size_t size, size_t huge) {
  size_t len = round_up(size, huge);
  int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | (log2_exact(huge) << MAP_HUGE_SHIFT);
  void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, flags, -1, 0);
  if (p == MAP_FAILED)
    return false;
  *m = (ic_mem_t){.ptr = p, .size = len, .page = huge, .hugetlb = true};
  return true;
}

/* True when the kernel backed exactly the mapping [p, p+len) with transparent huge pages.
 * A VMA merged with a neighbour cannot be told apart, so it counts as "not huge". */
static bool thp_backed(const void *p, size_t len) {
  FILE *f = fopen("/proc/self/smaps", "r");
  char line[256];
  bool ours = false, huge = false;
  if (!f)
    return false;
  while (fgets(line, sizeof line, f)) {
    unsigned long start, end, kb;
    if (sscanf(line, "%lx-%lx ", &start, &end) == 2)
      ours = start == (unsigned long)p && end == (unsigned long)p + len;
    else if (ours && sscanf(line, "AnonHugePages: %lu kB", &kb) == 1) {
      huge = kb * 1024 == len;
      break;
    }
  }
  fclose(f);
  return huge;
}

/* Over-allocates by one huge page and trims, so the buffer starts huge-page aligned and
 * every huge-page frame of it can be a THP. */
static bool map_thp(ic_mem_t *m, size_t size, size_t huge) {
  size_t len = round_up(size, huge);
  char *raw = mmap(NULL, len + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
  if (raw == MAP_FAILED)
    return false;
  char *p = (char *)round_up((size_t)raw, huge);
  if (p > raw)
    munmap(raw, (size_t)(p - raw));
  munmap(p + len, (size_t)(raw + huge - p));
  madvise(p, len, MADV_HUGEPAGE);
  prefault(p, len);
  *m = (ic_mem_t){.ptr = p, .size = len, .page = thp_backed(p, len) ? huge : base_page()};
  return true;
}

static bool map_base(ic_mem_t *m, size_t size) {
  size_t len = round_up(size, base_page());
  void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return false;
  prefault(p, len);
  *m = (ic_mem_t){.ptr = p, .size = len, .page = base_page()};
  return true;
}

bool ic_mem_alloc(ic_mem_t *m, size_t size, bool want_huge) {
  if (want_huge) {
    size_t huge = huge_page();
    if (map_hugetlb(m, size, huge)) {
      prefault(m->ptr, m->size);
      return true;
    }
    if (map_thp(m, size, huge))
      return true;
  }
  return map_base(m, size);
}

void ic_mem_free(ic_mem_t *m) {
  if (m->ptr)
    munmap(m->ptr, m->size);
  m->ptr = NULL;
}

static const char *pagemap_path = "/proc/self/pagemap";
static int pagemap_fd = -1;
static char pagemap_err[256];

void ic_set_pagemap_path(const char *path) {
  if (pagemap_fd >= 0)
    close(pagemap_fd);
  pagemap_fd = -1;
  pagemap_path = path;
}

const char *ic_pagemap_error(void) { return pagemap_err; }

#define PM_PRESENT (1ULL << 63)
#define PM_PFN_MASK ((1ULL << 55) - 1)

bool ic_virt_to_phys(const void *va, uint64_t *pa) {
  size_t page = base_page();
  uint64_t entry;
  if (pagemap_fd < 0)
    pagemap_fd = open(pagemap_path, O_RDONLY | O_CLOEXEC);
  if (pagemap_fd < 0) {
    snprintf(pagemap_err, sizeof pagemap_err, "%s: %s", pagemap_path, strerror(errno));
    return false;
  }
  off_t off = (off_t)((uintptr_t)va / page * sizeof entry);
  ssize_t got = pread(pagemap_fd, &entry, sizeof entry, off);
  if (got != (ssize_t)sizeof entry) {
    snprintf(pagemap_err, sizeof pagemap_err, "%s: %s", pagemap_path,
             got < 0 ? strerror(errno) : "short read");
    return false;
  }
  if (!(entry & PM_PRESENT)) {
    snprintf(pagemap_err, sizeof pagemap_err, "%s: page at %p not present", pagemap_path, va);
    return false;
  }
  /* Since Linux 4.2 an unprivileged reader sees PFN 0 rather than an error. */
  if (!(entry & PM_PFN_MASK)) {
    snprintf(pagemap_err, sizeof pagemap_err, "%s: PFNs hidden (needs CAP_SYS_ADMIN)",
             pagemap_path);
    return false;
  }
  *pa = (entry & PM_PFN_MASK) * page + (uintptr_t)va % page;
  return true;
}
