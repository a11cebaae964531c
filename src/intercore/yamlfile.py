"""Load a YAML input file (task set, platform model, campaign) into a pydantic model.

Every error names the file, the line and the field, because these files are written by hand
and a certifier's engineer fixing one wants to jump straight to the line. Loading is safe
(no arbitrary tags), and a key given twice in one mapping is an error rather than PyYAML's
silent "last one wins".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Hashable, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from .errors import InputError

M = TypeVar("M", bound=BaseModel)

Loc = tuple[Hashable, ...]


class Document:
    """Plain data from a YAML file plus the line (1-based) where each value starts."""

    def __init__(self, data: Any, lines: dict[Loc, int], source: str):
        self.data = data
        self.lines = lines
        self.source = source

    def line_of(self, loc: Loc) -> int | None:
        """Line of the value at `loc`, or of its nearest ancestor the file spells out."""
        for cut in range(len(loc), -1, -1):
            line = self.lines.get(tuple(loc[:cut]))
            if line is not None:
                return line
        return None

    def error(self, message: str, loc: Loc = ()) -> InputError:
        return InputError(message, source=self.source, line=self.line_of(loc),
                          field=dotted(loc) or None)


def dotted(loc: Loc) -> str:
    """`("tasks", 2, "period")` -> `tasks[2].period`."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


_COLLECTION_TAGS = {yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
                    yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG}


def _plain(node: yaml.Node, loc: Loc, lines: dict[Loc, int], source: str) -> Any:
    lines[loc] = node.start_mark.line + 1
    if not isinstance(node, yaml.ScalarNode) and node.tag not in _COLLECTION_TAGS:
        raise InputError(f"tag {node.tag} is not allowed", source=source,
                         line=node.start_mark.line + 1, field=dotted(loc) or None)
    if isinstance(node, yaml.MappingNode):
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = _plain(key_node, loc, {}, source)
            if not isinstance(key, Hashable):
                raise InputError("mapping keys must be scalars", source=source,
                                 line=key_node.start_mark.line + 1, field=dotted(loc) or None)
            if key in out:
                raise InputError(f"key {key!r} given twice", source=source,
                                 line=key_node.start_mark.line + 1, field=dotted(loc + (key,)))
            out[key] = _plain(value_node, loc + (key,), lines, source)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_plain(item, loc + (i,), lines, source) for i, item in enumerate(node.value)]
    return _scalar(node, loc, source)


def _scalar(node: yaml.ScalarNode, loc: Loc, source: str) -> Any:
    # Resolve the scalar exactly as safe_load would (ints, floats, bools, null, strings).
    loader = yaml.SafeLoader("")
    try:
        return loader.construct_object(node, deep=True)
    except yaml.constructor.ConstructorError as exc:
        raise InputError(str(exc.problem), source=source, line=node.start_mark.line + 1,
                         field=dotted(loc) or None) from None
    finally:
        loader.dispose()


def parse(text: str, source: str) -> Document:
    """Parse YAML text; `source` names it in errors."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        raise InputError(f"not valid YAML: {exc.problem or exc}", source=source,
                         line=None if mark is None else mark.line + 1) from None
    except yaml.YAMLError as exc:
        raise InputError(f"not valid YAML: {exc}", source=source) from None
    if node is None:
        raise InputError("the file is empty", source=source)
    lines: dict[Loc, int] = {}
    return Document(_plain(node, (), lines, source), lines, source)


def read(path: str | Path) -> Document:
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", source=str(path)) from None
    return parse(text, str(path))


def validate(doc: Document, model: type[M], *, context: dict[str, Any] | None = None) -> M:
    """Validate the document against `model`; the first error becomes an InputError."""
    try:
        return model.model_validate(doc.data, context=context)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = tuple(first["loc"])
        message = first["msg"]
        if message.startswith("Value error, "):
            message = message[len("Value error, "):]
        more = exc.error_count() - 1
        if more:
            message += f" (and {more} more error{'s' if more > 1 else ''})"
        raise doc.error(message, loc) from None


def load(path: str | Path, model: type[M], *, context: dict[str, Any] | None = None) -> M:
    """read() + validate(): the one call most commands need."""
    return validate(read(path), model, context=context)
