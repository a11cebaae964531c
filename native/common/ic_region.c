/* The observation points' buffer, its CPU time source and its JSON flush (ic_region.h). */
#include "ic_region.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

struct ic_regions ic_regions_g = {.perf_fd = -1};
ic_region_watch_fn ic_region_watch_g;
static ic_region_names_t declared;

void ic_regions_declare(const char *const *names, int n, int first_id) {
  declared = (ic_region_names_t){names, n, first_id};
}

ic_region_names_t ic_regions_declared(void) { return declared; }

ic_stamp_t ic_region_stamp_clock(void) {
  struct timespec w, c;
  clock_gettime(CLOCK_MONOTONIC, &w);
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c);
  return (ic_stamp_t){ic_region_timespec_ns(&w), ic_region_timespec_ns(&c)};
}

int ic_regions_cpu(void) { return sched_getcpu(); }

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

/* Installs `samples` (max_reps rows of nregions, every sample already reset) and the time
 * source; `borrowed`: the buffer is not ours to free. */
static bool install(const char *const *names, int nregions, int max_reps, ic_sample_t *samples,
                    bool borrowed) {
  ic_stamp_t *open = calloc((size_t)nregions, sizeof *open);
  if (!open) {
    if (!borrowed)
      free(samples);
    ic_warn("regions: cannot allocate %d start stamps", nregions);
    return false;
  }
  ic_regions_g.samples = samples;
  ic_regions_g.borrowed = borrowed;
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

bool ic_regions_init(const char *const *names, int nregions, int max_reps) {
  if (nregions < 1 || max_reps < 1) {
    ic_warn("regions: need at least one region and one repetition");
    return false;
  }
  ic_regions_fini();
  size_t n = (size_t)nregions * (size_t)max_reps;
  ic_sample_t *samples = malloc(n * sizeof *samples);
  if (!samples) {
    ic_warn("regions: cannot allocate %zu samples", n);
    return false;
  }
  /* Writing every sample now faults the pages in, so no marker takes a page fault. */
  for (size_t i = 0; i < n; i++)
    samples[i] = (ic_sample_t){.nivcsw = -1, .cpu = -1};
  return install(names, nregions, max_reps, samples, false);
}

bool ic_regions_attach_row(const char *const *names, int nregions, ic_sample_t *row,
                           bool raw_wall) {
  if (nregions < 1) {
    ic_warn("regions: need at least one region");
    return false;
  }
  ic_regions_fini();
  if (!install(names, nregions, 1, row, true))
    return false;
#ifdef IC_ARCH_HAVE_CYCLES
  if (raw_wall) {
    close_perf_page();
    ic_regions_g.mode = IC_CPUTIME_WALL;
  }
#else
  (void)raw_wall; /* ic-run refuses --clock wall where no counter exists */
#endif
  ic_regions_set_rep(0);
  return true;
}

void ic_regions_record(int region, const ic_sample_t *s) {
  if (!ic_regions_g.row || region < 0 || region >= ic_regions_g.nregions) {
    ic_regions_g.dropped++;
    return;
  }
  ic_regions_g.row[region] = *s;
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

/* Ticks of the counter per ns, measured against CLOCK_MONOTONIC_RAW over `ms`: only the TSC
   is calibrated so, Arm's generic timer states its rate (CNTFRQ_EL0). */
#if defined(__x86_64__)
static double ticks_per_ns(unsigned ms) {
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC_RAW, &a);
  uint64_t c0 = ic_arch_cycles();
  uint64_t t0 = ic_region_timespec_ns(&a), t1;
  do {
    clock_gettime(CLOCK_MONOTONIC_RAW, &b);
    t1 = ic_region_timespec_ns(&b);
  } while (t1 - t0 < (uint64_t)ms * 1000000u);
  uint64_t c1 = ic_arch_cycles();
  return (double)(c1 - c0) / (double)(t1 - t0);
}
#endif

#if defined(__x86_64__)
/* A TSC that ticks at a constant rate through frequency changes and idle states. */
static bool invariant_tsc(void) {
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f)
    return false;
  char line[4096];
  bool constant = false, nonstop = false;
  while (fgets(line, sizeof line, f) && strncmp(line, "flags", 5))
    ;
  if (!strncmp(line, "flags", 5)) {
    constant = strstr(line, " constant_tsc") != NULL;
    nonstop = strstr(line, " nonstop_tsc") != NULL;
  }
  fclose(f);
  return constant && nonstop;
}
#endif

