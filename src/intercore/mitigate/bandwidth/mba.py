"""Paper 003's design of experiments for memory-bandwidth allocation (MBA) on resctrl: the
campaigns of each analysis and the paper's tables from their results (campaign/mba_study.py
runs them through the campaign runner).

Single-core analysis (Table II): the `fetch` victim's three workloads — R^I (reads, nothing
to evict), R^II (reads evicting clean lines), W^II (reads evicting dirty lines, so a DRAM write
per read) — each alone on one core, throttled by every MBA level the host offers, plus the
unthrottled baseline. The latency L_{k;d} of reading N lines gives the paper's Table IV:
BW_{k;d} = T·N / L_{k;d} "memory operations in T", T = min L_{R^I;0}.

Multi-core analysis (Table III/V): R^I on the critical core while 1..3 other cores run our bw
read aggressor, throttled at 80 and 90 (and unthrottled), measured paired (isolated vs
interfered) by the harness. The interference degree of a setup is n · f(d), f(d) = the
fraction of synchronous bandwidth R^I keeps at delay d in the single-core results (Table IV),
or (100 − d)/100 where there are none yet. The campaign runner gives the engine guest one
resctrl group, so all throttled cores share one delay: the degrees are n·f(d), which covers
Table V's 1.5 and 2.25 but not its mixed rows (1.75, 2.0).

What an MBA value means depends on the host (resctrl.py, beside this module): Intel and Arm
MPAM take a percentage (the kernel writes delay = 100 − value and rounds the value up to
bandwidth_gran), the mba_MBps controller and AMD take absolute rates (AMD in 1/8 GB/s). Every
level is reported requested, written and applied, as the kernel read it back.

Both analyses are campaigns (a generated YAML file next to the results, so `intercore
campaign resume` continues an interrupted one), stored like every campaign.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Mapping

import numpy as np
import yaml

from ...base import outputs
from ...base.figures import pyplot, save
from ...base.errors import HostUnsupported, InputError
from ...host.topology import Topology, default_placement, largest_private, llc
from ...base.units import size_arg
from .resctrl import MB_PERCENT, MbInfo, Resctrl

Analysis = Literal["single-core", "multi-core"]

WORKLOADS = {"RI": "r1", "RII": "r2", "WII": "w2"}   # paper name -> fetch --mode
LINES = 8192                                          # the paper's 512 KB of 64-byte lines
CRITICAL, ENGINE = "fetch", "noise"
MULTI_DELAYS = (80, 90)
# Absolute-rate hosts (mba_MBps, AMD): 125 MB/s (AMD's unit) up to 16 GB/s, doubling.
RATE_LEVELS_MBPS = tuple(125 * 2 ** k for k in range(8))


@dataclass(frozen=True)
class Level:
    """One MBA setting: the paper's delay (percentage hosts) and the value written."""

    value: int                 # MB: value in `unit`
    unit: Literal["percent", "MBps"]
    delay: int | None = None   # 100 - value on percentage hosts

    @property
    def label(self) -> str:
        return f"d{self.delay}" if self.delay is not None else f"{self.value}MBps"


def levels(mb: MbInfo, delays: tuple[int, ...] | None = None,
           rates: tuple[int, ...] | None = None) -> list[Level]:
    """The sweep of the single-core analysis: delays 10–90 by the host's granularity on
    percentage hosts (or `delays` as given, which may be off the granularity: the report then
    shows what the kernel applied), absolute rates elsewhere."""
    if mb.mode == MB_PERCENT:
        if delays is None:
            step = max(10, mb.bandwidth_gran)
            delays = tuple(d for d in range(step, 91, step) if 100 - d >= mb.min_bandwidth)
        bad = [d for d in delays if not 0 < d < 100 or 100 - d < mb.min_bandwidth]
        if bad:
            raise InputError(f"delays {bad} are outside 1..{100 - mb.min_bandwidth} (info/MB/"
                             f"min_bandwidth = {mb.min_bandwidth})", field="--delays")
        return [Level(100 - d, "percent", d) for d in sorted(set(delays))]
    if delays is not None:
        raise InputError("this host's MB: takes an absolute rate, not a delay; give --rates",
                         field="--delays")
    return [Level(r, "MBps") for r in sorted(set(rates or RATE_LEVELS_MBPS))]


def _fills(topo: Topology, cpu: int) -> dict[str, int]:
    private = largest_private(topo, cpu)
    shared = llc(topo, cpu)
    if shared is None or not shared.size:
        raise HostUnsupported("no last-level cache in sysfs: the fill sizes of R^II and W^II "
                              "are twice the private cache and twice the LLC")
    return {"r2": 2 * max(private.size if private and private.size else 0, 1 << 20),
            "w2": 2 * shared.size}


def _victim(mode: str, fills: dict[str, int]) -> str:
    spec = f"fetch:mode={mode},lines={LINES}"
    return spec + (f",fill={size_arg(fills[mode])}" if mode in fills else "")


