"""`intercore mitigate service install | uninstall`: the freezer monitor as a systemd unit."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ..base.errors import HostUnsupported, InputError
from ..host.topology import read_topology
from ..base.units import duration
from ..mitigate.freezer import service
from ..mitigate.cgroupfs import recorded_token
from ..mitigate.freezer.guard import monitor_spec
from ..mitigate.plan.record import CgroupPlan
from . import paths
from .output import JSON_HELP, console, handle_errors, print_json, warn


@handle_errors
def install_cmd(
    plan_path: Path = typer.Option(..., "--plan", help="A plan after `intercore mitigate apply`."),
    name: str = typer.Option(service.DEFAULT_NAME, "--name", help="The unit's name."),
    policy: str = typer.Option("poll", "--policy",
                               help="poll or event (see `intercore mitigate monitor`)."),
    interval: str = typer.Option("50ms", "--interval", help="Poll interval (1ms .. 10s)."),
    threshold: int = typer.Option(30, "--threshold", min=1, max=100,
                                  help="Poll: % of one CPU."),
    notify: Optional[Path] = typer.Option(None, "--notify",
                                          help="The critical job runner's notification block."),
    max_freeze: Optional[str] = typer.Option(None, "--max-freeze",
                                             help="Longest freeze per period: 50% or 20ms."),
    cpu: Optional[int] = typer.Option(None, "--cpu", help="The monitor's CPU (default: the first "
                                                         "CPU no critical group runs on)."),
    priority: int = typer.Option(50, "--rt-priority", min=0, max=99,
                                 help="SCHED_FIFO priority (0: none)."),
    watchdog: int = typer.Option(10, "--watchdog", min=2, max=3600,
                                 help="systemd restarts a monitor silent this many seconds."),
    now: bool = typer.Option(False, "--now", help="Enable and start it (systemd hosts)."),
    unit_dir: Path = typer.Option(service.UNIT_DIR, "--unit-dir", help="Where the unit goes."),
    state_dir: Path = typer.Option(service.STATE_DIR, "--state-dir",
                                   help="Root's private copy of the plan goes here."),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Write NAME.service: `intercore mitigate monitor` on a private copy of PLAN, restarted when it
    fails or stops pinging systemd's watchdog, every group thawed after any stop
    (ExecStopPost runs `intercore mitigate thaw PLAN`), on the housekeeping CPUs at
    SCHED_FIFO. The unit is checked with `systemd-analyze verify` before it is written.

    Example:

        sudo intercore mitigate apply plan.json
        sudo intercore mitigate service install --plan plan.json --now

    --json prints {"unit", "plan", "verified", "started", "exec_start", "exec_stop_post"}.
    """
    service.check_name(name)
    paths.output_dir(unit_dir, "--unit-dir")
    paths.output_dir(state_dir, "--state-dir")
    if policy not in ("poll", "event"):
        raise InputError("choose poll or event", field="--policy")
    plan = CgroupPlan.load(plan_path)
    root = service.freezer_root(plan)
    assert plan.applied is not None  # freezer_root refused an unapplied plan
    recorded_token(plan.applied)  # or the unit's monitor and its thaw refuse it at every start
    topo = read_topology()
    cpus = service.housekeeping_cpus(plan, topo) if cpu is None else (cpu,)
    if cpu is not None and cpu not in topo.online_cpus:
        raise InputError(f"CPU {cpu} is not online", field="--cpu")
    interval_ns = duration(interval, field="--interval")
    # The monitor's own checks, now rather than in a restart loop under systemd.
    monitor_spec(plan, policy=policy, interval_ns=interval_ns, threshold_pct=threshold,
                 notify=None if notify is None else str(notify), max_freeze=max_freeze,
                 cpu=cpus[0], priority=priority)
    args = ["--policy", policy, "--interval", interval, "--threshold", str(threshold),
            "--cpu", str(cpus[0]), "--rt-priority", str(priority)]
    if notify is not None:
        args += ["--notify", str(notify.absolute())]
    if max_freeze is not None:
        args += ["--max-freeze", max_freeze]
    spec = service.ServiceSpec(name, state_dir.absolute() / f"{name}.plan.json", root,
                               tuple(args), cpus, priority, watchdog)
    if now and not service.systemd_running():
        raise HostUnsupported("--now needs systemd, and this host was not booted with it; "
                              "nothing was written (without --now the unit is written and "
                              "verified, to start on a systemd host)")
    unit, verified = service.install(spec, plan_path, unit_dir)
    started = False
    if now:
        try:
            service.systemctl("daemon-reload")
            service.systemctl("enable", "--now", spec.unit_name)
        except BaseException:
            # A unit that did not start is not left installed (and enabled at the next boot);
            # one that half-started is stopped, which runs its thaw.
            service.systemctl_quiet("disable", "--now", spec.unit_name)
            service.uninstall(name, unit_dir, state_dir)
            service.systemctl_quiet("daemon-reload")
            raise
        started = True
    text = service.render(spec)
    lines = dict(ln.split("=", 1) for ln in text.splitlines() if ln.startswith("Exec"))
    if json_out:
        print_json({"unit": str(unit), "plan": str(spec.plan_copy), "verified": verified,
                    "started": started, "exec_start": lines["ExecStart"],
                    "exec_stop_post": lines["ExecStopPost"]})
        return
    console.print(f"wrote {unit} (plan copy {spec.plan_copy})", highlight=False)
    if not verified:
        warn("systemd-analyze is not installed: the unit was not verified")
    if started:
        console.print(f"started: systemctl status {spec.unit_name}", highlight=False)
    elif service.systemd_running():
        console.print(f"start it: systemctl daemon-reload && systemctl enable --now "
                      f"{spec.unit_name}", highlight=False)
    else:
        console.print("this host was not booted with systemd: the unit is written and "
                      "verified, and runs on a host that is", highlight=False)


@handle_errors
def uninstall_cmd(
    name: str = typer.Option(service.DEFAULT_NAME, "--name", help="The unit's name."),
    unit_dir: Path = typer.Option(service.UNIT_DIR, "--unit-dir"),
    state_dir: Path = typer.Option(service.STATE_DIR, "--state-dir"),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Stop and disable NAME.service where systemd runs (its ExecStopPost thaws every
    group), then remove the unit and the plan copy."""
    service.check_name(name)
    if not (unit_dir / f"{name}.service").exists():
        raise InputError(f"no {name}.service in {unit_dir}", field="--name")
    stopped = service.systemd_running()
    if stopped:
        service.systemctl("disable", "--now", f"{name}.service")
    removed = service.uninstall(name, unit_dir, state_dir)
    if stopped:
        service.systemctl("daemon-reload")
    if json_out:
        print_json({"removed": [str(p) for p in removed], "stopped": stopped})
        return
    console.print(f"removed {', '.join(map(str, removed))}", highlight=False)
