"""`intercore doctor`: what this host can show about interference, and what it cannot."""

from __future__ import annotations

from typing import Any

import typer
from rich.table import Table

from ..base.errors import HostUnsupported, NativeError
from ..host import HostReport, Topology, default_placement, host_report
from ..base.parse import format_cpu_list, human_size
from .output import JSON_HELP, console, handle_errors, print_json, warn


@handle_errors
def doctor(
    json_output: bool = typer.Option(False, "--json", help=JSON_HELP),
    no_canary: bool = typer.Option(False, "--no-canary",
                                   help="Skip the shared-cache canary (it runs native "
                                        "workloads on two CPUs)."),
    canary_pairs: int = typer.Option(8, "--canary-pairs", min=2, max=1000,
                                     help="Isolated/interfered pairs the canary measures."),
) -> None:
    """Report what this host can show about interference, and what it cannot.

    CPU and cache topology, cgroups, perf counters, resctrl, real-time scheduling, huge pages
    and pagemap; then a short canary that checks whether two CPUs really share a cache.

    --json prints one object: {"host": ..., "canary": ... or null, "warnings": a list of strings}.

    host: fingerprint, kernel_release, arch, cpu, placement, cgroups, perf, resctrl, rt,
    hugepages, pagemap
    host.cpu: model_name, vendor, hypervisor, online, cpus, caches
    host.cpu.cpus: one per CPU: id, online, core_id, package_id
    host.cpu.caches: one per cache: level, type, size (bytes), ways, sets, line,
    shared_cpus, shared_cpu_list
    host.placement: victim, aggressors, note
    host.cgroups: mode, v1_mounts, v2_mount, v2_controllers, freezer, kill
    host.perf: one per event: name, available, reason
    host.resctrl: kernel_support, mount, cpu_flags, l3, mb, status
    host.rt: root, rlimit_rtprio, rt_runtime_us, rt_period_us, fifo_ok, reason,
    throttled_us
    host.hugepages: nr_hugepages, free, page_size (bytes), thp
    host.pagemap: readable, pfn_visible, reason
    canary: regime (shared, not-shared, unknown), ratio, iso_ns, int_ns, n,
    footprint, victim_cpu, aggressor_cpu, reason; null with --no-canary or when
    the canary could not run (a warning says why)
    """
    report = host_report()
    canary, canary_warnings = (None, []) if no_canary else _run_canary(report.topology,
                                                                       canary_pairs)
    warnings = report.warnings + canary_warnings
    if json_output:
        print_json({"host": report.to_dict(), "canary": canary, "warnings": warnings})
        return
    _print_report(report, canary, warnings)


# ---- canary ------------------------------------------------------------------------------------

def _run_canary(topology: Topology, pairs: int) -> tuple[dict[str, Any] | None, list[str]]:
    # Imported here: the canary needs the native tools, the rest of doctor does not.
    from ..measure.regime.canary import run_canary

    try:
        result = run_canary(topology, pairs=pairs).to_dict()
    except (HostUnsupported, NativeError) as exc:
        return None, [f"shared-cache canary not run: {exc}"]
    return result, _canary_warnings(result)


def _canary_warnings(canary: dict[str, Any]) -> list[str]:
    regime = canary.get("regime")
    if regime == "shared":
        return []
    if regime == "not-shared":
        return [f"shared-cache canary saw no slowdown between CPU {canary.get('victim_cpu')} "
                f"and CPU {canary.get('aggressor_cpu')} (ratio {canary.get('ratio')}): "
                f"{canary.get('reason') or 'the cache sysfs calls shared may be partitioned'}"]
    return [f"shared-cache canary inconclusive: {canary.get('reason') or 'no reason given'}"]


# ---- tables ------------------------------------------------------------------------------------

