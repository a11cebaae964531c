#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ic_common.h"
#include "ic_ctl.h"
#include "ic_test.h"

/* The table of docs/native-contract.md, checked again here so a layout change fails a
 * named test as well as the header's own assertions. */
_Static_assert(offsetof(ic_ctl_t, magic) == 0, "magic");
_Static_assert(offsetof(ic_ctl_t, version) == 4, "version");
_Static_assert(offsetof(ic_ctl_t, cmd) == 8, "cmd");
_Static_assert(offsetof(ic_ctl_t, state) == 12, "state");
_Static_assert(offsetof(ic_ctl_t, accesses) == 16, "accesses");
_Static_assert(offsetof(ic_ctl_t, bytes) == 24, "bytes");
_Static_assert(offsetof(ic_ctl_t, heartbeat_ns) == 32, "heartbeat");
_Static_assert(offsetof(ic_ctl_t, pid) == 40, "pid");
_Static_assert(offsetof(ic_ctl_t, cpu) == 44, "cpu");
_Static_assert(offsetof(ic_ctl_t, stop) == 48, "stop");
_Static_assert(sizeof(ic_ctl_t) == 4096, "size");

/* Little-endian field read straight from the file, as another process sees it. */
static uint64_t file_le(int fd, off_t off, size_t width) {
  unsigned char b[8] = {0};
  CHECK(pread(fd, b, width, off) == (ssize_t)width);
  uint64_t v = 0;
  for (size_t i = width; i-- > 0;)
    v = v << 8 | b[i];
  return v;
}

/* ic_ctl_open in a child (it exits on failure); returns the child's exit status. */
static int open_in_child(const char *path) {
  pid_t pid = fork();
  if (pid == 0) {
    freopen("/dev/null", "w", stderr);
    ic_ctl_open(path);
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int main(void) {
  char dir[] = "/tmp/ic-ctl-test-XXXXXX", path[600], sym[600], other[600];
  CHECK(mkdtemp(dir) != NULL);
  snprintf(path, sizeof path, "%s/ctl", dir);
  snprintf(sym, sizeof sym, "%s/planted", dir);
  snprintf(other, sizeof other, "%s/other", dir);

  ic_ctl_t *c = ic_ctl_open(path);
  int fd = open(path, O_RDWR);
  struct stat st;
  CHECK(fstat(fd, &st) == 0 && st.st_size == 4096);
  CHECK(file_le(fd, 0, 4) == IC_CTL_MAGIC);
  char magic[5] = {0};
  CHECK(pread(fd, magic, 4, 0) == 4 && !strcmp(magic, "ITC1"));
  CHECK(file_le(fd, 4, 4) == 2);
  CHECK(st.st_mode % 01000 == 0600);
  CHECK(file_le(fd, 8, 4) == IC_CMD_RUN);
  CHECK(file_le(fd, 12, 4) == IC_STATE_INIT);
  CHECK(file_le(fd, 40, 4) == (uint64_t)getpid());

  ic_ctl_publish(c, 0x0102030405060708ULL, 4096, 77, 1);
  ic_ctl_set_state(c, IC_STATE_RUNNING);
  CHECK(file_le(fd, 16, 8) == 0x0102030405060708ULL);
  CHECK(file_le(fd, 24, 8) == 4096);
  CHECK(file_le(fd, 32, 8) == 77);
  CHECK(file_le(fd, 44, 4) == 1);
  CHECK(file_le(fd, 12, 4) == IC_STATE_RUNNING);

  /* A controller's write through the file reaches the aggressor's mapping. */
  uint32_t pause = IC_CMD_PAUSE;
  CHECK(pwrite(fd, &pause, 4, 8) == 4);
  CHECK(ic_ctl_cmd(c) == IC_CMD_PAUSE);

  /* A stop is final. */
  ic_ctl_command(c, IC_CMD_STOP);
  ic_ctl_command(c, IC_CMD_RUN);
  ic_ctl_command(c, IC_CMD_PAUSE);
  CHECK(ic_ctl_cmd(c) == IC_CMD_STOP);
  CHECK(file_le(fd, 48, 4) == 1);
  /* Also when a controller without compare-and-swap overwrites the command word after the
   * stop (Python's ControlBlock.command): the sticky stop word still rules. */
  uint32_t run = IC_CMD_RUN;
  CHECK(pwrite(fd, &run, 4, 8) == 4);
  CHECK(ic_ctl_cmd(c) == IC_CMD_STOP);

  /* An existing name is never reused, and a planted link is never followed: the file it
   * points at keeps its contents. */
  CHECK(open_in_child(path) == 1);
  CHECK(file_le(fd, 48, 4) == 1);
  int target = open(other, O_WRONLY | O_CREAT | O_EXCL, 0600);
  CHECK(target >= 0 && write(target, "keep", 4) == 4);
  close(target);
  CHECK(symlink(other, sym) == 0);
  CHECK(open_in_child(sym) == 1);
  CHECK(stat(other, &st) == 0 && st.st_size == 4);
  unlink(sym);
  unlink(other);

  ic_ctl_t *priv = ic_ctl_private();
  CHECK(atomic_load(&priv->magic) == IC_CTL_MAGIC);
  close(fd);
  unlink(path);
  rmdir(dir);
  return TEST_RESULT();
}
