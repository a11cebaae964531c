"""What two measurements of one figure, or two configurations, have in common: the one rule that
`dossier verify` (a figure re-measured here against the dossier's) and `dossier diff` (two
dossiers side by side) both apply.

A figure is judged only by the intervals the dossier states for it: a validation Δ by its 95 %
CI, a scenario's deadline-miss ratio by its 95 % interval. A quantity stated without one (the
matrix's max ratio, a p99) is shown side by side but cannot be reproduced "within its
interval", so a figure with no interval at all is never counted as reproduced: a missing
value is a failure, never a pass.
"""

from __future__ import annotations

import os
from typing import Any

from ..host.config import value_hash

# (quantity, the field that states its interval), as the dossier's figures carry them.
INTERVALS = (("delta", "delta_ci"), ("miss_ratio", "miss_ratio_ci95"))

REPRODUCED, NOT_REPRODUCED, NO_INTERVAL, MISSING = (
    "reproduced", "not reproduced", "no interval stated", "missing")


def _interval(value: dict[str, Any], field: str) -> tuple[float, float] | None:
    ci = value.get(field)
    if not isinstance(ci, (list, tuple)) or len(ci) != 2 or None in ci:
        return None
    return float(ci[0]), float(ci[1])


def within(x: Any, interval: tuple[float, float] | None) -> bool | None:
    """Whether x lies in the interval (bounds included); None when there is no interval."""
    if interval is None:
        return None
    return isinstance(x, (int, float)) and interval[0] <= x <= interval[1]


def quantities(figure: dict[str, Any]) -> list[tuple[str, Any, tuple[float, float] | None]]:
    """The figure's judged quantities: (name, value, stated interval or None)."""
    value = figure["value"]
    if not isinstance(value, dict):
        return []
    return [(q, value.get(q), _interval(value, field)) for q, field in INTERVALS if q in value]


def against(recorded: dict[str, Any], measured: dict[str, Any] | None) -> dict[str, Any]:
    """`measured` judged by `recorded`'s intervals: each quantity inside or not, and the
    figure's verdict."""
    rows = []
    for name, old, interval in quantities(recorded):
        new = None if measured is None else measured["value"].get(name)
        rows.append({"quantity": name, "recorded": old,
                     "interval": list(interval) if interval else None, "measured": new,
                     "inside": within(new, interval)})
    judged = [r for r in rows if r["inside"] is not None]
    if measured is None:
        verdict = MISSING
    elif not judged:
        verdict = NO_INTERVAL
    else:
        verdict = REPRODUCED if all(r["inside"] for r in judged) else NOT_REPRODUCED
    return {"id": recorded["id"], "what": recorded["what"], "verdict": verdict,
            "quantities": rows, "recorded": recorded["value"],
            "measured": None if measured is None else measured["value"],
            "regime": {"recorded": recorded["regime"],
                       "measured": None if measured is None else measured["regime"]}}


Entries = dict[str, tuple[Any, str]]  # setting -> (its value, the sha256 that compares it)


def host(fingerprint: str, settings: dict[str, dict[str, Any]]) -> Entries:
    """A host's recorded configuration (config.snapshot's, or a dossier's copy of it)."""
    out = {f"host.{name}": (s["value"], s["sha256"]) for name, s in settings.items()}
    return {"host.fingerprint": (fingerprint, value_hash(fingerprint)), **out}


def entries(dossier: dict[str, Any]) -> Entries:
    """Every configuration setting a dossier records: the host's (fingerprint, kernel, command
    line, governors, SMT, cgroups, resctrl), the run's own (tool version, θ, sizes,
    mitigations, the content of each input file) and the platform model's channel table."""
    system = dossier["system"]
    channels = dossier["sections"]["channels"]
    table = [{k: row.get(k) for k in ("id", "transactions", "initiators", "services", "rule")}
             for row in channels["rows"]]
    own = {"tool_version": dossier["tool_version"], "system.theta": system["theta"],
           "system.mitigations": system["mitigations"], "system.quick": system["quick"],
           **{f"system.sizes.{k}": v for k, v in system["sizes"].items()},
           "platform.name": channels["platform"]["name"],
           "platform.channels": {"counts": channels["counts"], "free": channels["free"],
                                 "table": table}}
    # Inputs by their path below the system file's directory: two checkouts (two boards)
    # keep the same files at different absolute paths. The platform model is compared by
    # what it says (its channel table), not by its bytes: a model `detect` wrote carries the
    # time it was detected, so two detections of one host never have the same bytes.
    base = os.path.dirname(system["source"])
    inputs = {f"input.{os.path.relpath(path, base)}": (sha, sha)
              for path, sha in dossier["inputs"].items()
              if path != channels["platform"]["source"]}
    return (host(dossier["host_fingerprint"], dossier["sections"]["configuration"]["settings"])
            | {k: (v, value_hash(v)) for k, v in own.items()} | inputs)


def changed(a: Entries, b: Entries) -> list[dict[str, Any]]:
    """Every setting whose value differs between a and b, or that only one records."""
    return [{"setting": name, "a": a[name][0] if name in a else None,
             "b": b[name][0] if name in b else None}
            for name in sorted(set(a) | set(b))
            if (a.get(name) or (None, None))[1] != (b.get(name) or (None, None))[1]]
