"""The interference matrix: how much each task degrades beside each other task.

`directed[i][j]` is the degradation of task i (its response time under interference divided by
its response time alone, each summarised by `statistic`: the max or the p99 of the jobs)
when task j runs beside it; `n[i][j]` is the number of jobs of task i measured beside j. The
diagonal is empty: a task is never measured beside itself. A cell that was not measured is None.

`misses[i][j]` counts the jobs of task i past its deadline beside j (of n[i][j]) and
`alone_misses[i]` those alone, as [missed, jobs]: the deadline evidence beside the ratios.
`alone_ns[i]` is task i's response time alone, summarised by the same statistic: with a
critical task's deadline it says how much degradation the task can afford (Algorithm 1's
deadline rule). Algorithm 1 uses the symmetric I (see `symmetric`). The JSON file is the
artefact other stages read; the CSV is for spreadsheets; the heatmap is for people.

Measured on a host whose cache sharing comes and goes, each block is tagged with the regime
the running canary saw around it: `by_regime` keeps the directed values per regime, and
`directed` holds, per cell, the worst regime observed (`regime_of` names it, `n` counts its
jobs), since a WCET budget must cover the regime that hurts. A matrix measured without a
`shared` block on a host whose CPUs can share their cache is `provisional`: it may hold
values near 1 only because the sharing never happened while it was measured.

Region level (paper 000 §4.4.1's I_ij as a vector over code regions): `regions` holds, for
critical tasks, one `RegionCell` per (task, region, co-runner), each saying where its value
came from: *measured* (paired and interleaved, per regime, the worst regime kept, with n and
the CI where the measurement has one), *predicted* (the learner's Δ̂ and its calibrated safe
bound, never below a value measured for the same region), or *model-free* (the platform
model finds no channel the two tasks share; the claim is kept only with the measurement that
checked it). A cell whose region is None is the whole job. Wherever a pair has cells,
`directed` is the worst of their deciding values: the whole-job scalar that Algorithm 1 and
every older reader take is the worst region, and a file without `regions` reads as before.

`by_round` keeps each round's directed values (its jobs beside over its own jobs alone). The
max over every job is what Algorithm 1 reads, the worst case observed; one host event in one
round can decide it, so which co-runner is the worst (the one `assess` measures regions and
runs protection beside) is what most rounds say (`typical`, the median over rounds).

A task in `progress_unknown` runs an unmodified program (a task set's `command`): it reports
no jobs, so its row is empty by construction, not for want of a measurement. The symmetric I
of its pairs is the other task's degradation beside it, the only side that can be measured.
"""

from __future__ import annotations

import csv
import io
import statistics
from pathlib import Path
from typing import Any, Final, Iterator, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ...base import artefact, outputs, yamlfile
from ...base.figures import pyplot, save
from ...base.errors import InputError

FORMAT: Final = "intercore.interference-matrix/1"
Statistic = Literal["max", "p99"]
Cell = float | None
CSV_COLUMNS = ("task", "beside", "degradation", "n", "statistic")


# A task a million times slower beside another is a broken measurement, not a degradation.
MAX_DEGRADATION = 1e6


class RegimeCells(BaseModel):
    """The directed values of one regime (same shape as the matrix)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    directed: tuple[tuple[Cell, ...], ...]
    n: tuple[tuple[int, ...], ...]


Provenance = Literal["measured", "predicted", "model-free"]


class Check(BaseModel):
    """The measurement that checked a model-free claim (one pair measured anyway)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    value: float = Field(gt=0, le=MAX_DEGRADATION)
    n: int = Field(ge=1)
    ci: tuple[float, float] | None = None
    regime: str | None = None
    source: str


