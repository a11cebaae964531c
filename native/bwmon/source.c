/* Memory-traffic sources (source.h). */
#include "source.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ic_arch.h"
#include "ic_perf.h"
#include "ic_tag.h"

struct ic_src_probe {
  ic_mem_t mem;
  void **cursor;
  uint32_t lines;
};

const char *ic_src_kind_name(ic_src_kind_t k) {
  return k == IC_SRC_PERF ? "perf" : k == IC_SRC_FILE ? "file" : "probe";
}

static bool fail(char *err, size_t cap, const char *fmt, const char *a, const char *b) {
  snprintf(err, cap, fmt, a, b);
  return false;
}

static bool parse_scope(struct ic_src_term *t, char *scope, char *err, size_t cap) {
  uint64_t v;
  if (!strcmp(scope, "task")) {
    t->scope = IC_SCOPE_TASK;
  } else if (!strcmp(scope, "system")) {
    t->scope = IC_SCOPE_SYSTEM;
  } else if (!strncmp(scope, "cpu:", 4) && ic_parse_u64(scope + 4, &v) && v < CPU_SETSIZE) {
    t->scope = IC_SCOPE_CPU;
    t->scope_cpu = (int)v;
  } else if (!strncmp(scope, "cgroup:", 7) && scope[7] == '/' &&
             strlen(scope + 7) < sizeof t->cgroup) {
    t->scope = IC_SCOPE_CGROUP;
    snprintf(t->cgroup, sizeof t->cgroup, "%s", scope + 7);
  } else {
    return fail(err, cap, "scope '%s' is not task, system, cpu:N or cgroup:/DIR%s", scope, "");
  }
  return true;
}

/* TYPE:CONFIG[:CONFIG1]/SCOPE, parsed in place. */
static bool parse_term(struct ic_src_term *t, char *text, char *err, size_t cap) {
  char *slash = strchr(text, '/');
  if (!slash)
    return fail(err, cap, "perf term '%s' lacks /SCOPE (task, system, cpu:N, cgroup:DIR)%s",
                text, "");
  *slash = '\0';
  char *fields[4] = {0}, *save = NULL;
  int n = 0;
  for (char *tok = strtok_r(text, ":", &save); tok && n < 4; tok = strtok_r(NULL, ":", &save))
    fields[n++] = tok;
  uint64_t type;
  if (n < 2 || n > 3 || !ic_parse_u64(fields[0], &type) || type > UINT32_MAX ||
      !ic_parse_u64(fields[1], &t->config) || (n == 3 && !ic_parse_u64(fields[2], &t->config1)))
    return fail(err, cap, "perf term needs TYPE:CONFIG[:CONFIG1] as numbers%s%s", "", "");
  t->type = (uint32_t)type;
  return parse_scope(t, slash + 1, err, cap);
}

static bool parse_perf(ic_src_t *s, char *rest, char *err, size_t cap) {
  char *save = NULL;
  for (char *term = strtok_r(rest, "+", &save); term; term = strtok_r(NULL, "+", &save)) {
    if (s->nterms == IC_SRC_MAX_TERMS)
      return fail(err, cap, "at most %s perf terms per source%s", "16", "");
    if (strncmp(term, "perf:", 5) && s->nterms)
      return fail(err, cap, "'%s': every summed term is perf:TYPE:CONFIG/SCOPE%s", term, "");
    if (!parse_term(&s->term[s->nterms], term + (s->nterms ? 5 : 0), err, cap))
      return false;
    s->task_scoped |= s->term[s->nterms].scope == IC_SCOPE_TASK;
    s->nterms++;
  }
  return s->nterms ? true : fail(err, cap, "empty perf source%s%s", "", "");
}

static bool parse_probe(ic_src_t *s, char *rest, char *err, size_t cap) {
  char *colon = strchr(rest, ':');
  uint64_t size, lines;
  if (!colon)
    return fail(err, cap, "probe source '%s' is not probe:SIZE:LINES%s", rest, "");
  *colon = '\0';
  if (!ic_parse_size(rest, &size) || size < (1u << 20))
    return fail(err, cap, "probe size '%s' must be a size of at least 1M%s", rest, "");
  if (!ic_parse_u64(colon + 1, &lines) || lines < 1 || lines > 4096)
    return fail(err, cap, "probe lines '%s' must be 1..4096%s", colon + 1, "");
  s->probe = calloc(1, sizeof *s->probe);
  if (!s->probe)
    return fail(err, cap, "out of memory%s%s", "", "");
  s->probe->mem.size = size;
  s->probe->lines = (uint32_t)lines;
  return true;
}

