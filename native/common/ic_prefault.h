/* Faulting heap memory in before anything is timed. A memset of zeroes right after calloc
 * (or of memory that is never read before it is written) is a dead store the compiler may
 * delete at -O2 (GCC does, for calloc), so the pages would still be faulted in the middle
 * of the measured loop. A volatile store per page cannot be removed, and a write, unlike a
 * read, gives each page a frame of its own instead of the shared zero page. */
#ifndef IC_PREFAULT_H
#define IC_PREFAULT_H

#include <stddef.h>
#include <unistd.h>

static inline void ic_prefault(void *p, size_t bytes) {
  volatile unsigned char *b = p;
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  for (size_t off = 0; off < bytes; off += page)
    b[off] = b[off];
  if (bytes)
    b[bytes - 1] = b[bytes - 1];
}

#endif
