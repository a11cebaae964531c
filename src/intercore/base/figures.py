"""Figures, one way for every stage: matplotlib on the Agg backend, imported when a figure is
first drawn (it costs about half a second, which commands that draw nothing should not pay), and
files written whole or not at all."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from . import outputs


def pyplot() -> Any:
    """matplotlib.pyplot with the Agg backend chosen: no display is ever needed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save(fig: Any, path: str | Path, *, dpi: int = 120, tight: bool = True) -> Path:
    """Write `fig` to `path` (its suffix picks the format) atomically, so that a reader never
    sees half a figure, and close it."""
    if tight:
        fig.tight_layout()
    with outputs.replacing(Path(path)) as tmp:
        fig.savefig(tmp, dpi=dpi)
    pyplot().close(fig)
    return Path(path)
