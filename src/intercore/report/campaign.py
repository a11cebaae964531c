"""The campaign report: what ran, what it showed, and everything that weakens the evidence.

Rendered from the results model (campaign/results.py: what the store holds, the statistics
recomputed from the raw samples and the warnings), never from the runner or from numbers
frozen at run time.
"""

from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from dataclasses import replace
from typing import Any, Iterable, Mapping, Sequence

from ..campaign import results as campaign_results
from ..campaign.results import CampaignResults, HostColumn, host_columns
from ..base.sample import TOTAL_REGION
from ..campaign.stats import TaskStats
from ..measure.harness.stats import min_n_for
from . import plots
from .evidence import evidence_figure
from .html import Figure, KeyValues, Notes, Preformatted, Section, Table, Text

NS_PER_MS = 1e6
NO_MITIGATION = "none"


def _ms(ns: float | None) -> float | None:
    return None if ns is None else ns / NS_PER_MS


def _ci(ci: Sequence[float], scale: float = 1.0) -> str:
    lo, hi = ci
    if math.isnan(lo):
        return "insufficient n"
    return f"[{lo / scale:.4g}, {hi / scale:.4g}]"


def _tail(value: float | None, q: float) -> str | float:
    return f"insufficient n (< {min_n_for(q)})" if value is None else round(value / NS_PER_MS, 4)


def mitigation_label(setup: Mapping[str, Any]) -> str:
    """The mitigation axis of a setup: its critical guest's colours and every budget."""
    parts = []
    if setup.get("colour_count") is not None:
        parts.append(f"cc{setup['colour_count']}")
    for guest, b in sorted(setup.get("bandwidth", {}).items()):
        period = f"/{b['period_us']}us" if b.get("period_us") else ""
        parts.append(f"{guest} {b['budget']}{'%' if b['unit'] == 'percent' else 'MB/s'}{period}")
    return " ".join(parts) or NO_MITIGATION


