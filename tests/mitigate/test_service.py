"""`intercore mitigate service install | uninstall` on a really applied plan: the unit passes
`systemd-analyze verify`, its ExecStopPost thaws every group on its own, and it is removed
whole. Started for real only where the machine was booted with systemd."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_cgroups_cli import files  # noqa: F401 - the task set, matrix and plan fixture
from test_cgroups_cli import intercore as cgroups_cli

from intercore.mitigate.freezer.service import systemd_running, verify


def intercore(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "intercore", "mitigate", "service", *args],
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
def applied(files, test_root, tmp_path):  # noqa: F811 - the imported fixture
    taskset, matrix, plan = files
    assert cgroups_cli("plan", str(taskset), "-m", str(matrix), "-o", str(plan)).returncode == 0
    done = cgroups_cli("apply", str(plan), "--root", test_root, "--json")
    if done.returncode != 0:
        pytest.skip(f"cannot apply a plan here: {done.stderr.strip()}")
    yield plan
    assert cgroups_cli("teardown", str(plan)).returncode == 0


def dirs(tmp_path: Path) -> list[str]:
    return ["--unit-dir", str(tmp_path / "units"), "--state-dir", str(tmp_path / "state")]


def frozen(plan: Path) -> dict[str, bool]:
    status = json.loads(cgroups_cli("status", str(plan), "--json").stdout)
    return {g["name"]: g["freeze_requested"] for g in status["groups"]}


@pytest.mark.slow
def test_the_unit_verifies_and_its_stop_post_thaws_every_group(applied, tmp_path):
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed (apt-get install systemd)")
    done = intercore("install", "--plan", str(applied), "--name", "ic-test-monitor",
                     *dirs(tmp_path), "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    unit = Path(out["unit"])
    assert out["verified"] is True and verify(unit) == []
    text = unit.read_text()
    for line in ("Type=notify", "Delegate=yes", "CPUSchedulingPolicy=fifo",
                 "CPUSchedulingPriority=50", "Restart=on-failure", "WatchdogSec=10s",
                 "KillMode=mixed", "WantedBy=multi-user.target"):
        assert line in text.splitlines(), line
    # The plan's critical group runs on the last CPU: the service keeps off it.
    affinity = next(ln for ln in text.splitlines() if ln.startswith("CPUAffinity="))
    crit_cpu = json.loads(applied.read_text())["groups"]
    busy = {c for g in crit_cpu if g["monitor"] == "protect" for c in g["cpus"] or ()}
    assert busy and not busy & set(map(int, affinity.split("=", 1)[1].split()))
    copy = Path(out["plan"])
    assert copy.read_bytes() == applied.read_bytes() and copy.stat().st_mode & 0o777 == 0o600
    assert (copy.parent.stat().st_mode & 0o777) == 0o700
    assert f"--plan {copy}" in out["exec_start"]

    # ExecStopPost on its own, exactly as systemd would run it, thaws what was frozen.
    assert cgroups_cli("freeze", str(applied), "noise").returncode == 0
    assert frozen(applied)["noise"] is True
    thaw = subprocess.run(shlex.split(out["exec_stop_post"]), capture_output=True, text=True,
                          timeout=120)
    assert thaw.returncode == 0, thaw.stderr
    assert not any(frozen(applied).values())

    again = intercore("install", "--plan", str(applied), "--name", "ic-test-monitor",
                      *dirs(tmp_path))
    assert again.returncode == 2 and "uninstall" in again.stderr
    gone = intercore("uninstall", "--name", "ic-test-monitor", *dirs(tmp_path), "--json")
    assert gone.returncode == 0, gone.stderr
    assert not unit.exists() and not copy.exists()


@pytest.mark.slow
def test_a_plan_that_is_not_applied_is_refused_and_nothing_written(files, tmp_path):  # noqa: F811
    taskset, matrix, plan = files
    assert cgroups_cli("plan", str(taskset), "-m", str(matrix), "-o", str(plan)).returncode == 0
    done = intercore("install", "--plan", str(plan), *dirs(tmp_path))
    assert done.returncode == 2 and "mitigate apply" in done.stderr
    assert not (tmp_path / "units").exists() and not (tmp_path / "state").exists()
    bad = intercore("install", "--plan", str(plan), "--name", "-x", *dirs(tmp_path))
    assert bad.returncode == 2 and "--name" in bad.stderr


@pytest.mark.skipif(not systemd_running(), reason="this machine was not booted with systemd: "
                    "the unit is verified, not started")
def test_the_unit_starts_and_stops_under_systemd(applied, tmp_path):
    unit_dir = Path("/run/systemd/system")  # runtime units: gone at the next boot
    done = intercore("install", "--plan", str(applied), "--name", "ic-test-monitor",
                     "--unit-dir", str(unit_dir), "--state-dir", str(tmp_path / "state"),
                     "--now", "--json")
    try:
        assert done.returncode == 0, done.stderr
        state = subprocess.run(["systemctl", "is-active", "ic-test-monitor.service"],
                               capture_output=True, text=True)
        assert state.stdout.strip() == "active"
    finally:
        intercore("uninstall", "--name", "ic-test-monitor", "--unit-dir", str(unit_dir),
                  "--state-dir", str(tmp_path / "state"))
    assert not any(frozen(applied).values())
    assert os.path.exists(applied)


@pytest.mark.slow
@pytest.mark.skipif(systemd_running(), reason="this machine runs systemd: --now starts the unit")
def test_now_without_systemd_is_refused_and_writes_nothing(applied, tmp_path):
    done = intercore("install", "--plan", str(applied), "--name", "ic-test-monitor",
                     *dirs(tmp_path), "--now")
    assert done.returncode == 3 and "systemd" in done.stderr, done.stderr
    assert not (tmp_path / "units").exists() and not (tmp_path / "state").exists()


@pytest.mark.slow
def test_a_unit_that_fails_to_start_is_removed_again(applied, tmp_path, monkeypatch):
    """systemd itself is stood in for by fake_systemd/systemctl, whose `enable` fails."""
    from typer.testing import CliRunner

    from intercore.cli.main import app
    from intercore.mitigate.freezer import service

    log = tmp_path / "systemctl.log"
    monkeypatch.setattr(service, "systemd_running", lambda: True)
    monkeypatch.setenv("PATH", f"{Path(__file__).parent / 'fake_systemd'}:{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_SYSTEMCTL_LOG", str(log))
    done = CliRunner().invoke(app, ["mitigate", "service", "install", "--plan", str(applied),
                                    "--name",
                                    "ic-test-monitor", *dirs(tmp_path), "--now"])
    assert done.exit_code == 2 and "systemctl enable --now" in done.output, done.output
    assert log.read_text().splitlines() == [
        "daemon-reload", "enable --now ic-test-monitor.service",
        "disable --now ic-test-monitor.service", "daemon-reload"]
    assert list((tmp_path / "units").iterdir()) == [] and list((tmp_path / "state").iterdir()) == []
