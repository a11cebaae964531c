#!/bin/sh
# Runs "$@" with a /dev/shm of its own. Started under `unshare --mount --propagation private`
# (tests/campaign/_sshd.py), so the tmpfs is seen only by the command and what it forks: a
# loopback board whose scratch directories no other session's can be mistaken for.
set -e
mount -t tmpfs -o mode=1777,size=64m intercore-board-shm /dev/shm
exec "$@"