def _natural(text: str) -> tuple:
    """Sort key that orders cc2 before cc10."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text))


def _contention_label(setup: Mapping[str, Any]) -> str | None:
    c = setup.get("contention")
    return None if c is None else f"{c['op']} {c['size_h']}"


# --- figures --------------------------------------------------------------------------------

def _slowdown_chart(stats: Sequence[TaskStats], setups: Mapping[str, Mapping[str, Any]],
                    configs: Sequence[str], title: str) -> Figure | None:
    """Bars: x = critical task, colour = configuration; slowdown of the total with its CI."""
    rows = [t for t in stats if t.region == TOTAL_REGION and t.slowdown is not None
            and setups[t.setup]["config"] in configs]
    if not rows:
        return None
    tasks = list(dict.fromkeys(setups[t.setup]["task"] for t in rows))
    cell = {(setups[t.setup]["config"], setups[t.setup]["task"]): t.slowdown for t in rows}
    series = [c for c in configs if any((c, task) in cell for task in tasks)]

    def grid(get) -> list[list[float]]:
        return [[get(cell[(c, task)]) if (c, task) in cell else math.nan for task in tasks]
                for c in series]

    uri = plots.grouped_bars(tasks, series, grid(lambda s: s.value),
                             lo=grid(lambda s: s.ci[0]), hi=grid(lambda s: s.ci[1]),
                             ylabel="slowdown vs solo (median CPU time)", title=title,
                             reference=1.0)
    return Figure(uri, f"{title}: median(setup) / median(solo) of the critical task's total "
                       "thread CPU time; whiskers are 95% bootstrap CIs; dashed line = solo.")


def _slowdown_figures(stats: Sequence[TaskStats], setups: Mapping[str, Mapping[str, Any]]
                      ) -> list[Figure]:
    """Paper 001's three views: interference without mitigation (Fig 3), a mitigation alone
    (Fig 5), and each contention variant under every mitigation (Fig 6)."""
    configs = list(dict.fromkeys(s["config"] for s in setups.values()))
    first: dict[str, Mapping[str, Any]] = {}
    for s in setups.values():
        first.setdefault(s["config"], s)
    plain = [c for c in configs if first[c].get("contention") and
             mitigation_label(first[c]) == NO_MITIGATION]
    alone = [c for c in configs if not first[c].get("contention") and
             mitigation_label(first[c]) != NO_MITIGATION]
    figures = [_slowdown_chart(stats, setups, plain, "Interference, no mitigation"),
               _slowdown_chart(stats, setups, alone, "Mitigation alone, no interference")]
    measured = {setups[t.setup]["config"] for t in stats if t.slowdown is not None}
    by_variant: dict[str, list[str]] = defaultdict(list)
    for c in configs:
        label = _contention_label(first[c])
        if label is not None and c in measured:
            by_variant[label].append(c)
    for label, members in by_variant.items():
        if any(mitigation_label(first[c]) != NO_MITIGATION for c in members):
            figures.append(_slowdown_chart(stats, setups, members,
                                           f"Interference {label} under each mitigation"))
    return [f for f in figures if f is not None]


def _heatmaps(stats: Sequence[TaskStats], setups: Mapping[str, Mapping[str, Any]]
              ) -> list[Figure]:
    """Per task: access × buffer size against the mitigation axis when there is one, else
    access against buffer size."""
    rows = [t for t in stats if t.region == TOTAL_REGION and t.slowdown is not None
            and setups[t.setup].get("contention")]
    figures = []
    for task in dict.fromkeys(setups[t.setup]["task"] for t in rows):
        cells: dict[tuple[str, str], float] = {}
        keys = []
        for t in rows:
            s = setups[t.setup]
            if s["task"] != task or t.slowdown is None:  # rows have one: for the checker
                continue
            c = s["contention"]
            keys.append((c["op"], c["size"], c["size_h"], mitigation_label(s)))
            cells[(f"{c['op']} {c['size_h']}", mitigation_label(s))] = t.slowdown.value
        mitigations = sorted({k[3] for k in keys},
                             key=lambda m: (m != NO_MITIGATION, _natural(m)))
        if len(mitigations) > 1:
            row_labels = list(dict.fromkeys(f"{op} {h}" for op, _, h, _ in sorted(keys)))
            col_labels, xlabel = mitigations, "mitigation"
            grid = [[cells.get((r, c), math.nan) for c in col_labels] for r in row_labels]
            ylabel = "access × buffer size"
        else:
            row_labels = list(dict.fromkeys(op for op, _, _, _ in sorted(keys)))
            col_labels = list(dict.fromkeys(h for _, _, h, _ in sorted(keys, key=lambda k: k[1])))
            grid = [[cells.get((f"{r} {c}", mitigations[0]), math.nan) for c in col_labels]
                    for r in row_labels]
            xlabel, ylabel = "buffer size", "access"
        title = f"Slowdown of {task}"
        figures.append(Figure(
            plots.heatmap(row_labels, col_labels, grid, title=title, xlabel=xlabel,
                          ylabel=ylabel, colorbar="slowdown vs solo"),
            f"{title}: median slowdown of the total against its solo baseline "
            "(n/a: not run, skipped, or insufficient n)."))
    return figures


def _counter_figures(stats: Sequence[TaskStats], setups: Mapping[str, Mapping[str, Any]]
                     ) -> list[Figure]:
    rows = [t for t in stats if t.region == TOTAL_REGION and t.counters]
    figures = []
    for name in sorted({n for t in rows for n in t.counters}):
        have = [t for t in rows if name in t.counters]
        tasks = list(dict.fromkeys(setups[t.setup]["task"] for t in have))
        configs = list(dict.fromkeys(setups[t.setup]["config"] for t in have))
        cell = {(setups[t.setup]["config"], setups[t.setup]["task"]): t.counters[name]
                for t in have}
        values = [[cell.get((c, task), math.nan) for task in tasks] for c in configs]
        figures.append(Figure(
            plots.grouped_bars(tasks, configs, values, ylabel=f"median {name}",
                               title=f"Counter {name}"),
            f"Median of {name} per repetition of the critical task's total, per setup."))
    return figures


# --- tables ---------------------------------------------------------------------------------

STATS_COLUMNS = ("setup", "task", "region", "samples", "runs", "n", "min ms", "median ms",
                 "median 95% CI", "mean ms", "std ms", "CV", "p90 ms", "p99 ms", "p99.9 ms",
                 "max ms", "slowdown", "slowdown 95% CI", "max ratio", "paired Δ",
                 "paired Δ 95% CI", "paired max", "deadline misses")


def stats_rows(stats: Iterable[TaskStats], setups: Mapping[str, Mapping[str, Any]]
               ) -> list[list[Any]]:
    out = []
    for t in stats:
        s, sm = setups[t.setup], t.summary
        sd, pr, dm = t.slowdown, t.paired, t.misses
        out.append([
            t.setup, s["task"], t.region, t.condition, t.runs, sm.n, _ms(sm.min), _ms(sm.median),
            _ci(t.median_ci, NS_PER_MS), _ms(sm.mean), _ms(sm.std), sm.cv,
            _tail(sm.p90, 90), _tail(sm.p99, 99), _tail(sm.p999, 99.9), _ms(sm.max),
            None if sd is None else sd.value, None if sd is None else _ci(sd.ci),
            None if sd is None else sd.max_ratio, None if pr is None else pr.delta,
            None if pr is None else _ci(pr.delta_ci), None if pr is None else pr.paired_max,
            None if dm is None else
            f"{dm.misses}/{dm.n} [{dm.ci[0]:.3g}, {dm.ci[1]:.3g}]"])
    return out


REGIME_COLUMNS = ("setup", "task", "regime", "n", "paired Δ", "paired Δ 95% CI", "paired max",
                  "slowdown", "slowdown 95% CI")


def regime_rows(stats: Iterable[TaskStats], setups: Mapping[str, Mapping[str, Any]]
                ) -> list[list[Any]]:
    """The total of every setup per host regime, as `measure` shows its by_regime rows."""
    out = []
    for t in stats:
        if t.region != TOTAL_REGION:
            continue
        for regime, r in t.by_regime.items():
            pr, sd = r.paired, r.slowdown
            out.append([t.setup, setups[t.setup]["task"], regime, r.n,
                        None if pr is None else pr.delta,
                        None if pr is None else _ci(pr.delta_ci),
                        None if pr is None else pr.paired_max,
                        None if sd is None else sd.value, None if sd is None else _ci(sd.ci)])
    return out


# --- hosts side by side ---------------------------------------------------------------------

def _slowdown_cell(t: TaskStats | None) -> str:
    if t is None or t.slowdown is None:
        return "—"
    return f"{t.slowdown.value:.3f} {_ci(t.slowdown.ci)}"


def hosts_section(columns: Sequence[HostColumn]) -> Section:
    """The total of every setup's critical task, one group of columns per host: its median
    with n and its slowdown against the same host's solo baseline. Hosts are never pooled: a
    slowdown divides medians measured on one host."""
    cells = {(c.label, t.setup): t for c in columns for t in c.stats if t.region == TOTAL_REGION}
    setups = list(dict.fromkeys(t.setup for c in columns for t in c.stats
                                if t.region == TOTAL_REGION))
    header = ["setup", "task"]
    for c in columns:
        header += [f"{c.label}: n", f"{c.label}: median ms", f"{c.label}: slowdown [95% CI]"]
    header.append("median max/min")
    rows = []
    for setup in setups:
        found = [cells.get((c.label, setup)) for c in columns]
        medians = [t.summary.median for t in found if t is not None]
        row: list[Any] = [setup, next(t.victim for t in found if t is not None)]
        for t in found:
            row += ["—", "—", "—"] if t is None else \
                [t.summary.n, _ms(t.summary.median), _slowdown_cell(t)]
        row.append(max(medians) / min(medians) if len(medians) > 1 and min(medians) > 0
                   else "—")
        rows.append(row)
    numeric = frozenset(i for i in range(2, len(header)) if (i - 2) % 3 != 2)
    blocks: list = [
        Text("Each host's runs on their own: its median thread CPU time of the critical "
             "task's total, and its slowdown against the solo baseline measured on the same "
             "host (95% bootstrap CI). Hosts are labelled by labgrid place or host name. "
             "'median max/min' is the spread of the medians across hosts."),
        Table(header, rows, caption="Per setup, host by host", numeric=numeric),
        KeyValues({c.label: f"campaign {c.campaign}, {c.runs} run(s)" for c in columns}),
    ]
    interfered = [s for s in setups if any(cells.get((c.label, s)) is not None and
                                           cells[(c.label, s)].slowdown is not None
                                           for c in columns)]
    if interfered:
        def grid(get) -> list[list[float]]:
            return [[get(cells[(c.label, s)].slowdown)
                     if cells.get((c.label, s)) is not None and
                     cells[(c.label, s)].slowdown is not None else math.nan
                     for s in interfered] for c in columns]

        blocks.append(Figure(
            plots.grouped_bars(interfered, [c.label for c in columns],
                               grid(lambda sd: sd.value), lo=grid(lambda sd: sd.ci[0]),
                               hi=grid(lambda sd: sd.ci[1]),
                               ylabel="slowdown vs solo on the same host",
                               title="Slowdown per setup, host by host", reference=1.0),
            "Slowdown of each setup on each host against that host's own solo baseline; "
            "whiskers are 95% bootstrap CIs."))
    return Section("Hosts side by side", blocks)


def hosts_report(results: Sequence[CampaignResults]) -> tuple[list[HostColumn], list[Section]]:
    """Several campaigns of one file (run on other hosts and merged into one store, or
    spread over boards): the hosts side by side, then each campaign's warnings, statistics
    and environment."""
    columns = host_columns(results)
    overview = Section("Overview", [
        Table(("campaign", "file", "created", "plan hash", "runs done", "runs pending",
               "hosts"),
              [[r.campaign.name, r.campaign.source,
                r.campaign.created_at.strftime("%Y-%m-%d %H:%M:%S %Z"), r.campaign.plan_hash,
                sum(1 for x in r.runs if x.status == "done"), len(r.pending),
                ", ".join(r.hosts())] for r in results],
              caption="The campaigns compared", numeric=frozenset({4, 5}))])
    sections = [overview, hosts_section(columns),
                Section("Warnings", [Notes([f"{r.campaign.name}: {w}" for r in results
                                            for w in campaign_results.warnings(r, r.stats())])])]
    sections.append(Section("Statistics", [
        Table(("campaign", "host", *STATS_COLUMNS),
              [[c.campaign, c.host, *row] for c in columns
               for row in stats_rows(c.stats, _setups_of(results, c.campaign))],
              caption="Per campaign, host, setup and task",
              numeric=frozenset(range(6, 25)) - {10, 19, 22, 24})]))
    sections.append(Section("Environment", [b for r in results for b in _environment(r)]))
    return columns, sections


def _setups_of(results: Sequence[CampaignResults], name: str) -> Mapping[str, Mapping[str, Any]]:
    return next(r.campaign.setups for r in results if r.campaign.name == name)


# --- the report -----------------------------------------------------------------------------

def _environment(results: CampaignResults) -> list:
    blocks: list = []
    hosts = {inv.host.id: inv.host for inv in results.invocations.values()}
    for host in hosts.values():
        info = dict(host.info)
        executor = info.pop("executor", {})
        cpu = info.get("cpu", {})
        blocks.append(KeyValues({
            "host": host.hostname, "fingerprint": host.fingerprint, "kernel": host.kernel,
            "CPU": host.cpu_model, "online CPUs": host.ncpus,
            "executor": executor.get("executor"),
            "binaries (sha256)": ", ".join(f"{k} {v[:16]}" for k, v in
                                           executor.get("binaries", {}).items()),
            "resctrl": info.get("resctrl", {}).get("status"),
            "hypervisor": cpu.get("hypervisor") if isinstance(cpu, dict) else None,
        }))
        blocks.append(Preformatted(json.dumps(info, indent=1, sort_keys=True, default=str)))
    canaries = {json.dumps(c, sort_keys=True): c for inv in results.invocations.values()
                if (c := inv.summary.get("canary"))}
    if canaries:
        blocks.append(Table(("regime", "ratio", "CI", "victim CPU", "aggressor CPU", "reason"),
                            [[c["regime"], c["ratio"], _ci(tuple(
                                math.nan if x is None else x for x in c["delta_ci"])),
                              c["victim_cpu"], c["aggressor_cpu"], c["reason"]]
                             for c in canaries.values()],
                            caption="Shared-cache canary, once per run/resume session",
                            numeric=frozenset({1, 3, 4})))
    return blocks or [Text("No run has finished yet, so no host is recorded.")]


def _compact(value: Any) -> str:
    return "" if value in (None, {}, []) else json.dumps(value, sort_keys=True)


def _enforcement_rows(results: CampaignResults) -> list[list[Any]]:
    """One row per run and guest group: what was requested, what the kernel reports back."""
    rows = []
    for inv in results.invocations.values():
        report = inv.summary.get("enforcement") or {}
        for g in report.get("groups", []):
            l3, mb = g.get("l3") or {}, g.get("mb") or {}
            rows.append([inv.params.get("setup"), inv.params.get("round"), g.get("guest"),
                         g.get("group"), l3.get("requested"), _compact(l3.get("applied")),
                         _compact({k: mb[k] for k in ("budget", "unit", "written") if k in mb}),
                         _compact(mb.get("applied")), report.get("last_cmd_status")])
    return rows


def _evidence_figures(results: CampaignResults) -> list[Figure]:
    """The figure `measure run --plot` draws, per interfered setup over all its rounds: rounds
    laid end to end on one time axis from their invocations' start times, so the regime
    bands show the host over the whole campaign."""
    started = {(r.setup, r.round): results.invocations[r.invocation_id].started_at
               for r in results.runs
               if r.invocation_id is not None and r.invocation_id in results.invocations}
    t0 = min(started.values(), default=None)
    out = []
    for setup, runs in sorted(results.by_setup().items()):
        pooled, offset = [], 0
        for run in sorted(runs, key=lambda r: r.round):
            at = started.get((setup, run.round))
            shift = int((at - t0).total_seconds() * 1e9) if at and t0 else 0
            top = max((s.pair for s in run.samples), default=-1) + 1
            blocks = max((s.block or 0 for s in run.samples), default=-1) + 1
            pooled += [replace(s, victim=0, pair=offset + s.pair,
                               block=None if s.block is None else offset + s.block,
                               block_start_ns=(s.block_start_ns or 0) + shift)
                       for s in run.samples]
            offset += max(top, blocks)
        sets = sorted({s.aggressor_set for s in pooled if s.condition == "int"})
        for label in sets:
            try:
                fig = evidence_figure(pooled, label, title=f"{setup}: {runs[0].victim} "
                                                           f"under {label}")
            except ValueError:
                continue
            out.append(Figure(plots.figure_uri(fig),
                              f"{setup}: isolated vs interfered times of the critical task, "
                              "samples coloured by the host regime, and Δ per block over "
                              "the campaign's time on the regime bands"))
    return out


def campaign_sections(results: CampaignResults, stats: Sequence[TaskStats]) -> list[Section]:
    row = results.campaign
    plan = row.plan
    setups = row.setups
    done = sum(1 for r in results.runs if r.status == "done")
    overview = Section("Overview", [
        KeyValues({"campaign": row.name, "file": row.source,
                   "created": row.created_at.strftime("%Y-%m-%d %H:%M:%S %Z"),
                   "setups": len(setups), "rounds": plan.get("rounds"),
                   "runs done": done, "runs skipped": len(results.skipped),
                   "runs pending": len(results.pending), "executor": plan.get("executor"),
                   "platform": plan.get("platform"), "plan hash": row.plan_hash,
                   "quick mode": bool(row.options.get("quick"))}),
        Text("Design: the setups of a round that measure the same task run as one victim "
             "process, their contention engines resident and taking turns in randomised "
             "blocks of a few pairs, with the shared-cache canary probed between blocks; a "
             "setup under cache or bandwidth enforcement runs alone. "
             "Metric: thread CPU time of the critical task per repetition. Slowdown = "
             "median(setup) / median(solo of the same task), with a 95% bootstrap CI that "
             "resamples both setups. Paired Δ = the setup's own interfered/isolated pairs "
             "(the engine paused but resident), which cancels drift between runs; for a "
             "cache-coloured setup the slowdown includes the colouring's own cost and the "
             "paired Δ does not. Every statistic is recomputed from the raw samples."),
    ])
    figures = _slowdown_figures(stats, setups)
    sections = [
        overview,
        Section("Warnings", [Notes(campaign_results.warnings(results, stats))]),
        Section("Slowdown per benchmark and setup",
                figures or [Text("No slowdown yet: a setup and its solo baseline must both "
                                 "have finished runs.")]),
        Section("Slowdown heatmaps", _heatmaps(stats, setups) or
                [Text("No interference setup with a baseline has finished runs yet.")]),
        Section("Evidence per setup", _evidence_figures(results) or
                [Text("No interference setup has finished runs yet.")]),
    ]
    columns = host_columns([results])
    if len(columns) > 1:
        sections.append(hosts_section(columns))
    counters = _counter_figures(stats, setups)
    if counters:
        sections.append(Section("Counters", counters))
    sections += [
        Section("Statistics", [Table(STATS_COLUMNS, stats_rows(stats, setups),
                                     caption="Per setup and task; 'samples' is iso for a solo "
                                             "baseline, int under the contention engine.",
                                     numeric=frozenset(range(4, 23)) - {8, 17, 20, 22})]),
        Section("Per host regime", [Table(
            REGIME_COLUMNS, regime_rows(stats, setups),
            caption="The critical task's total per setup and host regime: each repetition "
                    "carries the regime the running canary saw around its block; a round's "
                    "setups ran interleaved in blocks, so each met the same regimes",
            numeric=frozenset({3, 4, 6, 7}))]),
        Section("Skipped setups", [Table(
            ("setup", "round", "hash", "reason"),
            [[r.setup, r.round, r.setup_hash, r.reason] for r in results.skipped],
            caption="Setups whose mechanism this host cannot enforce; never run without it")]),
        Section("Enforcement", [Table(
            ("setup", "round", "guest", "group", "L3 mask requested", "L3 applied",
             "MB requested", "MB applied", "last_cmd_status"),
            _enforcement_rows(results),
            caption="resctrl groups per run: requested values and the schemata read back")]),
        Section("Configuration", [
            Table(("setup", "hash", "baseline", "task", "engine", "colours", "bandwidth",
                   "needs", "reps"),
                  [[s["name"], s["hash"], s["baseline"], s["task"], " + ".join(s["engine"]),
                    json.dumps(s["colours"]), json.dumps(s["bandwidth"]),
                    ", ".join(s["needs"]), s["reps"]] for s in setups.values()],
                  caption="Planned setups", numeric=frozenset({8})),
            Preformatted(row.source_text)]),
        Section("Environment", _environment(results)),
    ]
    return sections


def build(results: CampaignResults) -> tuple[list[TaskStats], list[Section]]:
    stats = results.stats()
    return stats, campaign_sections(results, stats)
