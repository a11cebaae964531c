/* The notification block: its binding layout (read back from the file, as another process
 * sees it), the publication sequence, and the futex wake-up across processes. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ic_common.h"
#include "ic_test.h"
#include "ic_region.h"
#include "notify.h"
#include "region_watch.h"

_Static_assert(offsetof(ic_notify_t, magic) == 0, "magic");
_Static_assert(offsetof(ic_notify_t, version) == 4, "version");
_Static_assert(offsetof(ic_notify_t, seq) == 8, "seq");
_Static_assert(offsetof(ic_notify_t, waiters) == 12, "waiters");
_Static_assert(offsetof(ic_notify_t, state) == 16, "state");
_Static_assert(offsetof(ic_notify_t, active) == 20, "active");
_Static_assert(offsetof(ic_notify_t, next_release_ns) == 24, "next_release_ns");
_Static_assert(offsetof(ic_notify_t, next_job) == 32, "next_job");
_Static_assert(offsetof(ic_notify_t, release_ns) == 40, "release_ns");
_Static_assert(offsetof(ic_notify_t, released) == 48, "released");
_Static_assert(offsetof(ic_notify_t, completed) == 56, "completed");
_Static_assert(offsetof(ic_notify_t, end_ns) == 64, "end_ns");
_Static_assert(offsetof(ic_notify_t, period_ns) == 72, "period_ns");
_Static_assert(offsetof(ic_notify_t, deadline_ns) == 80, "deadline_ns");
_Static_assert(offsetof(ic_notify_t, pid) == 88, "pid");
_Static_assert(offsetof(ic_notify_t, window_mask) == 96, "window_mask");
_Static_assert(offsetof(ic_notify_t, open_mask) == 100, "open_mask");
_Static_assert(offsetof(ic_notify_t, nregions) == 104, "nregions");
_Static_assert(offsetof(ic_notify_t, window_region) == 108, "window_region");
_Static_assert(offsetof(ic_notify_t, window_ns) == 112, "window_ns");
_Static_assert(offsetof(ic_notify_t, window_events) == 120, "window_events");
_Static_assert(offsetof(ic_notify_t, names) == 128, "names");
_Static_assert(sizeof(ic_notify_t) == 4096, "size");

static uint64_t file_le(int fd, off_t off, size_t width) {
  unsigned char b[8] = {0};
  CHECK(pread(fd, b, width, off) == (ssize_t)width);
  uint64_t v = 0;
  for (size_t i = width; i-- > 0;)
    v = v << 8 | b[i];
  return v;
}

static void layout_and_sequence(const char *path) {
  ic_notify_t *n = ic_notify_map(path);
  CHECK(n != NULL);
  int fd = open(path, O_RDONLY);
  struct stat st;
  CHECK(fstat(fd, &st) == 0 && st.st_size == 4096);
  CHECK(!ic_notify_valid(n)); /* a fresh file is zeroes: no runner yet */

  ic_notify_begin(n, 100000000, 30000000);
  CHECK(ic_notify_valid(n));
  char magic[5] = {0};
  CHECK(pread(fd, magic, 4, 0) == 4 && !strcmp(magic, "ICN1"));
  CHECK(file_le(fd, 4, 4) == 1);
  CHECK(file_le(fd, 16, 4) == IC_NOTIFY_RUNNING);
  CHECK(file_le(fd, 72, 8) == 100000000 && file_le(fd, 80, 8) == 30000000);
  CHECK(file_le(fd, 88, 4) == (uint64_t)getpid());
  uint32_t seq = (uint32_t)file_le(fd, 8, 4);

  ic_notify_next(n, 0, 5000);
  CHECK(file_le(fd, 24, 8) == 5000 && file_le(fd, 32, 8) == 0);
  ic_notify_start(n, 0, 5000);
  CHECK(file_le(fd, 20, 4) == 1 && file_le(fd, 40, 8) == 5000 && file_le(fd, 48, 8) == 1);
  ic_notify_complete(n, 0, 7000);
  CHECK(file_le(fd, 20, 4) == 0 && file_le(fd, 56, 8) == 1 && file_le(fd, 64, 8) == 7000);
  ic_notify_next(n, 1, 6000);
  CHECK(file_le(fd, 24, 8) == 6000 && file_le(fd, 32, 8) == 1);
  /* Every publication moved the futex word by two: odd while publishing, even after. */
  CHECK((uint32_t)file_le(fd, 8, 4) == seq + 8 && seq % 2 == 0);
  ic_notify_end(n);
  CHECK(file_le(fd, 16, 4) == IC_NOTIFY_DONE && file_le(fd, 24, 8) == 6000);

  /* A second mapping (the monitor's) sees the same block and leaves it alone. */
  ic_notify_t *again = ic_notify_map(path);
  CHECK(again && ic_notify_valid(again) && atomic_load(&again->completed) == 1);
  close(fd);
}

