"""`intercore assess` refuses a bad system description with one line naming the file, the
line and the field, exit 2, before anything is detected or measured: the dossier directory
is not made and no cgroup, store or file appears. (More classes: tests/fuzz/test_groups.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from intercore.cli.main import app

TASKSET = """name: t
tasks:
  - name: chase
    workload: ptrchase
    period: 10ms
    deadline: 5ms
    cpu: 0
    priority: 10
    role: critical
  - name: noise
    workload: BwWrite(LLC)
    period: 20ms
    work: time:4ms
    cpu: 0
    role: best-effort
"""


def _refused(tmp_path: Path, system: str, taskset: str = TASKSET) -> str:
    (tmp_path / "s.yaml").write_text(system)
    (tmp_path / "t.yaml").write_text(taskset)
    before = sorted(tmp_path.iterdir())
    result = CliRunner().invoke(app, ["assess", str(tmp_path / "s.yaml"), "-o",
                                      str(tmp_path / "dossier")])
    assert result.exit_code == 2, result.output
    assert sorted(tmp_path.iterdir()) == before  # no dossier directory, no store
    line = result.stderr.strip()
    assert "\n" not in line and line.startswith("error: "), result.stderr
    return line


@pytest.mark.parametrize("extra, where", [
    ("theta: 1.0\n", "s.yaml:4: theta: "),
    ("budget: 2s\n", "s.yaml:4: budget: the measurements need at least"),
    ("mitigations: [freeze, teleport]\n", "s.yaml:4: mitigations[1]: "),
    ("sizes:\n  jobs: 1\n", "s.yaml:5: sizes.jobs: "),
    ("colour: blue\n", "s.yaml:4: colour: "),
])
def test_a_bad_field_is_named_at_its_line(tmp_path, extra, where):
    line = _refused(tmp_path, "name: s\nplatform: detect\ntaskset: t.yaml\n" + extra)
    assert line.startswith(f"error: {tmp_path / where}"), line


def test_a_missing_task_set_is_named_at_the_systems_line(tmp_path):
    line = _refused(tmp_path, "name: s\nplatform: detect\ntaskset: nowhere.yaml\n")
    assert line.startswith(f"error: {tmp_path / 's.yaml'}:3: taskset: "), line


def test_a_bad_task_set_is_named_at_its_own_line(tmp_path):
    line = _refused(tmp_path, "name: s\nplatform: detect\ntaskset: t.yaml\n",
                    TASKSET.replace("    cpu: 0\n    priority: 10\n", "    priority: 10\n"))
    assert line.startswith(f"error: {tmp_path / 't.yaml'}:3: tasks[0].cpu: "), line


def test_a_platform_model_that_does_not_load_is_named(tmp_path):
    (tmp_path / "m.yaml").write_text("name: m\ncomponents: 3\n")
    line = _refused(tmp_path, "name: s\nplatform: m.yaml\ntaskset: t.yaml\n")
    assert line.startswith(f"error: {tmp_path / 'm.yaml'}:1: platform: "), line


@pytest.mark.parametrize("heatmaps, heatmap, where", [
    ("{nobody: h.json}", None, "s.yaml:4: heatmaps.nobody: 'nobody' is not a task"),
    ("{noise: h.json}", None, "s.yaml:4: heatmaps.noise: noise is best-effort"),
    ("{chase: none.json}", None, "s.yaml:4: heatmaps.chase: "),
    ("{chase: h.json}", '{"format": "intercore.heatmap/1", "regions": [\n'
     '  {"region": "r", "delta": -1, "interval": [1, 2], "weight": 1}]}', "h.json:2: "),
])
def test_a_bad_heatmap_is_named_before_anything_runs(tmp_path, heatmaps, heatmap, where):
    if heatmap is not None:
        (tmp_path / "h.json").write_text(heatmap)
    line = _refused(tmp_path, f"name: s\nplatform: detect\ntaskset: t.yaml\nheatmaps: {heatmaps}\n")
    assert line.startswith(f"error: {tmp_path / where}"), line
