"""docs/user-programs.md as a newcomer follows it: every block marked `sh guide` runs as it
stands, in order, in a copy of the example (what the guide's `cp -r` makes), with the
installed intercore on PATH, on the real kernel; the `yaml guide FILE` block is the file the
guide says to save. Only the sizes shrink, by the substitutions below (each must still
match the guide, so a guide that changes its commands cannot skip them). Then the outputs
the guide promises must be there: the measured rows, the matrix, the plan, the three
scenarios and the monitor's freezes for the program's own jobs."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from intercore.host.topology import read_topology
from intercore.mitigate.freezer.monitor import read_log
from intercore.mitigate.plan.record import CgroupPlan

from _kit import EXAMPLE, need

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "user-programs.md"
FENCE = re.compile(r"^```(sh|yaml) guide(?: (\S+))?\n(.*?)^```$", re.M | re.S)
JOBS = 10
# The guide's sizes, and the test's: seconds instead of minutes.
SHORTER = {
    "--runs 20": "--runs 4",
    "--steps 20000": "--steps 2000",
    "--rounds 3": "--rounds 1 --block 200ms",
    "--jobs 200": f"--jobs {JOBS}",
}


MINE = "intercore mitigate protection --taskset my-controller.yaml"
FILTERED = "intercore mitigate protection --taskset my-filter.yaml"


def blocks() -> list[tuple[str, str | None, str]]:
    """(language, file to save or None, text) of each guide block, in the guide's order."""
    return [(m.group(1), m.group(2), m.group(3)) for m in FENCE.finditer(GUIDE.read_text())]


def test_the_guide_marks_its_commands_and_the_sizes_the_test_shrinks():
    text = GUIDE.read_text()
    assert "cp -r examples/user-program my-control && cd my-control" in text
    found = blocks()
    assert [lang for lang, _, _ in found].count("yaml") == 2
    assert sum(lang == "sh" for lang, _, _ in found) >= 5
    commands = "".join(body for lang, _, body in found if lang == "sh")
    for long in SHORTER:
        assert long in commands, f"the guide no longer says {long!r}: update SHORTER"


@pytest.mark.slow
def test_a_newcomer_runs_the_guide_to_a_protected_periodic_task(tmp_path, real_cgroups,
                                                                test_root):
    need("gcc")
    if not {0, 1} <= set(read_topology().online_cpus):
        pytest.skip("the guide's task set pins to CPU 1 and the monitor needs another CPU")
    work = tmp_path / "my-control"
    shutil.copytree(EXAMPLE, work)  # the guide's `cp -r examples/user-program my-control`
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    out: dict[str, str] = {}  # each block's stdout, by its first line
    for lang, name, body in blocks():
        if lang == "yaml":
            (work / name).write_text(body)
            continue
        key = body.splitlines()[0]  # as the guide writes it
        for long, short in SHORTER.items():
            body = body.replace(long, short)
        # `bash -u`: a placeholder left for the reader to fill in (an unset variable) fails.
        # The experiment's cgroups under this test's root, so a leftover is found and removed.
        body = body.replace("experiment protection",
                            f"experiment protection --root {test_root}")
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", body], cwd=work, env=env,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"{body}\n---\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
        assert key not in out, f"two guide blocks start with {key!r}: tell them apart"
        out[key] = done.stdout

    def output(start: str) -> str:
        """The stdout of the one block whose first line starts so."""
        found = [text for key, text in out.items() if key.startswith(start)]
        assert len(found) == 1, f"{len(found)} guide blocks start with {start!r}"
        return found[0]

    assert (work / "control").is_file() and (work / "control_task").is_file()
    measured = output("intercore measure run")
    assert "Δ" in measured and "fir" in measured  # measured, per marked region
    jobs = [json.loads(line) for line in output("./control_task --period").splitlines()]
    assert jobs[-1]["event"] == "summary" and jobs[-1]["jobs"] == 100

    matrix = json.loads((work / "matrix.json").read_text())
    assert matrix["tasks"] == ["ctl", "noise"] and matrix["n"][0][1] > 0
    plan = CgroupPlan.load(work / "plan.json")
    # One CPU, one priority, released inside the noise's job: the wait is a scheduling fact.
    assert plan.pairs and any(g.monitor == "freeze" for g in plan.groups)

    run = json.loads((work / "protected.json").read_text())["placements"]["taskset"]
    for scenario in ("solo", "interference", "protected"):
        assert run[scenario]["n"] == JOBS and f"{scenario} " in output(MINE)
    # The guide's claim that holds on any host: released inside a 7 ms noise job on its CPU,
    # the controller waits past its 5 ms deadline.
    assert run["interference"]["misses"] >= 1
    log = [e for e in read_log(work / "protected" / "taskset.monitor.jsonl") if e.job is not None]
    freezes = [e for e in log if e.action == "freeze"]
    assert freezes and {e.job for e in freezes} <= set(range(JOBS))
    assert int(output(MINE).splitlines()[-1]) >= len(freezes)  # the guide's grep counts them
    trace = json.loads((work / "protected.trace.json").read_text())
    assert trace["traceEvents"]
    gang = output("intercore mitigate gang")
    assert "rt-gang" in gang and "ctl" in gang

    # gzip as it is, the controller's noise: no jobs, so no figure of its progress.
    filtered = json.loads((work / "filtered.json").read_text())["placements"]["taskset"]
    assert filtered["matrix"]["progress_unknown"] == ["gzip"]
    assert filtered["matrix"]["directed"][1] == [None, None]
    for scenario in ("solo", "interference", "protected"):
        assert filtered[scenario]["n"] == JOBS and filtered[scenario]["noise_progress"] is None
        assert f"{scenario} " in output(FILTERED)
    assert not real_cgroups.roots_named(test_root)