/* A child process blocked on the block's futex (registered in `waiters`), which exits 0
 * when a publication woke it within 2 s and the block's open_mask is then `open`
 * (UINT32_MAX: any). */
static pid_t blocked_waiter(const char *path, ic_notify_t *n, uint32_t open) {
  uint32_t seen = ic_notify_seq(n);
  pid_t child = fork();
  if (child == 0) {
    ic_notify_t *m = ic_notify_map(path);
    uint64_t t0 = ic_now_ns();
    bool woke = ic_notify_wait(m, seen, t0 + 5000000000ULL);
    ic_notify_snap_t s;
    _exit(woke && ic_now_ns() - t0 < 2000000000ULL && ic_notify_read(m, &s) &&
                  (open == UINT32_MAX || s.open_mask == open)
              ? 0
              : 1);
  }
  uint64_t give_up = ic_now_ns() + 5000000000ULL;
  while (!atomic_load(&n->waiters) && ic_now_ns() < give_up)
    usleep(100);
  return child;
}

/* Regions: begin publishes the declared names by id (a victim's ids start at 1; a name
 * the block cannot hold is left out); a marker of a region that is not one of the
 * monitor's windows changes only open_mask (seq untouched: no wake-up, no system call); a
 * window region's entry and exit are published with their time and wake a waiter; the
 * monitor's mask survives a new runner's begin. */
static void regions(const char *path) {
  ic_notify_t *n = ic_notify_map(path);
  int fd = open(path, O_RDONLY);
  static const char *const names[] = {
      "fir", "lut", "a-name-far-too-long-for-the-block-of-48-characters-x", "pid"};
  ic_regions_declare(names, 4, 1);
  ic_notify_set_windows(n, 1u << 2);
  ic_notify_begin(n, 1000000, 1000000);
  CHECK(file_le(fd, 104, 4) == 5); /* ids 1..4 declared: slots 0..4 */
  char name[IC_NOTIFY_NAME_LEN];
  CHECK(ic_notify_region_name(n, 0, name) && !strcmp(name, ""));
  CHECK(ic_notify_region_name(n, 1, name) && !strcmp(name, "fir"));
  CHECK(ic_notify_region_name(n, 2, name) && !strcmp(name, "lut"));
  CHECK(ic_notify_region_name(n, 3, name) && !strcmp(name, ""));
  CHECK(ic_notify_region_name(n, 4, name) && !strcmp(name, "pid"));
  CHECK(file_le(fd, 96, 4) == 4); /* the monitor's mask, untouched by begin */
  CHECK((int32_t)file_le(fd, 108, 4) == -1 && file_le(fd, 120, 8) == 0);

  uint32_t seq = ic_notify_seq(n);
  CHECK(ic_notify_region(n, 1, true) == 0);
  CHECK(file_le(fd, 100, 4) == 2 && ic_notify_seq(n) == seq);
  uint64_t t0 = ic_now_ns();
  uint64_t t = ic_notify_region(n, 2, true);
  CHECK(t >= t0 && t <= ic_now_ns());
  CHECK(file_le(fd, 100, 4) == 6 && ic_notify_seq(n) == seq + 2);
  CHECK(file_le(fd, 108, 4) == 2 && file_le(fd, 112, 8) == t && file_le(fd, 120, 8) == 1);
  CHECK(ic_notify_region(n, 2, false) > 0);
  CHECK(ic_notify_region(n, 1, false) == 0);
  CHECK(file_le(fd, 100, 4) == 0 && file_le(fd, 120, 8) == 2 && ic_notify_seq(n) == seq + 4);
  CHECK(ic_notify_region(n, 40, true) == 0 && ic_notify_seq(n) == seq + 4);

  /* A window entry wakes a monitor blocked in another process. */
  pid_t child = blocked_waiter(path, n, 4);
  CHECK(ic_notify_region(n, 2, true) > 0);
  int status;
  CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0);
  CHECK(ic_notify_region(n, 2, false) > 0);
  ic_regions_declare(NULL, 0, 0);
  close(fd);
}

