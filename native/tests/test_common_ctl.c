#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

int main(void) {
  char path[] = "/tmp/ic-ctl-test-XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  CHECK(write(fd, "stale", 5) == 5);

  ic_ctl_t *c = ic_ctl_open(path);
  struct stat st;
  CHECK(fstat(fd, &st) == 0 && st.st_size == 4096);
  CHECK(file_le(fd, 0, 4) == IC_CTL_MAGIC);
  char magic[5] = {0};
  CHECK(pread(fd, magic, 4, 0) == 4 && !strcmp(magic, "ITC1"));
  CHECK(file_le(fd, 4, 4) == 1);
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

  /* Reopening for a new run resets what the last one left. */
  ic_ctl_t *again = ic_ctl_open(path);
  CHECK(file_le(fd, 8, 4) == IC_CMD_RUN);
  CHECK(file_le(fd, 16, 8) == 0);
  CHECK(ic_ctl_cmd(again) == IC_CMD_RUN);

  ic_ctl_t *priv = ic_ctl_private();
  CHECK(atomic_load(&priv->magic) == IC_CTL_MAGIC);
  close(fd);
  unlink(path);
  return TEST_RESULT();
}