bool ic_src_parse(ic_src_t *s, const char *spec, char *err, size_t cap) {
  memset(s, 0, sizeof *s);
  for (int i = 0; i < IC_SRC_MAX_FDS; i++)
    s->fd[i] = -1;
  if (strlen(spec) >= IC_SRC_SPEC_LEN)
    return fail(err, cap, "source spec is longer than %s characters%s", "1023", "");
  char work[IC_SRC_SPEC_LEN];
  snprintf(s->spec, sizeof s->spec, "%s", spec);
  snprintf(work, sizeof work, "%s", spec);
  if (!strncmp(work, "perf:", 5)) {
    s->kind = IC_SRC_PERF;
    return parse_perf(s, work + 5, err, cap);
  }
  if (!strncmp(work, "file:", 5)) {
    s->kind = IC_SRC_FILE;
    if (work[5] != '/')
      return fail(err, cap, "file source '%s' needs an absolute path%s", work + 5, "");
    snprintf(s->path, sizeof s->path, "%s", work + 5);
    return true;
  }
  if (!strncmp(work, "probe:", 6)) {
    s->kind = IC_SRC_PROBE;
    return parse_probe(s, work + 6, err, cap);
  }
  return fail(err, cap, "source '%s' is not perf:..., file:PATH or probe:SIZE:LINES%s", spec, "");
}

int ic_perf_event_open(struct perf_event_attr *a, pid_t pid, int cpu, int group,
                       unsigned long flags) {
  int fd = (int)syscall(SYS_perf_event_open, a, pid, cpu, group, flags | PERF_FLAG_FD_CLOEXEC);
  return fd < 0 ? -errno : fd;
}

int ic_online_cpus(int *cpus, int cap) {
  cpu_set_t set;
  int n = 0;
  /* The CPUs this process may use is not the question; the online ones are. */
  FILE *f = fopen("/sys/devices/system/cpu/online", "r");
  CPU_ZERO(&set);
  if (f) {
    int a, b;
    char sep;
    while (fscanf(f, "%d", &a) == 1) {
      b = a;
      if (fscanf(f, "%c", &sep) == 1 && sep == '-' && fscanf(f, "%d", &b) == 1)
        (void)fscanf(f, "%c", &sep);
      for (int c = a; c <= b && c < CPU_SETSIZE; c++)
        CPU_SET(c, &set);
      if (sep != ',')
        break;
    }
    fclose(f);
  }
  for (int c = 0; c < CPU_SETSIZE && n < cap; c++)
    if (CPU_ISSET(c, &set))
      cpus[n++] = c;
  return n;
}

static int read_paranoid(void) {
  FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
  int v = INT_MIN;
  if (f) {
    if (fscanf(f, "%d", &v) != 1)
      v = INT_MIN;
    fclose(f);
  }
  return v;
}

