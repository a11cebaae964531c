"""`intercore mitigate`: Algorithm 1's cgroup plan, created, inspected and removed.

    plan      task set + interference matrix -> PLAN.json (pure: touches no cgroup)
    apply     create the plan's groups under one root (default `intercore`); PLAN.json then
              records every directory, so teardown/status/the monitor need only that file
    attach    move processes into a group, in every hierarchy
    freeze / thaw   by hand (the monitor does it at run time)
    status    groups, their tasks, frozen or not
    teardown  thaw, move tasks back to the root's parent, remove the groups
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from ..base import yamlfile
from ..base.errors import InputError
from ..host.topology import read_topology, validate_cpu
from ..measure.periodic import taskset as tasksets
from ..measure.periodic.matrix import InterferenceMatrix
from ..compile.weights import Heatmap, load_heatmap
from ..mitigate.plan import algorithm1, region_matrix
from ..mitigate.cgroupfs import DEFAULT_ROOT, Cgroups, GroupStatus, root_parts
from ..mitigate.plan.record import CgroupPlan
from ..model.loader import load as load_model
from ..model.sharing import CpuChannels
from . import paths
from .output import JSON_HELP, console, handle_errors, print_json, warn


ROOT_HELP = ("Name of the root cgroup that holds every group, below each hierarchy's top "
             "(a/b nests it under an existing, delegated cgroup).")


def _load_matrix(path: Path) -> InterferenceMatrix:
    if path.suffix.lower() == ".csv":
        return InterferenceMatrix.load_csv(path)
    return InterferenceMatrix.load_json(path)


def _cpus(cpus) -> str:
    return "all" if cpus is None else ",".join(map(str, cpus))


def render_plan(plan: CgroupPlan) -> None:
    table = Table(title=f"cgroup plan for {plan.taskset.get('name')} (θ = {plan.theta:g}, "
                        f"statistic {plan.matrix.get('statistic')})")
    for col in ("group", "tasks", "monitor", "freezer", "cpus", "weight", "RT",
                "separated from", "freezes while active", "in"):
        table.add_column(col)
    for g in plan.groups:
        table.add_row(g.name, ", ".join(g.tasks), g.monitor, "yes" if g.freezer else "no",
                      _cpus(g.cpus), str(g.weight), "yes" if g.realtime else "no",
                      ", ".join(g.separated_from) or "-", ", ".join(g.freeze_while_active) or "-",
                      ("regions " + ", ".join(g.windows)) if g.windows else
                      "whole jobs" if g.freeze_while_active else "-")
    console.print(table)
    if plan.pairs:
        pairs = Table(title="high-contention pairs (I > θ, or a critical task's deadline "
                            "broken): the evidence for each separation")
        for col in ("a", "b", "I", "a beside b", "b beside a", "a misses", "b misses", "why"):
            pairs.add_column(col, justify="right" if col in ("I", "a beside b", "b beside a")
                             else "left")
        for p in plan.pairs:
            pairs.add_row(p.a, p.b, algorithm1.decisive(p.interference, plan.theta),
                          _directed(p.a_beside_b),
                          _directed(p.b_beside_a), str(p.a_misses or "-"),
                          str(p.b_misses or "-"), p.why(plan.theta))
        console.print(pairs)
    else:
        console.print(f"no pair exceeds θ = {plan.theta:g} or breaks a critical task's "
                      "deadline: every task stays in the root group")
    for f in plan.free:
        console.print(f"{f.a} and {f.b} share no channel in the platform model, checked by a "
                      f"measurement ({f.check!r}, n={f.n}): left together")
    if plan.channels:
        channels = Table(title="channels the platform model found, and what covers each")
        for col in ("channel", "pairs", "mitigation", "why"):
            channels.add_column(col)
        for c in plan.channels:
            channels.add_row(c.channel, ", ".join(c.pairs), c.mitigation, c.reason)
        console.print(channels)
    for w in plan.warnings:
        warn(w.message, label=f"warning ({w.code})")


def _directed(value: float | None) -> str:
    return "progress unknown" if value is None else f"{value:.3f}"


def render_status(statuses: tuple[GroupStatus, ...], plan: CgroupPlan | None) -> None:
    table = Table(title="cgroups")
    for col in ("group", "monitor", "pids", "frozen", "cpus", "cpu.weight / shares",
                "present in"):
        table.add_column(col)
    for s in statuses:
        monitor = "-"
        if plan is not None and s.name in {g.name for g in plan.groups}:
            monitor = plan.group(s.name).monitor
        frozen = "-" if s.frozen is None else "yes" if s.frozen else \
            "freezing" if s.freeze_requested else "no"
        pids = " ".join(map(str, s.pids)) or "-"
        if not s.consistent:
            pids += " [red](hierarchies disagree)[/]"
        table.add_row(s.name, monitor, pids, frozen, s.cpus or "-", s.weight or "-",
                      ", ".join(k for k, v in s.present.items() if v) or "[red]missing[/]")
    console.print(table)


def _applied_plan(path: Path) -> CgroupPlan:
    plan = CgroupPlan.load(path)
    if plan.applied is None:
        raise InputError("this plan has not been applied (run `intercore mitigate apply`)",
                         source=str(path))
    return plan


def _cpus_exist(plan: CgroupPlan, path: Path) -> None:
    """A plan names CPUs of the host it was made on; apply writes them into cpuset.cpus."""
    topo = read_topology()
    for i, group in enumerate(plan.groups):
        for cpu in group.cpus or ():
            try:
                validate_cpu(topo, cpu, "cpus")
            except InputError as exc:
                raise yamlfile.read_json(path).error(exc.message, ("groups", i, "cpus")) from None


def _heatmaps(items: list[str], taskset: tasksets.TaskSet) -> dict[str, tuple[str, Heatmap]]:
    """--heatmap TASK=FILE, each a critical task of the task set, once."""
    out: dict[str, tuple[str, Heatmap]] = {}
    for item in items:
        task, sep, file = item.partition("=")
        if not sep or not task or not file:
            raise InputError(f"{item!r} is not TASK=HEATMAP.json", field="--heatmap")
        if task not in taskset.names:
            raise InputError(f"{task!r} is not a task of {taskset.source}", field="--heatmap")
        if taskset.task(task).role != "critical":
            raise InputError(f"{task} is best-effort: regions are protected for critical "
                             "tasks only", field="--heatmap")
        if task in out:
            raise InputError(f"{task} is given twice", field="--heatmap")
        out[task] = (file, load_heatmap(file))
    return out


@handle_errors
def plan_cmd(
    taskset_path: Path = typer.Argument(..., metavar="TASKSET.yaml",
                                        help="Task set (see examples/tasksets/)."),
    matrix_path: Path = typer.Option(..., "--matrix", "-m", metavar="MATRIX.json",
                                     help="Interference matrix (.json, or .csv) of the same "
                                          "tasks, from `intercore measure matrix`."),
    theta: float = typer.Option(algorithm1.DEFAULT_THETA, "--theta",
                                help="Threshold θ > 1: a pair with I > θ is separated."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", metavar="PLAN.json",
                                          help="Save the plan here."),
    accept_provisional: bool = typer.Option(
        False, "--accept-provisional",
        help="Plan from a provisional matrix (no block ran while the CPUs shared their "
             "cache) instead of refusing; the plan records it and warns."),
    platform_path: Optional[Path] = typer.Option(
        None, "--platform", metavar="MODEL.yaml",
        help="Platform model of this host (`intercore model detect`): a pair on CPUs that "
             "share no interference channel, checked by its measurement, is not separated."),
    heatmap: list[str] = typer.Option(
        [], "--heatmap", metavar="TASK=HEATMAP.json",
        help="A critical task's heatmap (`intercore learn heatmap`): its regions' predicted "
             "slowdowns, by their safe bound, join the matrix; a task above θ only in some "
             "regions is protected in those (freeze windows). Repeatable."),
    matrix_output: Optional[Path] = typer.Option(
        None, "--matrix-output", metavar="REGIONS.json",
        help="Save the region-level matrix the plan was made from (with --platform or "
             "--heatmap); `mitigate plan -m` reads it back."),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Run Algorithm 1: which tasks get a sub-cgroup of their own, which stay in the root
    group, which groups the monitor may freeze and which it protects. Creates no cgroup.

    Every task in a pair with I > θ (the worse of the two directions) gets its own group with
    the freezer enabled; the others share the root group. cpusets come from the tasks' CPUs,
    weights from the task set. Two critical tasks that interfere are flagged: freezing cannot
    protect one from the other. A provisional matrix (measured while the CPUs never shared
    their cache, on a host where they can) is refused unless --accept-provisional: its ratios
    may understate the interference the plan is meant to separate.

    Examples:

        intercore mitigate plan examples/tasksets/paper-000.yaml -m matrix.json -o plan.json

        intercore mitigate plan tasks.yaml -m matrix.csv --theta 1.2 --json

    With --platform, a pair on CPUs that the platform model says share no interference
    channel is left together when its own measurement does not contradict the model (Δ below
    model validation's 1.05); with --heatmap, a critical task's regions join the matrix, each
    at its predicted safe bound (never below a measured value), and a task above θ only in
    named regions is protected in those regions rather than for whole jobs. The plan names,
    per pair, the cell that decided it (measured, predicted or model-free, and its region),
    and per channel the model found, what covers it.

        intercore mitigate plan tasks.yaml -m matrix.json --platform host.yaml \\
            --heatmap ctl=ctl/heatmap.json --matrix-output regions.json -o plan.json

    --json prints the plan: {"groups": [{"name", "tasks", "monitor", "freezer", "cpus",
    "weight", "realtime", "separated_from", "freeze_while_active"}], "pairs", "warnings", ...}.
    """
    paths.output_file(output, "--output")
    paths.output_file(matrix_output, "--matrix-output")
    algorithm1.check_theta(theta)
    taskset = tasksets.load(taskset_path)
    matrix = _load_matrix(matrix_path)
    if matrix.provisional and not accept_provisional:
        raise InputError("the matrix is provisional (" + "; ".join(matrix.notes) + "): its "
                         "ratios may understate the interference the plan separates; measure "
                         "again, or plan from it anyway with --accept-provisional",
                         field="--matrix")
    heatmaps = _heatmaps(heatmap, taskset)
    channels = None if platform_path is None else CpuChannels(load_model(platform_path))
    if matrix_output is not None and channels is None and not heatmaps:
        raise InputError("there is no region-level matrix to save without --platform or "
                         "--heatmap", field="--matrix-output")
    if matrix_output is not None and matrix_output.suffix.lower() == ".csv":
        raise InputError("the region-level matrix is written as JSON: a CSV has no room for "
                         "its cells' provenance", field="--matrix-output")
    if channels is not None or heatmaps:
        if matrix.regions:
            raise InputError("is already a region-level matrix: plan from it as it is, or "
                             "from the whole-job matrix it was made from",
                             field="--matrix")
        algorithm1.check_same_tasks(taskset, matrix)
        matrix = region_matrix.build(taskset, matrix, channels=channels, heatmaps=heatmaps,
                                     job_source=str(matrix_path))
    plan = algorithm1.plan(taskset, matrix, theta, matrix_source=str(matrix_path))
    if matrix_output is not None:
        matrix.save_json(matrix_output)
    if output is not None:
        plan.save(output)
    if json_out:
        print_json(plan.to_dict())
        return
    render_plan(plan)
    if output is not None:
        console.print(f"saved to {output}; create it with `intercore mitigate apply {output}`")
    else:
        console.print("not saved: add -o PLAN.json")