/* The runner's watcher: the markers of its work reach the block, and the window
 * executions are recorded with their job, an exit without its entry (windows installed
 * mid-region) is not; without the watcher the markers publish nothing. */
static void watcher(const char *path) {
  ic_notify_t *n = ic_notify_map(path);
  static const char *const names[] = {"compute", "stream"};
  ic_regions_declare(names, 2, 0);
  ic_notify_begin(n, 1000000, 1000000);
  ic_notify_set_windows(n, 1u << 1);
  ic_region_watch_begin(n, 4);
  ic_region_watch_job(0);
  IC_REGION_END(1); /* entered before the windows were installed */
  ic_region_watch_job(1);
  IC_REGION_BEGIN(0);
  IC_REGION_END(0);
  IC_REGION_BEGIN(1);
  CHECK(atomic_load(&n->open_mask) == 2);
  IC_REGION_END(1);
  CHECK(atomic_load(&n->window_events) == 3);
  ic_region_watch_end();
  IC_REGION_BEGIN(1);
  CHECK(atomic_load(&n->window_events) == 3 && atomic_load(&n->open_mask) == 0);
  IC_REGION_END(1);
  fflush(stdout);
  int pipefd[2];
  CHECK(pipe(pipefd) == 0);
  int saved = dup(1);
  dup2(pipefd[1], 1);
  CHECK(ic_region_watch_print("t") == 0);
  fflush(stdout);
  dup2(saved, 1);
  close(pipefd[1]);
  char out[1024] = {0};
  CHECK(read(pipefd[0], out, sizeof out - 1) > 0);
  close(pipefd[0]);
  CHECK(strstr(out, "\"event\":\"window\"") && strstr(out, "\"job\":1") &&
        strstr(out, "\"region\":\"stream\""));
  CHECK(!strstr(out, "\"job\":0") && strchr(out, '\n') == strrchr(out, '\n')); /* one line */
  ic_regions_declare(NULL, 0, 0);
}

/* A waiter in another process wakes on a publication, long before its timeout. */
static void wakes_across_processes(const char *path) {
  ic_notify_t *n = ic_notify_map(path);
  ic_notify_begin(n, 1000000, 1000000);
  pid_t child = blocked_waiter(path, n, UINT32_MAX);
  CHECK(atomic_load(&n->waiters) == 1);
  ic_notify_next(n, 0, ic_now_ns());
  int status;
  CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0);
  CHECK(atomic_load(&n->waiters) == 0);

  /* Nothing published: the absolute timeout ends the wait, reported as such. */
  uint64_t t0 = ic_now_ns();
  CHECK(!ic_notify_wait(n, ic_notify_seq(n), t0 + 20000000));
  CHECK(ic_now_ns() - t0 >= 20000000);
  /* A stale `seen` returns at once. */
  CHECK(ic_notify_wait(n, ic_notify_seq(n) - 1, ic_now_ns() + 5000000000ULL));
}

/* A reader never sees the release time of one announcement with the index of another,
 * however the writer's stores interleave with its reads (the seqlock); and a writer killed
 * in the middle of a publication (seq left odd) makes reads fail in bounded time instead of
 * hanging the monitor. */
