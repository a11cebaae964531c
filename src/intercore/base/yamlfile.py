"""The one loader of the CLI's input files: YAML (task sets, platform models, campaigns) and
JSON (matrices, plans), into plain data with lines, then into a pydantic model.

Every error names the file, the line and the field, because these files are written by hand
and a certifier's engineer fixing one wants to jump straight to the line. Loading is safe
(no arbitrary tags), and a key given twice in one mapping is an error rather than PyYAML's
silent "last one wins".

A file is also input from whoever wrote it, so loading is bounded before anything is built
from it: its size (checked before it is read, so a huge file is refused at once), its bytes
(UTF-8 text, no NUL), the depth of its nesting (no RecursionError) and the number of values
once aliases are expanded (a "billion laughs" file is refused after a few thousand values,
not after memory runs out). The bounds are far above any real input (the largest example is
5 KB, nested 5 deep; the matrix of 100 tasks has 20 000 values) and keep the worst case under
a second: PyYAML builds about 125 000 values a second here.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any, Hashable, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from .errors import InputError

M = TypeVar("M", bound=BaseModel)

Loc = tuple[Hashable, ...]

MAX_BYTES = 1024 * 1024
MAX_DEPTH = 64
MAX_VALUES = 100_000


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


# ---- bytes -> text -----------------------------------------------------------------------------

def read_bytes(path: str | Path, *, limit: int = MAX_BYTES) -> bytes:
    """The file's bytes, refused before reading when it is larger than `limit` (and never
    more than limit + 1 bytes read, for files whose size stat cannot tell: pipes, /dev/zero)."""
    source = str(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", source=source) from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise InputError("is a directory, not a file", source=source)
        if stat.S_ISREG(st.st_mode) and st.st_size > limit:
            raise InputError(f"{_size(st.st_size)} is larger than the {_size(limit)} an input "
                             "file may have", source=source)
        os.set_blocking(fd, True)
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, limit + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", source=source) from None
    finally:
        os.close(fd)
    if size > limit:
        raise InputError(f"larger than the {_size(limit)} an input file may have",
                         source=source)
    return b"".join(chunks)


def decode(raw: bytes, source: str) -> str:
    """UTF-8 text, or an error at the line of the first byte that is not text."""
    nul = raw.find(b"\0")
    if nul >= 0:
        raise InputError("binary data (a NUL byte), not a text file", source=source,
                         line=raw.count(b"\n", 0, nul) + 1)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        column = exc.start - raw.rfind(b"\n", 0, exc.start)
        raise InputError(f"not UTF-8 text (byte {raw[exc.start]:#04x} at column {column})",
                         source=source, line=raw.count(b"\n", 0, exc.start) + 1) from None
    return text.removeprefix("\ufeff")


def read_text(path: str | Path) -> str:
    """A bounded, checked read of a text input file (read_bytes + decode)."""
    return decode(read_bytes(path), str(path))


# ---- text -> nodes, bounded --------------------------------------------------------------------

try:
    from yaml._yaml import CParser as _Events  # libyaml's event parser: ~10x the pure-Python speed
    _LIBYAML = True
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    _LIBYAML = False


class _BoundedComposer(yaml.composer.Composer):
    """PyYAML's composer, refusing nesting deeper than MAX_DEPTH and documents with more
    than MAX_VALUES values once every alias is expanded. An alias costs the size of the node
    it names, so nested aliases are counted as what they expand to without expanding them."""

    if TYPE_CHECKING:  # from the event parser each loader mixes this composer with
        def check_event(self, *choices: Any) -> bool: ...
        def peek_event(self) -> Any: ...

    def _init_bounds(self, source: str) -> None:
        self._source = source
        self._depth = 0
        self._values = 0
        self._sizes: dict[int, int] = {}

    def _refuse(self, message: str, mark: Any) -> InputError:
        return InputError(message, source=self._source, line=mark.line + 1)

    def compose_node(self, parent: Any, index: Any) -> yaml.Node | None:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            node = super().compose_node(parent, index)  # undefined aliases are its error
            if id(node) not in self._sizes:
                raise self._refuse(f"alias *{event.anchor} is inside the value it names",
                                   event.start_mark)
            self._count(self._sizes[id(node)], event.start_mark)
            return node
        start = self.peek_event().start_mark
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise self._refuse(f"nested deeper than {MAX_DEPTH} levels", start)
        before = self._values
        node = super().compose_node(parent, index)
        self._depth -= 1
        self._count(1, start)
        self._sizes[id(node)] = self._values - before
        return node

    def _count(self, values: int, mark: Any) -> None:
        self._values += values
        if self._values > MAX_VALUES:
            raise self._refuse(f"more than {MAX_VALUES} values once aliases are expanded "
                               "(an alias repeats everything it names)", mark)


class _BoundedScanner(yaml.scanner.Scanner):
    """PyYAML's pure-Python scanner, refusing flow collections nested deeper than MAX_DEPTH.
    In a flow collection every '[' may begin a key, so a scanner reads ahead to its end before
    the composer sees the first value: the depth must be bounded here too, in our words, not
    left to the parser's own limit (libyaml's words, which change between releases)."""

    if TYPE_CHECKING:  # from the reader and composer _PyLoader mixes this scanner with
        def get_mark(self) -> Any: ...
        def _refuse(self, message: str, mark: Any) -> InputError: ...

    def fetch_flow_collection_start(self, TokenClass: Any) -> None:
        if self.flow_level >= MAX_DEPTH:
            raise self._refuse(f"nested deeper than {MAX_DEPTH} levels", self.get_mark())
        super().fetch_flow_collection_start(TokenClass)


class _PyLoader(yaml.reader.Reader, _BoundedScanner, yaml.parser.Parser,
                _BoundedComposer, yaml.resolver.Resolver):
    def __init__(self, text: str, source: str):
        yaml.reader.Reader.__init__(self, text)
        yaml.scanner.Scanner.__init__(self)
        yaml.parser.Parser.__init__(self)
        yaml.composer.Composer.__init__(self)
        yaml.resolver.Resolver.__init__(self)
        self._init_bounds(source)


if _LIBYAML:
    class _CLoader(_BoundedComposer, _Events, yaml.resolver.Resolver):
        def __init__(self, text: str, source: str):
            _Events.__init__(self, text)
            yaml.composer.Composer.__init__(self)
            yaml.resolver.Resolver.__init__(self)
            self._init_bounds(source)

    # libyaml for speed; a document it refuses is read again by the pure-Python loader, whose
    # errors are bounded and worded the same whatever libyaml a PyYAML release bundles.
    _LOADERS: tuple[type, ...] = (_CLoader, _PyLoader)
else:  # pragma: no cover
    _LOADERS = (_PyLoader,)


def _compose(text: str, source: str) -> yaml.Node | None:
    for loader in _LOADERS[:-1]:
        try:
            return _compose_with(loader, text, source)
        except yaml.YAMLError:
            continue  # the next loader words the error
    try:
        return _compose_with(_LOADERS[-1], text, source)
    except yaml.YAMLError as exc:
        raise _syntax_error(exc, text, source) from None


def _compose_with(loader_type: type, text: str, source: str) -> yaml.Node | None:
    loader = loader_type(text, source)
    try:
        return loader.get_single_node()
    finally:
        loader.dispose()


def _syntax_error(exc: yaml.YAMLError, text: str, source: str) -> InputError:
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        return InputError(f"not valid YAML: {exc.problem or exc}", source=source,
                          line=None if mark is None else mark.line + 1)
    if isinstance(exc, yaml.reader.ReaderError):
        return InputError(f"not valid YAML: character {exc.character!r} is not allowed",
                          source=source, line=_line_at(text, exc.position))
    return InputError(f"not valid YAML: {exc}", source=source)


def _line_at(text: str, position: int) -> int:
    return text.count("\n", 0, position) + 1


# ---- nodes -> plain data with lines ------------------------------------------------------------

_COLLECTION_TAGS = {yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
                    yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG}


class _Plain:
    def __init__(self, source: str):
        self.source = source
        self.lines: dict[Loc, int] = {}
        # Resolves scalars exactly as safe_load would (ints, floats, bools, null, strings).
        self.scalars = yaml.constructor.SafeConstructor()

    def error(self, message: str, node: yaml.Node, loc: Loc) -> InputError:
        return InputError(message, source=self.source, line=node.start_mark.line + 1,
                          field=dotted(loc) or None)

    def value(self, node: yaml.Node, loc: Loc, *, record: bool = True) -> Any:
        if record:
            self.lines[loc] = node.start_mark.line + 1
        if not isinstance(node, yaml.ScalarNode) and node.tag not in _COLLECTION_TAGS:
            raise self.error(f"tag {node.tag} is not allowed", node, loc)
        if isinstance(node, yaml.MappingNode):
            out: dict[Any, Any] = {}
            for key_node, value_node in node.value:
                key = self.value(key_node, loc, record=False)
                if not isinstance(key, Hashable):
                    raise self.error("mapping keys must be scalars", key_node, loc)
                if key in out:
                    raise self.error(f"key {key!r} given twice", key_node, loc + (key,))
                out[key] = self.value(value_node, loc + (key,))
            return out
        if isinstance(node, yaml.SequenceNode):
            return [self.value(item, loc + (i,)) for i, item in enumerate(node.value)]
        try:
            return self.scalars.construct_object(node, deep=True)
        except yaml.constructor.ConstructorError as exc:
            raise self.error(str(exc.problem), node, loc) from None


def parse(text: str, source: str) -> Document:
    """Parse YAML text; `source` names it in errors."""
    if len(text) > MAX_BYTES:
        raise InputError(f"larger than the {_size(MAX_BYTES)} an input may have", source=source)
    node = _compose(text, source)
    if node is None:
        raise InputError("the file is empty", source=source)
    plain = _Plain(source)
    return Document(plain.value(node, ()), plain.lines, source)


class _Duplicate(ValueError):
    pass


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not a JSON number")


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise _Duplicate()
    return out


def _check_shape(data: Any, source: str, line: int | None = None) -> None:
    """MAX_DEPTH and MAX_VALUES for data that did not come through the composer. Only
    containers go on the stack: a dataset line holds some ten thousand numbers, and visiting
    each as a node made this check most of a dataset's load time."""
    values, stack = 1, [(data, 1)] if isinstance(data, (dict, list)) else []
    while stack:
        value, depth = stack.pop()
        children = value.values() if isinstance(value, dict) else value
        values += len(children)
        if (children and depth >= MAX_DEPTH) or values > MAX_VALUES:
            raise InputError(f"nested deeper than {MAX_DEPTH} levels" if depth >= MAX_DEPTH
                             else f"more than {MAX_VALUES} values", source=source, line=line)
        stack.extend((child, depth + 1) for child in children
                     if isinstance(child, (dict, list)))


