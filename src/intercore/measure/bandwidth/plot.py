"""The profile as a figure: bandwidth over time per source, the command's regions shaded and
labelled, spikes marked (paper 004's figures 1, 2 and 8)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ...base.figures import pyplot, save
from .profile import Profile

_REGION_COLOURS = ("#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948")


def plot(prof: Profile, path: Path, title: str = "") -> Path:
    byte_series = [s for s in prof.series if s.mbps is not None]
    other = [s for s in prof.series if s.mbps is None]
    rows = max(1, len(byte_series) + len(other))
    fig, axes = pyplot().subplots(rows, 1, figsize=(11, 2.6 * rows + 0.6), sharex=True,
                             squeeze=False)
    axes = axes[:, 0]
    names = sorted({sp.name for sp in prof.spans if sp.depth > 0} or
                   {sp.name for sp in prof.spans})
    colour = {n: _REGION_COLOURS[i % len(_REGION_COLOURS)] for i, n in enumerate(names)}
    for ax, s in zip(axes, byte_series + other):
        t_ms = s.t_ns / 1e6
        y = s.mbps if s.mbps is not None else s.rate
        ax.plot(t_ms, y, lw=0.6, color="black")
        label = "MB/s" + (" (probe estimate)" if s.estimated else "") if s.mbps is not None \
            else s.unit
        ax.set_ylabel(label)
        ax.set_title(s.source.name, fontsize=9, loc="left")
        for sp in prof.spans:
            if sp.name in colour:
                ax.axvspan(sp.begin_ns / 1e6, sp.end_ns / 1e6, color=colour[sp.name],
                           alpha=0.15, lw=0)
        for spike in prof.spikes.get(s.source.name, []):
            ax.axvspan(spike.start_ns / 1e6, spike.end_ns / 1e6, color="red", alpha=0.35, lw=0)
        threshold = prof.thresholds.get(s.source.name)
        if threshold is not None and np.isfinite(threshold):
            ax.axhline(threshold, color="red", lw=0.6, ls="--")
    if names:
        from matplotlib.patches import Patch

        handles = [Patch(color=colour[n], alpha=0.3, label=n) for n in names]
        if prof.spikes and any(prof.spikes.values()):
            handles.append(Patch(color="red", alpha=0.35, label="spike"))
        axes[0].legend(handles=handles, fontsize=7, loc="upper right", ncol=min(4, len(handles)))
    axes[-1].set_xlabel("time since the start of sampling [ms]")
    interval_us = prof.raw.spec.interval_ns / 1e3
    fig.suptitle(title or f"memory bandwidth every {interval_us:g} µs", fontsize=10)
    return save(fig, path)
