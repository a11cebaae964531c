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

from ..errors import InputError
from ..store import Store

SQLITE_MAGIC = b"SQLite format 3\0"


def _existing_ancestor(path: Path, option: str) -> Path:
    """The nearest ancestor of `path` that exists; it must be a directory."""
    parent = path.absolute().parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise InputError(f"{parent} is not a directory", field=option)
    return parent


def _can_create_in(directory: Path, option: str) -> None:
    try:
        fd, probe = tempfile.mkstemp(prefix=".intercore-probe-", dir=directory)
    except OSError as exc:
        raise InputError(f"cannot create files in {directory}: {exc.strerror}",
                         field=option) from None
    os.close(fd)
    os.unlink(probe)


def output_file(path: Optional[Path], option: str, *, make_parents: bool = False) -> None:
    """`path` can be written as a file: not a directory, its directory exists (or, with
    `make_parents`, can be made) and accepts new files, and an existing file opens for
    writing. None and "-" (stdout) pass."""
    if path is None or str(path) == "-":
        return
    path = Path(path)
    if path.is_dir():
        raise InputError(f"{path} is a directory; give a file name", field=option)
    parent = path.absolute().parent
    if not parent.exists() and not make_parents:
        raise InputError(f"directory {parent} does not exist", field=option)
    directory = _existing_ancestor(path, option)
    if path.exists():
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC))
        except OSError as exc:
            raise InputError(f"cannot write {path}: {exc.strerror}", field=option) from None
    else:
        _can_create_in(directory, option)


def output_dir(path: Optional[Path], option: str) -> None:
    """`path` is, or can be made as, a directory that accepts new files."""
    if path is None:
        return
    path = Path(path)
    if path.exists():
        if not path.is_dir():
            raise InputError(f"{path} exists and is not a directory", field=option)
        _can_create_in(path, option)
    else:
        _can_create_in(_existing_ancestor(path, option), option)


def store_file(path: Optional[Path], option: str = "--db") -> None:
    """A results store to write: an output file (its directories are made) that, when it
    exists and is not empty, is a SQLite database."""
    if path is None:
        return
    output_file(path, option, make_parents=True)
    if Path(path).exists():
        _sqlite_or_empty(Path(path), option)


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
