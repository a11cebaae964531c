import time

import pytest
from pydantic import BaseModel, ConfigDict, field_validator

from intercore.base import yamlfile
from intercore.base.errors import InputError


class Task(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    period_ms: float

    @field_validator("period_ms")
    @classmethod
    def _positive(cls, v: float) -> float:
        if v <= 0:
            raise ValueError("must be positive")
        return v


class TaskSet(BaseModel):
    model_config = ConfigDict(extra="forbid")
    tasks: list[Task]


def _error(text: str) -> InputError:
    with pytest.raises(InputError) as info:
        yamlfile.validate(yamlfile.parse(text, "set.yaml"), TaskSet)
    return info.value


def test_valid_file_loads(tmp_path):
    path = tmp_path / "set.yaml"
    path.write_text("tasks:\n  - name: a\n    period_ms: 100\n")
    assert yamlfile.load(path, TaskSet).tasks[0].period_ms == 100


@pytest.mark.parametrize("text, line, field, words", [
    ("tasks:\n  - name: a\n    period_ms: 1\n  - name: b\n    period_ms: x\n",
     5, "tasks[1].period_ms", "must be a number"),
    ("tasks:\n  - name: a\n    period_ms: -3\n", 3, "tasks[0].period_ms", "must be positive"),
    ("tasks:\n  - name: a\n    name: b\n", 3, "tasks[0].name", "given twice"),
    ("tasks:\n  - name: a\n    period_ms: 2\n    colour: red\n", 4, "tasks[0].colour",
     "unknown field"),
    ("tasks:\n  - name: a\n", 2, "tasks[0].period_ms", "required"),
    ("tasks: [\n", 2, None, "not valid YAML"),
])
def test_errors_name_file_line_and_field(text, line, field, words):
    err = _error(text)
    assert (err.source, err.line, err.field) == ("set.yaml", line, field)
    assert words in err.message
    assert str(err).startswith(f"set.yaml:{line}: ")


def test_scalars_resolve_as_safe_load_does():
    doc = yamlfile.parse("a: 1\nb: 1.5\nc: true\nd: null\ne: '1'\nf: 0x10\n", "x.yaml")
    assert doc.data == {"a": 1, "b": 1.5, "c": True, "d": None, "e": "1", "f": 16}


def test_unsafe_tags_are_refused():
    with pytest.raises(InputError):
        yamlfile.parse("a: !!python/object/apply:os.system ['true']\n", "x.yaml")


def test_empty_and_unreadable_files(tmp_path):
    with pytest.raises(InputError, match="empty"):
        yamlfile.parse("", "x.yaml")
    with pytest.raises(InputError, match="cannot read"):
        yamlfile.read(tmp_path / "missing.yaml")


# ---- bounds: what an input file may not do to the loader -----------------------------------------

def _refused(path, reader=yamlfile.read) -> tuple[InputError, float]:
    started = time.perf_counter()
    with pytest.raises(InputError) as info:
        reader(path)
    return info.value, time.perf_counter() - started


def test_a_huge_file_is_refused_before_it_is_read(tmp_path):
    path = tmp_path / "huge.yaml"
    path.write_text("- x\n" * (10 * 2**20 // 4))
    err, seconds = _refused(path)
    assert seconds < 0.5
    assert err.source == str(path) and "10.0 MiB is larger than the 1.0 MiB" in err.message


def test_a_stream_without_a_size_is_read_only_up_to_the_bound():
    err, seconds = _refused("/dev/zero")
    assert seconds < 0.5 and "larger than the 1.0 MiB" in err.message


def test_billion_laughs_is_refused_at_once_with_the_line(tmp_path):
    lines = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        prev, name = chr(ord("a") + i - 1), chr(ord("a") + i)
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 9) + "]")
    path = tmp_path / "laughs.yaml"
    path.write_text("\n".join(lines) + "\n")
    assert path.stat().st_size < 600
    err, seconds = _refused(path)
    assert seconds < 0.5
    assert err.line == 6 and "aliases are expanded" in err.message


def test_aliases_within_the_bound_still_load():
    doc = yamlfile.parse("base: &b {period: 10ms}\na: *b\nb: *b\n", "x.yaml")
    assert doc.data["a"] == doc.data["b"] == {"period": "10ms"}


def test_an_alias_inside_what_it_names_is_refused():
    with pytest.raises(InputError, match="inside the value it names") as info:
        yamlfile.parse("a:\n  b: &x [1, *x]\n", "x.yaml")
    assert info.value.line == 2


@pytest.mark.parametrize("text, reader", [
    ("[" * 100_000, yamlfile.parse),
    ("a:\n" + "".join(" " * i + "b:\n" for i in range(1, 100)), yamlfile.parse),
    ("[" * 100_000, yamlfile.parse_json),
    ('{"a": ' * 500 + "1" + "}" * 500, yamlfile.parse_json),
])
def test_deep_nesting_is_refused_with_the_line_not_a_recursion_error(text, reader):
    with pytest.raises(InputError, match=f"nested deeper than {yamlfile.MAX_DEPTH}") as info:
        reader(text, "deep")
    assert info.value.line is not None


def test_nul_bytes_and_non_utf8_name_the_line(tmp_path):
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(b"name: x\ntasks:\n  - \x00\x01\x02\n")
    err, _ = _refused(binary)
    assert (err.line, err.message) == (3, "binary data (a NUL byte), not a text file")
    latin1 = tmp_path / "latin1.json"
    latin1.write_bytes(b'{\n  "name": "caf\xe9"\n}\n')
    err, _ = _refused(latin1, yamlfile.read_json)
    assert err.line == 2 and "not UTF-8 text (byte 0xe9 at column 15)" in err.message


def test_control_characters_and_directories_are_input_errors(tmp_path):
    with pytest.raises(InputError, match="not allowed") as info:
        yamlfile.parse("a: 1\nb: \x07\n", "x.yaml")
    assert info.value.line == 2
    err, _ = _refused(tmp_path)
    assert err.message == "is a directory, not a file"


def test_json_syntax_errors_are_reported_as_json_with_the_line():
    with pytest.raises(InputError, match="not valid JSON") as info:
        yamlfile.parse_json('{\n  "a": 1,\n  "b": \n}\n', "m.json")
    assert info.value.line == 4


def test_a_utf8_bom_is_accepted(tmp_path):
    path = tmp_path / "bom.yaml"
    path.write_bytes(b"\xef\xbb\xbftasks:\n  - name: a\n    period_ms: 1\n")
    assert yamlfile.load(path, TaskSet).tasks[0].name == "a"


@pytest.mark.parametrize("error, words", [
    ({"type": "missing", "msg": "Field required (any release's wording)"},
     "required field missing"),
    ({"type": "greater_than_equal", "msg": "?", "ctx": {"ge": 1}}, "must be at least 1"),
    ({"type": "value_error", "msg": "Value error, period must be positive",
      "ctx": {"error": ValueError("period must be positive")}}, "period must be positive"),
    ({"type": "greater_than_equal", "msg": "pydantic's own words", "ctx": {}},
     "pydantic's own words"),  # a context a release does not give: its own words, no crash
    ({"type": "some_new_type", "msg": "pydantic's own words"}, "pydantic's own words"),
])
def test_errors_are_worded_by_intercore_not_by_the_pydantic_release(error, words):
    """The wording users and tests rely on is ours: a new pydantic changes none of it."""
    assert yamlfile.error_message(error) == words


@pytest.mark.parametrize("text, refused", [
    ("[" * (yamlfile.MAX_DEPTH - 1) + "1" + "]" * (yamlfile.MAX_DEPTH - 1), None),
    ("[" * yamlfile.MAX_DEPTH + "]" * yamlfile.MAX_DEPTH, None),
    ("[" * yamlfile.MAX_DEPTH + "1" + "]" * yamlfile.MAX_DEPTH, "nested deeper"),
    ('{"a": ' * yamlfile.MAX_DEPTH + "{}" + "}" * yamlfile.MAX_DEPTH, "nested deeper"),
    ("[" + ",".join(["1"] * (yamlfile.MAX_VALUES - 1)) + "]", None),
    ("[" + ",".join(["1"] * yamlfile.MAX_VALUES) + "]", "more than"),
    ('[{"a": [1, 2]}' + ', {"a": [1, 2]}' * (yamlfile.MAX_VALUES // 4) + "]", "more than"),
    ('"a string is one value"', None),
])
def test_a_json_line_is_held_to_the_composers_bounds(text, refused):
    """Every node counts as a value, the root at depth 1 (what the composer counts); the
    bulk reader skips scalars on its walk, not in its count."""
    if refused is None:
        yamlfile.json_value(text, "x.jsonl", line=3)
        return
    with pytest.raises(InputError, match=refused) as info:
        yamlfile.json_value(text, "x.jsonl", line=3)
    assert info.value.line == 3
