#include "ic_ctl.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ic_common.h"
#include "ic_shmfile.h"

static void reset(ic_ctl_t *c) {
  atomic_store(&c->magic, 0);
  atomic_store(&c->version, IC_CTL_VERSION);
  atomic_store(&c->cmd, IC_CMD_RUN);
  atomic_store(&c->state, IC_STATE_INIT);
  atomic_store(&c->accesses, 0);
  atomic_store(&c->bytes, 0);
  atomic_store(&c->heartbeat_ns, ic_now_ns());
  atomic_store(&c->pid, (int32_t)getpid());
  atomic_store(&c->cpu, -1);
  atomic_store(&c->stop, 0);
  atomic_store_explicit(&c->magic, IC_CTL_MAGIC, memory_order_release);
}

ic_ctl_t *ic_ctl_open(const char *path) {
  int fd = ic_shm_open_file(path, false, IC_CTL_SIZE);
  if (fd < 0)
    ic_die(IC_EXIT_FAIL, "--control: cannot create %s: %s%s", path, strerror(errno),
           errno == EEXIST || errno == ELOOP ? " (the control block must be a new file)" : "");
  void *p = mmap(NULL, IC_CTL_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED)
    ic_die(IC_EXIT_FAIL, "--control: cannot map %s: %s", path, strerror(errno));
  reset(p);
  return p;
}

ic_ctl_t *ic_ctl_private(void) {
  static ic_ctl_t block;
  reset(&block);
  return &block;
}
