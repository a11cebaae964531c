"""The one way intercore writes an output file: under a name that stays where the user said,
replaced in one rename.

A file is written to a temporary name in its own directory and renamed over the target, so a
reader (or the next run) sees the old file or the new one, never a torn one, and an error or
Ctrl-C part way leaves the old file and no temporary behind. Directories are never made
here: the commands check before any work starts (cli/paths.py) that the directory the user
named exists, and names that come from an input rather than from the user go through
`inside`, which keeps them in that directory.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from .errors import InputError

# One path component, no hidden or relative names: what a name from an input may become.
_FILE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.,:=+@-]{0,127}$")


def inside(directory: Path, name: str, *, source: str | None = None,
           field: str | None = None) -> Path:
    """directory/name for a name taken from an input (a task set's name, a campaign's): one
    path component that is not hidden (so not `.` or `..`); InputError naming where it came
    from otherwise."""
    if not _FILE_NAME.match(name):
        raise InputError(f"{name!r} names output files, so it must start with a letter, digit "
                         "or '_' and use only letters, digits and '_.,:=+@-' (at most 128), "
                         "no '/'", source=source, field=field)
    return Path(directory) / name


@contextmanager
def replacing(path: str | Path) -> Iterator[Path]:
    """A new file in `path`'s directory for the block to write (it keeps `path`'s suffix, for
    writers that choose a format by it); renamed over `path` when the block ends, removed when
    it raises."""
    path = Path(path)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=f".tmp{path.suffix}",
                                dir=path.parent)
    tmp = Path(name)
    try:
        os.fchmod(fd, 0o644)  # mkstemp's 0600 would hide a file written with sudo from users
        os.close(fd)
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


@contextmanager
def new_directory(path: str | Path, replace: bool = False) -> Iterator[Path]:
    """A new directory beside `path` for the block to fill, renamed to `path` when the block
    ends (which must not exist yet, unless `replace`: then a directory there is set aside
    and removed once the new one has its name), removed with what it holds when the block
    raises: a stop part way leaves no half-written directory under the name."""
    path = Path(path)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    old = None
    try:
        tmp.chmod(0o755)
        yield tmp
        if replace and path.is_dir() and not path.is_symlink():
            old = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".old",
                                        dir=path.parent))
            os.rename(path, old / path.name)
        os.rename(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        if old is not None and (old / path.name).is_dir() and not path.exists():
            os.rename(old / path.name, path)   # the old one back, as it was
        raise
    finally:
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)


def write_bytes(path: str | Path, data: bytes) -> None:
    with replacing(path) as tmp:
        with open(tmp, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())


def write_text(path: str | Path, text: str) -> None:
    write_bytes(path, text.encode("utf-8"))
