/* Files that two processes map to share a block (the aggressor's control block, the
 * runner's notification block), opened so that a root process never follows a link that
 * someone planted at the name, nor writes into a file that is not its own. */
#ifndef IC_SHMFILE_H
#define IC_SHMFILE_H

#include <stdbool.h>
#include <stddef.h>

/* Creates path with O_CREAT|O_EXCL|O_NOFOLLOW (mode 0600) and sizes it to `size`. With
 * may_exist, an existing path is opened instead (O_NOFOLLOW, O_NONBLOCK so a planted FIFO
 * cannot block us) when it is a regular file owned by our effective uid, with one link and
 * writable by nobody else, and grown to `size` if shorter. Returns the descriptor
 * (O_CLOEXEC), or -1 with errno: EEXIST (exists and !may_exist), ELOOP (a symbolic link),
 * EPERM (not a private regular file of ours), or what open/ftruncate said. */
int ic_shm_open_file(const char *path, bool may_exist, size_t size);

#endif
