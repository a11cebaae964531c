"""The one way intercore locks a file it writes: flock(2) on the file itself.

A lock file named after the store's path is split by a second name for the same file (a
hard link finds another lock file, so two campaigns ran at once) and, planted as a symlink,
makes root open and truncate whatever it points to. flock on the store's own open file is
keyed by the kernel on the file (device and inode), whatever name opened it, and is dropped
when its process dies, SIGKILL included; there is no lock file to plant.

The file is opened without following links: the links in the path the user named are theirs
and are resolved first, a link swapped in afterwards is refused (O_NOFOLLOW), a new file is
created only with O_EXCL, and an existing one in a directory that others may write (such as
/tmp) must belong to us or to the directory's owner, as the kernel's protected_regular asks.

SQLite locks the same file with fcntl(2) byte ranges, which flock does not touch on a local
file system, but it loses them all when any descriptor of the file in this process closes:
the lock must be taken before, and released after, every Store on the file in this process
(`with exclusive(db), Store.open(db) as store`).
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from .errors import InputError

_OPEN = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def _open_checked(path: Path, option: str) -> int:
    directory = path.parent
    try:
        dir_st = os.stat(directory)
    except OSError as exc:
        raise InputError(f"directory {directory}: {exc.strerror}", field=option) from None
    if not stat.S_ISDIR(dir_st.st_mode):
        raise InputError(f"{directory} is not a directory", field=option)
    shared = dir_st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    if shared and not dir_st.st_mode & stat.S_ISVTX:
        raise InputError(f"{directory} may be written by others and is not sticky: anyone "
                         f"could replace {path.name}; keep stores in a directory of yours",
                         field=option)
    try:
        return os.open(path, _OPEN | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        pass
    except OSError as exc:
        raise InputError(f"cannot create {path}: {exc.strerror}", field=option) from None
    try:
        fd = os.open(path, _OPEN)
    except OSError as exc:
        why = "is a symbolic link" if exc.errno == errno.ELOOP else exc.strerror
        raise InputError(f"{path} {why}", field=option) from None
    st = os.fstat(fd)
    if shared and st.st_uid not in (os.geteuid(), dir_st.st_uid):
        os.close(fd)
        raise InputError(f"{path} belongs to uid {st.st_uid}, not to you or the owner of "
                         f"{directory}, which others may write", field=option)
    return fd


def _holder(st: os.stat_result) -> str:
    """Who holds an flock on the file: the pid and command line /proc/locks names."""
    key = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    try:
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return "another process"
    for line in lines:
        fields = [f for f in line.split() if f != "->"]
        if len(fields) > 5 and fields[1] == "FLOCK" and fields[5] == key:
            pid = fields[4]
            try:
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                command = " ".join(a.decode(errors="replace") for a in argv if a)[:80].strip()
            except OSError:
                command = "?"
            return f"pid {pid}: {command}"
    return "another process"


@contextmanager
def exclusive(path: Path, *, option: str = "--db") -> Iterator[None]:
    """Hold `path` (created empty when missing) for this process alone until the block
    ends; InputError naming the holder when another process has it, however it named it."""
    real = Path(path).resolve()
    fd = _open_checked(real, option)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"{path} is not a regular file", field=option)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise InputError(f"{path} is in use ({_holder(st)}); wait for it to finish or "
                             "stop it first", field=option) from None
        yield
    finally:
        os.close(fd)
