"""The code heatmap: which regions of a program, and which of their source lines, are
predicted to slow down under interference, as `heatmap.json` (the compiler and Algorithm 1
read it; docs/learn.md has the schema) and an HTML page of the user's source.

The colour scale is absolute in Δ: 1 is white and SCALE_TOP (and above) full red, the same on
every page, so a program predicted flat is painted white however its regions compare. A
predicted Δ below 1 (faster under interference: no model output can mean that, it is the
error of a prediction near 1) is shown as 1; the JSON and the tooltip keep the raw value.

Per region: `delta` and `interval` [Δ̂, Δ̂_safe] as predicted (the compiler's cost model
reads these), `delta_shown` = max(Δ̂, 1), `weight` the region's share of the program's traced
instructions (the trace counts instructions, not time: a proxy for its share of the run),
`carried` = weight × (delta_shown − 1), the share of the run the predicted slowdown adds.

Only the user's code is shown and shares attention: intercore's own instrumentation (the
marker instructions, the kit's headers inlined into the region, e.g. the cycle-counter read
of ic_arch.h) and code without a source line (libc, the kit's libraries, the dynamic
loader) are left out, and each region's attention and L2 shares are taken over its user
lines alone. A line's `delta_shown` is 1 + the region's excess × the line's attention over
that of the region's most attended line (the line the model blames for the region's
slowdown carries all of it); its `weight` is the region's `carried` times the line's share
of the attention: what the page sorts files and lines by, so it opens on the user's line
that carries the most predicted slowdown.
"""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping, Sequence

import jinja2
import numpy as np

from .. import __version__
from ..base import outputs
from ..base.artefact import file_sha256
from ..base.native import kit_dir
from .features import SPECIAL, MARK, RegionFeatures, Token

FORMAT = "intercore.heatmap/1"
SCALE_TOP = 2.0  # Δ painted full red; a region that doubles its time is as bad as it gets
LEGEND = (1.0, 1.05, 1.1, 1.25, 1.5, SCALE_TOP)


@lru_cache(maxsize=1)
def _kit_headers() -> tuple[Path, frozenset[str]]:
    """The kit's include directory and its header names: a user may copy ic_mark.h and
    ic_arch.h into their own tree (docs/learn.md says they can), and they stay ours."""
    include = (kit_dir() / "include").resolve()
    names = frozenset(p.name for p in include.iterdir()) if include.is_dir() else frozenset()
    return include, names


def is_users(t: Token) -> bool:
    """A token of the user's own code: it has a source line, and neither the line nor the
    instruction is intercore's instrumentation."""
    if t.kind == SPECIAL[MARK] or not t.source:
        return False
    file = Path(t.source.rpartition(":")[0])
    include, names = _kit_headers()
    return file.name not in names and not file.resolve().is_relative_to(include)


def shown(delta: float) -> float:
    return max(float(delta), 1.0)


def _shares(values: np.ndarray) -> np.ndarray:
    total = values.sum()
    return values / total if total > 0 else np.zeros_like(values)


def _region(r: RegionFeatures, med: float, safe: float, received: np.ndarray, weight: float,
            measured: Mapping[str, Any] | None) -> tuple[dict[str, Any], float]:
    """The region's entry, and the attention its instrumentation tokens received."""
    att = np.asarray(received[1:1 + len(r.tokens)], float)
    users = np.array([is_users(t) for t in r.tokens], bool)
    left_out = float(att[~users].sum() / att.sum()) if att.sum() > 0 else 0.0
    att = _shares(np.where(users, att, 0.0))
    l2 = _shares(np.array([sum(t.served[1:]) if u else 0 for t, u in zip(r.tokens, users)],
                          float))
    excess = shown(med) - 1.0
    carried = weight * excess
    lines: dict[tuple[str, int], dict[str, float]] = defaultdict(
        lambda: {"attention": 0.0, "l2_share": 0.0, "execs": 0})
    functions: list[str] = []
    for t, a, share, u in zip(r.tokens, att, l2, users):
        if not u or t.source is None:  # a token without a source line has no row to colour
            continue
        if t.function and t.function not in functions:
            functions.append(t.function)
        file, _, number = t.source.rpartition(":")
        row = lines[(file, int(number))]
        row["attention"] += float(a)
        row["l2_share"] += float(share)
        row["execs"] += t.execs
    top = max((v["attention"] for v in lines.values()), default=0.0)
    entry = {
        "region": r.name, "id": r.region,
        "delta": float(med), "delta_safe": float(safe), "interval": [float(med), float(safe)],
        "delta_shown": shown(med), "delta_safe_shown": shown(safe),
        "weight": weight, "carried": carried,
        "source": _span(lines),
        "instructions": r.insns // max(r.entries, 1),
        "l2_accesses": r.l2_accesses // max(r.entries, 1),
        "functions": functions,
        "measured": dict(measured) if measured else None,
        "lines": [{"file": f, "line": n,
                   "delta_shown": 1.0 + excess * (v["attention"] / top if top > 0 else 0.0),
                   "weight": carried * v["attention"], "attention": v["attention"],
                   "l2_share": v["l2_share"], "execs": v["execs"]}
                  for (f, n), v in sorted(lines.items())],
    }
    return entry, left_out


