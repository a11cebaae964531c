"""The benchmarks: `make bench` runs every one of them, and each fails closed."""

from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

from _goals import Goals  # noqa: E402  (bench/ is a directory of scripts, not a package)


def test_make_bench_runs_every_script_in_bench():
    dry = subprocess.run(["make", "-n", "bench"], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    scripts = {p.relative_to(ROOT).as_posix() for p in (ROOT / "bench").glob("*.py")
               if not p.name.startswith("_")}
    assert len(scripts) >= 6
    run = set(re.findall(r"bench/[A-Za-z0-9_]+\.py", dry))
    assert scripts <= run, f"make bench leaves out {sorted(scripts - run)}"
    assert "bench/_goals.py" not in run


def test_a_missing_figure_fails_its_goal(capsys):
    goals = Goals()
    goals.check("p99_ratio_max", None, "<=", 1.10)
    assert goals.finish() == 1
    assert capsys.readouterr().out == \
        "goal p99_ratio_max: - <= 1.1: MISSING (no figure was produced)\n"


@pytest.mark.parametrize("values, verdict", [
    ([1.01, 1.05], "PASS"), ([1.01, 1.2], "FAIL"), ([1.01, None], "MISSING"),
    ([1.0, math.nan], "MISSING"), ([], "MISSING")])
def test_goals_over_several_figures_take_the_worst_and_refuse_gaps(values, verdict):
    goals = Goals()
    goals.check_all("p99_ratio_max", values, "<=", 1.10)
    assert goals.goals[0].verdict == verdict
    assert goals.finish() == (0 if verdict == "PASS" else 1)


def test_refused_figures_are_not_printed_and_not_passed(capsys):
    goals = Goals()
    goals.check("monitor_overhead_pct", 0.4, "<=", 1)
    goals.refuse("aggressor_strength_ratio", ">=", 1.2, "the canary never saw a shared cache")
    assert goals.finish() == 3
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "goal monitor_overhead_pct: 0.4 <= 1: PASS"
    assert out[1] == ("goal aggressor_strength_ratio: - >= 1.2: REFUSED (the canary never "
                      "saw a shared cache)")
    assert Goals().finish() == 1  # a benchmark that checked nothing has not passed


@pytest.mark.parametrize("present,absent,probe,status", [
    (0, 20, "right", 3),   # the host stayed in one state: nothing to agree about
    (4, 20, "right", 3),
    (5, 5, "right", 0),
    (5, 5, "unknown", 1),  # every round unknown: agreement 0
])
def test_canary_probe_bench_refuses_agreement_without_both_states(present, absent, probe,
                                                                   status, capsys):
    import canary_probe
    from intercore.measure.regime.canary import AS_REGIME, Agreement

    truth = ["present"] * present + ["absent"] * absent
    said = [AS_REGIME[t] if probe == "right" else "unknown" for t in truth]
    goals = Goals()
    canary_probe.judge(goals, Agreement.of(truth, said), 0.03)
    assert goals.finish() == status
    verdicts = {g.name: g.verdict for g in goals.goals}
    assert verdicts["canary_probe_cost"] == "PASS"
    if status == 3:
        assert verdicts["canary_probe_agreement"] == "REFUSED"
        assert f"present in {present} and absent in {absent}" in capsys.readouterr().out
    goals = Goals()
    canary_probe.judge(goals, Agreement.of(truth, said), None)  # no probe ran
    assert goals.finish() == 1 and goals.goals[-1].verdict == "MISSING"


def test_protection_bench_fails_when_the_run_has_no_p99(monkeypatch, capsys):
    """Too few jobs for a p99: the goal is MISSING and the script exits 1 (it printed 0 and
    passed the <= 1.10 goal before)."""
    import protection

    placement = {"solo": {"p99_ms": None, "max_ms": 9.0, "n": 20, "misses": 0,
                          "miss_ratio": 0.0, "noise_progress": None},
                 "interference": {"p99_ms": None, "max_ms": 40.0, "n": 20, "misses": 8,
                                  "miss_ratio": 0.4, "noise_progress": None},
                 "protected": {"p99_ms": None, "max_ms": 9.5, "n": 20, "misses": 0,
                               "miss_ratio": 0.0, "noise_progress": 0.8},
                 "monitor": {"overhead_pct": 0.3, "latency_from": "release",
                             "latency": {"p50_ns": 40_000, "p99_ns": 90_000, "n": 20}},
                 "notes": []}
    monkeypatch.setattr(protection.experiment, "run",
                        lambda cfg, **kw: {"placements": {"same-core": placement}})
    monkeypatch.setattr(sys, "argv", ["protection.py", "--jobs", "20"])
    assert protection.main() == 1
    out = capsys.readouterr().out
    assert "goal p99_ratio_max: - <= 1.1: MISSING" in out
    assert "goal protected_misses_max: 0 <= 0: PASS" in out


def _shared_pairs(delta: float, seed: int, n: int = 20):
    rng = np.random.default_rng(seed)
    iso = rng.normal(1e6, 1e4, n)
    return iso, iso * delta * rng.normal(1.0, 0.01, n)


@pytest.mark.parametrize("ours, verdicts, status", [
    ((3.0, 2.1), ("PASS", "PASS"), 0),   # 1.5x the strongest stressor
    ((2.2, 1.5), ("FAIL", "PASS"), 1),   # stronger, but not by the 20 % the goal asks
    ((1.9, 1.5), ("FAIL", "FAIL"), 1),   # weaker: the strength ratio is missed, not printed as met
])
def test_aggressor_strength_fails_closed_when_its_goal_is_missed(ours, verdicts, status):
    """The strongest finalist of each side is compared (their others do not count), and the
    script's exit status follows the goals (it printed its ratio and exited 0 before)."""
    import aggressor_strength

    goals = Goals()
    best_ours, best_theirs, ratio, (lo, hi) = aggressor_strength.judge(
        {f"ours {d}": _shared_pairs(d, i) for i, d in enumerate(ours)},
        {"stream": _shared_pairs(2.0, 7), "cache": _shared_pairs(1.2, 8)}, goals)
    assert (best_ours, best_theirs) == (f"ours {ours[0]}", "stream")
    assert lo <= ratio <= hi and ratio == pytest.approx(ours[0] / 2.0, rel=0.02)
    assert tuple(g.verdict for g in goals.goals) == verdicts
    assert goals.finish() == status


def _fusion_samples(n: int, fused_s: float = 0.1, unfused_s: float = 0.2):
    import fusion
    wall = {c: [fused_s if c[0] == "fused" else unfused_s] * n for c in fusion.CONDITIONS}
    nivcsw = {c: [1 if c[0] == "fused" else 50] * n for c in fusion.CONDITIONS}
    nvcsw = {c: [10 if c[0] == "fused" else 30] * n for c in fusion.CONDITIONS}
    return wall, nivcsw, nvcsw


def test_fusion_bench_fails_closed_on_a_missing_figure(monkeypatch, capsys):
    """A condition with no samples is MISSING and fails; under 100 runs the p99 goal is
    refused with its reason, not printed from the maximum."""
    import fusion

    wall, nivcsw, nvcsw = _fusion_samples(5)
    wall[("fused", True, False)] = []
    nivcsw[("fused", True, False)] = []
    nvcsw[("fused", True, False)] = []
    rows = fusion.figures(wall, nivcsw, nvcsw, 5)
    assert rows["fusion_speedup_alone"]["value"] == pytest.approx(2.0)
    assert rows["fusion_speedup_aggressor"]["value"] is None
    assert rows["fusion_vs_sequential_alone"]["value"] == pytest.approx(2.0)
    assert rows["fusion_vs_sequential_aggressor"]["value"] is None
    assert fusion.check(rows, 5).finish() == 1
    out = capsys.readouterr().out
    assert "goal fusion_speedup_alone: 2 >= 1.5: PASS" in out
    assert "goal fusion_speedup_aggressor: - >= 1.5: MISSING" in out
    assert "goal fusion_vs_sequential_alone: 2 >= 1: PASS" in out
    assert "goal fusion_vs_sequential_aggressor: - >= 1: MISSING" in out
    assert "goal manager_p99_reduction: - >= 0.2: REFUSED (a p99 needs >= 100 runs" in out


def test_fusion_bench_refuses_every_figure_on_one_cpu(monkeypatch, capsys):
    import fusion

    monkeypatch.setattr(fusion, "read_topology", lambda: SimpleNamespace(online_cpus=(0,)))
    monkeypatch.setattr(sys, "argv", ["fusion.py", "--runs", "3"])
    assert fusion.main() == 3
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(fusion.GOALS)
    assert all(line.endswith("REFUSED (the pipeline and an aggressor need two CPUs)")
               for line in lines)


def test_fusion_bench_passes_only_with_every_goal_met(capsys):
    import fusion

    wall, nivcsw, nvcsw = _fusion_samples(100)
    wall[("fused", True, True)] = [0.07] * 100  # the manager cuts p99 by 30 %
    assert fusion.check(fusion.figures(wall, nivcsw, nvcsw, 100), 100).finish() == 0
    wall, nivcsw, nvcsw = _fusion_samples(100, unfused_s=0.12)  # fused only 1.2x faster
    assert fusion.check(fusion.figures(wall, nivcsw, nvcsw, 100), 100).finish() == 1
    assert "goal fusion_speedup_alone: 1.2 >= 1.5: FAIL" in capsys.readouterr().out


def test_fusion_bench_refuses_the_manager_figure_where_the_manager_turns_itself_off(capsys):
    """Where the manager's own check says its signal cannot help, its figure is refused with
    that reason and the fusion figures are still judged."""
    import fusion

    wall, nivcsw, nvcsw = _fusion_samples(100)
    wall[("fused", True, True)], nivcsw[("fused", True, True)] = [], []
    nvcsw[("fused", True, True)] = []
    assert fusion.check(fusion.figures(wall, nivcsw, nvcsw, 100), 100,
                        manager_off="no cache-miss counter").finish() == 3
    out = capsys.readouterr().out
    assert "goal manager_p99_reduction: - >= 0.2: REFUSED (the manager turns itself off here: " \
        "no cache-miss counter)" in out
    assert "goal fusion_speedup_alone: 2 >= 1.5: PASS" in out


def _bandwidth(monkeypatch, *, euid: int = 0):
    import bandwidth

    monkeypatch.setattr(bandwidth, "read_topology",
                        lambda: SimpleNamespace(online_cpus=(0, 1), model_name="test host"))
    monkeypatch.setattr(bandwidth.os, "geteuid", lambda: euid)
    monkeypatch.setattr(sys, "argv", ["bandwidth.py"])
    monkeypatch.setattr(bandwidth, "shared_core", lambda topo: None)
    return bandwidth


def test_bandwidth_bench_fails_closed_on_a_part_that_produced_nothing(monkeypatch, capsys):
    """A profiler run without samples is MISSING with its error, a host without a memory
    counter REFUSED, and too few victim repetitions for a p99 FAIL: never a zero, never a
    pass."""
    bandwidth = _bandwidth(monkeypatch)

    def no_samples(*args):
        raise RuntimeError("ptrchase: a victim block produced no sample")

    cpu_clock = {"overshoot_p50_us": 20.0, "overshoot_p99_us": 80.0, "overshoot_max_us": 90.0,
                 "n_periods": 3000, "react_p99_us": 15.0, "regulator_cpu_pct": 0.4}
    few = {"n": 40, "median_ms": 1.0, "p99_ms": None, "p99_ci_ms": None}
    monkeypatch.setattr(bandwidth, "profiler_overhead", no_samples)
    monkeypatch.setattr(bandwidth, "overshoot", lambda topo, say: {
        "cpu_clock": cpu_clock, "pmu": {"refused": "no core counter of memory traffic"}})
    monkeypatch.setattr(bandwidth, "probe_effect", lambda *args: {
        "aggressor": "BwWrite(LLC)", "aggressor_choice": "none saved", "threshold_ns": 90.0,
        "threshold_from": "calibration", "throttled_period_share_median": None,
        "none": few, "inert": few, "regulated": {**few, "n": 120},
        "p99_ratio_vs_none": None, "p99_ratio_vs_inert": None})
    assert bandwidth.main() == 1
    out = capsys.readouterr().out.splitlines()
    assert out[-3:] == [
        "goal profiler_overhead_pct_max: - <= 1: MISSING (profiler overhead failed: "
        "RuntimeError: ptrchase: a victim block produced no sample)",
        "goal regulator_overshoot_p99_us: - <= 100: REFUSED (no core counter of memory "
        "traffic)",
        "goal probe_regulator_reps_min: 40 >= 100: FAIL"]
    assert any("victim p99 - ms n/a regulated" in line for line in out)


@pytest.mark.parametrize("before,after", [(True, False), (False, True)])
def test_bandwidth_bench_refuses_the_sampler_figures_while_the_cpus_share_a_core(
        monkeypatch, capsys, before, after):
    """Issue 24: the sampler alone slowed a compute-bound matmul 1.6x on one core's threads;
    such a figure is not the profiler's memory cost. Sharing seen before part 1 or after
    part 3 refuses both figures with the probe's words; the regulator's overshoot stands."""
    bandwidth = _bandwidth(monkeypatch)
    said = iter([before, after])
    note = "the profiler's busy-wait sampler on CPU 0 shares a physical core with CPU 1"
    monkeypatch.setattr(bandwidth, "shared_core",
                        lambda topo: f"refused: {note}" if next(said) else None)
    ran = []
    monkeypatch.setattr(bandwidth, "profiler_overhead", lambda *a: ran.append("profiler"))
    monkeypatch.setattr(bandwidth, "overshoot", lambda topo, say: {
        "cpu_clock": {"overshoot_p50_us": 20.0, "overshoot_p99_us": 80.0,
                      "overshoot_max_us": 90.0, "n_periods": 3000, "react_p99_us": 15.0,
                      "regulator_cpu_pct": 0.4},
        "pmu": {"refused": "no core counter of memory traffic"}})
    monkeypatch.setattr(bandwidth, "probe_effect", lambda *a: ran.append("probe"))
    assert bandwidth.main() == 3
    out = capsys.readouterr().out.splitlines()
    assert out[-3:] == [
        f"goal profiler_overhead_pct_max: - <= 1: REFUSED ({note})",
        "goal regulator_overshoot_p99_us: - <= 100: REFUSED (no core counter of memory "
        "traffic)",
        f"goal probe_regulator_reps_min: - >= 100: REFUSED ({note})"]
    assert ran == ([] if before else ["profiler", "probe"])


def test_bandwidth_bench_refuses_a_host_without_root(monkeypatch, capsys):
    bandwidth = _bandwidth(monkeypatch, euid=1000)
    assert bandwidth.main() == 3
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 3 and all(": REFUSED (needs root and two CPUs" in line for line in out)


@pytest.mark.parametrize("same,apart,probe,why_not,status", [
    (5, 5, "right", None, 0),
    (5, 5, "unknown", None, 1),       # every round unknown: agreement 0
    (4, 20, "right", None, 3),        # too few of one state
    (0, 0, "right", "under KVM, sysfs is no truth", 3),
])
def test_core_probe_bench_judges_only_against_a_truth_it_has(same, apart, probe, why_not,
                                                              status, capsys):
    import core_probe
    from intercore.measure.regime.canary import Agreement
    from intercore.measure.harness.paired import CORE_STATES

    truth = ["same-core"] * same + ["separate-cores"] * apart + ["unknown"] * 3
    said = ["separate-cores" if t == "unknown" else t if probe == "right" else "unknown"
            for t in truth]
    goals = Goals()
    core_probe.judge(goals, Agreement.of(truth, said, core_probe.AS_PROBE, CORE_STATES), 0.004,
                     why_not)
    assert goals.finish() == status
    verdicts = {g.name: g.verdict for g in goals.goals}
    assert verdicts["core_probe_cost"] == "PASS"
    if status == 3:
        assert verdicts["core_probe_agreement"] == "REFUSED"
        assert (why_not or "need 5 of each") in capsys.readouterr().out


def test_core_probe_bench_takes_sysfs_for_truth_on_bare_metal_only(tmp_path, monkeypatch):
    import core_probe
    monkeypatch.syspath_prepend(str(ROOT / "tests" / "host"))
    from fake_host import hybrid_x86_vm, xeon_cat_v2

    from intercore.host.topology import read_topology

    xeon_cat_v2(tmp_path / "xeon")  # 4 cores x 2 threads: cpuN and cpuN+4
    pairs = core_probe.truth_pairs(read_topology(tmp_path / "xeon"))
    assert pairs == {"same-core": (7, 3), "separate-cores": (7, 0)}
    hybrid_x86_vm(tmp_path / "vm")
    assert core_probe.truth_pairs(read_topology(tmp_path / "vm")) == {}


def test_backends_bench_fails_closed_on_differing_outputs_and_missing_ratios(capsys):
    import backends
    walls = {f"{cc}/{b}": [0.05 if b == "mlir" else 0.06] * 4 for cc in ("cc", "clang")
             for b in backends.BACKENDS}
    said = {n: "built" for n in walls}
    doc = backends.figures(walls, said, ["cc", "clang"], same_output=True)
    assert doc["ratios"]["cc"]["c_over_mlir"] == pytest.approx(1.2)
    assert backends.check(doc).finish() == 0
    assert backends.check(backends.figures(walls, said, ["cc"], same_output=False)).finish() == 1
    one = {n: w[:1] for n, w in walls.items()}  # one pair: no CI, so the figure is MISSING
    assert backends.check(backends.figures(one, said, ["cc"], same_output=True)).finish() == 1
    out = capsys.readouterr().out
    assert "goal same_output: - == 1" not in out and "goal same_output: 0 == 1: FAIL" in out
    assert "goal c_over_mlir[cc] formed: - > 0: MISSING" in out


def _schedule_runs(threads: list[tuple[float, int]], static: list[tuple[float, int]]):
    from intercore.compile.runs import Run
    return {"threads": [Run(w, w, sw, 2 * sw, "") for w, sw in threads],
            "static": [Run(w, w, sw, sw, "") for w, sw in static]}


def test_schedule_bench_fails_closed(capsys):
    """Figures are threads / static, paired; no pairs is MISSING and fails; both goals met
    pass (a static run with no involuntary switch counts 1, so the ratio stays finite)."""
    import schedule

    met = schedule.figures(_schedule_runs([(0.3, 40)] * 4, [(0.1, 0)] * 4))
    assert met["static_speedup"]["value"] == pytest.approx(3.0)
    assert met["static_nivcsw_ratio"]["value"] == pytest.approx(40.0)
    assert schedule.check(met).finish() == 0
    gone = schedule.figures(_schedule_runs([], []))
    assert gone["static_speedup"]["value"] is None
    assert schedule.check(gone).finish() == 1
    assert "goal static_speedup: - >= 1.5: MISSING" in capsys.readouterr().out


def test_schedule_bench_refuses_without_fewer_cpus_than_tasks(monkeypatch, capsys):
    import schedule

    monkeypatch.setattr(sys, "argv", ["schedule.py", "--runs", "3", "--cpus", "6"])
    monkeypatch.setattr(schedule.os, "sched_getaffinity", lambda pid: set(range(8)))
    assert schedule.main() == 3
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(schedule.GOALS)
    assert all("REFUSED (--cpus 6: a static schedule needs fewer CPUs than the 6 tasks)"
               in line for line in lines)
