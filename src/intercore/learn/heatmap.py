"""The code heatmap: which regions of a program, and which of their source lines, are
sensitive to interference, as `heatmap.json` (the compiler and Algorithm 1 read it;
docs/learn.md has the schema) and an HTML page of the source with lines shaded.

Per region: `delta` and `interval` [Δ̂, Δ̂_safe] (the compiler's cost model reads these),
`weight` the region's share of the program's traced instructions (the trace counts
instructions, not time: a proxy for its share of the run), `source` the span of lines its
instructions come from in its main file. `sensitivity` is (Δ̂_safe - 1) over the largest such
excess in the program: the most sensitive region 1, one predicted unaffected 0. Per line:
`weight` is the region's sensitivity times the share of the model's attention (received, last
layer) the line's instructions get; `l2_share` beside it is the simulated share of the
region's L2 accesses, the quantity attention was trained to follow.
"""

from __future__ import annotations

import hashlib
import html
import json
from collections import defaultdict
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence

import jinja2
import numpy as np

from .. import __version__, outputs
from .features import RegionFeatures

FORMAT = "intercore.heatmap/1"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def build(argv: Sequence[str], regions: Sequence[RegionFeatures], med: np.ndarray,
          safe: np.ndarray, received: np.ndarray, model: dict[str, Any]) -> dict[str, Any]:
    excess = np.maximum(np.asarray(safe) - 1.0, 0.0)
    top = float(excess.max()) if len(excess) else 0.0
    per_entry = [r.insns / max(r.entries, 1) for r in regions]
    total = sum(per_entry) or 1.0
    out = []
    for i, r in enumerate(regions):
        sensitivity = float(excess[i] / top) if top > 0 else 0.0
        att = np.asarray(received[i][1:1 + len(r.tokens)], float)
        att = att / att.sum() if att.sum() > 0 else att
        l2 = np.array([sum(t.served[1:]) for t in r.tokens], float)
        l2 = l2 / l2.sum() if l2.sum() > 0 else l2
        lines: dict[tuple[str, int], dict[str, float]] = defaultdict(
            lambda: {"attention": 0.0, "l2_share": 0.0, "execs": 0})
        functions: list[str] = []
        for t, a, l in zip(r.tokens, att, l2):
            if t.function and t.function not in functions:
                functions.append(t.function)
            if not t.source:
                continue
            file, _, number = t.source.rpartition(":")
            row = lines[(file, int(number))]
            row["attention"] += float(a)
            row["l2_share"] += float(l)
            row["execs"] += t.execs
        out.append({
            "region": r.name, "id": r.region,
            "delta": float(med[i]), "delta_safe": float(safe[i]),
            "interval": [float(med[i]), float(safe[i])],
            "weight": per_entry[i] / total,
            "sensitivity": sensitivity,
            "source": _span(lines),
            "instructions": r.insns // max(r.entries, 1),
            "l2_accesses": r.l2_accesses // max(r.entries, 1),
            "functions": functions,
            "lines": [{"file": f, "line": n, "weight": sensitivity * v["attention"],
                       "attention": v["attention"], "l2_share": v["l2_share"],
                       "execs": v["execs"]}
                      for (f, n), v in sorted(lines.items())],
        })
    exe = Path(argv[0])
    return {
        "format": FORMAT,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "intercore": __version__,
        "program": {"path": str(exe.resolve()), "argv": list(argv),
                    "sha256": _sha256(exe) if exe.is_file() else None},
        "model": model,
        "regions": sorted(out, key=lambda r: -r["sensitivity"]),
    }


def _span(lines: dict[tuple[str, int], dict[str, float]]) -> dict[str, Any] | None:
    """The file holding most of the region's executions, and its first and last line."""
    if not lines:
        return None
    by_file: dict[str, int] = defaultdict(int)
    for (f, _), v in lines.items():
        by_file[f] += int(v["execs"])
    main = max(by_file, key=by_file.get)
    numbers = [n for f, n in lines if f == main]
    return {"file": main, "lines": [min(numbers), max(numbers)]}


def write_json(doc: dict[str, Any], path: Path) -> None:
    outputs.write_text(path, json.dumps(doc, indent=2) + "\n")


@lru_cache(maxsize=1)
def _template() -> jinja2.Template:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(Path(__file__).with_name("templates")),
                             autoescape=True, undefined=jinja2.StrictUndefined)
    return env.get_template("heatmap.html.j2")


def _colour(w: float) -> str:
    """White to red for 0..1."""
    w = min(max(w, 0.0), 1.0)
    g = int(255 - 175 * w)
    return f"rgb(255,{g},{g})"


def render_html(doc: dict[str, Any], read_source=None) -> str:
    """The page: a table of regions, then every source file the regions' lines are in, each
    line shaded by its weight (the largest over regions sharing it)."""
    read = read_source or (lambda p: Path(p).read_text(errors="replace"))
    weights: dict[str, dict[int, float]] = defaultdict(dict)
    tips: dict[str, dict[int, list[str]]] = defaultdict(lambda: defaultdict(list))
    for r in doc["regions"]:
        for ln in r["lines"]:
            w = weights[ln["file"]]
            w[ln["line"]] = max(w.get(ln["line"], 0.0), ln["weight"])
            tips[ln["file"]][ln["line"]].append(
                f"{r['region']}: weight {ln['weight']:.2f}, attention {ln['attention']:.2f}, "
                f"L2 share {ln['l2_share']:.2f}")
    files = []
    for path in sorted(weights):
        top = max(weights[path].values()) or 1.0
        try:
            text = read(path).splitlines()
        except OSError:
            files.append({"path": path, "missing": True, "lines": []})
            continue
        rows = []
        for n, src in enumerate(text, 1):
            w = weights[path].get(n)
            rows.append({"n": n, "text": src,
                         "bg": _colour(w / top) if w is not None else "transparent",
                         "tip": "; ".join(tips[path].get(n, []))})
        files.append({"path": path, "missing": False, "lines": rows})
    return _template().render(doc=doc, files=files, escape=html.escape)


def write_html(doc: dict[str, Any], path: Path) -> None:
    outputs.write_text(path, render_html(doc))
