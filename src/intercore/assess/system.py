"""A system description: what `intercore assess` certifies, read and checked in full before
any work starts (a refusal after minutes of measurement would waste them and leave files).

    name: control-demo
    platform: detect                # or a platform model file, relative to this file
    taskset: control.taskset.yaml   # relative to this file
    theta: 1.5
    mitigations: [freeze]
    budget: 10m
    sizes: {matrix_rounds: 2, matrix_block: 1s, jobs: 50, validation_runs: 5, search_pairs: 3}
    heatmaps: {ctl: ctl/heatmap.json}   # optional: `intercore learn heatmap`, per critical task

Every file it names is hashed here, once: the hashes are the inputs of the steps (a re-run
skips a step whose inputs are unchanged) and the provenance every figure of the dossier names.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Mapping

from pydantic import BaseModel, ConfigDict, Field

from ..base import yamlfile
from ..base.errors import InputError
from ..base.artefact import file_sha256
from ..host.topology import Topology
from ..measure.periodic.matrix_runner import WARMUP_JOBS, schedule
from ..measure.model_validation import MIN_RUNS
from ..measure.program import TaskProgram
from ..measure.periodic.taskset import Duration, Task, TaskSet, resolve
from ..base.units import duration_text
from ..compile.weights import Heatmap, load_heatmap
from ..mitigate.plan.algorithm1 import DEFAULT_THETA, check_theta
from ..mitigate.experiment.protection import MAX_JOBS
from ..model.loader import load as load_model
from ..model.platform import Platform
from . import search
from .regions import JOBS_PER_RUN, critical_programs

DETECT = "detect"
# What the plan can name as a channel's mitigation. assess applies freeze (Algorithm 1's
# groups under the freezer monitor); the others are accepted so a system can say it allows
# them, and the dossier says they were not applied rather than pretending they were.
Mitigation = Literal["freeze", "regulate", "gang", "cat", "mba"]
APPLIED = frozenset({"freeze"})


class Sizes(BaseModel):
    """How much is measured. The defaults are a full run's; `--quick` caps each at QUICK."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    matrix_rounds: int = Field(3, ge=1, le=1000)
    matrix_block: Duration = Field("2s", validate_default=True)
    jobs: int = Field(100, ge=2, le=MAX_JOBS)
    validation_runs: int = Field(10, ge=MIN_RUNS, le=1000)
    region_runs: int = Field(10, ge=MIN_RUNS, le=1000)  # pairs per critical program's regions
    # The worst-aggressor search's pairs per candidate in its first round (doubled each round)
    search_pairs: int = Field(3, ge=2, le=1000)

    def capped(self, other: "Sizes") -> "Sizes":
        """Each size the smaller of the two (both already validated)."""
        return self.model_copy(update={name: min(getattr(self, name), getattr(other, name))
                                       for name in type(self).model_fields})


QUICK = Sizes(matrix_rounds=1, matrix_block="500ms", jobs=20, validation_runs=MIN_RUNS,
              region_runs=MIN_RUNS, search_pairs=2)


class SystemFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    description: str = ""
    platform: str
    taskset: str
    theta: float = DEFAULT_THETA
    mitigations: list[Mitigation] = Field(default_factory=lambda: ["freeze"])
    budget: Duration = 1_800_000_000_000
    sizes: Sizes = Field(default_factory=Sizes)
    heatmaps: dict[str, str] = Field(default_factory=dict)


@dataclass(frozen=True)
class System:
    name: str
    source: Path
    platform: Platform | None  # None: detect this host's
    taskset: TaskSet
    theta: float
    mitigations: tuple[str, ...]
    budget_ns: int
    sizes: Sizes
    files: dict[str, str]      # path -> sha256 of every input file
    task_files: dict[str, str]  # the task set's and its programs': what the runs depend on
    quick: bool = False        # sizes capped at QUICK, validation on its quick subset
    # critical task -> (its heatmap's file, the heatmap): its regions join the region-level
    # matrix, so the plan can freeze for its sensitive regions only (learn -> plan).
    heatmaps: Mapping[str, tuple[str, Heatmap]] = field(default_factory=dict)
    # The worst-aggressor search's candidates per critical program on this host
    # (assess/search.py: the whole space, or its presets with --quick).
    search_spaces: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def critical(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.taskset.tasks if t.role == "critical")

    @property
    def critical_programs(self) -> tuple[Task, ...]:
        return critical_programs(self.taskset)

    def estimate_s(self) -> dict[str, float]:
        """Seconds each measuring step takes at least (what ic-periodic and the harness are
        asked to run; start-up and the canary come on top)."""
        blocks = len(schedule(self.taskset.names, self.sizes.matrix_rounds, 1))
        longest = max(t.period_ns for t in self.taskset.tasks) / 1e9
        protection = sum(4 * self.sizes.jobs * self.taskset.task(c).period_ns / 1e9
                         for c in self.critical)
        # Each critical program's regions, if measured: two runs of a few jobs per pair.
        regions = sum(2 * self.sizes.region_runs * JOBS_PER_RUN * t.period_ns / 1e9
                      for t in self.critical_programs if t.period_ns is not None)
        searches = sum(search.seconds_at_least(len(self.search_spaces.get(t.name, ())),
                                               self.sizes.search_pairs, search.run_seconds(t))
                       for t in self.critical_programs)
        # A block runs its length, at least one job of each task, and a warm-up job first.
        return {"matrix": blocks * (max(self.sizes.matrix_block / 1e9, longest)
                                    + WARMUP_JOBS * longest),
                "search": searches, "regions": regions, "protection": protection}