class RegionCell(BaseModel):
    """One (critical task, region, co-runner) value and where it came from.

    `value` is the point estimate (measured: the worst regime's; predicted: Δ̂; model-free:
    the check's); `bound` the upper end it comes with (measured: its CI's; predicted: the
    calibrated safe bound). A plan decides from `deciding`: a prediction by its safe bound,
    since Δ̂ is a median that half the programs exceed; a measurement by its value, as the
    whole-job matrix always has."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    task: str
    beside: str
    region: str | None = None  # None: the whole job
    provenance: Provenance
    value: float = Field(gt=0, le=MAX_DEGRADATION)
    bound: float | None = Field(None, gt=0, le=MAX_DEGRADATION)
    n: int = Field(0, ge=0)
    ci: tuple[float, float] | None = None
    regime: str | None = None     # measured: the worst regime, whose value this is
    misses: int | None = Field(None, ge=0)  # whole-job cells: jobs past the deadline, of n
    source: str                   # what produced it: the matrix, a heatmap file, a store row
    channels: tuple[str, ...] | None = None  # what the model says the pair shares; None: no model
    check: Check | None = None    # model-free: the measurement that checked the claim

    @model_validator(mode="after")
    def _check(self) -> "RegionCell":
        if self.task == self.beside:
            raise ValueError("a task is not measured beside itself")
        if self.provenance == "measured" and self.n < 1:
            raise ValueError("a measured cell counts its jobs or pairs: n must be at least 1")
        if self.provenance == "predicted" and (self.bound is None or self.bound < self.value):
            raise ValueError("a predicted cell needs its calibrated safe bound (bound >= value)")
        if self.provenance == "model-free":
            if self.check is None or self.channels != ():
                raise ValueError("a model-free cell needs the model's empty channel list "
                                 "(channels: []) and the measurement that checked it (check)")
            if self.value < self.check.value:
                raise ValueError("a model-free cell's value is never below its check's")
        if self.misses is not None and (self.region is not None or self.misses > self.n):
            raise ValueError("misses are counted for whole-job cells, at most n")
        return self

    @property
    def deciding(self) -> float:
        return self.bound if self.provenance == "predicted" and self.bound else self.value

    @property
    def where(self) -> str:
        return f"{self.task} ({self.region or 'whole job'}) beside {self.beside}"


class InterferenceMatrix(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    format: Literal["intercore.interference-matrix/1"] = FORMAT
    tasks: tuple[str, ...] = Field(min_length=1)
    statistic: Statistic
    directed: tuple[tuple[Cell, ...], ...]
    n: tuple[tuple[int, ...], ...]
    misses: tuple[tuple[int, ...], ...] | None = None
    alone_ns: tuple[float | None, ...] | None = None
    alone_misses: tuple[tuple[int, int], ...] | None = None
    provenance: dict[str, Any] = Field(default_factory=dict)
    by_regime: dict[str, RegimeCells] = Field(default_factory=dict)
    regime_of: tuple[tuple[str | None, ...], ...] | None = None
    provisional: bool = False
    notes: tuple[str, ...] = ()
    progress_unknown: tuple[str, ...] = ()  # tasks that report no jobs (commands)
    regions: tuple[RegionCell, ...] = ()
    # D per round (each round's jobs beside over its own jobs alone, every regime): what the
    # matrix runner measured round by round; empty in older files and hand-made matrices.
    by_round: tuple[tuple[tuple[Cell, ...], ...], ...] = ()

    @model_validator(mode="after")
    def _check(self) -> "InterferenceMatrix":
        size = len(self.tasks)
        if len(set(self.tasks)) != size:
            raise ValueError("task names must be unique")
        for name, rows in (("directed", self.directed), ("n", self.n)):
            if len(rows) != size or any(len(row) != size for row in rows):
                raise ValueError(f"{name} must be {size} x {size}, one row and column per task")
        if self.misses is not None:
            if len(self.misses) != size or any(len(row) != size for row in self.misses):
                raise ValueError(f"misses must be {size} x {size}, one row and column per task")
            if any(not 0 <= self.misses[i][j] <= self.n[i][j] for i, j in _cells(size)):
                raise ValueError("misses[i][j] counts jobs of n[i][j]: between 0 and n")
        if self.alone_misses is not None and (
                len(self.alone_misses) != size or
                any(not 0 <= missed <= jobs for missed, jobs in self.alone_misses)):
            raise ValueError(f"alone_misses must hold {size} [missed, jobs] pairs, "
                             "0 <= missed <= jobs")
        if self.alone_ns is not None:
            if len(self.alone_ns) != size:
                raise ValueError(f"alone_ns must hold {size} values, one per task")
            if any(v is not None and not 0 < v < float("inf") for v in self.alone_ns):
                raise ValueError("alone_ns values must be positive finite times in ns")
        for name in self.progress_unknown:
            if name not in self.tasks:
                raise ValueError(f"progress_unknown names {name!r}, which is not a task")
            i = self.tasks.index(name)
            if any(v is not None for v in self.directed[i]) or any(self.n[i]):
                raise ValueError(f"{name} reports no jobs (progress_unknown): its row must be "
                                 "null with n 0")
        for r, rows in enumerate(self.by_round):
            if len(rows) != size or any(len(row) != size for row in rows):
                raise ValueError(f"by_round[{r}] must be {size} x {size}, like directed")
            if any(rows[i][i] is not None for i in range(size)) or any(
                    v is not None and not 0 < v <= MAX_DEGRADATION for row in rows for v in row):
                raise ValueError(f"by_round[{r}] holds positive ratios off the diagonal only")
        backed = self._check_regions()
        for i, j in _cells(size):
            value, count = self.directed[i][j], self.n[i][j]
            where = f"{self.tasks[i]} beside {self.tasks[j]}"
            if i == j:
                if value is not None or count:
                    raise ValueError(f"diagonal cell {where} must be null with n 0: a task is "
                                     "not measured beside itself")
                continue
            if count < 0:
                raise ValueError(f"n of {where} is negative")
            if value is None:
                continue
            if not 0 < value <= MAX_DEGRADATION:
                raise ValueError(f"degradation of {where} must be a positive finite ratio "
                                 f"of at most {MAX_DEGRADATION:g}, not {value}")
            if count < 1 and (i, j) not in backed:
                raise ValueError(f"{where} has a degradation but n 0")
        return self

    def _check_regions(self) -> set[tuple[int, int]]:
        """Each pair with region cells has the worst of them as its directed value; the
        cells with only predictions behind them (n 0: nothing measured) are returned."""
        worst: dict[tuple[int, int], float] = {}
        measured: set[tuple[int, int]] = set()
        seen: set[tuple[str, str, str | None]] = set()
        for cell in self.regions:
            if cell.task not in self.tasks or cell.beside not in self.tasks:
                raise ValueError(f"region cell {cell.where} names a task not in the matrix")
            key = (cell.task, cell.beside, cell.region)
            if key in seen:
                raise ValueError(f"region cell {cell.where} is given twice")
            seen.add(key)
            ij = (self.index(cell.task), self.index(cell.beside))
            worst[ij] = max(worst.get(ij, 0.0), cell.deciding)
            if cell.provenance != "predicted":
                measured.add(ij)
        for (i, j), value in worst.items():
            if self.directed[i][j] != value:
                raise ValueError(f"{self.tasks[i]} beside {self.tasks[j]}: directed is "
                                 f"{self.directed[i][j]}, but the worst of its region cells "
                                 f"is {value!r}: the whole-job value is the worst region")
        return set(worst) - measured

    # ---- reading -------------------------------------------------------------------------------

    def index(self, task: str) -> int:
        try:
            return self.tasks.index(task)
        except ValueError:
            raise KeyError(task) from None

    def alone(self, task: str) -> Cell:
        """`task`'s response time alone (ns, by `statistic`), or None if not recorded."""
        return None if self.alone_ns is None else self.alone_ns[self.index(task)]

    def cells(self, task: str, beside: str) -> tuple[RegionCell, ...]:
        """The region cells of `task` beside `beside`, worst first (none in a whole-job
        matrix)."""
        return tuple(sorted((c for c in self.regions if (c.task, c.beside) == (task, beside)),
                            key=lambda c: -c.deciding))

    def degradation(self, task: str, beside: str) -> Cell:
        """Directed: how much `task` degrades when `beside` runs next to it."""
        return self.directed[self.index(task)][self.index(beside)]

    def rounds(self, task: str, beside: str) -> tuple[Cell, ...]:
        """`task`'s degradation beside `beside` in each round (empty: none recorded)."""
        i, j = self.index(task), self.index(beside)
        return tuple(rows[i][j] for rows in self.by_round)

    def typical(self, task: str, beside: str) -> Cell:
        """The median over rounds of `task`'s degradation beside `beside`, where rounds are
        recorded, else the directed value. The directed max pools every job, so one host
        event in one round decides it (a control loop's 0.23 ms job took 27 ms beside a
        co-runner on the other CPU while that co-runner's took 70 ms: both slowed at once,
        by something else); which co-runner is worst is what most rounds say."""
        values = [v for v in self.rounds(task, beside) if v is not None]
        return statistics.median(values) if values else self.degradation(task, beside)

    @property
    def symmetric(self) -> tuple[tuple[Cell, ...], ...]:
        """I_ij = max(directed_ij, directed_ji).

        Algorithm 1 separates *pairs*, and a separation (and the freezing it enables) acts on
        both tasks of a pair at once, so the pair counts as high-contention when either task
        suffers. The max keeps the worst case that certification reasons about: averaging would
        hide a 3x slowdown of one task behind a neutral partner. A pair with a direction not
        measured is unknown (None), never the known half, for the same reason.
        """
        size = len(self.tasks)
        return tuple(tuple(self._pair(i, j) if i != j else None
                           for j in range(size)) for i in range(size))

    def _pair(self, i: int, j: int) -> Cell:
        """I of tasks i and j; the known direction alone where the other task reports no
        jobs (it cannot be measured, ever), unknown where a direction was not measured."""
        a, b = self.directed[i][j], self.directed[j][i]
        if self.tasks[i] in self.progress_unknown:
            return b
        if self.tasks[j] in self.progress_unknown:
            return a
        return _worse(a, b)

    def interference(self, a: str, b: str) -> Cell:
        """Symmetric I of the pair {a, b}."""
        return self._pair(self.index(a), self.index(b))

    def pairs(self) -> Iterator[tuple[str, str, Cell]]:
        """Each unordered pair once, (a, b, I_ab), in task order."""
        for i, a in enumerate(self.tasks):
            for b in self.tasks[i + 1:]:
                yield a, b, self.interference(a, b)

    # ---- JSON ----------------------------------------------------------------------------------

    def to_dict(self) -> dict:
        # `symmetric` is derived; it is written for readers of the file and checked on load.
        return {**self.model_dump(mode="json"),
                "symmetric": [list(row) for row in self.symmetric]}

    def save_json(self, path: str | Path) -> None:
        outputs.write_text(path, artefact.dumps(self.to_dict()))

    @classmethod
    def load_json(cls, path: str | Path) -> "InterferenceMatrix":
        doc = artefact.read_document(path)
        written = doc.data.pop("symmetric", None) if isinstance(doc.data, dict) else None
        matrix = yamlfile.validate(doc, cls)
        if written is not None and written != [list(row) for row in matrix.symmetric]:
            raise doc.error("does not match max(directed[i][j], directed[j][i]); it is derived "
                            "from `directed`, so delete it or fix `directed`", ("symmetric",))
        return matrix

    # ---- CSV -----------------------------------------------------------------------------------

    def save_csv(self, path: str | Path) -> None:
        """One row per measured or unmeasured directed pair (the diagonal is left out)."""
        with outputs.replacing(path) as tmp, open(tmp, "w", newline="") as out:
            writer = csv.writer(out)
            writer.writerow(CSV_COLUMNS)
            for i, j in _cells(len(self.tasks)):
                if i != j:
                    value = self.directed[i][j]
                    writer.writerow((self.tasks[i], self.tasks[j],
                                     "" if value is None else repr(value), self.n[i][j],
                                     self.statistic))

    @classmethod
    def load_csv(cls, path: str | Path) -> "InterferenceMatrix":
        """Inverse of save_csv; the CSV carries no provenance beyond its own path."""
        source = str(path)
        text = yamlfile.read_text(path)
        try:
            rows = list(csv.reader(io.StringIO(text, newline="")))
        except csv.Error as exc:
            raise InputError(f"not valid CSV: {exc}", source=source) from None
        if not rows or tuple(rows[0]) != CSV_COLUMNS:
            raise InputError(f"the header must be {','.join(CSV_COLUMNS)}", source=source,
                             line=1)
        cells: dict[tuple[str, str], tuple[Cell, int]] = {}
        statistics: set[str] = set()
        tasks: dict[str, None] = {}
        for line, row in enumerate(rows[1:], start=2):
            if len(row) != len(CSV_COLUMNS):
                raise InputError(f"expected {len(CSV_COLUMNS)} columns", source=source,
                                 line=line)
            task, beside, value, count, statistic = row
            try:
                cells[task, beside] = (float(value) if value else None, int(count))
            except ValueError:
                raise InputError(f"degradation {value!r} or n {count!r} is not a number",
                                 source=source, line=line) from None
            statistics.add(statistic)
            tasks.update({task: None, beside: None})
        if len(statistics) != 1:
            raise InputError(f"one statistic per matrix, found {sorted(statistics)}",
                             source=source)
        names = tuple(tasks)
        grid = [[cells.get((a, b), (None, 0)) for b in names] for a in names]
        try:
            return cls(tasks=names, statistic=statistics.pop(),
                       directed=tuple(tuple(c[0] for c in row) for row in grid),
                       n=tuple(tuple(c[1] for c in row) for row in grid),
                       provenance={"csv": source})
        except ValidationError as exc:
            raise InputError(yamlfile.error_message(exc.errors()[0]), source=source) from None


