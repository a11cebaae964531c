"""The bandwidth regulator on real cgroups: a budget spent freezes the group until the next
period, killing the regulator leaves nothing frozen (repeated), and the budget arithmetic.

No counter of memory traffic exists here, so the overflow -> freeze path runs on the kernel's
cpu-clock software counter, counted per cgroup exactly as a memory counter would be: the
budget is CPU time per period, a spinner in the group spends it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from intercore.base.errors import InputError
from intercore.measure.bandwidth.probe import fit
from intercore.base.procs import ProcessGroup
from intercore.mitigate.bandwidth import regulator as reg
from intercore.mitigate.freezer.drill import busy
from intercore.mitigate.bandwidth.gang import best_effort_plan, freezer_cgroups
from intercore.base.native import tool



def runs_for(shift_per_gbps: float, sd: float = 5.0) -> dict:
    """Probe latencies at idle and three traffic levels, moving `shift_per_gbps` ns per GB/s."""
    import numpy as np
    levels = {"idle": (None, 0.0), "25%": (1000.0, 1000.0), "50%": (2000.0, 2000.0),
              "100%": (4000.0, 4000.0)}
    return {name: [(req, ach, np.random.default_rng(i).normal(
        100 + shift_per_gbps * ach / 1000, sd, 20_000))]
        for i, (name, (req, ach)) in enumerate(levels.items())}


def test_rates_and_budgets():
    assert reg.parse_rate("100MB/s") == 1e8
    assert reg.parse_rate("1.5 GiB/s") == 1.5 * 2 ** 30
    with pytest.raises(ValueError, match="not a rate"):
        reg.parse_rate("100MB")
    # MemGuard's example: 100 MB/s per 1 ms of 64-byte lines.
    assert reg.budget_events(1e8, 1_000_000, 64) == 1563
    assert reg.budget_events(1.0, 1_000_000, 64) == 1


@pytest.mark.parametrize("kwargs, where", [
    ({"best_effort": ()}, "--best-effort"),
    ({"best_effort": ("/x",), "event": "1:0"}, "--budget"),
    ({"best_effort": ("/x",), "probe": "64M:8"}, "--threshold"),
    ({"best_effort": ("/x",), "event": "1:0", "budget": 5, "period_ns": 10}, "--period"),
    ({"best_effort": ("/x",), "event": "1:0", "budget": 5, "probe": "64M:8",
      "threshold_ns": 1.0}, "--source"),
])
def test_bad_specs(kwargs, where):
    with pytest.raises(InputError) as exc:
        reg.RegulatorSpec(**kwargs)
    assert exc.value.field == where


def test_probe_threshold_from_a_calibration():
    usable = fit("h", 1 << 26, 8, 10_000, 10, runs_for(shift_per_gbps=10.0))
    t, how = reg.probe_threshold(usable, 2000.0)
    assert 119.0 < t < 121.0 and "calibrated" in how
    flat = fit("h", 1 << 26, 8, 10_000, 10, runs_for(shift_per_gbps=0.0))
    t, how = reg.probe_threshold(flat, 2000.0)
    idle = next(p for p in flat.points if p.level == "idle")
    assert t == idle.window_p95_ns and "pressure" in how


@pytest.fixture
def spinning_group(real_cgroups, test_root):
    """A best-effort cgroup (freezer hierarchy only) holding a CPU-bound spinner."""
    cgroups = freezer_cgroups()
    applied = cgroups.apply(best_effort_plan("be"), test_root)
    spinner = subprocess.Popen([str(tool("ic-aggr")), "bw", "--size", "64K"],
                               stdout=subprocess.DEVNULL)
    try:
        cgroups.attach(applied, "be", spinner.pid)
        group = applied.applied.group("be")
        yield Path(group.freeze_file).parent, applied
    finally:
        spinner.send_signal(signal.SIGTERM)
        spinner.wait(10)
        cgroups.teardown(applied)


def usage_ns(directory: Path) -> int:
    for line in (directory / "cpu.stat").read_text().splitlines():
        if line.startswith("usage_usec"):
            return int(line.split()[1]) * 1000
    raise AssertionError("no usage_usec")


def test_a_spent_budget_freezes_the_group_until_the_next_period(spinning_group, tmp_path):
    directory, _ = spinning_group
    period, budget = 20_000_000, 500_000
    log = tmp_path / "reg.jsonl"
    spec = reg.RegulatorSpec(best_effort=(str(directory),), event=reg.CPU_CLOCK_EVENT,
                             budget=budget, period_ns=period, duration_ns=600_000_000,
                             log=str(log), priority=1 if os.geteuid() == 0 else 0)
    with ProcessGroup() as group:
        r = reg.Regulator.start(spec, group)
        before = usage_ns(directory)  # from the ready line on: the budgets are armed
        stats = r.wait()
    used = usage_ns(directory) - before
    (g,) = stats.groups
    # The spinner wants the whole CPU: it spends the budget in every period it gets a
    # millisecond of CPU, which on a busy host is still most of them.
    assert g.throttles >= 0.25 * stats.periods, stats
    assert g.write_errors == 0
    # Frozen until the period ends: the group gets about its budget, not the CPU.
    assert used <= stats.periods * (budget + (g.overshoot.p99 or 0)) * 1.5 + 20_000_000
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    assert len(lines) == g.throttles
    # Throttled only once the budget was spent, and each period's count starts afresh.
    assert all(x["count_at_throttle"] >= budget for x in lines)
    assert all(x["count"] - budget <= 20_000_000 for x in lines)
    assert (directory / "cgroup.freeze").read_text().strip() == "0"
    assert stats.overhead_pct is not None and stats.lease_expiries == 0


def test_killing_the_regulator_leaves_nothing_frozen(spinning_group):
    directory, _ = spinning_group
    freeze = directory / "cgroup.freeze"
    spec = reg.RegulatorSpec(best_effort=(str(directory),), event=reg.CPU_CLOCK_EVENT,
                             budget=500_000, period_ns=200_000_000, lease_ns=500_000_000)
    for attempt in range(5):
        with ProcessGroup() as group:
            r = reg.Regulator.start(spec, group)
            deadline = time.monotonic() + 2.0
            while freeze.read_text().strip() != "1" and time.monotonic() < deadline:
                time.sleep(0.005)
            assert freeze.read_text().strip() == "1", "the budget never froze the group"
            os.kill(r.pid, signal.SIGKILL)
            killed = time.monotonic()
            while freeze.read_text().strip() == "1" and time.monotonic() < killed + 2.0:
                time.sleep(0.002)
            thawed_after = time.monotonic() - killed
            r.process.proc.wait(5)
        assert freeze.read_text().strip() == "0", f"attempt {attempt}: still frozen"
        assert thawed_after < 0.5, f"attempt {attempt}: thawed only after {thawed_after:.3f}s"


def test_a_best_effort_group_inside_a_critical_one_is_refused(spinning_group):
    directory, _ = spinning_group
    got = subprocess.run([str(tool("ic-regulate")), "--best-effort", str(directory),
                          "--critical", str(directory.parent), "--event", "1:0", "--budget",
                          "1000"], capture_output=True, text=True, timeout=30)
    assert got.returncode == 2 and "critical" in got.stderr
    assert (directory / "cgroup.freeze").read_text().strip() == "0"


@pytest.mark.parametrize("threshold_ns, throttled", [(1.0, True), (1e9, False)])
def test_probe_pressure_throttles_until_the_period_ends(spinning_group, threshold_ns, throttled):
    """Without a counter the probe decides: a window over the threshold throttles the group
    for the rest of the period (a 1 ns threshold: every window), none when nothing exceeds it."""
    directory, _ = spinning_group
    spec = reg.RegulatorSpec(best_effort=(str(directory),), probe="16M:8",
                             threshold_ns=threshold_ns, window=4, period_ns=10_000_000,
                             duration_ns=300_000_000)
    with ProcessGroup() as group:
        stats = reg.Regulator.start(spec, group).wait()
    (g,) = stats.groups
    assert stats.mode == "probe" and stats.probe_samples > 100
    if throttled:
        assert g.throttles >= 0.8 * stats.periods and g.react_ns.n == g.throttles
    else:
        assert g.throttles == 0 and stats.pressure_windows == 0
    assert (directory / "cgroup.freeze").read_text().strip() == "0"


@pytest.mark.slow
def test_regulate_cli_on_an_applied_plan(spinning_group, tmp_path):
    _, plan = spinning_group
    plan.save(tmp_path / "plan.json")
    got = subprocess.run([sys.executable, "-m", "intercore", "mitigate", "regulate", "--plan",
                          str(tmp_path / "plan.json"), "--budget", "1ms", "--period", "20ms",
                          "--source", "sw:cpu-clock", "--duration", "300ms", "--json"],
                         capture_output=True, text=True, timeout=120)
    assert got.returncode == 0, got.stderr
    doc = json.loads(got.stdout)
    assert doc["source"] == "sw:cpu-clock" and doc["budget_events"] == 1_000_000
    assert doc["stats"]["periods"] >= 10 and doc["stats"]["groups"][0]["throttles"] >= 1
    bad = subprocess.run([sys.executable, "-m", "intercore", "mitigate", "regulate", "--plan",
                          str(tmp_path / "plan.json"), "--budget", "100MB"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "--budget" in bad.stderr


@pytest.mark.parametrize("mode", ["counter", "probe"])
def test_sigterm_stops_either_mode_and_thaws(spinning_group, mode):
    directory, _ = spinning_group
    kind = {"event": reg.CPU_CLOCK_EVENT, "budget": 100_000} if mode == "counter" else \
        {"probe": "16M:8", "threshold_ns": 1.0, "window": 4}
    spec = reg.RegulatorSpec(best_effort=(str(directory),), period_ns=50_000_000, **kind)
    with ProcessGroup() as group:
        r = reg.Regulator.start(spec, group)
        time.sleep(0.3)
        stats = r.stop(timeout=10)
    assert stats.mode == mode and stats.periods >= 2
    assert (directory / "cgroup.freeze").read_text().strip() == "0"


def test_the_log_escapes_a_group_path_that_needs_it(groups, tmp_path):
    """A cgroup's name may hold a quote or a backslash; each log line stays one JSON object
    that names the group exactly (the log was printed by hand, and such a name broke it)."""
    odd = groups.best_effort / 'be "q" \\ x'
    odd.mkdir()
    log = tmp_path / "reg.jsonl"
    spec = reg.RegulatorSpec(best_effort=(str(odd),), event=reg.CPU_CLOCK_EVENT,
                             budget=500_000, period_ns=20_000_000, duration_ns=300_000_000,
                             log=str(log))
    try:
        with ProcessGroup() as group:
            busy(odd, group)
            stats = reg.Regulator.start(spec, group).wait()
            lines = [json.loads(x) for x in log.read_text().splitlines()]
    finally:
        (odd / "cgroup.kill").write_text("1")
        deadline = time.monotonic() + 10
        while "populated 1" in (odd / "cgroup.events").read_text() and time.monotonic() < deadline:
            time.sleep(0.01)
        odd.rmdir()
    assert stats.groups[0].throttles >= 1 and len(lines) == stats.groups[0].throttles
    assert {x["group"] for x in lines} == {str(odd)}