def json_value(text: str, source: str, *, line: int | None = None) -> Any:
    """One JSON value held to the loader's bounds, without lines: for machine-written
    artefacts read in bulk (a line of a JSON-lines file), where the composer that gives
    parse_json its lines would cost more than the data is worth."""
    if len(text) > MAX_BYTES:
        raise InputError(f"larger than the {_size(MAX_BYTES)} an input may have",
                         source=source, line=line)
    try:
        data = json.loads(text, parse_constant=_not_json)
    except RecursionError:
        raise InputError(f"nested deeper than {MAX_DEPTH} levels", source=source,
                         line=line) from None
    except ValueError as exc:
        raise InputError(f"not valid JSON: {exc}", source=source, line=line) from None
    _check_shape(data, source, line)
    return data


def parse_json(text: str, source: str) -> Document:
    """Parse JSON text with lines; JSON syntax errors are reported as JSON's.

    The values are JSON's (YAML 1.1 would read 1e-05 as a string). The YAML composer, which
    reads JSON too, gives the lines, the bounds and the line of a key given twice; where it
    cannot read what JSON can (a surrogate-pair escape), the bounds are checked on the data
    and errors name the file without a line."""
    try:
        data = json.loads(text, parse_constant=_not_json, object_pairs_hook=_unique)
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc.msg}", source=source, line=exc.lineno) from None
    except (_Duplicate, RecursionError):
        return parse(text, source)  # the composer names the line (or refuses the depth)
    except ValueError as exc:
        raise InputError(f"not valid JSON: {exc}", source=source) from None
    try:
        lines = parse(text, source).lines
    except InputError as exc:
        if not exc.message.startswith("not valid YAML"):
            raise
        _check_shape(data, source)
        lines = {}
    return Document(data, lines, source)