def single_core_campaign(topo: Topology, mb: MbInfo, *, cpu: int, reps: int, rounds: int,
                         lvls: list[Level], seed: int = 1, name: str | None = None) -> dict:
    fills = _fills(topo, cpu)
    unit = lvls[0].unit
    return {
        "name": name or f"mba-single-core-{time.strftime('%Y%m%d-%H%M%S')}",
        "description": "paper 003 single-core MBA analysis: R^I, R^II, W^II x MBA levels",
        "platform": "host", "repetitions": reps, "rounds": rounds, "seed": seed,
        "guests": {CRITICAL: {"kind": "critical", "cpu": cpu,
                              "tasks": [{"name": k, "victim": _victim(m, fills)}
                                        for k, m in WORKLOADS.items()]}},
        "generators": {"bandwidth": {"unit": unit,
                                     "guests": {CRITICAL: {"budgets": [lv.value
                                                                       for lv in lvls]}}}},
    }


def multi_core_campaign(topo: Topology, mb: MbInfo, *, cpu: int, reps: int, rounds: int,
                        delays: tuple[int, ...] = MULTI_DELAYS, seed: int = 1,
                        name: str | None = None) -> dict:
    if mb.mode != MB_PERCENT:
        raise HostUnsupported("the multi-core analysis throttles by delay (80, 90), which this "
                              "host's absolute-rate MB: does not take")
    others = [c for c in topo.online_cpus if c != cpu][:3]
    if not others:
        raise HostUnsupported("the multi-core analysis needs a CPU beside the critical one")
    shared = llc(topo, cpu)
    return {
        "name": name or f"mba-multi-core-{time.strftime('%Y%m%d-%H%M%S')}",
        "description": "paper 003 multi-core MBA analysis: R^I under 1..3 throttled bw readers",
        "platform": "host", "repetitions": reps, "rounds": rounds, "seed": seed,
        "guests": {CRITICAL: {"kind": "critical", "cpu": cpu,
                              "tasks": [{"name": "RI", "victim": _victim("r1", {})}]},
                   ENGINE: {"kind": "engine", "aggressor": "bw"}},
        "generators": {
            "engine": {"cpus": [",".join(map(str, others[:n])) for n in range(1, len(others) + 1)],
                       "sizes": [size_arg(2 * shared.size)], "ops": ["read"]},
            "bandwidth": {"unit": "percent",
                          "guests": {ENGINE: {"budgets": [100] + [100 - d for d in delays]}}},
        },
    }


def write_campaign(doc: dict, path: Path) -> Path:
    header = ("# Generated by `intercore mitigate mba doe`: paper 003's design of experiments as a "
              "campaign.\n# `intercore measure campaign resume NAME` continues it after an "
              "interruption.\n")
    outputs.write_text(path, header + yaml.safe_dump(doc, sort_keys=False))
    return path


def host_mba(resctrl: Resctrl | None = None) -> tuple[Resctrl, MbInfo]:
    """This host's resctrl and its MB: resource, or HostUnsupported saying which is missing."""
    resctrl = resctrl or Resctrl.from_system()
    mb = resctrl.mb_info()
    if mb is None:
        raise HostUnsupported(f"resctrl at {resctrl.root} offers no memory bandwidth allocation "
                              "(no info/MB: this CPU has no MBA, or the kernel does not drive "
                              "it)")
    return resctrl, mb


def critical_cpu(topo: Topology, cpu: int | None) -> int:
    return default_placement(topo).victim if cpu is None else cpu


# ---- results ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Cell:
    """One (workload, level) of Table IV, or one setup of Table V."""

    workload: str
    level: str                          # "d0" (unthrottled), "d80", "500MBps"
    requested: int | None               # the MB: value asked for (None: unthrottled)
    written: int | None
    applied: dict[str, str] = field(default_factory=dict)  # domain -> value read back
    latencies_ns: tuple[float, ...] = ()

    @property
    def n(self) -> int:
        return len(self.latencies_ns)

    def stat(self, q: float) -> float | None:
        return float(np.percentile(self.latencies_ns, q)) if self.latencies_ns else None


def _mb_report(enforcement: dict) -> dict | None:
    for group in enforcement.get("groups", []):
        if "mb" in group:
            return group["mb"]
    return None


def collect(results, region: str = "fetch.read") -> dict[str, Cell]:
    """setup name -> Cell, from a campaign's results model (campaign/results.py)."""
    setups = results.campaign.setups
    cells: dict[str, Cell] = {}
    for run in results.samples:
        setup = setups[run.setup]
        budgets = setup.get("bandwidth") or {}
        budget = next(iter(budgets.values()), None)
        inv = next((i for i in results.invocations.values()
                    if i.params.get("setup") == run.setup and i.params.get("round") == run.round),
                   None)
        mb = _mb_report(inv.summary.get("enforcement", {})) if inv else None
        times = [float(s.wall_ns) for s in run.samples if s.region_name == region
                 and s.condition == ("int" if setup.get("engine") else "iso")]
        prev = cells.get(run.setup)
        value = budget["budget"] if budget else None
        level = ("d0" if value is None else
                 f"d{100 - value}" if budget["unit"] == "percent" else f"{value}MBps")
        cells[run.setup] = Cell(setup.get("task") or run.victim, level, value,
                                mb["written"] if mb else None,
                                dict(mb["applied"]) if mb else {},
                                (prev.latencies_ns if prev else ()) + tuple(times))
    return cells