bool ic_regions_use_wall_clock(char *why, size_t cap) {
#if defined(__x86_64__)
  if (!invariant_tsc()) {
    snprintf(why, cap, "the TSC is not invariant (no constant_tsc + nonstop_tsc in "
                       "/proc/cpuinfo): its rate follows the CPU frequency");
    return false;
  }
  /* Two calibrations must agree: a host that moves the counter under us is refused. */
  double a = ticks_per_ns(10), b = ticks_per_ns(10);
  if (a <= 0 || b <= 0 || (a > b ? a / b : b / a) > 1.01) {
    snprintf(why, cap, "the TSC rate is unstable (%.4f vs %.4f ticks/ns)", a, b);
    return false;
  }
  ic_regions_g.ns_per_tick = 2.0 / (a + b);
  snprintf(why, cap, "invariant TSC at %.1f MHz (rdtsc, no system call)", 500.0 * (a + b));
#elif defined(__aarch64__)
  uint64_t freq;
  __asm__ __volatile__("mrs %0, cntfrq_el0" : "=r"(freq));
  if (!freq) {
    snprintf(why, cap, "CNTFRQ_EL0 reads 0: firmware did not set the generic timer's rate");
    return false;
  }
  ic_regions_g.ns_per_tick = 1e9 / (double)freq;
  snprintf(why, cap, "generic timer at %.3f MHz (cntvct_el0, no system call)", (double)freq / 1e6);
#else
  snprintf(why, cap, "no user-readable cycle counter is known for %s", IC_ARCH_NAME);
  return false;
#endif
#ifdef IC_ARCH_HAVE_CYCLES
  close_perf_page();
  ic_regions_g.mode = IC_CPUTIME_WALL;
  return true;
#endif
}

static void write_sample(FILE *f, int rep, int region, const ic_sample_t *s,
                         ic_regions_extra_fn extra, void *ctx) {
  uint64_t wall = s->wall_ns, cpu = s->cpu_ns;
  if (ic_regions_g.mode == IC_CPUTIME_WALL)
    wall = cpu = (uint64_t)((double)s->wall_ns * ic_regions_g.ns_per_tick + 0.5);
  ic_json_t j;
  ic_json_begin(&j, f);
  ic_json_str(&j, "event", "sample");
  ic_json_i64(&j, "rep", rep);
  ic_json_i64(&j, "region", region);
  ic_json_str(&j, "name", ic_regions_g.names[region]);
  ic_json_u64(&j, "wall_ns", wall);
  ic_json_u64(&j, "cpu_ns", cpu);
  ic_json_i64(&j, "nivcsw", s->nivcsw);
  if (ic_regions_g.mode == IC_CPUTIME_WALL && s->nivcsw != -1)
    ic_json_bool(&j, "descheduled", s->nivcsw != 0);
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
  if (!ic_regions_g.borrowed)
    free(ic_regions_g.samples);
  free(ic_regions_g.open);
  ic_regions_g = (struct ic_regions){.perf_fd = -1};
}

int ic_regions_reps(void) { return ic_regions_g.reps; }

uint64_t ic_regions_dropped(void) { return ic_regions_g.dropped; }

const char *ic_regions_cputime_mode(void) {
  switch (ic_regions_g.mode) {
  case IC_CPUTIME_PERF_MMAP:
    return "perf_mmap";
  case IC_CPUTIME_WALL:
    return "wall";
  default:
    return "clock_gettime";
  }
}

uint64_t ic_regions_ticks_to_ns(uint64_t ticks) {
  return ic_regions_g.mode == IC_CPUTIME_WALL
             ? (uint64_t)((double)ticks * ic_regions_g.ns_per_tick + 0.5)
             : ticks;
}

const ic_sample_t *ic_regions_sample(int rep, int region) {
  if (rep < 0 || rep >= ic_regions_g.max_reps || region < 0 || region >= ic_regions_g.nregions)
    return NULL;
  return &ic_regions_g.samples[(size_t)rep * (size_t)ic_regions_g.nregions + (size_t)region];
}
