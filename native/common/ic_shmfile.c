#include "ic_shmfile.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

static int fail(int fd, int err) {
  if (fd >= 0)
    close(fd);
  errno = err;
  return -1;
}

int ic_shm_open_file(const char *path, bool may_exist, size_t size) {
  int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0 && errno == EEXIST && may_exist) {
    fd = open(path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd < 0)
      return fail(-1, errno);
    if (fstat(fd, &st))
      return fail(fd, errno);
    if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || st.st_nlink != 1 ||
        (st.st_mode & (S_IWGRP | S_IWOTH)))
      return fail(fd, EPERM);
    if (st.st_size >= (off_t)size)
      return fd;
  }
  if (fd < 0)
    return -1;
  if (ftruncate(fd, (off_t)size))
    return fail(fd, errno);
  return fd;
}
