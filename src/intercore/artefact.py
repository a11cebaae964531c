"""Saving and loading the JSON artefacts that stages hand on (interference matrix, cgroup plan).

Loading goes through intercore.yamlfile (JSON is YAML), so a hand-edited file that breaks the
schema gets the same "file:line: field: message" error as a task set. Saving is atomic: a
plan file is also the record of what `cgroups apply` created, and a torn write would lose it.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from . import yamlfile

M = TypeVar("M", bound=BaseModel)


def read_document(path: str | Path) -> yamlfile.Document:
    """Parse a JSON file with line numbers; JSON syntax errors are reported as JSON's."""
    return yamlfile.read_json(path)


def load(path: str | Path, model: type[M]) -> M:
    return yamlfile.validate(read_document(path), model)


def write_atomic(path: str | Path, text: str) -> None:
    """Replace `path` with `text` in one rename, so readers see the old or the new file."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent or ".")
    try:
        os.fchmod(fd, 0o644)  # mkstemp's 0600 would hide a plan applied with sudo from users
        with os.fdopen(fd, "w") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def dumps(data: Any) -> str:
    return json.dumps(data, indent=2, allow_nan=False) + "\n"
