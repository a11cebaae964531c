"""The three figures of paper 000 §4.4.3, drawn from stored job response times.

Figure 7: response time of every job per scenario, with the deadline line.
Figure 8: empirical CDF of the response times per scenario.
Figure 9: deadline-miss ratio per scenario with Wilson 95% intervals.
One PNG per figure and placement, so each can go into a report or a certification dossier.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from ...base.figures import pyplot, save
from ...measure.harness.stats import wilson_interval

plt = pyplot()  # every function here draws

# The paper's colours: Solo green, Interference red, Protected blue; beside the worst
# aggressor a search found (assess), purple.
COLOURS = {"solo": "tab:green", "interference": "tab:red", "protected": "tab:blue",
           "worst-found": "tab:purple"}


def jobwise(responses_ms: Mapping[str, Sequence[float]], deadline_ms: float, title: str,
            path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(8, 3.6))
    for scenario, values in responses_ms.items():
        ax.plot(range(1, len(values) + 1), values, marker=".", linewidth=0.8,
                color=COLOURS.get(scenario), label=scenario)
    ax.axhline(deadline_ms, linestyle="--", color="black", linewidth=1,
               label=f"deadline {deadline_ms:g} ms")
    ax.set(xlabel="job", ylabel="response time (ms)", title=title)
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)
    return save(fig, path, dpi=110)


def cdf(responses_ms: Mapping[str, Sequence[float]], deadline_ms: float, title: str,
        path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for scenario, values in responses_ms.items():
        x = np.sort(np.asarray(values, dtype=float))
        if x.size:
            ax.step(x, np.arange(1, x.size + 1) / x.size, where="post",
                    color=COLOURS.get(scenario), label=scenario)
    ax.axvline(deadline_ms, linestyle="--", color="black", linewidth=1, label="deadline")
    ax.set(xlabel="response time (ms)", ylabel="fraction of jobs", title=title)
    ax.set_ylim(0, 1.02)
    ax.legend(fontsize=8)
    return save(fig, path, dpi=110)


def miss_ratio(misses: Mapping[str, tuple[int, int]], title: str, path: Path) -> Path:
    """`misses[scenario] = (missed, n)`; error bars are Wilson 95% intervals."""
    fig, ax = plt.subplots(figsize=(5, 3.6))
    names = list(misses)
    ratios, lo_err, hi_err = [], [], []
    for name in names:
        k, n = misses[name]
        ratio = k / n if n else 0.0
        lo, hi = wilson_interval(k, n) if n else (0.0, 0.0)
        ratios.append(100 * ratio)
        lo_err.append(100 * (ratio - lo))
        hi_err.append(100 * (hi - ratio))
    ax.bar(names, ratios, yerr=[lo_err, hi_err], capsize=4,
           color=[COLOURS.get(n, "tab:gray") for n in names])
    for i, name in enumerate(names):
        k, n = misses[name]
        ax.text(i, ratios[i] + hi_err[i] + 1, f"{k}/{n}", ha="center", fontsize=8)
    ax.set(ylabel="deadline misses (%)", title=title)
    ax.set_ylim(0, 105)
    return save(fig, path, dpi=110)
