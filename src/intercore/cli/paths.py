"""Output paths checked before any work starts.

A measurement can take minutes to hours; an output path that cannot be written must be
refused before it starts (exit 2, naming the option), not found out when the results are
written and lost. Each check tries what the write will do (create a file in the directory,
open the existing file for writing) rather than trusting permission bits: root ignores them,
and a read-only mount does not show in them. Nothing is left behind by a check.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Optional

from ..base import outputs
from ..base.errors import InputError
from ..store import Store
from ..store.db import one_name

SQLITE_MAGIC = b"SQLite format 3\0"


def _parent(path: Path, option: str) -> Path:
    """The directory `path` goes in: it must exist, since root never makes a directory the
    user did not ask for (a mistyped path would otherwise become a tree of them)."""
    parent = path.absolute().parent
    if not parent.is_dir():
        raise InputError(f"directory {parent} does not exist" if not parent.exists() else
                         f"{parent} is not a directory", field=option)
    return parent


def _can_create_in(directory: Path, option: str) -> None:
    try:
        fd, probe = tempfile.mkstemp(prefix=".intercore-probe-", dir=directory)
    except OSError as exc:
        raise InputError(f"cannot create files in {directory}: {exc.strerror}",
                         field=option) from None
    os.close(fd)
    os.unlink(probe)


def output_file(path: Optional[Path], option: str) -> None:
    """`path` can be written as a file: not a directory, its directory exists and accepts new
    files, and an existing file is a regular one that opens for writing (a device or /proc
    file would take the write, or refuse it only once the work is done). None and "-"
    (stdout) pass."""
    if path is None or str(path) == "-":
        return
    path = Path(path)
    if path.is_dir():
        raise InputError(f"{path} is a directory; give a file name", field=option)
    directory = _parent(path, option)
    if path.exists():
        if not path.is_file():
            raise InputError(f"{path} is not a regular file", field=option)
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC))
        except OSError as exc:
            raise InputError(f"cannot write {path}: {exc.strerror}", field=option) from None
    # The file is written under a new name in its directory and renamed over it.
    _can_create_in(directory, option)


def named_output(name: str, option: str) -> Path:
    """The default output named after what it holds (a campaign, say), in the current
    directory; the name came from an input, so it must not lead out of it."""
    path = outputs.inside(Path(), name, field=option)
    output_file(path, option)
    return path


def output_dir(path: Optional[Path], option: str, *, default: Optional[Path] = None) -> None:
    """`path` is a directory that accepts new files, or can be made as one in a directory
    that exists. The option's `default` (a tree of intercore's own under the current
    directory, such as intercore-learn/model) may be made with its parents: leaving the
    option out asks for it."""
    if path is None:
        return
    path = Path(path)
    if path.exists():
        _existing_dir(path, option)
    elif default is not None and path == default:
        ancestor = next(p for p in path.absolute().parents if p.exists())
        _existing_dir(ancestor, option)
    else:
        _can_create_in(_parent(path, option), option)


def _existing_dir(path: Path, option: str) -> None:
    """`path` is a directory that exists and accepts new files."""
    if not path.is_dir():
        raise InputError(f"{path} is not a directory" if path.exists() else
                         f"directory {path} does not exist", field=option)
    _can_create_in(path, option)


def store_file(path: Optional[Path], option: str = "--db") -> None:
    """A results store to write: an output file that, when it exists and is not empty, is a
    SQLite database."""
    if path is None:
        return
    output_file(path, option)
    if Path(path).exists():
        _sqlite_or_empty(Path(path), option)
        one_name(Path(path), option)


def _sqlite_or_empty(path: Path, option: str) -> None:
    try:
        with open(path, "rb") as f:
            head = f.read(len(SQLITE_MAGIC))
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror}", field=option) from None
    if head and head != SQLITE_MAGIC:
        raise InputError(f"{path} is not a results store (not a SQLite database)",
                         field=option)


def open_store(path: Path, *, first: str, option: str = "--db") -> Store:
    """Open a results store to read. Store.open would create an empty one, which is never
    what someone asking to read meant; `first` says what makes one."""
    if not path.exists():
        raise InputError(f"no results store at {path}; run `{first}` first", field=option)
    if path.is_dir():
        raise InputError(f"{path} is a directory, not a results store", field=option)
    _sqlite_or_empty(path, option)
    return Store.open(path)