def read(path: str | Path) -> Document:
    """Read and parse a YAML input file."""
    return parse(read_text(path), str(path))


def read_json(path: str | Path) -> Document:
    """Read and parse a JSON input file (an artefact such as a matrix or a plan)."""
    return parse_json(read_text(path), str(path))


# pydantic's error types and their context are its stable interface; its wording is not (it
# changes between releases). The errors people meet in hand-written files are worded here, so
# a new pydantic changes no message a user or a test relies on; rarer types keep pydantic's.
_WORDS = {
    "missing": lambda c: "required field missing",
    "extra_forbidden": lambda c: "unknown field (not one this file takes)",
    "int_type": lambda c: "must be an integer", "int_parsing": lambda c: "must be an integer",
    "int_from_float": lambda c: "must be an integer",
    "float_type": lambda c: "must be a number", "float_parsing": lambda c: "must be a number",
    "finite_number": lambda c: "must be a finite number",
    "string_type": lambda c: "must be a string", "bool_type": lambda c: "must be true or false",
    "bool_parsing": lambda c: "must be true or false",
    "dict_type": lambda c: "must be a mapping", "model_type": lambda c: "must be a mapping",
    "model_attributes_type": lambda c: "must be a mapping",
    "list_type": lambda c: "must be a list", "tuple_type": lambda c: "must be a list",
    "greater_than": lambda c: f"must be greater than {c['gt']}",
    "greater_than_equal": lambda c: f"must be at least {c['ge']}",
    "less_than": lambda c: f"must be less than {c['lt']}",
    "less_than_equal": lambda c: f"must be at most {c['le']}",
    "too_short": lambda c: f"needs at least {c['min_length']} item(s)",
    "too_long": lambda c: f"takes at most {c['max_length']} item(s)",
    "string_too_short": lambda c: f"needs at least {c['min_length']} character(s)",
    "string_too_long": lambda c: f"takes at most {c['max_length']} characters",
    "literal_error": lambda c: f"must be one of {c['expected']}",
    "enum": lambda c: f"must be one of {c['expected']}",
}


def error_message(error: Any) -> str:
    """One pydantic error (an item of ValidationError.errors()) in intercore's words: our own
    validators' text as raised, the common structural errors as worded above."""
    kind, ctx = error["type"], error.get("ctx") or {}
    if kind in ("value_error", "assertion_error") and "error" in ctx:
        return str(ctx["error"])
    words = _WORDS.get(kind)
    try:
        return words(ctx) if words else error["msg"]
    except KeyError:  # a context this release of pydantic does not give
        return error["msg"]


def validate(doc: Document, model: type[M], *, context: dict[str, Any] | None = None) -> M:
    """Validate the document against `model`; the first error becomes an InputError."""
    try:
        return model.model_validate(doc.data, context=context)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = tuple(first["loc"])
        message = error_message(first)
        more = exc.error_count() - 1
        if more:
            message += f" (and {more} more error{'s' if more > 1 else ''})"
        raise doc.error(message, loc) from None


def load(path: str | Path, model: type[M], *, context: dict[str, Any] | None = None) -> M:
    """read() + validate(): the one call most commands need."""
    return validate(read(path), model, context=context)


def _size(n: int) -> str:
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n} bytes"