def table_iv(cells: dict[str, Cell]) -> dict[str, Any]:
    """Paper 003 Table IV from the single-core cells: per workload and level, the latency and
    max(BW_{k;d}) = T·N / min L_{k;d} with T = min L_{R^I;0}, and its share of N."""
    base = [c for c in cells.values() if c.workload == "RI" and c.level == "d0"]
    if not base or not base[0].latencies_ns:
        raise InputError("the single-core results lack the unthrottled R^I baseline", field="ID")
    t = min(base[0].latencies_ns)
    rows = []
    for c in sorted(cells.values(), key=lambda c: (list(WORKLOADS).index(c.workload)
                                                   if c.workload in WORKLOADS else 9,
                                                   c.requested if c.requested is not None
                                                   else 10 ** 9)):
        if not c.latencies_ns:
            continue
        best = min(c.latencies_ns)
        ops = t * LINES / best
        rows.append({"workload": c.workload, "level": c.level, "requested": c.requested,
                     "written": c.written, "applied": c.applied, "n": c.n,
                     "latency_min_ns": best, "latency_p50_ns": c.stat(50),
                     "latency_p95_ns": c.stat(95),
                     "max_bw_ops": ops, "max_bw_pct": 100.0 * ops / LINES,
                     "writes_double": c.workload == "WII",
                     "mbps_at_min": LINES * 64 / best * 1e3})
    return {"T_ns": t, "N": LINES, "rows": rows}


def sync_fraction(table: dict[str, Any] | None, delay: int) -> tuple[float, str]:
    """f(d): the share of synchronous bandwidth R^I keeps at delay d (Table IV), or nominal."""
    if table:
        for row in table["rows"]:
            if row["workload"] == "RI" and row["level"] == f"d{delay}":
                return row["max_bw_pct"] / 100.0, "measured (single-core Table IV)"
    return (100 - delay) / 100.0, "nominal (100 - d)/100: no single-core results"


def table_v(cells: dict[str, Cell], setups: Mapping[str, Mapping], table: dict | None
            ) -> dict[str, Any]:
    """Paper 003 Table V: per (throttled cores, delay) the interference degree and the
    critical R^I latency (median and p95), slowdown against the isolated repetitions."""
    rows = []
    for name, c in cells.items():
        setup = setups[name]
        cpus = (setup.get("contention") or {}).get("cpus")
        if not cpus or not c.latencies_ns:
            continue
        n = len(str(cpus).split(","))
        delay = None if c.requested in (None, 100) else 100 - int(c.requested)
        f, how = (1.0, "unthrottled") if delay is None else sync_fraction(table, delay)
        rows.append({"setup": name, "cores": n, "delay": delay or 0, "id": n * f,
                     "fraction_source": how, "n": c.n, "latency_p50_ns": c.stat(50),
                     "latency_p95_ns": c.stat(95), "written": c.written, "applied": c.applied})
    return {"rows": sorted(rows, key=lambda r: (r["id"], r["delay"]))}


def plot(tables: dict[str, Any], cells: dict[str, Cell], out: Path, analysis: Analysis) -> Path:
    fig, ax = pyplot().subplots(figsize=(9, 4))
    if analysis == "single-core":
        for k in WORKLOADS:
            ws = sorted((c for c in cells.values() if c.workload == k and c.latencies_ns),
                        key=lambda c: c.requested if c.requested is not None else 10 ** 9,
                        reverse=True)
            if ws:
                ax.plot([c.level for c in ws], [np.mean(c.latencies_ns) / 1e3 for c in ws],
                        marker="o", label=k)
        ax.set_xlabel("MBA level (d0: unthrottled)")
        ax.set_ylabel("mean fetch latency [µs]")
        ax.set_title(f"{LINES} lines, per workload (paper 003 Fig. 4)", fontsize=9)
    else:
        rows = tables["v"]["rows"]
        for throttled, style in ((False, "o-"), (True, "s--")):
            pts = sorted((r["id"], r["latency_p95_ns"] / 1e3) for r in rows
                         if (r["delay"] > 0) == throttled)
            if pts:
                ax.plot(*zip(*pts), style, label="MBA-throttled" if throttled else "no MBA")
        ax.set_xlabel("interference degree")
        ax.set_ylabel("critical R^I latency p95 [µs]")
        ax.set_title("paper 003 Fig. 5", fontsize=9)
    ax.legend(fontsize=8)
    return save(fig, out / f"mba-{analysis}.png")
