"""One self-contained HTML page from sections of typed blocks.

A stage builds `Section`s out of `Text`, `KeyValues`, `Table`, `Figure`, `Notes` and
`Preformatted` blocks and calls `render` (or `write`). Everything user-provided is escaped by
Jinja2's autoescape; figures are data: URIs (see plots.py), so the file opens offline,
attaches to a review ticket, and shows the same thing in ten years.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping, Sequence, Union

import jinja2

from .. import __version__
from ..base import outputs


@dataclass(frozen=True)
class Text:
    text: str
    kind: str = field(default="text", init=False)


@dataclass(frozen=True)
class KeyValues:
    items: Mapping[str, Any]
    kind: str = field(default="keyvalues", init=False)


@dataclass(frozen=True)
class Table:
    columns: Sequence[str]
    rows: Sequence[Sequence[Any]]
    caption: str = ""
    # Columns (by index) holding numbers: right-aligned.
    numeric: frozenset[int] = frozenset()
    kind: str = field(default="table", init=False)


@dataclass(frozen=True)
class Figure:
    """An image as a data: URI (plots.figure_uri) with a caption saying what it shows."""

    uri: str
    caption: str
    alt: str = ""
    kind: str = field(default="figure", init=False)

    def __post_init__(self) -> None:
        if not self.uri.startswith("data:image/"):
            raise ValueError("a report figure must be inline (a data:image/ URI), "
                             "so the report stays one self-contained file")


@dataclass(frozen=True)
class Notes:
    """A list of warnings (level 'warning') or plain notes (level 'note')."""

    items: Sequence[str]
    level: str = "warning"
    kind: str = field(default="notes", init=False)


@dataclass(frozen=True)
class Preformatted:
    text: str
    kind: str = field(default="pre", init=False)


Block = Union[Text, KeyValues, Table, Figure, Notes, Preformatted]


@dataclass(frozen=True)
class Section:
    title: str
    blocks: Sequence[Block]
    anchor: str = ""

    @property
    def id(self) -> str:
        return self.anchor or re.sub(r"[^a-z0-9]+", "-", self.title.lower()).strip("-")


_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("intercore.report", "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)


def _cell(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


_ENV.filters["cell"] = _cell


def render(title: str, sections: Sequence[Section], *, subtitle: str = "",
           generated_at: datetime | None = None) -> str:
    ids = [s.id for s in sections]
    if len(set(ids)) != len(ids):
        raise ValueError(f"section anchors must be unique: {ids}")
    when = (generated_at or datetime.now(timezone.utc)).strftime("%Y-%m-%d %H:%M:%S %Z")
    return _ENV.get_template("report.html.j2").render(
        title=title, subtitle=subtitle, sections=sections, generated_at=when,
        version=__version__)


def write(path: str | Path, title: str, sections: Sequence[Section], **kw: Any) -> Path:
    """Render and write the report (its directory must exist)."""
    path = Path(path)
    outputs.write_text(path, render(title, sections, **kw))
    return path
