import pytest
from pydantic import BaseModel, ConfigDict, field_validator

from intercore import yamlfile
from intercore.errors import InputError


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
     5, "tasks[1].period_ms", "valid number"),
    ("tasks:\n  - name: a\n    period_ms: -3\n", 3, "tasks[0].period_ms", "must be positive"),
    ("tasks:\n  - name: a\n    name: b\n", 3, "tasks[0].name", "given twice"),
    ("tasks:\n  - name: a\n    period_ms: 2\n    colour: red\n", 4, "tasks[0].colour", "Extra"),
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
