"""Saving and loading the JSON artefacts that stages hand on (interference matrix, cgroup plan).

Loading goes through intercore.base.yamlfile (JSON is YAML), so a hand-edited file that breaks the
schema gets the same "file:line: field: message" error as a task set. Saving goes through
intercore.base.outputs, in one rename: a plan file is also the record of what `mitigate apply`
created, and a torn write would lose it.
"""

from __future__ import annotations

import hashlib
import json
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


def dumps(data: Any) -> str:
    return json.dumps(data, indent=2, allow_nan=False) + "\n"


def file_sha256(path: str | Path) -> str:
    """The hex sha256 of a file's bytes (a binary that was run, a dataset's programs)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()
