"""The latency probe's calibration: the fit and its detection floor on synthetic latencies,
and one short real calibration against our rate-throttled bw aggressor."""

from __future__ import annotations

import numpy as np
import pytest

from intercore.base.errors import HostUnsupported
from intercore.host.topology import read_topology
from intercore.measure.bandwidth import probe


def latencies(mean: float, sd: float, n: int = 20_000, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(mean, sd, n)


def runs_for(shift_per_gbps: float, sd: float = 5.0) -> dict:
    levels = {"idle": (None, 0.0), "25%": (1000.0, 1000.0), "50%": (2000.0, 2000.0),
              "100%": (4000.0, 4000.0)}
    return {name: [(req, ach, latencies(100 + shift_per_gbps * ach / 1000, sd, seed=i))]
            for i, (name, (req, ach)) in enumerate(levels.items())}


def test_a_probe_that_feels_load_is_usable_and_monotone():
    cal = probe.fit("host", 1 << 26, 8, 10_000, 10, runs_for(shift_per_gbps=10.0))
    assert cal.usable and cal.reason is None
    assert cal.floor_mbps == 1000.0
    est = cal.estimate_mbps(np.array([90.0, 100.0, 115.0, 120.0, 140.0, 500.0]))
    assert est[0] == 0.0 and est[-1] == 4000.0
    assert np.all(np.diff(est) >= 0)
    assert 1000.0 < est[2] < 2000.0


def test_the_floor_is_the_least_level_told_from_idle():
    # 25 % moves the latency by a tenth of its noise: indistinguishable; 50 % and up are not.
    runs = runs_for(shift_per_gbps=10.0, sd=5.0)
    runs["25%"] = [(1000.0, 1000.0, latencies(100.3, 5.0, seed=9))]
    cal = probe.fit("host", 1 << 26, 8, 10_000, 10, runs)
    assert cal.floor_mbps == 2000.0


def test_a_probe_that_feels_nothing_is_refused_with_the_reason():
    cal = probe.fit("host", 1 << 26, 8, 10_000, 10, runs_for(shift_per_gbps=0.0))
    assert not cal.usable and cal.floor_mbps is None
    assert "does not show load to a probe" in cal.reason
    with pytest.raises(HostUnsupported, match="not usable"):
        cal.estimate_mbps(np.array([100.0]))


def test_a_calibration_survives_a_round_trip():
    cal = probe.fit("host", 1 << 26, 8, 10_000, 10, runs_for(10.0), "2024-01-01T00:00:00")
    again = probe.ProbeCalibration.from_dict(cal.to_dict())
    assert again == cal


@pytest.mark.slow
def test_a_real_calibration_runs_against_the_throttled_aggressor():
    topo = read_topology()
    if len(topo.online_cpus) < 2:
        pytest.skip("needs two CPUs")
    seen = []
    cal = probe.calibrate(topo, "test-host", probe_cpu=topo.online_cpus[0],
                          aggr_cpu=topo.online_cpus[-1], size=16 << 20, seconds=0.2, rounds=1,
                          fractions=(0.25, 1.0), on_run=lambda *a: seen.append(a))
    assert [a[1] for a in seen] == list(range(1, 5))
    levels = {p.level: p for p in cal.points}
    assert set(levels) == {"idle", "25%", "100%"}
    assert levels["idle"].achieved_mbps == 0.0 and levels["100%"].achieved_mbps > 0
    # The throttle holds: the quarter rate moves less than the unthrottled run.
    assert levels["25%"].achieved_mbps < levels["100%"].achieved_mbps
    assert all(p.samples > 1000 for p in cal.points)
    assert cal.usable == (cal.floor_mbps is not None)
    assert cal.usable or "does not show load" in cal.reason
