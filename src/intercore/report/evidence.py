"""The evidence figure of one aggressor set: what its slowdown rests on.

Left: the isolated and interfered times of the victim (region `total`) as empirical CDFs, each
sample a dot coloured by the host regime of its block, so a bimodal "interfered" curve shows
at a glance which mode the shared-cache blocks made. Right: Δ per block over the run's time
with the regime of each block as a background band, so a reader sees whether the slowdown
follows the host's cache sharing. `measure run --plot DIR` writes it as PNG per set; the campaign
report embeds the same figure per setup. Reads samples only (the results model), never the
runner that produced them.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..base.figures import pyplot, save

REGIME_COLOURS = {"shared": "#d62728", "not-shared": "#1f77b4", "unknown": "#7f7f7f",
                  None: "#2ca02c"}
_LABEL: dict[str | None, str] = {None: "no canary"}


def _metric(s: Any) -> int:
    return s.wall_ns if s.clock == "wall" else s.cpu_ns


def _halves(samples: Sequence[Any], aggressor_set: str) -> dict[int, dict[str, Any]]:
    """Region-0 samples of the set's pairs, pair -> {"iso": s, "int": s}."""
    iso = {(s.victim, s.pair): s for s in samples
           if s.region == 0 and s.condition == "iso" and not s.descheduled}
    pairs: dict[int, dict[str, Any]] = {}
    for s in samples:
        if s.region == 0 and s.condition == "int" and s.aggressor_set == aggressor_set \
                and not s.descheduled and (s.victim, s.pair) in iso:
            pairs[s.pair] = {"iso": iso[(s.victim, s.pair)], "int": s}
    return pairs


def evidence_figure(samples: Sequence[Any], aggressor_set: str, *, title: str = ""):
    """The two-panel figure for one set (a matplotlib Figure; the caller saves or embeds it).
    Raises ValueError when the set has no complete pair."""
    pairs = _halves(samples, aggressor_set)
    if not pairs:
        raise ValueError(f"no complete pair for {aggressor_set!r}")
    plt = pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.8), constrained_layout=True)
    for cond, marker, line in (("iso", "o", "--"), ("int", "^", "-")):
        ss = sorted((p[cond] for p in pairs.values()), key=_metric)
        ms = np.array([_metric(s) for s in ss]) / 1e6
        y = np.arange(1, len(ms) + 1) / len(ms)
        left.step(ms, y, where="post", color="black", linestyle=line, linewidth=0.8,
                  label="isolated" if cond == "iso" else "interfered")
        for state in dict.fromkeys(s.regime for s in ss):
            idx = [i for i, s in enumerate(ss) if s.regime == state]
            left.scatter(ms[idx], y[idx], s=14, marker=marker,
                         color=REGIME_COLOURS.get(state, "#9467bd"), zorder=3)
    handles = [plt.Line2D([], [], color=c, marker="o", linestyle="", label=_LABEL.get(r, r))
               for r, c in REGIME_COLOURS.items()
               if any(p["int"].regime == r for p in pairs.values())]
    left.legend(handles=left.get_legend_handles_labels()[0] + handles, fontsize=8,
                loc="lower right")
    left.set_xlabel("victim time per repetition (ms)")
    left.set_ylabel("ECDF")
    left.set_title("isolated (o, dashed) vs interfered (^, solid)", fontsize=9)

    blocks: dict[int, list[float]] = defaultdict(list)
    start: dict[int, float] = {}
    regime: dict[int, str | None] = {}
    for p in pairs.values():
        b = p["int"].block if p["int"].block is not None else 0
        blocks[b].append(_metric(p["int"]) / _metric(p["iso"]))
        start[b] = (p["int"].block_start_ns or 0) / 1e9
        regime[b] = p["int"].regime
    order = sorted(blocks, key=lambda b: start[b])
    xs = [start[b] for b in order]
    ys = [float(np.median(blocks[b])) for b in order]
    every = _all_block_bands(samples)
    for i, (t0, reg) in enumerate(every):
        t1 = every[i + 1][0] if i + 1 < len(every) else max(xs + [t0]) + 0.5
        right.axvspan(t0, t1, color=REGIME_COLOURS.get(reg, "#9467bd"), alpha=0.12, lw=0)
    right.plot(xs, ys, "k.-", linewidth=0.8)
    right.axhline(1.0, color="grey", linestyle=":", linewidth=0.8)
    right.set_xlabel("time since the run started (s); bands: the regime of every block")
    right.set_ylabel("Δ of the block (paired median)")
    right.set_title("Δ over time", fontsize=9)
    fig.suptitle(title or aggressor_set, fontsize=10)
    return fig


def _all_block_bands(samples: Sequence[Any]) -> list[tuple[float, str | None]]:
    """(start, regime) of every block of the run, whichever set it belonged to: the host's
    regime over time is the same for every set."""
    seen: dict[int, tuple[float, str | None]] = {}
    for s in samples:
        if s.block is not None and s.block not in seen:
            seen[s.block] = ((s.block_start_ns or 0) / 1e9, s.regime)
    return sorted(seen.values(), key=lambda t: t[0])


def write_pngs(samples: Sequence[Any], directory: Path, *, victim: str = "") -> list[Path]:
    """One PNG per aggressor set into `directory` (made when missing: its parent must
    exist); returns the paths."""
    directory.mkdir(exist_ok=True)
    out = []
    sets = sorted({s.aggressor_set for s in samples if s.condition == "int"})
    for i, label in enumerate(sets, start=1):
        fig = evidence_figure(samples, label, title=f"{victim} under {label}".strip())
        path = directory / f"set{i:02d}-{_slug(label)}.png"
        out.append(save(fig, path, dpi=110, tight=False))
    return out


def _slug(text: str) -> str:
    keep = "".join(c if c.isalnum() else "-" for c in text)
    return "-".join(filter(None, keep.split("-")))[:60] or "set"