def _cells(size: int) -> Iterator[tuple[int, int]]:
    return ((i, j) for i in range(size) for j in range(size))


def _worse(a: Cell, b: Cell) -> Cell:
    return None if a is None or b is None else max(a, b)


# ---- heatmap -----------------------------------------------------------------------------------

def plot_heatmap(matrix: InterferenceMatrix, path: str | Path, theta: float = 1.5) -> None:
    """Directed values and the symmetric I side by side; cells above θ are outlined and θ is
    marked on the colour scale."""
    import matplotlib
    import numpy as np
    from matplotlib.patches import Rectangle

    size = len(matrix.tasks)
    panels = (("directed: row degrades beside column", matrix.directed),
              ("symmetric I (Algorithm 1)", matrix.symmetric))
    known = [v for _, grid in panels for row in grid for v in row if v is not None]
    vmax = max([theta * 1.2, *known])
    side = 1.2 + 0.9 * size
    fig, axes = pyplot().subplots(1, 2, figsize=(2 * side + 1.5, side), constrained_layout=True)
    image = None
    for ax, (title, grid) in zip(axes, panels):
        values = np.array([[np.nan if v is None else v for v in row] for row in grid])
        cmap = matplotlib.colormaps["Reds"].with_extremes(bad="#dddddd")
        image = ax.imshow(values, cmap=cmap, vmin=min([1.0, *known]), vmax=vmax)
        for i in range(size):
            for j in range(size):
                value = grid[i][j]
                text = "—" if i == j else "n/a" if value is None else f"{value:.2f}"
                if grid is matrix.directed and i != j and value is not None:
                    text += f"\nn={matrix.n[i][j]}"
                dark = value is not None and value > (1.0 + vmax) / 2
                ax.text(j, i, text, ha="center", va="center", fontsize=8,
                        color="white" if dark else "black")
                if value is not None and value > theta:
                    ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False,
                                           edgecolor="black", linewidth=2.5))
        ax.set_xticks(range(size), matrix.tasks, rotation=45, ha="right")
        ax.set_yticks(range(size), matrix.tasks)
        ax.set_xlabel("beside")
        ax.set_title(title, fontsize=10)
    axes[0].set_ylabel("task")
    bar = fig.colorbar(image, ax=axes, shrink=0.8)
    bar.ax.axhline(theta, color="black", linewidth=2)
    bar.ax.text(-0.3, theta, f"θ = {theta:g}", transform=bar.ax.get_yaxis_transform(),
                ha="right", va="center", fontsize=9, fontweight="bold")
    bar.set_label(f"degradation ({matrix.statistic} beside / {matrix.statistic} alone)")
    fig.suptitle(f"Interference matrix ({size} tasks): outlined cells exceed θ = {theta:g}")
    save(fig, path, tight=False)
