"""`intercore dossier diff A B`: two dossiers (two boards, two kernels, two dates) side by side.

Every configuration setting that differs is listed (compare.entries), and every figure whose
value in one lies outside the interval the other states for it, or that one of them lacks. A
figure that neither states an interval for is flagged when its values differ at all: there is
no interval to say the change is within its noise.
"""

from __future__ import annotations

from typing import Any

from . import compare


def _row(fid: str, a: dict[str, Any] | None, b: dict[str, Any] | None) -> dict[str, Any]:
    if a is None or b is None:
        return {"id": fid, "flag": "only in A" if b is None else "only in B",
                "a": a and a["value"], "b": b and b["value"], "quantities": []}
    b_by_a, a_by_b = compare.against(a, b), compare.against(b, a)
    rows = [{"quantity": qa["quantity"], "a": qa["recorded"], "a_interval": qa["interval"],
             "b": qa["measured"], "b_interval": qb["interval"],
             "b_in_a": qa["inside"], "a_in_b": qb["inside"]}
            for qa, qb in zip(b_by_a["quantities"], a_by_b["quantities"])]
    if any(False in (r["b_in_a"], r["a_in_b"]) for r in rows):
        flag = "outside the other's interval"
    elif not any(r["b_in_a"] is not None or r["a_in_b"] is not None for r in rows) \
            and a["value"] != b["value"]:
        flag = "changed, no interval stated to judge it"
    else:
        flag = None
    return {"id": fid, "flag": flag, "a": a["value"], "b": b["value"], "quantities": rows,
            "regime": {"a": a["regime"], "b": b["regime"]}}


def diff(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    fa = {f["id"]: f for f in a["figures"]}
    fb = {f["id"]: f for f in b["figures"]}
    ids = list(fa) + [i for i in fb if i not in fa]
    figures = [_row(i, fa.get(i), fb.get(i)) for i in ids]
    settings = compare.changed(compare.entries(a), compare.entries(b))
    flagged = [f["id"] for f in figures if f["flag"]]
    return {"a": _identity(a), "b": _identity(b), "settings": settings, "figures": figures,
            "flagged": flagged,
            "headline": f"{len(settings)} configuration setting(s) differ; {len(flagged)} of "
                        f"{len(figures)} figures flagged"}


def _identity(d: dict[str, Any]) -> dict[str, Any]:
    return {"system": d["system"]["name"], "host_fingerprint": d["host_fingerprint"],
            "tool_version": d["tool_version"], "generated": d.get("generated")}
