"""Trace a program and turn each of its marked regions into RegionFeatures."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Sequence

from ..base.sample import TOTAL_REGION
from .binary import Binary
from .features import RegionFeatures, region_features, region_tokens
from .hierarchy import Hierarchy
from .tracer import Trace, check_markers, trace

WARMUP_REPS = 1  # repetitions simulated before the counted one: caches start warm
WINDOW = 64      # consecutive dynamic instructions kept per region for the window ablation


class _Resolver:
    """Run-time PC -> (link-time address, instruction, source, function, is marker), through
    the objects the tracer saw mapped."""

    def __init__(self, t: Trace, main: Binary):
        self.trace = t
        self.binaries: dict[str, Binary | None] = {}
        target = t.main_object()
        if target:
            self.binaries[target.path] = main
        self.markers = {m.address for m in main.markers}
        self.main_path = target.path if target else None

    def _binary(self, path: str) -> Binary | None:
        if path not in self.binaries:
            try:
                self.binaries[path] = Binary(Path(path))
            except Exception:  # an object we cannot read (vdso, deleted file): no decode
                self.binaries[path] = None
        return self.binaries[path]

    def __call__(self, pc: int):
        obj = self.trace.object_at(pc)
        if obj is None:
            return pc, None, None, None, False
        addr = pc - obj.bias
        binary = self._binary(obj.path)
        if binary is None:
            return addr, None, None, None, False
        line = binary.source_line(addr)
        return (addr, binary.insn(addr), f"{line.file}:{line.line}" if line else None,
                binary.function_at(addr),
                obj.path == self.main_path and addr in self.markers)


def region_names(stdout: str) -> dict[int, str]:
    """Names from a victim driver's ready line (docs/native-contract.md), if it printed one."""
    for line in stdout.splitlines():
        if line.startswith("{") and '"ready"' in line:
            try:
                ready = json.loads(line)
            except ValueError:
                continue
            return {int(r["id"]): str(r["name"]) for r in ready.get("regions", [])}
    return {}


def _window(stats, resolve) -> dict[str, list] | None:
    """The sampled dynamic window as instruction types, serving levels and stride buckets."""
    w = stats.window
    if not w or not w.get("pc"):
        return None
    kinds = []
    for pc in w["pc"]:
        _, static, _, _, marker = resolve(pc)
        kinds.append("<mark>" if marker else static.token if static else "<unk>")
    return {"kind": kinds, "level": list(w["level"]), "stride": list(w["stride"])}


def extract(argv: Sequence[str], hierarchy: Hierarchy, *, skip: int = 0, runs: int = 1,
            include_total: bool = True, timeout: float | None = None, window: int = WINDOW,
            on_run=None) -> tuple[list[RegionFeatures], Trace]:
    """Trace argv (`runs` - 1 warm-up runs, then its first repetitions `skip` simulated but
    not counted; tracer.trace) and describe every region it entered, named as the program
    names them (a victim driver's ready line, a user's ic_user_regions()); the victim driver's
    "total" only with include_total. Each region also keeps one uniformly drawn window of
    `window` dynamic instructions."""
    main = check_markers(Path(argv[0]))
    t = trace(argv, hierarchy, skip=skip, runs=runs, timeout=timeout, window=window,
              on_run=on_run)
    names = {**t.declared, **region_names(t.stdout)}
    resolve = _Resolver(t, main)
    by_region: dict[int, list] = {}
    for x in t.insns:
        by_region.setdefault(x.region, []).append(x)
    out = []
    for rid, stats in sorted(t.regions.items()):
        if not stats.counted_entries or (names.get(rid) == TOTAL_REGION and not include_total):
            continue
        tokens = region_tokens(by_region.get(rid, []), resolve)
        f = region_features(stats, names.get(rid, f"region {rid}"), tokens)
        win = _window(stats, resolve)
        out.append(replace(f, extra={**f.extra, "window": win}) if win else f)
    return out, t


def victim_argv(exe: Path, reps: int = WARMUP_REPS + 1) -> list[str]:
    """A generated program (or ic-victim kind) run for tracing: warm-up plus one counted."""
    return [str(exe), "gen", "--reps", str(reps)]
