"""`intercore mitigate monitor --window-region`: names checked against the regions the running
critical task published in its notification block, before the plan is even read (exit 2,
one `error:` line naming the option and the task's regions); a task without markers is not
an error (the monitor then protects its whole jobs and says so)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from intercore.measure.periodic.runner import PeriodicSpec, PeriodicTask
from intercore.base.procs import ProcessGroup

pytestmark = pytest.mark.slow

MS = 1_000_000


def intercore(*args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "intercore", *args], capture_output=True,
                          text=True, timeout=120, cwd=cwd)


@pytest.mark.parametrize("kind, params", [
    ("phases", (("size", "64K"), ("compute", "1ms"))),
    ("bw", (("size", "64K"),)),
])
def test_window_names_are_checked_against_the_running_task(tmp_path, kind, params):
    block = tmp_path / "critical.notify"
    spec = PeriodicSpec(name="c", binary="victim" if kind == "phases" else "aggr", kind=kind,
                        params=params, period_ns=30 * MS, jobs=1)
    with ProcessGroup() as group:
        PeriodicTask.launch(spec, group, notify=block)
        # No plan.json exists: a refusal that names --window-region came before it was read.
        result = intercore("mitigate", "monitor", "--plan", "plan.json", "--policy", "event",
                           "--notify",
                           str(block), "--window-region", "phases.strem", cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    if kind == "phases":
        assert result.stderr.startswith("error: --window-region: ")
        assert "no region 'phases.strem'" in result.stderr
        assert "(its regions: phases.compute, phases.stream)" in result.stderr
        assert result.stderr.count("\n") == 1
    else:  # no markers: no name to refuse (the monitor protects whole jobs); the plan fails
        assert result.stderr.startswith("error: plan.json: ")
        assert "--window-region" not in result.stderr
