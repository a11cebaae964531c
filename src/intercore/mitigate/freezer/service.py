"""The freezer monitor as a systemd service: the unit `intercore mitigate service install` writes.

The unit runs `intercore mitigate monitor --plan` on a private copy of the applied plan (root's, in
a directory only root can enter: the daemon never follows a file someone else can edit) and
is built so that a monitor that stops, however it stops, leaves nothing frozen:

- `ExecStopPost=` thaws every freezer-enabled group of the plan with `intercore mitigate thaw
  PLAN`, a command that works on its own; systemd runs it after a clean stop, a crash, a kill
  or a watchdog timeout alike. It touches only the groups the plan's apply created (the
  cgroup checks of mitigate/cgroupfs.py).
- `Type=notify` with `WatchdogSec=`: the monitor reports ready once ic-monitor is, then pings
  while ic-monitor lives; a hung or dead monitor is stopped (and thawed) and restarted
  (`Restart=on-failure`, bounded by the start limit).
- `CPUAffinity=` keeps the service on the housekeeping CPUs, the ones no critical group of
  the plan runs on, and ic-monitor pins itself to the first of them; `CPUSchedulingPolicy=fifo`
  at the monitor's priority, so no best-effort task delays a freeze. The monitor's own
  watchdog moves itself off the monitor's CPU and above its priority.
- `Delegate=yes`: systemd leaves the cgroups below the service to it.
- `ConditionPathIsDirectory=` the plan's root cgroup: after a reboot the groups are gone and
  the unit is skipped, not restarted in a loop, until the plan is applied again.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ...base import outputs
from ...base.errors import InputError
from ...host.topology import Topology
from ..plan.record import CgroupPlan

UNIT_DIR = Path("/etc/systemd/system")
STATE_DIR = Path("/etc/intercore")
DEFAULT_NAME = "intercore-monitor"
MAX_NAME = 100


@dataclass(frozen=True)
class ServiceSpec:
    """What the unit runs. `monitor_args` are `intercore mitigate monitor` options after --plan."""

    name: str
    plan_copy: Path
    root_dir: Path            # the plan's root cgroup in its freezer hierarchy
    monitor_args: tuple[str, ...]
    cpus: tuple[int, ...]     # CPUAffinity
    priority: int             # SCHED_FIFO priority of the monitor, 0 for none
    watchdog_s: int = 10
    python: str = sys.executable

    @property
    def unit_name(self) -> str:
        return f"{self.name}.service"


def check_name(name: str) -> str:
    if not name or not all(c.isalnum() or c in "-_." for c in name) or name.startswith("-"):
        raise InputError(f"{name!r}: a unit name is letters, digits, '-', '_' and '.'",
                         field="--name")
    if len(name) > MAX_NAME:
        # NAME.service and NAME.plan.json are file names, which may have 255 bytes.
        raise InputError(f"{len(name)} characters: a unit name has at most {MAX_NAME}",
                         field="--name")
    return name


def housekeeping_cpus(plan: CgroupPlan, topo: Topology) -> tuple[int, ...]:
    """The online CPUs that no critical (protected) group of the plan is placed on."""
    busy = {c for g in plan.groups if g.monitor == "protect" for c in (g.cpus or ())}
    free = tuple(c for c in topo.online_cpus if c not in busy)
    if not free:
        raise InputError("every online CPU runs a critical group of the plan: give the "
                         "monitor one with --cpu", field="--cpu")
    return free


def freezer_root(plan: CgroupPlan) -> Path:
    applied = plan.applied
    if applied is None:
        raise InputError("the plan has not been applied: run `intercore mitigate apply` first",
                         field="--plan")
    freeze = next((h for h in applied.hierarchies if "freeze" in h.roles), None)
    if freeze is None:
        raise InputError("the applied plan has no freezer hierarchy", field="--plan")
    return Path(freeze.root)


def render(spec: ServiceSpec) -> str:
    """The unit file's text."""
    run = [spec.python, "-m", "intercore"]
    start = shlex.join([*run, "mitigate", "monitor", "--plan", str(spec.plan_copy),
                        *spec.monitor_args])
    thaw = shlex.join([*run, "mitigate", "thaw", str(spec.plan_copy)])
    sched = ["CPUSchedulingPolicy=fifo", f"CPUSchedulingPriority={spec.priority}"] \
        if spec.priority else []
    return "\n".join([
        "# Written by `intercore mitigate service install`; "
        f"`intercore mitigate service uninstall --name {spec.name}` removes it.",
        "[Unit]",
        f"Description=intercore freezer monitor ({spec.plan_copy.name})",
        "After=local-fs.target",
        f"ConditionPathIsDirectory={spec.root_dir}",
        "StartLimitIntervalSec=120",
        "StartLimitBurst=5",
        "",
        "[Service]",
        "Type=notify",
        "NotifyAccess=main",
        f"ExecStart={start}",
        f"ExecStopPost={thaw}",
        "Restart=on-failure",
        "RestartSec=2s",
        f"WatchdogSec={spec.watchdog_s}s",
        "TimeoutStopSec=30s",
        # SIGTERM to the monitor alone (it stops ic-monitor, which thaws), then SIGKILL to
        # whatever is left in the unit.
        "KillMode=mixed",
        "Delegate=yes",
        f"CPUAffinity={' '.join(map(str, spec.cpus))}",
        *sched,
        "LimitMEMLOCK=infinity",
        "OOMScoreAdjust=-900",
        "NoNewPrivileges=yes",
        "",
        "[Install]",
        "WantedBy=multi-user.target",
        "",
    ])


