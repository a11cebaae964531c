"""A dossier read back from its directory, for `intercore dossier verify` and `diff`: checked
in full before anything is compared or measured, every error one InputError naming the file,
its line and the field (a dossier of another format version, a hand-edited or truncated file,
a step artefact that is no longer the one the dossier hashed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from ..base import yamlfile
from ..base.artefact import file_sha256
from ..base.errors import InputError
from . import steps
from .dossier import FORMAT

DOSSIER = "dossier.json"


class _Open(BaseModel):
    # What verify and diff read is checked; the rest of the dossier is carried as it is.
    model_config = ConfigDict(extra="allow")


class _Setting(_Open):
    value: Any
    sha256: str


class _Configuration(_Open):
    fingerprint: str
    settings: dict[str, _Setting]


class _Platform(_Open):
    name: str
    source: str
    sha256: str


class _Channels(_Open):
    platform: _Platform
    rows: list[dict[str, Any]]
    counts: dict[str, Any]
    free: int


class _Sections(_Open):
    configuration: _Configuration
    channels: _Channels
    capacity: dict[str, Any]


class _System(_Open):
    name: str
    source: str
    sha256: str
    theta: float
    mitigations: list[str]
    sizes: dict[str, Any]
    quick: bool


class _Figure(_Open):
    id: str
    what: str
    value: Any
    regime: str


class _StepRef(_Open):
    artefact: str
    sha256: str


class _Dossier(_Open):
    format: Literal["intercore.dossier/1"]
    tool_version: str
    host_fingerprint: str
    system: _System
    inputs: dict[str, str]
    steps: dict[str, _StepRef]
    sections: _Sections
    figures: list[_Figure]


def read(directory: Path, option: str) -> dict[str, Any]:
    """DIR/dossier.json, checked against the dossier's format (FORMAT)."""
    if not directory.is_dir():
        raise InputError(f"{directory} is not a dossier directory (no such directory)",
                         field=option)
    path = directory / DOSSIER
    if not path.is_file():
        raise InputError(f"{directory} has no {DOSSIER}: not a dossier that `intercore "
                         "assess` finished", field=option)
    doc = yamlfile.read_json(path)
    if isinstance(doc.data, dict) and doc.data.get("format") != FORMAT:
        raise doc.error(f"format {doc.data.get('format')!r} is not {FORMAT!r}: a dossier of "
                        "another version of intercore", ("format",))
    yamlfile.validate(doc, _Dossier)
    ids = [f["id"] for f in doc.data["figures"]]
    if len(set(ids)) != len(ids):
        twice = next(i for i in ids if ids.count(i) > 1)
        raise doc.error(f"figure {twice!r} appears twice", ("figures",))
    return doc.data


def step_artefacts(directory: Path, dossier: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The dossier's step artefacts, each still the file the dossier hashed."""
    done = {}
    for name, ref in dossier["steps"].items():
        path = steps.path_of(directory, name)
        if ref["artefact"] != path.name or not path.is_file() or path.is_symlink():
            raise InputError(f"the dossier names {ref['artefact']!r}, which is not a file of "
                             "the directory", source=str(directory / DOSSIER),
                             field=f"steps.{name}.artefact")
        if file_sha256(path) != ref["sha256"]:
            raise InputError(f"changed since the dossier hashed it (sha256 "
                             f"{file_sha256(path)[:12]}, not {ref['sha256'][:12]})",
                             source=str(path))
        doc = yamlfile.read_json(path)
        if not isinstance(doc.data, dict) or doc.data.get("format") != steps.FORMAT \
                or not isinstance(doc.data.get("result"), dict):
            raise doc.error(f"not a step artefact of format {steps.FORMAT!r}", ("format",))
        done[name] = doc.data
    return done