def build(argv: Sequence[str], regions: Sequence[RegionFeatures], med: np.ndarray,
          safe: np.ndarray, received: np.ndarray, model: dict[str, Any],
          measured: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """`measured`: region name -> a measured Δ of this binary (from `intercore measure run`),
    shown beside the prediction."""
    per_entry = [r.insns / max(r.entries, 1) for r in regions]
    total = sum(per_entry) or 1.0
    out, left_out = [], {}
    for i, r in enumerate(regions):
        entry, share = _region(r, med[i], safe[i], received[i], per_entry[i] / total,
                               (measured or {}).get(r.name))
        out.append(entry)
        left_out[r.name] = share
    exe = Path(argv[0])
    out.sort(key=lambda e: (-e["delta_shown"], -e["delta_safe_shown"], -e["carried"]))
    return {
        "format": FORMAT,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "intercore": __version__,
        "program": {"path": str(exe.resolve()), "argv": list(argv),
                    "sha256": file_sha256(exe) if exe.is_file() else None},
        "model": model,
        "scale": {"quantity": "predicted median Δ, below 1 shown as 1", "white": 1.0,
                  "red": SCALE_TOP},
        "instrumentation_attention": left_out,
        "files": _files(out),
        "regions": out,
    }


def _files(regions: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The user's files, the one carrying the most predicted slowdown first (then the most
    executed: a flat program still opens on its busiest code), each with its hottest line."""
    weight: dict[str, float] = defaultdict(float)
    execs: dict[str, int] = defaultdict(int)
    best: dict[str, tuple[float, int, int]] = {}
    for r in regions:
        for ln in r["lines"]:
            f = ln["file"]
            weight[f] += ln["weight"]
            execs[f] += ln["execs"]
            key = (ln["weight"], ln["execs"], -ln["line"])
            if f not in best or key > best[f]:
                best[f] = key
    order = sorted(weight, key=lambda f: (-weight[f], -execs[f], f))
    return [{"file": f, "weight": weight[f], "execs": execs[f], "hottest_line": -best[f][2]}
            for f in order]


def _span(lines: dict[tuple[str, int], dict[str, float]]) -> dict[str, Any] | None:
    """The file holding most of the region's executions, and its first and last line."""
    if not lines:
        return None
    by_file: dict[str, int] = defaultdict(int)
    for (f, _), v in lines.items():
        by_file[f] += int(v["execs"])
    main = max(by_file, key=lambda f: by_file[f])
    numbers = [n for f, n in lines if f == main]
    return {"file": main, "lines": [min(numbers), max(numbers)]}


def write_json(doc: dict[str, Any], path: Path) -> None:
    outputs.write_text(path, json.dumps(doc, indent=2) + "\n")


@lru_cache(maxsize=1)
def _template() -> jinja2.Template:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(Path(__file__).with_name("templates")),
                             autoescape=True, undefined=jinja2.StrictUndefined)
    env.filters["colour"] = colour
    return env.get_template("heatmap.html.j2")


def _on_scale(delta: float) -> float:
    return min(max((float(delta) - 1.0) / (SCALE_TOP - 1.0), 0.0), 1.0)


def colour(delta: float) -> str:
    """White at Δ ≤ 1 to full red at SCALE_TOP and above: the same Δ, the same colour, on every
    page."""
    g = int(round(255 - 175 * _on_scale(delta)))
    return f"rgb(255,{g},{g})"


def scale_bar(delta: float, width: int = 10) -> str:
    """The colour scale as a terminal bar: empty at Δ ≤ 1, full at SCALE_TOP."""
    return "█" * round(width * _on_scale(delta)) or "·"


def _tip(r: dict[str, Any], ln: dict[str, Any]) -> str:
    raw = "" if r["delta"] >= 1 else f" (predicted {r['delta']:.3f}, shown as 1)"
    return (f"{r['region']}: line Δ {ln['delta_shown']:.3f}, region Δ̂ "
            f"{r['delta_shown']:.3f}{raw}, attention {ln['attention']:.2f}, "
            f"L2 share {ln['l2_share']:.2f}")


def render_html(doc: dict[str, Any], read_source=None) -> str:
    """The page: the scale, a table of regions, then the user's source files, the one carrying
    the most predicted slowdown first, each line shaded by its Δ (the largest over regions
    sharing it)."""
    read = read_source or (lambda p: Path(p).read_text(errors="replace"))
    deltas: dict[str, dict[int, float]] = defaultdict(dict)
    tips: dict[str, dict[int, list[str]]] = defaultdict(lambda: defaultdict(list))
    for r in doc["regions"]:
        for ln in r["lines"]:
            d = deltas[ln["file"]]
            d[ln["line"]] = max(d.get(ln["line"], 1.0), ln["delta_shown"])
            tips[ln["file"]][ln["line"]].append(_tip(r, ln))
    files = []
    for i, f in enumerate(doc["files"]):
        path = f["file"]
        try:
            text = read(path).splitlines()
        except OSError:
            files.append({"path": path, "missing": True, "lines": []})
            continue
        rows = [{"n": n, "text": src, "anchor": i == 0 and n == f["hottest_line"],
                 "bg": colour(deltas[path][n]) if n in deltas[path] else "transparent",
                 "tip": "; ".join(tips[path].get(n, []))}
                for n, src in enumerate(text, 1)]
        files.append({"path": path, "missing": False, "lines": rows,
                      "hottest_line": f["hottest_line"]})
    legend = [{"delta": d, "bg": colour(d)} for d in LEGEND]
    return _template().render(doc=doc, files=files, legend=legend, top=SCALE_TOP)


def write_html(doc: dict[str, Any], path: Path) -> None:
    outputs.write_text(path, render_html(doc))
