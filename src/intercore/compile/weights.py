"""Where the cost model's numbers come from: node weights and predicted sensitivities.

Sources, the first that covers a node wins, and one source serves the whole graph (their
units differ, so they are never mixed):

1. `--heatmap heatmap.json` (the learning stage's artefact, docs/learn.md): per code region a
   predicted slowdown Δ with its interval, a weight (share of the run's time) and the source
   lines. A region matches a node when its name is the callee's, or its lines fall inside the
   callee's definition in one of `--sources`.
2. `--weights weights.json`: the same schema, written by hand or from measurements.
3. `@weight(N)` on declarations in the program: one firing costs N calls without @weight.
4. Nothing: every call costs 1 per firing.

A file's weights are scaled to a mean covered firing of 1; the nodes it does not cover weigh
1 with Δ = 1. Array copies weigh 0.05 wherever no source covers them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..base.errors import InputError
from ..base import artefact

HEATMAP_FORMATS = ("intercore.heatmap/1",)


class SourceLines(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    file: str
    lines: tuple[int, int]  # first and last line, inclusive


class Measured(BaseModel):
    """The region's Δ as measured beside the heatmap's aggressor (docs/learn.md)."""
    model_config = ConfigDict(extra="ignore", frozen=True)
    delta: float = Field(gt=0)
    delta_ci: tuple[float | None, float | None] | None = None
    n: int = Field(ge=1)
    regime: str | None = None
    aggressor_set: str | None = None


class Region(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)
    region: str
    delta: float = Field(gt=0)                       # predicted slowdown under interference
    interval: tuple[float, float] | None = None      # [Δ̂, its calibrated safe bound]
    weight: float = Field(ge=0)                      # share of the run's time (any unit)
    source: SourceLines | None = None
    measured: Measured | None = None

    @model_validator(mode="after")
    def _check(self) -> "Region":
        if self.interval is not None and not self.interval[0] <= self.delta <= self.interval[1]:
            raise ValueError("delta must lie inside its interval")
        return self


class Heatmap(BaseModel):
    """heatmap.json as far as the compiler reads it; extra keys are the learner's business."""
    model_config = ConfigDict(extra="ignore", frozen=True)
    format: str = "intercore.heatmap/1"
    regions: tuple[Region, ...]

    @model_validator(mode="after")
    def _format(self) -> "Heatmap":
        if self.format not in HEATMAP_FORMATS:
            raise ValueError(f"format {self.format!r} is not one of {HEATMAP_FORMATS}")
        return self


def load_heatmap(path: str | Path) -> Heatmap:
    return artefact.load(path, Heatmap)


_DEF = re.compile(r"^[A-Za-z_][\w\s\*]*?\b([A-Za-z_]\w*)\s*\([^;]*$")


def function_lines(path: Path) -> dict[str, tuple[int, int]]:
    """Line ranges of the top-level function definitions in a C file (by brace depth)."""
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", source=str(path)) from None
    out: dict[str, tuple[int, int]] = {}
    depth, current, start = 0, None, 0
    for no, line in enumerate(lines, 1):
        if depth == 0:
            m = _DEF.match(line)
            if m and not line.lstrip().startswith(("#", "//", "static_assert")):
                current, start = m.group(1), no
        depth += line.count("{") - line.count("}")
        if depth == 0 and current is not None and "}" in line:
            out[current] = (start, no)
            current = None
    return out


# The unit of the @weight source: one firing of a call nothing else weighs. A partial @weight
# is relative to it (an earlier rule gave the others the covered nodes' mean and rescaled,
# so a @weight on one function changed nothing).
DEFAULT = 1.0
DATA_OP = 0.05  # an array copy, in the same unit: a fraction of a call


@dataclass(frozen=True)
class NodeWeight:
    per_firing: float     # relative cost of one firing
    delta: float          # predicted slowdown when other tasks run beside it
    source: str           # where the numbers came from, for --explain


@dataclass(frozen=True)
class Weights:
    nodes: dict[int, NodeWeight]
    source: str                # "heatmap", "weights", "@weight" or "default"
    unused: tuple[str, ...]    # called functions whose @weight the chosen file overrides


def resolve(callees: dict[int, tuple[str | None, int]], decl_weights: dict[str, float],
            heatmap: Heatmap | None, weights: Heatmap | None,
            sources: list[Path], fired: dict[str, tuple[str, int]] | None = None) -> Weights:
    """Per node (id -> (callee, firings)): its weight and Δ, and the source used. `fired`
    names the adapters of a program with rates (sdf.py): adapter -> (the user's function,
    its firings per call), whose weight the lowering set to that many firings' and which a
    heatmap knows by the user's function's name."""
    fired = fired or {}
    ranges: dict[str, tuple[str, tuple[int, int]]] = {}
    for src in sources:
        for fn, lines in function_lines(src).items():
            ranges.setdefault(fn, (src.name, lines))

    def user(callee: str) -> str:
        return fired[callee][0] if callee in fired else callee

    def times(callee: str) -> int:
        return fired[callee][1] if callee in fired else 1

    def from_regions(doc: Heatmap, label: str):
        found = {}
        for nid, (callee, firings) in callees.items():
            if callee is None:
                continue
            name = user(callee)
            for r in doc.regions:
                hit = r.region == name
                if not hit and r.source is not None and name in ranges:
                    fname, (lo, hi) = ranges[name]
                    hit = Path(r.source.file).name == fname and \
                        lo <= r.source.lines[0] and r.source.lines[1] <= hi
                if hit:
                    found[nid] = (r.weight * times(callee) / max(firings, 1), r.delta,
                                  f"{label}: {r.region}")
                    break
        return found

    written = {c: w for c, w in decl_weights.items() if c not in fired}
    annotated = tuple(sorted({user(c) for c, _ in callees.values()
                              if c is not None and user(c) in written}))
    for doc, label in ((heatmap, "heatmap"), (weights, "weights")):
        if doc is not None:
            found = from_regions(doc, label)
            if found:
                return Weights(_fill(callees, found), label, annotated)

    def declared(c: str | None) -> NodeWeight:
        if c is None or c not in decl_weights:
            return _unweighed(c, "default")
        one = f"@weight({written[user(c)]:g})" if user(c) in written else "default"
        why = one if c not in fired else \
            f"{times(c)} firings of {user(c)} per call, each " + \
            (one if one != "default" else f"{DEFAULT:g} (default)")
        return NodeWeight(decl_weights[c], 1.0, why)
    return Weights({nid: declared(c) for nid, (c, _) in callees.items()},
                   "@weight" if annotated else "default", ())


def _unweighed(callee: str | None, why: str) -> NodeWeight:
    return NodeWeight(DEFAULT if callee is not None else DATA_OP, 1.0, why)


def _fill(callees, found) -> dict[int, NodeWeight]:
    """A file's weights are in its own unit: scale them to a mean covered firing of 1, the
    default, which the nodes it does not cover then weigh."""
    mean = sum(v[0] for v in found.values()) / len(found) or 1.0
    return {nid: NodeWeight(found[nid][0] / mean, *found[nid][1:]) if nid in found
            else _unweighed(callee, "not covered: the covered mean")
            for nid, (callee, _) in callees.items()}
