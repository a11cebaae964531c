"""Report figures: matplotlib (Agg) drawn to SVG and handed back as data: URIs.

SVG keeps the figures sharp when a reviewer zooms in; as a data: URI each figure is isolated
(matplotlib's element ids cannot collide between figures) and the page stays one file.
Output is deterministic: no timestamp in the SVG metadata, a fixed hash salt for its ids.
"""

from __future__ import annotations

import base64
import io
import math
from typing import Any, Sequence

import numpy as np

from ..base.figures import pyplot

plt = pyplot()  # the report draws whenever it is imported: no reason to defer
from matplotlib.typing import RcKeyType  # noqa: E402

_STYLE: dict[RcKeyType, Any] = {"svg.fonttype": "none", "svg.hashsalt": "intercore",
                                "font.size": 9, "axes.spines.top": False,
                                "axes.spines.right": False}


def figure_uri(fig) -> str:
    """The figure as a data:image/svg+xml URI; closes the figure."""
    buf = io.BytesIO()
    with plt.rc_context(_STYLE):
        fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    return "data:image/svg+xml;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _errors(values: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Asymmetric error bar lengths; a missing CI (nan) draws no bar."""
    below = np.where(np.isnan(lo), 0.0, values - lo)
    above = np.where(np.isnan(hi), 0.0, hi - values)
    return np.vstack([np.clip(below, 0, None), np.clip(above, 0, None)])


def grouped_bars(groups: Sequence[str], series: Sequence[str],
                 values: Sequence[Sequence[float]], *, lo: Sequence[Sequence[float]] | None = None,
                 hi: Sequence[Sequence[float]] | None = None, ylabel: str, title: str,
                 reference: float | None = None) -> str:
    """Bars per group (x axis) and series (colour), e.g. slowdown per benchmark and setup as
    in paper 001 Figs 3, 5, 6. `values[i][j]` is series i in group j (nan: not measured);
    `lo`/`hi` give CI ends drawn as whiskers; `reference` draws a dashed line (1.0 = solo)."""
    v = np.asarray(values, dtype=float).reshape(len(series), len(groups))
    width = 0.8 / max(1, len(series))
    fig_w = min(16.0, 3.0 + 0.22 * len(groups) * max(1, len(series)))
    fig, ax = plt.subplots(figsize=(max(6.0, fig_w), 3.8))
    x = np.arange(len(groups))
    cmap = plt.get_cmap("tab20" if len(series) > 10 else "tab10")
    for i, name in enumerate(series):
        pos = x - 0.4 + width * (i + 0.5)
        err = None
        if lo is not None and hi is not None:
            err = _errors(v[i], np.asarray(lo[i], dtype=float), np.asarray(hi[i], dtype=float))
        ax.bar(pos, np.nan_to_num(v[i]), width, yerr=err, capsize=2, label=name,
               color=cmap(i % cmap.N), error_kw={"linewidth": 0.8})
    if reference is not None:
        ax.axhline(reference, color="black", linestyle="--", linewidth=0.8)
    ax.set_xticks(x, groups, rotation=20 if len(groups) > 4 else 0, ha="right"
                  if len(groups) > 4 else "center")
    ax.set(ylabel=ylabel, title=title)
    ax.legend(fontsize=7, ncol=1 + len(series) // 12, loc="upper left",
              bbox_to_anchor=(1.0, 1.0), frameon=False)
    return figure_uri(fig)


def heatmap(rows: Sequence[str], columns: Sequence[str], values: Sequence[Sequence[float]], *,
            title: str, xlabel: str, ylabel: str, colorbar: str, reference: float = 1.0,
            min_span: float = 0.25) -> str:
    """An annotated heatmap; nan cells (not measured or skipped) stay blank and say so."""
    v = np.asarray(values, dtype=float).reshape(len(rows), len(columns))
    fig, ax = plt.subplots(figsize=(max(4.0, 1.0 + 0.9 * len(columns)),
                                    max(2.5, 0.9 + 0.4 * len(rows))))
    finite = v[np.isfinite(v)]
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (1.0, 1.0)
    # The scale spans at least `reference`..`reference + min_span`, so differences at the
    # noise level do not get the full colour range and look like effects.
    vmin = min(reference, lo)
    image = ax.imshow(np.ma.masked_invalid(v), cmap="magma_r", aspect="auto",
                      vmin=vmin, vmax=(vmax := max(hi, reference + min_span)))
    ax.set_xticks(range(len(columns)), columns)
    ax.set_yticks(range(len(rows)), rows)
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
    mid = (vmin + vmax) / 2
    for r in range(len(rows)):
        for c in range(len(columns)):
            cell = v[r, c]
            text = "n/a" if math.isnan(cell) else f"{cell:.2f}"
            ax.text(c, r, text, ha="center", va="center", fontsize=7,
                    color="white" if not math.isnan(cell) and cell > mid else "black")
    fig.colorbar(image, ax=ax, label=colorbar)
    return figure_uri(fig)
