"""The region-level interference matrix: the whole-job matrix of `intercore matrix` joined
with what is known per code region of each critical task, and with the platform model.

Per (critical task, co-runner), in this order:

1. The platform model finds no channel between their CPUs (model/sharing.py): the pair is
   declared *model-free*, but only with the whole-job measurement of the pair as the check of
   that claim; a check whose Δ reaches validation's threshold contradicts the model, and the
   pair keeps its measured cells with a note saying so.
2. Otherwise the whole-job measurement (region None), every region measured beside that
   co-runner (paired comparisons, the worst regime's Δ and CI), and, for each region of the
   task's heatmap that no measurement covers, the heatmap's prediction with its calibrated
   safe bound, raised to the heatmap's own measurement of the region where that is higher:
   a prediction is never allowed to say less than a measurement did.

The result is an InterferenceMatrix whose `directed` value of such a pair is the worst of its
cells (measure/periodic/matrix.py), so Algorithm 1 and every other reader of the whole-job
scalar take it unchanged. Best-effort rows keep their whole-job values: no plan protects their
regions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

from ...compile.weights import Heatmap
from ...measure.periodic.matrix import Check, InterferenceMatrix, RegionCell
from ...measure.model_validation import THRESHOLD
from ...measure.harness.comparison import Comparison
from ...measure.harness.stats import PairedResult
from ...measure.periodic.taskset import TaskSet
from ...model.sharing import CpuChannels


@dataclass(frozen=True)
class RegionMeasurement:
    """A paired comparison of one region of `task` under `beside` (its aggressor set)."""

    task: str
    beside: str
    comparison: Comparison
    source: str  # the store invocation or file it was read from


def _ci(result: PairedResult) -> tuple[float, float] | None:
    lo, hi = result.delta_ci
    return None if math.isnan(lo) or math.isnan(hi) else (lo, hi)


def measured_cell(m: RegionMeasurement, channels: tuple[str, ...] | None) -> RegionCell:
    """The comparison's worst regime (the regime that hurts is the one a budget must cover);
    its headline estimate when it was not stratified."""
    c = m.comparison
    strata = [(r, res) for r, res in c.by_regime.items() if res.n >= 1]
    regime, result = max(strata, key=lambda s: s[1].delta) if strata else (c.regime, c.result)
    ci = _ci(result)
    return RegionCell(task=m.task, beside=m.beside, region=c.region_name,
                      provenance="measured", value=result.delta,
                      bound=None if ci is None else max(ci[1], result.delta), n=result.n,
                      ci=ci, regime=regime, source=m.source, channels=channels)


def job_cell(job: InterferenceMatrix, task: str, beside: str,
             channels: tuple[str, ...] | None, source: str) -> RegionCell | None:
    """The whole-job measurement of the pair, or None where it was not measured."""
    i, j = job.index(task), job.index(beside)
    value = job.directed[i][j]
    if value is None:
        return None
    return RegionCell(task=task, beside=beside, provenance="measured", value=value,
                      n=job.n[i][j], regime=None if job.regime_of is None else job.regime_of[i][j],
                      misses=None if job.misses is None else job.misses[i][j], source=source,
                      channels=channels)


def contradicts_free(value: float, ci: tuple[float, float] | None = None) -> bool:
    """A measured Δ (by its CI's lower end where it has one) that model validation would call
    interference: it contradicts a claim that the pair is free."""
    return (ci[0] if ci is not None else value) >= THRESHOLD


def predicted_cells(task: str, beside: str, heatmap: Heatmap, source: str,
                    covered: set[str], channels: tuple[str, ...] | None) -> list[RegionCell]:
    out = []
    for r in heatmap.regions:
        if r.region in covered:
            continue
        floor = r.measured.delta if r.measured is not None else 0.0
        safe = r.interval[1] if r.interval is not None else r.delta
        out.append(RegionCell(task=task, beside=beside, region=r.region,
                              provenance="predicted", value=max(r.delta, floor),
                              bound=max(safe, r.delta, floor), source=source,
                              channels=channels))
    return out


def _pair_cells(job: InterferenceMatrix, task: str, beside: str, sharing,
                measured: Sequence[RegionMeasurement], heatmap: tuple[str, Heatmap] | None,
                job_source: str, notes: list[str]) -> list[RegionCell]:
    channels = None if sharing is None or sharing.unknown else sharing.channels
    whole = job_cell(job, task, beside, channels, job_source)
    if sharing is not None and sharing.free:
        if whole is None:
            notes.append(f"{task} beside {beside}: the model finds no shared channel, but no "
                         "measurement of the pair checks it, so it is not declared free")
        elif contradicts_free(whole.value, whole.ci):
            notes.append(f"{task} beside {beside}: the model finds no shared channel, but the "
                         f"pair measured {whole.value!r} (n={whole.n}), at or above "
                         f"{THRESHOLD:g}: the model is contradicted and the measurement kept")
            return [whole]
        else:
            check = Check(value=whole.value, n=whole.n, ci=whole.ci, regime=whole.regime,
                          source=whole.source)
            return [whole.model_copy(update={"provenance": "model-free", "check": check,
                                             "channels": ()})]
    cells = [whole] if whole is not None else []
    cells += [measured_cell(m, channels) for m in measured]
    if heatmap is not None:
        covered = {c.region for c in cells if c.region is not None}
        predicted = predicted_cells(task, beside, heatmap[1], heatmap[0], covered, channels)
        cells += predicted
        if whole is not None:
            notes.extend(_wider_than_measured(whole, heatmap[1], predicted))
    return cells


def _wider_than_measured(whole: RegionCell, heatmap: Heatmap,
                         predicted: Sequence[RegionCell]) -> list[str]:
    """The safe bounds that the whole job's measurement beside the same co-runner cannot
    support: a region holding a share w of the job's work that runs Δ_r times slower adds
    w·(Δ_r − 1) to the job, so a job measured at Δ_job leaves it at most 1 + (Δ_job − 1)/w
    (when no other region speeds up). The plan still decides by the bounds (a share of
    instructions is not a share of time, and one max-response ratio is no interval), but the
    note says where the learned model and the measurement disagree."""
    total = sum(r.weight for r in heatmap.regions)
    weight = {r.region: r.weight / total for r in heatmap.regions} if total > 0 else {}
    excess = max(whole.value - 1.0, 0.0)
    caps = {c.region: 1.0 + excess / weight[c.region] for c in predicted
            if c.region is not None and weight.get(c.region, 0.0) > 0}
    wide = [(c, caps[c.region]) for c in predicted
            if c.region in caps and c.bound is not None and c.bound > caps[c.region]]
    if not wide:
        return []
    listed = ", ".join(f"{c.region} {c.bound:.2f} > {cap:.2f}" for c, cap in wide)
    return [f"{whole.task} beside {whole.beside}: the heatmap's safe bounds exceed what the "
            f"whole job's measured {whole.value:.3f} allows a region of its share of the work "
            f"({listed}): the learned model and the measurement disagree, and the plan follows "
            "the bounds, protecting more than the measurement asks"]


def build(taskset: TaskSet, job: InterferenceMatrix, *, channels: CpuChannels | None = None,
          heatmaps: Mapping[str, tuple[str, Heatmap]] | None = None,
          measured: Sequence[RegionMeasurement] = (), job_source: str = "whole-job matrix"
          ) -> InterferenceMatrix:
    """The region-level matrix of `taskset`'s critical tasks (see the module's docstring);
    `heatmaps` maps a critical task to (its heatmap's file, the heatmap)."""
    heatmaps = heatmaps or {}
    names = set(taskset.names)
    for m in measured:
        if m.task not in names or m.beside not in names:
            raise ValueError(f"a region measurement names {m.task} beside {m.beside}, not "
                             "both tasks of the task set")
    notes = list(job.notes)
    cells: list[RegionCell] = []
    for task in taskset.tasks:
        if task.role != "critical" or task.name in job.progress_unknown:
            continue
        for other in taskset.tasks:
            if other.name == task.name:
                continue
            sharing = None if channels is None else channels.between(task.cpu, other.cpu)
            cells += _pair_cells(job, task.name, other.name, sharing,
                                 [m for m in measured
                                  if (m.task, m.beside) == (task.name, other.name)],
                                 heatmaps.get(task.name), job_source, notes)
    directed = [list(row) for row in job.directed]
    n = [list(row) for row in job.n]
    by_pair: dict[tuple[int, int], list[RegionCell]] = {}
    for c in cells:
        by_pair.setdefault((job.index(c.task), job.index(c.beside)), []).append(c)
    for (i, j), pair in by_pair.items():
        directed[i][j] = max(c.deciding for c in pair)
        if not n[i][j]:  # no whole-job measurement: count the measured regions' pairs
            n[i][j] = max((c.n for c in pair if c.provenance != "predicted"), default=0)
    predicted = sorted({f"{c.task}/{c.beside}" for c in cells if c.provenance == "predicted"})
    if predicted:
        notes.append(f"predicted (not measured) region values enter {', '.join(predicted)}: "
                     "each by its calibrated safe bound")
    provenance = {**job.provenance, "regions": {
        "heatmaps": {t: src for t, (src, _) in sorted(heatmaps.items())},
        "platform": None if channels is None else
        {"source": channels.platform.source, "sha256": channels.platform.hash},
        "measured": sorted({m.source for m in measured})}}
    return InterferenceMatrix.model_validate({
        **job.model_dump(mode="json"), "directed": directed, "n": n,
        "provenance": provenance, "notes": notes,
        "regions": [c.model_dump(mode="json") for c in cells]})
