"""The label distribution of a dataset, per kernel family and per place its working sets
live (a cache level, or DRAM beyond the last): whether the dataset reaches the range where
interference bites, which issue 22 asks every dataset to show before a model learns from it.

Each row: labelled regions n, median and p90 of Δ (p90 from 10 regions on, as every tail
figure: measure/stats.min_n_for), and the shares of regions with Δ above 1.2 and above 2.
Rows "all" pool a family's levels, a level's families, or everything.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..measure.harness.stats import min_n_for, percentile
from .dataset import Dataset
from .hierarchy import MEMORY

THRESHOLDS = (1.2, 2.0)
ALL = "all"


@dataclass(frozen=True)
class Row:
    family: str
    level: str
    n: int
    median: float
    p90: float | None
    above: tuple[float, ...]  # share of regions with Δ above each of THRESHOLDS

    def to_dict(self) -> dict[str, object]:
        return {"family": self.family, "level": self.level, "n": self.n,
                "median": self.median, "p90": self.p90,
                **{f"above_{t}": s for t, s in zip(THRESHOLDS, self.above)}}


def _row(family: str, level: str, deltas: list[float]) -> Row:
    return Row(family, level, len(deltas), percentile(deltas, 50),
               percentile(deltas, 90) if len(deltas) >= min_n_for(90) else None,
               tuple(sum(d > t for d in deltas) / len(deltas) for t in THRESHOLDS))


def distribution(ds: Dataset) -> list[Row]:
    """Rows by family then level (the hierarchy's order, DRAM last), each family's "all",
    then each level's over every family, then the whole dataset."""
    h = ds.hierarchy
    cells: dict[tuple[str, str], list[float]] = {}
    for p in ds.programs:
        sizes = {r.id: r.shape["bytes"] for r in p.spec.regions}
        for rid, label in p.labels.items():
            level = h.home(sizes[rid])
            for key in ((p.spec.family, level), (p.spec.family, ALL), (ALL, level),
                        (ALL, ALL)):
                cells.setdefault(key, []).append(label.delta)
    levels = [lv.name for lv in h.levels] + [MEMORY, ALL]
    return [_row(f, lv, cells[f, lv]) for f, lv in
            sorted(cells, key=lambda k: (k[0] == ALL, k[0], levels.index(k[1])))]
