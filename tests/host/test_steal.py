"""Steal time from /proc/stat: the parser on the kernel's text, the meter on a fake tree."""

from __future__ import annotations

from intercore.base.parse import proc_stat_steal
from intercore.host.steal import TICK_MS, StolenTime, read_steal
from intercore.mitigate.experiment.protection import _stolen_note
from intercore.mitigate.experiment.scenario import ScenarioSummary

# As this KVM guest printed it; cpu2 is a line from a kernel without the steal field.
STAT = """cpu  5910644 1292493 656555 1330406 9246 0 4403 19776 0 0
cpu0 2744202 765973 306452 781094 2803 0 491 9930 0 0
cpu1 3166442 526520 350103 549311 6442 0 3912 9846 0 0
cpu2 1 2 3 4 5 6 7
intr 123 0 0
ctxt 42
"""


def test_steal_is_the_eighth_number_of_each_cpu_line():
    assert proc_stat_steal(STAT) == {0: 9930, 1: 9846}
    assert proc_stat_steal("") == {}


def _tree(tmp_path, cpu1_steal: int):
    (tmp_path / "proc").mkdir(exist_ok=True)
    (tmp_path / "proc/stat").write_text(STAT.replace(" 9846 ", f" {cpu1_steal} "))


def test_the_meter_gives_what_the_hypervisor_took_during_the_block(tmp_path):
    _tree(tmp_path, 9846)
    with StolenTime([1, 0], root=tmp_path) as stolen:
        _tree(tmp_path, 9849)
    assert stolen.ms == {0: 0.0, 1: 3 * TICK_MS}


def test_a_cpu_without_a_steal_count_makes_the_figure_unknown_not_zero(tmp_path):
    _tree(tmp_path, 9846)
    with StolenTime([1, 2], root=tmp_path) as stolen:
        pass
    assert stolen.ms is None
    assert read_steal(tmp_path / "nowhere") == {}


def _summary(misses: int, steal: dict[int, float] | None) -> ScenarioSummary:
    return ScenarioSummary(n=20, misses=misses, miss_ci=(0.0, 0.2), p50_ms=5.0, p99_ms=None,
                           max_ms=36.0, noise_progress=None, host_steal_ms=steal)


def test_misses_beside_stolen_time_are_said_and_nothing_else_is():
    note = _stolen_note("solo", _summary(1, {0: 0.0, 1: 30.0}))
    assert note == [f"solo: 1/20 missed while the hypervisor took 30 ms from CPU 1 (counted in "
                    f"{TICK_MS:g} ms ticks): the host, not only the task set, may explain them"]
    assert _stolen_note("solo", _summary(0, {1: 30.0})) == []
    assert _stolen_note("solo", _summary(1, {1: 0.0})) == []
    assert _stolen_note("solo", _summary(1, None)) == []
    assert _summary(1, {1: 30.0}).to_dict()["host_steal_ms"] == {"1": 30.0}