@handle_errors
def apply_cmd(
    plan_path: Path = typer.Argument(..., metavar="PLAN.json"),
    root: str = typer.Option(DEFAULT_ROOT, "--root", help=ROOT_HELP),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Create the plan's groups under one root cgroup and record them in PLAN.json.

    On a hybrid host (v1 controllers, v2 without them) each group exists in the v2 hierarchy
    (freezing, CPU usage) and in the v1 cpuset and cpu hierarchies; on pure v2, cpuset and cpu
    are enabled in the root's cgroup.subtree_control (its parent must delegate them). Nothing
    outside the root is written. All or nothing: on an error, what was created is removed.
    Tasks are moved in later (`intercore mitigate attach`, or the experiment runner).

    Needs root (or write access to a delegated cgroup) and a cgroup freezer: cgroup v2
    (cgroup.freeze), or the v1 freezer hierarchy.

    Example:  sudo intercore mitigate apply plan.json --root intercore

    --json prints the applied record: {"root_name", "hierarchies", "groups": [{"name",
    "paths", "freeze_file", "usage_file", ...}]}.
    """
    root_parts(root)
    plan = CgroupPlan.load(plan_path)
    paths.output_file(plan_path, "PLAN.json")  # it records what apply creates
    _cpus_exist(plan, plan_path)
    applied = Cgroups().apply(plan, root)
    try:
        applied.save(plan_path)
    except OSError as exc:
        # Without the record nobody could tear the groups down by plan: undo instead.
        Cgroups().teardown(applied)
        raise InputError(f"cannot save the applied plan ({exc.strerror}); removed the groups "
                         "again", source=str(plan_path)) from None
    if json_out:
        print_json(applied.applied.model_dump(mode="json"))
        return
    for h in applied.applied.hierarchies:
        console.print(f"{h.root}  (cgroup v{h.version}: {', '.join(h.roles)})")
    console.print(f"{len(applied.groups)} groups created; recorded in {plan_path}")


@handle_errors
def attach_cmd(
    plan_path: Path = typer.Argument(..., metavar="PLAN.json"),
    group: str = typer.Argument(..., metavar="GROUP", help="A group, or a task of the plan."),
    pids: list[int] = typer.Argument(..., metavar="PID..."),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Move processes (with all their threads) into GROUP in every hierarchy of the plan.

    Example:  sudo intercore mitigate attach plan.json noise 4242
    """
    plan = _applied_plan(plan_path)
    cg = Cgroups()
    for pid in pids:
        cg.attach(plan, group, pid)
    if json_out:
        print_json({"group": group, "pids": pids})
    else:
        console.print(f"moved {' '.join(map(str, pids))} into {group}")


def _set_frozen(plan_path: Path, group: str, frozen: bool, json_out: bool) -> None:
    plan = _applied_plan(plan_path)
    cg = Cgroups()
    if frozen:
        cg.freeze(plan, group)
    else:
        cg.thaw(plan, group)
    if json_out:
        print_json({"group": group, "freeze_requested": frozen})
    else:
        console.print(f"{group}: {'freeze' if frozen else 'thaw'} requested")


@handle_errors
def freeze_cmd(plan_path: Path = typer.Argument(..., metavar="PLAN.json"),
               group: str = typer.Argument(..., metavar="GROUP"),
               json_out: bool = typer.Option(False, "--json", help=JSON_HELP)) -> None:
    """Freeze GROUP by hand (only freezer-enabled groups). Its tasks stop within microseconds;
    `status` shows `frozen` once every task has stopped, which can take longer.

    Example:  sudo intercore mitigate freeze plan.json noise
    """
    _set_frozen(plan_path, group, True, json_out)


@handle_errors
def thaw_cmd(plan_path: Path = typer.Argument(..., metavar="PLAN.json"),
             group: Optional[str] = typer.Argument(None, metavar="[GROUP]",
                                                   help="One group; every freezer-enabled "
                                                        "group of the plan when left out."),
             json_out: bool = typer.Option(False, "--json", help=JSON_HELP)) -> None:
    """Thaw GROUP, or every group the plan may freeze: the way out when a monitor died
    holding them frozen (a frozen group stays frozen when whoever froze it dies). The
    monitor's systemd unit runs it after every stop (`intercore mitigate service install`).

    Examples:

        sudo intercore mitigate thaw plan.json noise

        sudo intercore mitigate thaw plan.json
    """
    if group is not None:
        _set_frozen(plan_path, group, False, json_out)
        return
    plan = _applied_plan(plan_path)
    cg = Cgroups()
    groups = [g.name for g in plan.groups if g.freezer]
    for name in groups:
        cg.thaw(plan, name)
    if json_out:
        print_json({"thawed": groups})
    else:
        console.print(f"thaw requested: {', '.join(groups) or 'no freezer-enabled group'}")


@handle_errors
def status_cmd(
    plan_path: Optional[Path] = typer.Argument(None, metavar="[PLAN.json]"),
    root: str = typer.Option(DEFAULT_ROOT, "--root",
                             help="Without a plan: the root cgroup to look under."),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Groups, their processes and whether they are frozen: from PLAN.json, or found on disk
    under --root when no plan is given (after a crash, say).

    Examples:

        intercore mitigate status plan.json

        intercore mitigate status --root intercore --json

    --json prints {"root", "groups": [{"name", "present", "pids", "consistent",
    "freeze_requested", "frozen", "cpus", "weight"}]}.
    """
    cg = Cgroups()
    plan = None
    if plan_path is not None:
        plan = CgroupPlan.load(plan_path)
        applied = plan.applied
        root = applied.root_name if applied else root
    else:
        applied = cg.discover(root)
    statuses = cg.status(applied) if applied is not None else ()
    if json_out:
        print_json({"root": root, "applied": applied is not None,
                    "groups": [s.to_dict() for s in statuses]})
        return
    if applied is None:
        what = "this plan has not been applied" if plan is not None else \
            f"no cgroup named {root} in any hierarchy"
        console.print(what)
        return
    render_status(statuses, plan)


@handle_errors
def teardown_cmd(
    plan_path: Optional[Path] = typer.Argument(None, metavar="[PLAN.json]"),
    root: Optional[str] = typer.Option(None, "--root",
                                       help="Without a plan: remove this root cgroup and the "
                                            "groups found under it."),
    stale: bool = typer.Option(False, "--stale",
                               help="Remove every root whose owner process is gone (an "
                                    "experiment killed before it could clean up)."),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Thaw every group, move remaining processes back to the root's parent, remove the groups
    children first, and mark PLAN.json as no longer applied. Safe to run again.

    Only cgroups that intercore created are touched: every directory carries the mark apply
    wrote (trusted.intercore.token), the token PLAN.json records; a plan edited to point
    elsewhere, even at another root intercore made, is refused (exit 2) before anything is
    written. A plan applied by an older intercore records no token and is refused likewise:
    remove its groups with --root NAME, then teardown PLAN.json clears its record.

    Examples:

        sudo intercore mitigate teardown plan.json

        sudo intercore mitigate teardown --root intercore      # the plan file was lost

        sudo intercore mitigate teardown --stale               # roots of dead experiments
    """
    cg = Cgroups()
    if sum((plan_path is not None, root is not None, stale)) != 1:
        raise InputError("give one of PLAN.json, --root NAME (what is found on disk) or "
                         "--stale", field="PLAN")
    if plan_path is not None:
        plan = _applied_plan(plan_path)
        removed = [plan.applied.root_name]
        cg.teardown(plan).save(plan_path)
    elif root is not None:
        found = cg.discover(root)
        if found is None:
            raise InputError(f"no cgroup named {root} in any hierarchy", field="--root")
        cg.remove(found)
        removed = [root]
    else:
        removed = cg.stale_roots()
        for name in removed:
            found = cg.discover(name)
            if found is not None:
                cg.remove(found)
    if json_out:
        print_json({"removed": removed if stale else removed[0]})
    elif not removed:
        console.print("no stale root: every root intercore made has a live owner")
    else:
        console.print(f"removed {', '.join(removed)}")


# Algorithm 1's plan and its cgroups, by the names `intercore mitigate` gives them (main.py);
# `intercore mitigate` answered to the same names before the stages were grouped (legacy.py).
COMMANDS = {"plan": plan_cmd, "apply": apply_cmd, "attach": attach_cmd, "freeze": freeze_cmd,
            "thaw": thaw_cmd, "status": status_cmd, "teardown": teardown_cmd}