def _text(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def _key_values(title: str, rows: list[tuple[str, Any]]) -> Table:
    table = Table(title=title, show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    for key, value in rows:
        table.add_row(key, _text(value))
    return table


def _cpu_table(report: HostReport) -> Table:
    topo = report.topology
    table = Table(title=f"CPUs: {topo.model_name or 'unknown model'} ({topo.vendor or '?'}), "
                        f"kernel {report.kernel_release}, {report.arch}, "
                        f"hypervisor {topo.hypervisor or 'none'}", title_justify="left")
    for column in ("cpu", "online", "core", "package", "caches"):
        table.add_column(column)
    for cpu in topo.cpus:
        caches = " ".join(f"L{c.level}{c.type[0]}" for c in cpu.caches)
        table.add_row(str(cpu.id), _text(cpu.online), _text(cpu.core_id),
                      _text(cpu.package_id), caches or "-")
    return table


def _cache_table(topo: Topology) -> Table:
    table = Table(title="Caches", title_justify="left")
    for column in ("level", "type", "size", "ways", "sets", "line", "shared_cpu_list"):
        table.add_column(column)
    for c in topo.caches():
        table.add_row(f"L{c.level}", c.type, human_size(c.size), _text(c.ways), _text(c.sets),
                      _text(c.line), format_cpu_list(c.shared_cpus))
    return table


def _perf_table(report: HostReport) -> Table:
    table = Table(title="perf events", title_justify="left")
    for column in ("event", "available", "reason"):
        table.add_column(column)
    for event in report.perf:
        table.add_row(event.name, _text(event.available), event.reason or "")
    return table


def _cgroup_table(report: HostReport) -> Table:
    cg = report.cgroups
    v1 = ", ".join(f"{name} ({path})" for name, path in cg.v1_mounts.items())
    return _key_values("cgroups", [
        ("mode", cg.mode), ("v1 controllers", v1 or None), ("v2 mount", cg.v2_mount),
        ("v2 controllers", " ".join(cg.v2_controllers) or None),
        ("freezer", cg.freezer), ("cgroup.kill", cg.kill),
    ])


def _resctrl_table(report: HostReport) -> Table:
    r = report.resctrl
    rows: list[tuple[str, Any]] = [("status", r.status), ("mount", r.mount),
                                   ("CPU flags", " ".join(r.cpu_flags) or None)]
    for prefix, values in (("L3", r.l3), ("MB", r.mb)):
        rows += [(f"{prefix}/{key}", value) for key, value in (values or {}).items()]
    return _key_values("resctrl", rows)


def _rt_table(report: HostReport) -> Table:
    rt = report.rt
    return _key_values("Real-time scheduling", [
        ("SCHED_FIFO works", rt.fifo_ok), ("why not", rt.reason), ("root", rt.root),
        ("RLIMIT_RTPRIO", rt.rlimit_rtprio), ("sched_rt_runtime_us", rt.rt_runtime_us),
        ("sched_rt_period_us", rt.rt_period_us),
    ])


def _memory_table(report: HostReport) -> Table:
    hp, pm = report.hugepages, report.pagemap
    return _key_values("Huge pages and pagemap", [
        ("hugetlb pages", hp.nr_hugepages), ("hugetlb free", hp.free),
        ("hugetlb page size", human_size(hp.page_size) if hp.page_size else None),
        ("THP", hp.thp), ("pagemap readable", pm.readable), ("PFNs visible", pm.pfn_visible),
        ("pagemap note", pm.reason),
    ])


def _canary_table(canary: dict[str, Any]) -> Table:
    return _key_values("Shared-cache canary", list(canary.items()))


def _print_report(report: HostReport, canary: dict[str, Any] | None, warnings: list[str]) -> None:
    tables = [_cpu_table(report), _cache_table(report.topology), _cgroup_table(report),
              _perf_table(report), _resctrl_table(report), _rt_table(report),
              _memory_table(report)]
    if canary is not None:
        tables.append(_canary_table(canary))
    for table in tables:
        console.print(table)
    if report.topology.online_cpus:
        victim, aggressors = default_placement(report.topology)
        console.print(f"default placement: victim on CPU {victim}, aggressors on "
                      f"{format_cpu_list(aggressors) or 'none'}")
    console.print(f"host fingerprint: {report.fingerprint()}")
    for warning in warnings:
        warn(warning)
