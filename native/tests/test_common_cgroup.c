/* The cgroup boundary against fake directories: which files a v2 and a v1 group have
 * decides what is written and read, and the watchdog thaws through the same files. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "client.h"
#include "ic_cgroup.h"
#include "ic_common.h"
#include "ic_test.h"

static void put(const char *dir, const char *file, const char *text) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  CHECK(fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text));
  close(fd);
}

static const char *get(const char *dir, const char *file) {
  static char buf[256];
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  int fd = open(path, O_RDONLY);
  ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
  buf[n > 0 ? n : 0] = '\0';
  if (fd >= 0)
    close(fd);
  return buf;
}

static char *subdir(const char *base, const char *name) {
  char *p = malloc(512);
  snprintf(p, 512, "%s/%s", base, name);
  CHECK(mkdir(p, 0755) == 0);
  return p;
}

static void v2_group(const char *base) {
  char *dir = subdir(base, "v2");
  put(dir, "cgroup.freeze", "0\n");
  put(dir, "cpu.stat", "usage_usec 2500\nuser_usec 2000\nsystem_usec 500\n");
  put(dir, "cgroup.procs", "12\n345\n");
  char why[512];
  ic_cgroup_t g;
  CHECK(ic_cgroup_open(&g, dir, IC_ROLE_BEST_EFFORT, why, sizeof why));
  CHECK(g.freezer == IC_FREEZER_V2 && g.usage_src == IC_USAGE_CPU_STAT);
  CHECK(ic_cgroup_set_frozen(&g, true) == 0 && get(dir, "cgroup.freeze")[0] == '1');
  CHECK(ic_cgroup_set_frozen(&g, false) == 0 && get(dir, "cgroup.freeze")[0] == '0');
  uint64_t ns;
  CHECK(ic_cgroup_usage(&g, &ns) && ns == 2500000);
  put(dir, "cpu.stat", "usage_usec 4000\n"); /* re-read from the start every time */
  CHECK(ic_cgroup_usage(&g, &ns) && ns == 4000000);
  CHECK(ic_cgroup_holds(&g, 345) && !ic_cgroup_holds(&g, 34));
  ic_cgroup_close(&g);
  free(dir);
}

static void v1_group(const char *base) {
  char *dir = subdir(base, "v1");
  char *acct = subdir(base, "v1acct");
  put(dir, "freezer.state", "THAWED\n");
  put(acct, "cpuacct.usage", "987654321\n");
  char why[512], spec[1100];
  ic_cgroup_t g;
  CHECK(ic_cgroup_open(&g, dir, IC_ROLE_BEST_EFFORT, why, sizeof why));
  CHECK(g.freezer == IC_FREEZER_V1 && g.usage_src == IC_USAGE_NONE);
  CHECK(ic_cgroup_set_frozen(&g, true) == 0 && !strncmp(get(dir, "freezer.state"), "FROZEN", 6));
  CHECK(ic_cgroup_set_frozen(&g, false) == 0 && !strncmp(get(dir, "freezer.state"), "THAWED", 6));
  ic_cgroup_close(&g);
  /* The usage in the cpuacct hierarchy, named after a '+'. */
  snprintf(spec, sizeof spec, "%s+%s", dir, acct);
  CHECK(ic_cgroup_open(&g, spec, IC_ROLE_BEST_EFFORT, why, sizeof why));
  uint64_t ns;
  CHECK(!strcmp(g.path, dir) && !strcmp(g.usage_path, acct));
  CHECK(g.usage_src == IC_USAGE_CPUACCT && ic_cgroup_usage(&g, &ns) && ns == 987654321);
  ic_cgroup_close(&g);
  snprintf(spec, sizeof spec, "%s+%s", dir, base);
  CHECK(!ic_cgroup_open(&g, spec, IC_ROLE_BEST_EFFORT, why, sizeof why) && strstr(why, "cpu.stat"));
  free(dir);
  free(acct);
}

static void not_a_group(const char *base) {
  char why[512], path[512];
  ic_cgroup_t g;
  CHECK(!ic_cgroup_open(&g, (char *)base, IC_ROLE_CRITICAL, why, sizeof why));
  CHECK(strstr(why, "not a cgroup directory") != NULL);
  snprintf(path, sizeof path, "%s/missing", base);
  CHECK(!ic_cgroup_open(&g, path, IC_ROLE_CRITICAL, why, sizeof why));
}