def verify(unit: Path) -> list[str] | None:
    """What `systemd-analyze verify` says about the unit (nothing when it is sound). It
    reports unknown keys and bad values as warnings with exit status 0, so any output
    counts. None when systemd-analyze is missing."""
    tool = shutil.which("systemd-analyze")
    if tool is None:
        return None
    done = subprocess.run([tool, "verify", str(unit)], capture_output=True, text=True,
                          timeout=60, check=False)
    lines = (done.stdout + done.stderr).splitlines()
    return [ln for ln in lines if ln.strip()] or ([] if done.returncode == 0 else
                                                 [f"exit status {done.returncode}"])


def systemd_running() -> bool:
    """Whether this host was booted with systemd (sd_booted's test)."""
    return Path("/run/systemd/system").is_dir()


def systemctl(*args: str) -> None:
    done = subprocess.run(["systemctl", *args], capture_output=True, text=True, timeout=120,
                          check=False)
    if done.returncode != 0:
        raise InputError(f"systemctl {' '.join(args)} failed: {done.stderr.strip()}")


def systemctl_quiet(*args: str) -> None:
    """systemctl while undoing a failed step: its own failure must not hide that step's."""
    try:
        subprocess.run(["systemctl", *args], capture_output=True, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired):
        pass


def install(spec: ServiceSpec, plan_path: Path, unit_dir: Path) -> tuple[Path, bool]:
    """Copy the plan into its private directory, write the unit, verify it; nothing stays
    written if verification fails. Returns the unit file and whether it was verified
    (False: no systemd-analyze here)."""
    unit = unit_dir / spec.unit_name
    if unit.exists():
        raise InputError(f"{unit} exists; `intercore mitigate service uninstall --name "
                         f"{spec.name}` first", field="--name")
    unit_dir.mkdir(exist_ok=True)
    spec.plan_copy.parent.mkdir(mode=0o700, exist_ok=True)
    written: list[Path] = []
    try:
        _write_private(spec.plan_copy, plan_path.read_bytes())
        written.append(spec.plan_copy)
        text = render(spec)
        with tempfile.TemporaryDirectory(prefix="ic-unit-") as scratch:
            candidate = Path(scratch) / spec.unit_name
            candidate.write_text(text)
            problems = verify(candidate)
            if problems is not None and problems:
                raise InputError(f"systemd-analyze verify rejects the unit: "
                                 f"{'; '.join(problems)}")
        outputs.write_text(unit, text)
        written.append(unit)
    except BaseException:
        for path in written:
            path.unlink(missing_ok=True)
        raise
    return unit, problems is not None


def _write_private(path: Path, data: bytes) -> None:
    """Root's file, mode 0600, written whole (O_EXCL: never through a planted link)."""
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


def uninstall(name: str, unit_dir: Path, state_dir: Path) -> list[Path]:
    """Remove the unit and its plan copy; returns what was removed."""
    removed = []
    for path in (unit_dir / f"{name}.service", state_dir / f"{name}.plan.json"):
        if path.exists():
            path.unlink()
            removed.append(path)
    return removed
