"""Outputs are replaced in one rename: an error or Ctrl-C part way leaves the old file whole
and no temporary behind; names taken from inputs stay in the directory (issue 18)."""

from __future__ import annotations

import os
import stat

import pytest

from intercore.base import outputs
from intercore.base.errors import InputError
from intercore.model.stream import write_jsonl
from intercore.store import export


def _rows_then_ctrl_c(n: int):
    for i in range(n):
        yield {"kind": "row", "id": str(i)}
    raise KeyboardInterrupt


@pytest.mark.parametrize("write", [
    lambda path: export.write_csv((["kind", "id"], (tuple(r.values())
                                                    for r in _rows_then_ctrl_c(1000))), path),
    lambda path: write_jsonl(path, {"v": 1}, _rows_then_ctrl_c(1000)),
], ids=["results-export-csv", "model-jsonl"])
def test_ctrl_c_while_writing_leaves_the_old_file_and_no_temporary(tmp_path, write):
    path = tmp_path / "out.csv"
    path.write_text("the previous export\n")
    with pytest.raises(KeyboardInterrupt):
        write(path)
    assert path.read_text() == "the previous export\n"
    assert os.listdir(tmp_path) == ["out.csv"]


def test_a_replaced_file_is_readable_by_all_and_keeps_its_suffix_while_written(tmp_path):
    path = tmp_path / "fig.png"
    with outputs.replacing(path) as tmp:
        assert tmp.parent == tmp_path and tmp.suffix == ".png" and tmp != path
        tmp.write_bytes(b"png")
        assert not path.exists()
    assert path.read_bytes() == b"png"
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert os.listdir(tmp_path) == ["fig.png"]


@pytest.mark.parametrize("name", ["../../x", "..", ".", "", "a/b", "/etc/passwd", ".hidden",
                                  "-rf", "x" * 129, "tab\there"])
def test_a_name_from_an_input_cannot_leave_its_directory(tmp_path, name):
    with pytest.raises(InputError, match="names output files") as info:
        outputs.inside(tmp_path, name, source="set.yaml", field="name")
    assert str(info.value).startswith("set.yaml: name: ")


def test_ordinary_names_stay_as_they_are(tmp_path):
    for name in ("paper-000", "sp-impact@xeon", "a.b", "k=3,mode=x"):
        assert outputs.inside(tmp_path, name) == tmp_path / name


def test_a_new_directory_appears_whole_or_not_at_all(tmp_path):
    """A model directory filled file by file: a stop part way (here an exception) leaves
    neither the name nor a temporary; the block's end renames it into place."""
    target = tmp_path / "model"
    with pytest.raises(KeyboardInterrupt):
        with outputs.new_directory(target) as tmp:
            (tmp / "params.npz").write_bytes(b"x")
            raise KeyboardInterrupt
    assert list(tmp_path.iterdir()) == []
    with outputs.new_directory(target) as tmp:
        (tmp / "model.json").write_text("{}")
        assert not target.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["model"]
    assert (target / "model.json").read_text() == "{}"


def test_a_log_still_being_written_is_read_to_its_last_ended_line(tmp_path):
    """A reader polling a native tool's log meets the line the tool is writing half done:
    read as growing, it is left for the next look; read whole, it is an error."""
    from intercore.base.errors import NativeError
    from intercore.mitigate.freezer.monitor import read_log

    log = tmp_path / "log.jsonl"
    log.write_text('{"t_ns": 5, "action": "thaw", "group": "/g", "reason": "lease-expired", '
                   '"by": "watchdog"}\n{"t_ns": 9, "act')
    (entry,) = read_log(log, growing=True)
    assert (entry.t_ns, entry.action, entry.by) == (5, "thaw", "watchdog")
    with pytest.raises(NativeError):
        read_log(log)
