"""dossier.json as one self-contained HTML page: inline style, no script, no external URL, so it
opens offline and can be archived as one file. Every value is escaped: task names, paths and
the kernel command line come from the user and the host."""

from __future__ import annotations

import json
from html import escape
from typing import Any, Iterable

STYLE = """
body { font-family: sans-serif; margin: 2em; max-width: 80em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.9em; }
th, td { border: 1px solid #bbb; padding: 0.25em 0.5em; text-align: left; vertical-align: top; }
th { background: #eee; }
.flag { color: #a40; } .ok { color: #070; } .bad { color: #b00; }
code { font-size: 0.85em; word-break: break-all; }
"""


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        return ", ".join(_cell(v) for v in value)
    if isinstance(value, dict):
        return escape(json.dumps(value, sort_keys=True))
    return escape(str(value))


def _table(headers: Iterable[str], rows: Iterable[Iterable[str]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _value(value: Any) -> str:
    """A figure's value as a reader takes it in: `name value` pairs, numbers to four
    significant digits, an interval in brackets (dossier.json keeps every digit)."""
    if not isinstance(value, dict):
        return _cell(value)
    parts = []
    for name, v in value.items():
        pair = isinstance(v, (list, tuple)) and len(v) == 2 and \
            all(x is None or isinstance(x, (int, float)) for x in v)
        shown = f"[{_cell(v[0])}, {_cell(v[1])}]" if pair else _cell(v)
        parts.append(f"{escape(name.replace('_', ' '))} {shown}")
    return "; ".join(parts)


def _figure(fig: dict[str, Any]) -> str:
    """A figure's value, its regime (flagged when no shared-regime pair supports it) and
    where it came from."""
    p = fig["provenance"]
    store = p["store"]
    flag = f' <span class="flag">&#9873; {escape(fig["flag"])}</span>' if fig["flag"] else ""
    return (f"{_value(fig['value'])}<br>regime: {escape(fig['regime'])}{flag}<br><small>"
            f"store invocation {_cell(store['invocation_id'])}, runs {_cell(store['runs'])}"
            f"</small>")


def _configuration(sec: dict[str, Any]) -> str:
    rows = [[escape(name), _cell(s["value"]), f"<code>{s['sha256']}</code>"]
            for name, s in sec["settings"].items()]
    return (f"<p>host fingerprint <code>{escape(sec['fingerprint'])}</code></p>"
            + _table(("setting", "value", "sha256"), rows))


def _channels(sec: dict[str, Any]) -> str:
    p = sec["platform"]
    val = sec["validation"]
    head = (f"<p>model {escape(p['name'])} (<code>{escape(p['source'])}</code>, sha256 "
            f"<code>{p['sha256']}</code>): {_cell(sec['counts'])}; {sec['free']} "
            "interference-free sets.</p>")
    if "refused" in val:
        head += f"<p class='flag'>on-host validation refused: {escape(val['refused'])}</p>"
    else:
        head += f"<p>on-host validation: regime {escape(val['regime'])}, {_cell(val['counts'])}</p>"
    rows = []
    for r in sec["rows"]:
        v = r["verdict"]
        verdict = _figure(v) if "provenance" in v else f"{escape(v['verdict'])}: {escape(v['why'])}"
        m = r["mitigation"]
        rows.append([escape(r["id"]), _cell(r["transactions"]), _cell(r["services"]),
                     escape(r["rule"]), verdict,
                     f"<b>{escape(m['by'])}</b>: {escape(m['why'])}"])
    between = _table(("channel", "pairs", "mitigation"),
                     [[escape(c["channel"]), _cell(c["pairs"]),
                       f"<b>{escape(c['mitigation'])}</b>: {escape(c['reason'])}"]
                      for c in sec.get("between_tasks", [])]) \
        if sec.get("between_tasks") else "<p>the plan found no channel between the tasks</p>"
    calibration = _table(("model says", "pair", "measured (Δ, CI, n)"),
                         [[escape(f["value"]["expected"]), escape(f["id"]), _figure(f)]
                          for f in sec["calibration"]])
    contradictions = "".join(f"<p class='bad'>contradiction: {escape(c)}</p>"
                             for c in sec["contradictions"])
    return (head + "<h3>Between the system's tasks, as the plan covers them</h3>" + between
            + "<h3>Every channel of the model</h3>"
            + _table(("id", "transactions", "services", "rule", "verdict (Δ, CI, n)",
                      "mitigation"), rows)
            + "<h3>Calibration: every verdict of the model beside what was measured</h3>"
            + calibration + contradictions)


def _timing(sec: dict[str, Any]) -> str:
    out = []
    if sec["provisional"]:
        out.append(f"<p class='flag'>provisional matrix: {escape('; '.join(sec['notes']))}</p>")
    for t in sec["tasks"]:
        out.append(f"<h3>{escape(t['task'])}</h3>")
        out.append(_table(("beside", "degradation, n, misses"),
                          [[escape(f["id"].split("/")[-1]), _figure(f)] for f in t["beside"]]))
        if t.get("regions"):
            out.append(_table(("region", "beside", "Δ", "bound", "n", "from"),
                              [[escape(c["region"]), escape(c["beside"]), _cell(c["value"]),
                                _cell(c["bound"]), _cell(c["n"]),
                                f"{escape(c['provenance'])}: {escape(c['source'])}"]
                               for c in t["regions"]]))
        out.append(_worst_found(t.get("worst_found")))
        if t["scenarios"] is None:
            out.append(f"<p class='flag'>not run: {escape(t['why_not'] or '')}</p>")
            continue
        out.append(f"<p>Solo / Interference / Protected beside {escape(t['noise'])}</p>")
        out.append(_table(("scenario", "n, median, p99, max (ms), misses [95% CI]"),
                          [[escape(s), _figure(f)] for s, f in t["scenarios"].items()]))
        if t["protection_refused"]:
            out.append(f"<p class='bad'>Protected is not evidence of protection: "
                       f"{escape(t['protection_refused'])}</p>")
        out.extend(f"<p>note: {escape(n)}</p>" for n in t["notes"])
    return "".join(out)


def _worst_found(w: dict[str, Any] | None) -> str:
    """The search's worst aggressor for one task, its Δ and its regions' (or why none)."""
    if w is None:
        return ""
    if "why_not" in w:
        return f"<p>worst aggressor: {escape(w['why_not'])}</p>"
    head = (f"<p>worst aggressor, searched among {w['candidates']} candidates on CPUs "
            f"{_cell(w['aggressor_cpus'])}" + (f", saved as <code>{escape(w['saved_as'])}</code>"
                                               if w["saved_as"] else "") + "</p>")
    if w["refused"]:
        head += f"<p class='flag'>search refused: {escape(w['refused'])}</p>"
    if "figure" not in w:
        return head
    rows = [[escape(f["id"].split("/", 2)[-1] if f["id"].count("/") == 2 else "whole run"),
             _figure(f)] for f in [w["figure"], *w["regions"]]]
    return head + _table(("region", "Δ beside the worst aggressor found"), rows)


def _plan(sec: dict[str, Any]) -> str:
    groups = _table(("group", "tasks", "monitor", "freezes while active", "in regions"),
                    [[escape(g["name"]), _cell(g["tasks"]), escape(g["monitor"]),
                      _cell(g["freeze_while_active"]),
                      _cell(g.get("windows")) if g.get("windows") else "whole jobs"
                      if g["freeze_while_active"] else "-"] for g in sec["groups"]])
    decisions = _table(("a", "b", "I", "why"),
                       [[escape(d["a"]), escape(d["b"]), f"{d['interference']:.4f}",
                         escape(d["why"])] for d in sec["decisions"]]) \
        if sec["decisions"] else "<p>no pair separated</p>"
    warnings = "".join(f"<p class='flag'>warning ({escape(w['code'])}): "
                       f"{escape(w['message'])}</p>" for w in sec["warnings"])
    return groups + decisions + warnings


def render(d: dict[str, Any]) -> str:
    s = d["sections"]
    regimes = d["regimes"]
    inputs = _table(("file", "sha256"), [[f"<code>{escape(k)}</code>", f"<code>{v}</code>"]
                                         for k, v in d["inputs"].items()])
    steps = _table(("step", "artefact", "sha256", "finished"),
                   [[escape(n), escape(st["artefact"]), f"<code>{st['sha256']}</code>",
                     escape(st["finished"])] for n, st in d["steps"].items()])
    body = [
        f"<h1>Interference dossier: {escape(d['system']['name'])}</h1>",
        f"<p><i>{escape(d['what_this_is'])}</i></p>",
        f"<p>intercore {escape(d['tool_version'])}, host <code>{escape(d['host_fingerprint'])}"
        f"</code>, generated {escape(d['generated'])}; store <code>{escape(d['store']['db'])}"
        f"</code> invocations {_cell(d['store']['invocations'])}</p>",
        f"<p class='{'ok' if not d['flagged'] else 'flag'}'><b>{escape(d['headline'])}</b></p>",
        "<h2>Cache-sharing regimes</h2>",
        _table(("step", "regime"), [["matrix (seconds per regime)",
                                     _cell(regimes["matrix_seconds"])],
                                    ["validation", escape(regimes["validation"])],
                                    ["search (blocks per regime)",
                                     _cell(regimes.get("search_blocks") or None)],
                                    ["protection", escape(regimes["protection"])]]),
        "<h2>Inputs</h2>", inputs, "<h2>Steps</h2>", steps,
        "<h2>Configuration (MCP_Resource_Usage_1)</h2>", _configuration(s["configuration"]),
        "<h2>Interference channels and mitigations (MCP_Resource_Usage_3)</h2>",
        _channels(s["channels"]),
        "<h2>Capacity against demand (MCP_Resource_Usage_4)</h2>",
        f"<p class='flag'>{escape(s['capacity']['refused'])}</p>",
        "<h2>Timing under interference (MCP_Software_1)</h2>", _timing(s["timing"]),
        f"<h2>Plan (Algorithm 1, θ = {s['plan']['theta']:g})</h2>", _plan(s["plan"]),
    ]
    return ("<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            f"<title>dossier {escape(d['system']['name'])}</title><style>{STYLE}</style>"
            "</head><body>" + "\n".join(body) + "</body></html>\n")