def _file(doc: yamlfile.Document, base: Path, field: str) -> Path:
    path = base / doc.data[field]
    if not path.is_file():
        raise doc.error(f"{path} is not a file", (field,))
    return path


def load(path: Path, topo: Topology, *, quick: bool = False) -> System:
    """The system at `path`, its task set resolved against `topo` and its model loaded; every
    error an InputError naming the file, line and field."""
    path = path.absolute()  # the dossier names its inputs wherever it is read from
    doc = yamlfile.read(path)
    spec = yamlfile.validate(doc, SystemFile)
    try:
        check_theta(spec.theta)
    except InputError as exc:
        raise doc.error(exc.message, ("theta",)) from None
    base = path.parent
    files = {str(path): file_sha256(path)}
    taskset_path = _file(doc, base, "taskset")
    taskset_doc = yamlfile.read(taskset_path)
    taskset = resolve(taskset_doc, topo)
    files[str(taskset_path)] = file_sha256(taskset_path)
    platform = None
    if spec.platform != DETECT:
        model_path = _file(doc, base, "platform")
        platform = load_model(model_path)
        files[str(model_path)] = platform.hash
    task_files = {str(taskset_path): files[str(taskset_path)]}
    for task in taskset.tasks:
        if isinstance(task.workload, TaskProgram):
            task_files[task.workload.path] = file_sha256(task.workload.path)
    files |= task_files
    _check_tasks(doc, taskset_doc, taskset)
    heatmaps = _heatmaps(doc, base, spec.heatmaps, taskset)
    files |= {file: file_sha256(file) for file, _ in heatmaps.values()}
    sizes = spec.sizes.capped(QUICK) if quick else spec.sizes
    system = System(spec.name, path, platform, taskset, spec.theta, tuple(spec.mitigations),
                    spec.budget, sizes, files, task_files, quick, heatmaps,
                    search.spaces(taskset, topo, quick=quick))
    needed = system.estimate_s()
    if sum(needed.values()) > spec.budget / 1e9:
        parts = ", ".join(f"{k} {math.ceil(v)} s" for k, v in needed.items())
        raise doc.error(f"the measurements need at least {math.ceil(sum(needed.values()))} s "
                        f"({parts}), more than the budget of {duration_text(spec.budget)}: "
                        "nothing was cut; raise the budget or lower `sizes`", ("budget",))
    return system


def _heatmaps(doc: yamlfile.Document, base: Path, given: dict[str, str],
              taskset: TaskSet) -> dict[str, tuple[str, Heatmap]]:
    """Each `heatmaps:` entry a critical task of the task set and a readable heatmap."""
    out = {}
    for task, file in given.items():
        where = ("heatmaps", task)
        if task not in taskset.names:
            raise doc.error(f"{task!r} is not a task of {taskset.source}", where)
        if taskset.task(task).role != "critical":
            raise doc.error(f"{task} is best-effort: heatmaps are for critical tasks, whose "
                            "regions the plan may protect alone", where)
        path = base / file
        if not path.is_file():
            raise doc.error(f"{path} is not a file", where)
        out[task] = (str(path), load_heatmap(path))
    return out


def _check_tasks(doc: yamlfile.Document, taskset_doc: yamlfile.Document,
                 taskset: TaskSet) -> None:
    """What the protection step needs of the task set, refused before the first run: a
    critical task pinned to a CPU (the monitor runs on another) beside a best-effort one."""
    if {t.role for t in taskset.tasks} != {"critical", "best-effort"}:
        raise doc.error(f"{taskset.source} needs at least one critical and one best-effort "
                        "task (assess protects the one from the other)", ("taskset",))
    for i, task in enumerate(taskset.tasks):
        if task.role == "critical" and task.cpu is None:
            raise taskset_doc.error("a critical task needs a cpu for `intercore assess`: the "
                                    "freezer monitor runs on another one", ("tasks", i, "cpu"))
