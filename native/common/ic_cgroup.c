#include "ic_cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int open_in(const char *dir, const char *file, int flags) {
  char path[4096];
  if (snprintf(path, sizeof path, "%s/%s", dir, file) >= (int)sizeof path) {
    errno = ENAMETOOLONG;
    return -1;
  }
  return open(path, flags | O_CLOEXEC);
}

bool ic_cgroup_open(ic_cgroup_t *g, char *spec, ic_role_t role, char *why, size_t cap) {
  char *plus = strchr(spec, '+');
  if (plus)
    *plus = '\0';
  const char *path = spec;
  *g = (ic_cgroup_t){.path = path, .usage_path = plus ? plus + 1 : path, .role = role,
                     .freeze_fd = -1, .usage_fd = -1};
  if ((g->freeze_fd = open_in(path, "cgroup.freeze", O_RDWR)) >= 0)
    g->freezer = IC_FREEZER_V2;
  else if ((g->freeze_fd = open_in(path, "freezer.state", O_RDWR)) >= 0)
    g->freezer = IC_FREEZER_V1;
  if ((g->usage_fd = open_in(g->usage_path, "cpu.stat", O_RDONLY)) >= 0)
    g->usage_src = IC_USAGE_CPU_STAT;
  else if ((g->usage_fd = open_in(g->usage_path, "cpuacct.usage", O_RDONLY)) >= 0)
    g->usage_src = IC_USAGE_CPUACCT;
  if (g->freezer == IC_FREEZER_NONE && g->usage_src == IC_USAGE_NONE) {
    snprintf(why, cap, "%s is not a cgroup directory (no cgroup.freeze, freezer.state, "
             "cpu.stat or cpuacct.usage): %s", path, strerror(errno));
    return false;
  }
  if (plus && g->usage_src == IC_USAGE_NONE) {
    snprintf(why, cap, "%s has no cpu.stat or cpuacct.usage", g->usage_path);
    ic_cgroup_close(g);
    return false;
  }
  return true;
}

void ic_cgroup_close(ic_cgroup_t *g) {
  if (g->freeze_fd >= 0)
    close(g->freeze_fd);
  if (g->usage_fd >= 0)
    close(g->usage_fd);
  g->freeze_fd = g->usage_fd = -1;
}

int ic_cgroup_set_frozen(const ic_cgroup_t *g, bool frozen) {
  static const char *const cmd[][2] = {
      [IC_FREEZER_V2] = {"0", "1"},
      [IC_FREEZER_V1] = {"THAWED", "FROZEN"},
  };
  if (g->freeze_fd < 0)
    return EBADF;
  const char *c = cmd[g->freezer][frozen];
  ssize_t len = (ssize_t)strlen(c);
  return pwrite(g->freeze_fd, c, (size_t)len, 0) == len ? 0 : errno;
}

bool ic_cpu_stat_usage_ns(const char *text, uint64_t *ns) {
  static const char key[] = "usage_usec ";
  for (const char *line = text; line; line = strchr(line, '\n')) {
    line += *line == '\n';
    if (strncmp(line, key, sizeof key - 1))
      continue;
    char *end;
    errno = 0;
    unsigned long long us = strtoull(line + sizeof key - 1, &end, 10);
    if (errno || end == line + sizeof key - 1 || (*end && *end != '\n'))
      return false;
    *ns = (uint64_t)us * 1000u;
    return true;
  }
  return false;
}

bool ic_cgroup_usage(const ic_cgroup_t *g, uint64_t *ns) {
  char buf[512];
  if (g->usage_fd < 0)
    return false;
  ssize_t n = pread(g->usage_fd, buf, sizeof buf - 1, 0);
  if (n <= 0)
    return false;
  buf[n] = '\0';
  if (g->usage_src == IC_USAGE_CPU_STAT)
    return ic_cpu_stat_usage_ns(buf, ns);
  char *end;
  errno = 0;
  unsigned long long v = strtoull(buf, &end, 10);
  if (errno || end == buf)
    return false;
  *ns = (uint64_t)v;
  return true;
}

bool ic_cgroup_holds(const ic_cgroup_t *g, int pid) {
  int fd = open_in(g->path, "cgroup.procs", O_RDONLY);
  if (fd < 0)
    return false;
  FILE *f = fdopen(fd, "r");
  if (!f) {
    close(fd);
    return false;
  }
  int member;
  bool found = false;
  while (!found && fscanf(f, "%d", &member) == 1)
    found = member == pid;
  fclose(f);
  return found;
}

const char *ic_freezer_name(ic_freezer_t f) {
  return f == IC_FREEZER_V2 ? "v2" : f == IC_FREEZER_V1 ? "v1" : "none";
}

const char *ic_usage_src_name(ic_usage_src_t u) {
  return u == IC_USAGE_CPU_STAT ? "cpu.stat" : u == IC_USAGE_CPUACCT ? "cpuacct.usage" : "none";
}
