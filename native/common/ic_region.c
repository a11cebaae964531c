/* The observation points' buffer, its CPU time source and its JSON flush (ic_region.h). */
#include "ic_region.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

struct ic_regions ic_regions_g = {.perf_fd = -1};

static bool want_clock_mode(void) {
  const char *e = getenv("IC_REGION_CPUTIME");
  return e && !strcmp(e, "clock");
}

/* Maps the user page of a task-clock event on this thread. Returns NULL when the kernel
 * cannot tell user space how to extrapolate its times, which is the common case in VMs
 * whose sched_clock is paravirtualised. */
static const volatile struct perf_event_mmap_page *open_perf_page(int *fd_out) {
#ifdef IC_ARCH_HAVE_CYCLES
  struct perf_event_attr a;
  memset(&a, 0, sizeof a);
  a.size = sizeof a;
  a.type = PERF_TYPE_SOFTWARE;
  a.config = PERF_COUNT_SW_TASK_CLOCK;
  /* Only the times are used; excluding the kernel keeps the event legal at
   * perf_event_paranoid=2 for unprivileged users. */
  a.exclude_kernel = 1;
  a.exclude_hv = 1;
  int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
  if (fd < 0)
    return NULL;
  long pagesz = sysconf(_SC_PAGESIZE);
  void *p = mmap(NULL, (size_t)pagesz, PROT_READ, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    close(fd);
    return NULL;
  }
  const volatile struct perf_event_mmap_page *pc = p;
  if (!pc->cap_user_time || !pc->cap_user_time_zero) {
    munmap(p, (size_t)pagesz);
    close(fd);
    return NULL;
  }
  *fd_out = fd;
  return pc;
#else
  (void)fd_out;
  return NULL;
#endif
}

static void close_perf_page(void) {
  if (ic_regions_g.page)
    munmap((void *)ic_regions_g.page, (size_t)sysconf(_SC_PAGESIZE));
  if (ic_regions_g.perf_fd >= 0)
    close(ic_regions_g.perf_fd);
  ic_regions_g.page = NULL;
  ic_regions_g.perf_fd = -1;
}

bool ic_regions_init(const char *const *names, int nregions, int max_reps) {
  if (nregions < 1 || max_reps < 1) {
    ic_warn("regions: need at least one region and one repetition");
    return false;
  }
  ic_regions_fini();
  size_t n = (size_t)nregions * (size_t)max_reps;
  ic_sample_t *samples = malloc(n * sizeof *samples);
  ic_stamp_t *open = calloc((size_t)nregions, sizeof *open);
  if (!samples || !open) {
    free(samples);
    free(open);
    ic_warn("regions: cannot allocate %zu samples", n);
    return false;
  }
  /* Writing every sample now faults the pages in, so no marker takes a page fault. */
  for (size_t i = 0; i < n; i++)
    samples[i] = (ic_sample_t){.nivcsw = -1, .cpu = -1};
  ic_regions_g.samples = samples;
  ic_regions_g.open = open;
  ic_regions_g.names = names;
  ic_regions_g.nregions = nregions;
  ic_regions_g.max_reps = max_reps;
  ic_regions_g.reps = 0;
  ic_regions_g.dropped = 0;
  ic_regions_g.row = NULL;
  ic_regions_g.page = want_clock_mode() ? NULL : open_perf_page(&ic_regions_g.perf_fd);
  ic_regions_g.mode = ic_regions_g.page ? IC_CPUTIME_PERF_MMAP : IC_CPUTIME_CLOCK;
  ic_tags_attach(names, nregions);
  return true;
}

void ic_regions_set_rep(int rep) {
  if (rep < 0 || rep >= ic_regions_g.max_reps) {
    ic_regions_g.row = NULL;
    return;
  }
  ic_regions_g.row = &ic_regions_g.samples[(size_t)rep * (size_t)ic_regions_g.nregions];
  if (rep >= ic_regions_g.reps)
    ic_regions_g.reps = rep + 1;
}

void ic_regions_set_nivcsw(int region, int64_t nivcsw) {
  if (!ic_regions_g.row || region < 0 || region >= ic_regions_g.nregions) {
    ic_regions_g.dropped++;
    return;
  }
  ic_regions_g.row[region].nivcsw = nivcsw;
}

static void write_sample(FILE *f, int rep, int region, const ic_sample_t *s,
                         ic_regions_extra_fn extra, void *ctx) {
  ic_json_t j;
  ic_json_begin(&j, f);
  ic_json_str(&j, "event", "sample");
  ic_json_i64(&j, "rep", rep);
  ic_json_i64(&j, "region", region);
  ic_json_str(&j, "name", ic_regions_g.names[region]);
  ic_json_u64(&j, "wall_ns", s->wall_ns);
  ic_json_u64(&j, "cpu_ns", s->cpu_ns);
  ic_json_i64(&j, "nivcsw", s->nivcsw);
  ic_json_i64(&j, "cpu", s->cpu);
  if (extra)
    extra(&j, rep, region, ctx);
  ic_json_end(&j);
}

void ic_regions_flush(FILE *f, ic_regions_extra_fn extra, void *ctx) {
  for (int rep = 0; rep < ic_regions_g.reps; rep++)
    for (int r = 0; r < ic_regions_g.nregions; r++) {
      const ic_sample_t *s = ic_regions_sample(rep, r);
      if (s->entries)
        write_sample(f, rep, r, s, extra, ctx);
    }
}

void ic_regions_fini(void) {
  close_perf_page();
  free(ic_regions_g.samples);
  free(ic_regions_g.open);
  ic_regions_g = (struct ic_regions){.perf_fd = -1};
}

int ic_regions_reps(void) { return ic_regions_g.reps; }

uint64_t ic_regions_dropped(void) { return ic_regions_g.dropped; }

const char *ic_regions_cputime_mode(void) {
  return ic_regions_g.mode == IC_CPUTIME_PERF_MMAP ? "perf_mmap" : "clock_gettime";
}

const ic_sample_t *ic_regions_sample(int rep, int region) {
  if (rep < 0 || rep >= ic_regions_g.max_reps || region < 0 || region >= ic_regions_g.nregions)
    return NULL;
  return &ic_regions_g.samples[(size_t)rep * (size_t)ic_regions_g.nregions + (size_t)region];
}