static bool wait_for(const char *dir, const char *file, char want, uint64_t timeout_ns) {
  uint64_t end = ic_now_ns() + timeout_ns;
  while (get(dir, file)[0] != want)
    if (ic_now_ns() > end)
      return false;
    else
      usleep(200);
  return true;
}

/* The watchdog (ic-watchdog, through the client library) thaws when its client's end of
 * the channel closes without a 'quit' (what the kernel does when the client dies), thaws
 * when the lease runs out, and leaves the groups alone on a clean stop. It runs in a
 * session of its own. */
static void watchdog(const char *base) {
  char *dir = subdir(base, "wd");
  put(dir, "cgroup.freeze", "1\n");
  char why[512];

  ic_wd_t w;
  ic_wd_config_t c = {.name = "test", .avoid_cpu = -1, .lease_ns = 200000000, .log_fd = -1,
                      .exe = IC_WATCHDOG_EXE};
  CHECK(ic_wd_start(&w, &c, why, sizeof why));
  CHECK(getsid(w.pid) == w.pid && getpgid(w.pid) != getpgid(0));
  CHECK(ic_wd_guard(&w, dir, why, sizeof why));
  CHECK(!ic_wd_guard(&w, base, why, sizeof why)); /* no freezer there: refused */
  CHECK(ic_wd_arm(&w, c.lease_ns, why, sizeof why));
  for (int i = 0; i < 5; i++) {
    ic_wd_beat(&w, ic_now_ns());
    usleep(10000);
  }
  CHECK(get(dir, "cgroup.freeze")[0] == '1'); /* alive and renewing: nothing happens */
  close(w.chan); /* the client "dies" */
  CHECK(wait_for(dir, "cgroup.freeze", '0', 1000000000));
  CHECK(waitpid(w.pid, NULL, 0) == w.pid);

  put(dir, "cgroup.freeze", "1\n");
  c.lease_ns = 40000000;
  CHECK(ic_wd_start(&w, &c, why, sizeof why));
  CHECK(ic_wd_guard(&w, dir, why, sizeof why));
  usleep(100000); /* not armed yet: no lease runs out during set-up */
  CHECK(get(dir, "cgroup.freeze")[0] == '1');
  uint64_t t0 = ic_now_ns(); /* no heartbeat from now on: the lease expires after 40 ms */
  CHECK(ic_wd_arm(&w, c.lease_ns, why, sizeof why));
  CHECK(wait_for(dir, "cgroup.freeze", '0', 2000000000));
  CHECK(ic_now_ns() - t0 >= 40000000);
  CHECK(ic_wd_expiries(&w) == 1 && ic_wd_expired(&w) && !ic_wd_expired(&w));
  put(dir, "cgroup.freeze", "1\n");
  ic_wd_stop(&w); /* clean: says 'quit', so no thaw */
  CHECK(get(dir, "cgroup.freeze")[0] == '1');
  free(dir);
}

static void cpu_stat(void) {
  uint64_t ns;
  CHECK(ic_cpu_stat_usage_ns("usage_usec 1234\nuser_usec 1000\nsystem_usec 234\n", &ns) &&
        ns == 1234000);
  CHECK(ic_cpu_stat_usage_ns("nr_periods 0\nusage_usec 5\n", &ns) && ns == 5000);
  CHECK(ic_cpu_stat_usage_ns("usage_usec 7", &ns) && ns == 7000);
  CHECK(!ic_cpu_stat_usage_ns("user_usec 1000\n", &ns));
  CHECK(!ic_cpu_stat_usage_ns("usage_usec x\n", &ns));
  CHECK(!ic_cpu_stat_usage_ns("usage_usec 12x\n", &ns));
  CHECK(!ic_cpu_stat_usage_ns("", &ns));
}

int main(void) {
  char base[] = "/tmp/ic-cgroup-test-XXXXXX";
  CHECK(mkdtemp(base) != NULL);
  v2_group(base);
  v1_group(base);
  not_a_group(base);
  watchdog(base);
  cpu_stat();
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf %s", base);
  CHECK(system(cmd) == 0);
  return TEST_RESULT();
}