static void seqlock(const char *path) {
  ic_notify_t *n = ic_notify_map(path);
  ic_notify_begin(n, 1000000, 1000000);
  pid_t child = fork();
  if (child == 0) {
    for (uint64_t job = 1;; job++)
      ic_notify_next(n, job, job * 1000 + 7);
  }
  uint64_t reads = 0, torn = 0, t_end = ic_now_ns() + 300000000;
  while (ic_now_ns() < t_end) {
    ic_notify_snap_t s;
    if (!ic_notify_read(n, &s))
      continue;
    reads++;
    torn += s.next_job && s.next_release_ns != s.next_job * 1000 + 7;
    CHECK(s.seq % 2 == 0 && s.valid);
  }
  kill(child, SIGKILL);
  waitpid(child, NULL, 0);
  CHECK(reads > 1000 && torn == 0);

  atomic_store(&n->seq, atomic_load(&n->seq) | 1u); /* a publication that never ends */
  ic_notify_snap_t s;
  /* As the monitor reads it: at SCHED_FIFO, where a yield returns at once unless an equal
   * RT task waits. At SCHED_OTHER each of the reader's yields hands the CPU to whatever
   * else is runnable, so on a loaded host the same 2000 tries took over a second. */
  struct sched_param rt = {.sched_priority = 1}, old = {0};
  int policy = sched_getscheduler(0);
  sched_getparam(0, &old);
  bool is_rt = sched_setscheduler(0, SCHED_FIFO, &rt) == 0;
  uint64_t t0 = ic_now_ns();
  CHECK(!ic_notify_read(n, &s));
  uint64_t took = ic_now_ns() - t0;
  sched_setscheduler(0, policy, &old);
  CHECK(took < (is_rt ? 1000000000ULL : 10000000000ULL));
  ic_notify_begin(n, 1, 1); /* a new runner recovers the block */
  CHECK(ic_notify_read(n, &s) && s.valid && s.seq % 2 == 0);
}

/* The block is never opened through a planted link, nor is someone else's file used. */
static void refuses_foreign_files(void) {
  char dir[] = "/tmp/ic-notify-dir-XXXXXX", sym[600], target[600], hard[600];
  CHECK(mkdtemp(dir) != NULL);
  snprintf(target, sizeof target, "%s/victim", dir);
  snprintf(sym, sizeof sym, "%s/link", dir);
  snprintf(hard, sizeof hard, "%s/hard", dir);
  int fd = open(target, O_WRONLY | O_CREAT | O_EXCL, 0600);
  CHECK(fd >= 0 && write(fd, "keep", 4) == 4);
  close(fd);
  CHECK(symlink(target, sym) == 0);
  CHECK(ic_notify_map(sym) == NULL && errno == ELOOP);
  CHECK(link(target, hard) == 0); /* two names: not a private file */
  CHECK(ic_notify_map(hard) == NULL && errno == EPERM);
  CHECK(chmod(target, 0666) == 0 && unlink(hard) == 0);
  CHECK(ic_notify_map(target) == NULL && errno == EPERM); /* writable by others */
  struct stat st;
  CHECK(stat(target, &st) == 0 && st.st_size == 4); /* untouched */
  unlink(sym);
  unlink(target);
  rmdir(dir);
}

/* Runs each test on a fresh empty file of its own, removed afterwards. */
static void on_fresh_file(void (*test)(const char *path)) {
  char path[] = "/tmp/ic-notify-test-XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  close(fd);
  test(path);
  unlink(path);
}

static void regions_and_watcher(const char *path) {
  regions(path);
  watcher(path);
}

int main(void) {
  on_fresh_file(layout_and_sequence);
  CHECK(ic_notify_map("/nonexistent-dir/x") == NULL);
  on_fresh_file(wakes_across_processes);
  on_fresh_file(seqlock);
  on_fresh_file(regions_and_watcher);
  refuses_foreign_files();
  return TEST_RESULT();
}