static bool open_term(ic_src_t *s, const struct ic_src_term *t, pid_t task, char *err,
                      size_t cap) {
  struct perf_event_attr a;
  memset(&a, 0, sizeof a);
  a.size = sizeof a;
  a.type = t->type;
  a.config = t->config;
  a.config1 = t->config1;
  /* Kernel work counts: the copies behind read() and page faults are memory traffic
   * too (paper 004 traced its spikes to them). */
  a.exclude_hv = 1;
  int cpus[IC_SRC_MAX_FDS], ncpus = 0, cgfd = -1;
  pid_t pid = -1;
  unsigned long flags = 0;
  switch (t->scope) {
  case IC_SCOPE_TASK:
    a.inherit = 1;
    a.disabled = 1;
    a.enable_on_exec = 1;
    pid = task;
    cpus[ncpus++] = -1;
    break;
  case IC_SCOPE_CPU:
    cpus[ncpus++] = t->scope_cpu;
    break;
  case IC_SCOPE_CGROUP:
    cgfd = open(t->cgroup, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (cgfd < 0)
      return fail(err, cap, "cgroup %s: %s", t->cgroup, strerror(errno));
    pid = cgfd;
    flags = PERF_FLAG_PID_CGROUP;
    /* fallthrough */
  case IC_SCOPE_SYSTEM:
    ncpus = ic_online_cpus(cpus, IC_SRC_MAX_FDS);
    break;
  }
  bool ok = true;
  for (int i = 0; i < ncpus && ok; i++) {
    int fd = s->nfd < IC_SRC_MAX_FDS ? ic_perf_event_open(&a, pid, cpus[i], -1, flags) : -EMFILE;
    if (fd < 0) {
      char why[128];
      ic_perf_reason(-fd, read_paranoid(), why, sizeof why);
      ok = fail(err, cap, "%s: %s", s->spec, why);
    } else {
      s->fd[s->nfd++] = fd;
    }
  }
  if (cgfd >= 0)
    close(cgfd);
  return ok;
}

static bool open_perf(ic_src_t *s, pid_t task, char *err, size_t cap) {
  for (int i = 0; i < s->nterms; i++)
    if (!open_term(s, &s->term[i], task, err, cap)) {
      ic_src_close(s);
      return false;
    }
  return true;
}

/* A random single cycle through the buffer's lines (Sattolo), one pointer per line, so
 * every step is a dependent load the prefetchers cannot predict. */
static bool open_probe(ic_src_t *s, uint64_t seed, char *err, size_t cap) {
  ic_src_probe_t *p = s->probe;
  size_t line = ic_line_size();
  uint64_t want = p->mem.size;
  if (!ic_mem_alloc(&p->mem, want, true))
    return fail(err, cap, "probe: cannot allocate %s bytes%s", s->spec, "");
  size_t n = want / line;
  size_t *idx = malloc(n * sizeof *idx);
  if (!idx)
    return fail(err, cap, "probe: out of memory for %s%s", s->spec, "");
  ic_rng_t rng;
  ic_rng_seed(&rng, seed);
  ic_sattolo(idx, n, &rng);
  char *base = p->mem.ptr;
  for (size_t i = 0; i < n; i++)
    *(void **)(base + i * line) = base + idx[i] * line;
  free(idx);
  p->cursor = (void **)base;
  return true;
}

bool ic_src_open(ic_src_t *s, pid_t task, uint64_t seed, char *err, size_t cap) {
  switch (s->kind) {
  case IC_SRC_PERF:
    return open_perf(s, task, err, cap);
  case IC_SRC_FILE:
    s->fd[0] = open(s->path, O_RDONLY | O_CLOEXEC);
    if (s->fd[0] < 0)
      return fail(err, cap, "%s: %s", s->path, strerror(errno));
    s->nfd = 1;
    if (ic_src_read(s) == UINT64_MAX) {
      ic_src_close(s);
      return fail(err, cap, "%s does not hold a byte count%s", s->path, "");
    }
    return true;
  case IC_SRC_PROBE:
    return open_probe(s, seed, err, cap);
  }
  return false;
}

void ic_src_enable(ic_src_t *s) {
  if (s->kind == IC_SRC_PERF && s->task_scoped)
    for (int i = 0; i < s->nfd; i++)
      ioctl(s->fd[i], PERF_EVENT_IOC_ENABLE, 0);
}

static uint64_t read_file_count(int fd) {
  char buf[64];
  ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0)
    return UINT64_MAX;
  buf[n] = '\0';
  buf[strcspn(buf, "\n")] = '\0';
  uint64_t v;
  /* resctrl says "Unavailable" while the hardware has no count for the group. */
  return ic_parse_u64(buf, &v) ? v : UINT64_MAX;
}

static uint64_t probe_chase(ic_src_probe_t *p) {
  void **c = p->cursor;
  ic_arch_load_fence();
  uint64_t t0 = ic_tick();
  ic_arch_load_fence();
  for (uint32_t i = 0; i < p->lines; i++)
    c = (void **)*c;
  ic_arch_load_fence();
  uint64_t t1 = ic_tick();
  p->cursor = c;
  return t1 - t0;
}

uint64_t ic_src_read(ic_src_t *s) {
  uint64_t total = 0, v;
  switch (s->kind) {
  case IC_SRC_PERF:
    for (int i = 0; i < s->nfd; i++) {
      if (read(s->fd[i], &v, sizeof v) != (ssize_t)sizeof v)
        return UINT64_MAX;
      total += v;
    }
    return total;
  case IC_SRC_FILE:
    return read_file_count(s->fd[0]);
  case IC_SRC_PROBE:
    return probe_chase(s->probe);
  }
  return UINT64_MAX;
}

void ic_src_close(ic_src_t *s) {
  for (int i = 0; i < s->nfd; i++)
    if (s->fd[i] >= 0)
      close(s->fd[i]);
  s->nfd = 0;
  if (s->probe) {
    if (s->probe->mem.ptr)
      ic_mem_free(&s->probe->mem);
    free(s->probe);
    s->probe = NULL;
  }
}

uint32_t ic_src_probe_lines(const ic_src_t *s) { return s->probe ? s->probe->lines : 0; }
uint64_t ic_src_probe_bytes(const ic_src_t *s) { return s->probe ? s->probe->mem.size : 0; }
size_t ic_src_probe_page(const ic_src_t *s) { return s->probe ? s->probe->mem.page : 0; }
