"""The interleaved harness on real processes: blocks, parking, the running canary, adaptive
stopping. Victims and aggressors are small (private-cache sized) so every test takes seconds."""

from __future__ import annotations

import os
import random
import signal
import statistics
import subprocess
import threading
from collections import Counter
from contextlib import contextmanager
from dataclasses import replace
from typing import Iterator

import pytest
from _flipping import FlippingHost, aggressor_argv, usable

from intercore.host.topology import default_placement, largest_private, read_topology
from intercore.measure import canary, harness, schedule
from intercore.measure.harness import REGIMES, Plan, VictimSpec
from intercore.measure.presets import AggressorSet, AggressorSpec

TOPO = read_topology()
pytestmark = pytest.mark.skipif(len(TOPO.online_cpus) < 2,
                                reason="needs two online CPUs (victim + aggressor)")
VCPU, ACPUS = default_placement(TOPO)
ACPU = ACPUS[0]
L2 = largest_private(TOPO, VCPU).size


def chase(size: int, accesses: str = "200K") -> VictimSpec:
    return VictimSpec("ptrchase", (("size", str(size)), ("accesses", accesses)))


def writer(label: str, size: int, cpu: int = ACPU) -> AggressorSet:
    return AggressorSet(label, (AggressorSpec("bw", "write", size, label, cpu=cpu),))


def test_sets_take_turns_in_blocks_and_parked_sets_move_nothing():
    sets = tuple(writer(f"w{i}", (i + 2) * L2) for i in range(3))
    plan = Plan(chase(L2 // 2), sets, runs=4, victim_cpu=VCPU, seed=9, block_pairs=2)
    out = harness.run(plan)
    total = sorted((s for s in out.samples if s.region == 0), key=lambda s: s.rep)
    # The victim ran the shared schedule, rep for rep.
    want = schedule.repetitions(3, 4, 2, seed=9)
    assert [(s.pair, s.condition, s.block) for s in total] == \
        [(r.pair, r.condition, r.block) for r in want]
    assert Counter(s.aggressor_set for s in total if s.condition == "int") == \
        {"w0": 4, "w1": 4, "w2": 4}
    assert len(out.blocks) == 6 and out.block_size.reason == "as given"
    for b in out.blocks:
        assert set(b.bytes_moved) == {"w0", "w1", "w2"}
        assert all(moved == 0 for label, moved in b.bytes_moved.items()
                   if label != b.aggressor_set), b
        assert b.bytes_moved[b.aggressor_set] > 0
    # Samples carry their block and its start; iso halves moved no aggressor byte.
    for s in total:
        block = out.blocks[s.block]
        assert s.block_start_ns == block.start_ns and s.regime is None  # no canary: no claim
        if s.condition == "int":
            assert s.aggressor_set == block.aggressor_set


def test_running_canary_gives_every_block_and_sample_a_regime():
    cp = canary.running_plan(TOPO, VCPU, ACPU)
    sets = (writer("a", 2 * L2), writer("b", 3 * L2))
    plan = Plan(chase(L2 // 2, "100K"), sets, runs=3, victim_cpu=VCPU, seed=2, block_pairs=1,
                canary=cp)
    out = harness.run(plan)
    assert len(out.probes) == len(out.blocks) + 1 == 7
    assert all(p.regime in REGIMES and cp.pairs <= len(p.ratios) <= cp.most_pairs
               for p in out.probes)
    # A probe stops at its first pairs only when they agree; else it takes them all.
    for p in out.probes:
        assert (len(p.ratios) == cp.pairs) == harness.decided(list(p.ratios[:cp.pairs])) \
            or len(p.ratios) == cp.most_pairs
    for i, b in enumerate(out.blocks):
        assert b.regime == harness.block_regime(out.probes[i], out.probes[i + 1])
        assert out.probes[i].at_ns <= b.start_ns < b.end_ns <= out.probes[i + 1].at_ns
    for s in out.samples:
        assert s.regime == out.blocks[s.block].regime
    assert out.canary_info["pairs_per_probe"] == cp.pairs


@pytest.mark.parametrize("ratios,regime", [
    ([1.0, 1.02, 0.99, 1.5, 0.98], "not-shared"),   # one disturbed pair does not decide
    ([3.0, 5.1, 0.4, 4.0, 2.2], "shared"),
    ([1.2, 1.15, 1.25], "unknown"),
    ([], "unknown"),
])
def test_probe_classification_uses_the_median(ratios, regime):
    assert harness.classify_probe(ratios) == regime


@pytest.mark.parametrize("ratios,decided", [
    ([1.0, 1.02, 0.99], True), ([3.0, 5.1, 1.4], True), ([1.0, 1.5, 1.02], False),
    ([1.2, 1.15], False), ([], False)])
def test_a_probe_is_decided_when_its_pairs_agree(ratios, decided):
    assert harness.decided(ratios) == decided


def test_block_regime_needs_both_probes_to_agree():
    p = lambda r: harness.Probe(0, r, ())  # noqa: E731
    assert harness.block_regime(p("shared"), p("shared")) == "shared"
    assert harness.block_regime(p("shared"), p("not-shared")) == "unknown"
    assert harness.block_regime(None, p("shared")) == "unknown"


def _on_cpu_ns(pid: int) -> int:
    """How long the process has run (ns, the scheduler's own account)."""
    with open(f"/proc/{pid}/schedstat") as f:
        return int(f.read().split()[0])


class NoisyTenant:
    """Another tenant on the victim's own CPU that comes and goes at random (stopped and
    continued): on or off for between half and twice `spell_ns` of the victim's own CPU time,
    a repetition's length, so each repetition meets it or not by chance, whatever share of
    the CPU the victim gets on this host. On, it preempts a normal-priority victim every
    quarter millisecond (SCHED_FIFO) and evicts its private cache, so the repetitions it
    meets are much slower than the others, whatever time slices the scheduler gives."""

    def __init__(self, spell_ns: float) -> None:
        self.spell_ns = spell_ns
        self.victim: int | None = None
        self.spells = 0
        self.proc: subprocess.Popen | None = None
        self.status: int | None = None  # how the tenant ended, when it did before the test

    def on_start(self, role: str, pid: int) -> None:
        if role == "victim":
            self.victim = pid

    def describe(self) -> str:
        state = "ran throughout" if self.status is None else f"exited early ({self.status})"
        return f"{state}, {self.spells} spells on or off"

    def _toggle(self, done: threading.Event) -> None:
        rng = random.Random(1)
        on, mark, spell, victim = True, 0, 0.0, None
        while not done.wait(0.0005):
            try:
                if self.victim != victim:
                    victim, mark = self.victim, _on_cpu_ns(self.victim)
                    spell = rng.uniform(0.5, 2.0) * self.spell_ns
                    continue
                ran = _on_cpu_ns(victim) - mark
            except (OSError, TypeError):
                continue  # no victim yet, or it has exited
            if ran >= spell:
                on = not on
                self.spells += 1
                os.kill(self.proc.pid, signal.SIGCONT if on else signal.SIGSTOP)
                mark += ran
                spell = rng.uniform(0.5, 2.0) * self.spell_ns

    @contextmanager
    def running(self) -> Iterator["NoisyTenant"]:
        self.proc = subprocess.Popen(aggressor_argv(VCPU, 2 * L2, name="noisy-tenant"),
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        done = threading.Event()
        thread = threading.Thread(target=self._toggle, args=(done,), daemon=True)
        thread.start()
        try:
            yield self
        finally:
            done.set()
            thread.join()
            self.status = self.proc.poll()
            self.proc.kill()
            self.proc.wait()


def _spread(times: list[int]) -> float:
    """From the 10th to the 90th percentile of sorted times, as a fraction of their median."""
    return (times[-1 - len(times) // 10] - times[len(times) // 10]) / statistics.median(times)


def test_adaptive_stopping_stops_a_quiet_victim_early_and_a_noisy_one_at_max_runs():
    """Quiet: the aggressor shares the SCHED_FIFO victim's CPU, so it never runs during a
    repetition (this host's two vCPUs are at times SMT siblings, so no cross-CPU aggressor is
    reliably silent). Noisy: the same, with the victim at normal priority beside a tenant
    that comes and goes at random, in spells about as long as a repetition, and a victim
    that fills most of its private cache."""
    common = dict(runs=4, victim_cpu=VCPU, seed=4, block_pairs=2, until_ci=0.02,
                  max_runs=24)
    sets = (writer("beside", L2 // 4, cpu=VCPU),)
    quiet = harness.run(Plan(chase(L2 // 4, "2M"), sets, victim_priority=1, **common))
    [why] = quiet.stopped.values()
    # The precondition, measured: nothing disturbed the quiet victim (a realtime task of
    # another tenant above its priority would). Repetitions within 6 % of their median (10th
    # to 90th percentile) leave 24 pairs a CI under 2 %; a wider spread is the host's doing.
    reps = sorted(s.cpu_ns for s in quiet.samples if s.region == 0)
    spread = _spread(reps)
    if not why.startswith("stopped early") and spread > 0.06:
        pytest.skip(f"other tenants disturbed the quiet victim: its {len(reps)} repetitions "
                    f"spread by {spread:.0%} of their median (10th to 90th percentile)")
    assert why.startswith("stopped early"), (why, f"spread {spread:.1%}")
    assert 4 <= len({s.pair for s in quiet.samples}) < 24
    calm = [s for s in quiet.samples if s.region == 0 and s.condition == "iso"]
    # Most of the private cache: every preemption by the tenant costs a long refill, and its
    # repetitions take longer than the quiet victim's (twice its length: about one of these).
    sensitive = chase(3 * L2 // 4, "2M")
    with NoisyTenant(2 * statistics.median(s.cpu_ns for s in calm)).running() as tenant:
        noisy = harness.run(Plan(sensitive, sets, victim_priority=0, **common),
                            on_start=tenant.on_start)
    # The precondition, measured: the tenant spread the isolated repetitions widely (from
    # the 10th to the 90th percentile by a fifth of their median or more, which leaves the
    # CI of a ratio of medians of 24 such pairs several per cent wide). If not (no SCHED_FIFO
    # here, say), the victim was not noisy and there is nothing to test.
    iso = sorted(s.cpu_ns for s in noisy.samples if s.region == 0 and s.condition == "iso")
    spread = _spread(iso)
    if spread < 0.2:
        pytest.skip(f"the tenant ({tenant.describe()}) spread the victim's {len(iso)} isolated "
                    f"repetitions by {spread:.0%} of their median (10th to 90th percentile), "
                    f"not 20%: the victim was not noisy on this host")
    [why] = noisy.stopped.values()
    assert why.startswith("ran to --max-runs (24 pairs)"), why
    assert len({s.pair for s in noisy.samples}) == 24


# ---- a host whose interference comes and goes ---------------------------------------------


from intercore.measure.harness import CanaryPlan  # noqa: E402
from intercore.measure.paired_comparison import comparisons  # noqa: E402

EXPECTED = {"on": "shared", "off": "not-shared"}
STARTUP_NS = 500_000_000
# Two processes of one aggressor differ by 5-12 % in Δ across process instances here (the
# closing note of issue 9): the margin when estimates from different processes are compared.
PROCESS_SPREAD = 0.12
OPPOSITE = {"on": "not-shared", "off": "shared"}


def _test_aggressor(label: str, name: str = "flipping-host") -> AggressorSpec:
    return AggressorSpec("cmd", "", 0, label, cpu=VCPU,
                         command=aggressor_argv(VCPU, 8 * L2, name=name))


# Two copies of the test aggressor that the flipping host switches on and off (their --name
# starts with its mark), and two it leaves alone: always on, they are the run made entirely
# in the shared state, measured interleaved with the flipping ones so that both meet the same
# real host. Two of each, pooled: one copy differs from another by a few per cent here (its
# buffer's pages), as much as their CIs are wide.
ROLES = {"flipping 1": ("flipping", "flipping-host-1"),
         "flipping 2": ("flipping", "flipping-host-2"),
         "steady 1": ("steady", "steady-tenant-1"), "steady 2": ("steady", "steady-tenant-2")}


def _flipping_plan(runs: int) -> Plan:
    victim_size = 3 * L2 // 4  # most of the private cache: every preemption costs a refill
    cp = CanaryPlan(chase(victim_size, "250K"), _test_aggressor("canary thrasher"), 5)
    sets = tuple(AggressorSet(label, (_test_aggressor(label, name),))
                 for label, (_, name) in ROLES.items())
    return Plan(chase(victim_size, "500K"), sets, runs=runs, victim_cpu=VCPU,
                victim_priority=1, seed=3, block_pairs=2, canary=cp)


def _by_role(samples: list) -> dict:
    """Region 0 compared per role, the copies of each role pooled (pair numbers are unique
    within a run, so an interfered sample keeps its own isolated half)."""
    pooled = [replace(s, aggressor_set=ROLES[s.aggressor_set][0]) if s.aggressor_set else s
              for s in samples]
    return {c.aggressor_set: c for c in comparisons(pooled) if c.region == 0}


@pytest.mark.slow
@pytest.mark.skipif(usable() is not None, reason=str(usable()))
def test_regimes_follow_a_flipping_host_and_shared_blocks_match_an_all_shared_run():
    host = FlippingHost(period_s=0.5)
    with host.running():
        flipping = harness.run(_flipping_plan(runs=32))
    seen = Counter()
    at = flipping.started_at
    for b, before, after in zip(flipping.blocks, flipping.probes, flipping.probes[1:]):
        # A block's regime is what the probes on both sides saw: judge it over that span.
        state = host.state_over(at + before.start_ns / 1e9, at + after.at_ns / 1e9)
        if before.start_ns < STARTUP_NS:
            continue  # the test aggressor (a `cmd:` stressor: no ready line) is starting up
        if state is None:
            continue  # the host flipped meanwhile: either regime, or unknown, is right
        assert b.regime != OPPOSITE[state], (b, host.flips)
        seen[state, b.regime == EXPECTED[state]] += 1
    if seen["on", True] + seen["on", False] < 2 or seen["off", True] + seen["off", False] < 2:
        pytest.skip(f"the host was too busy for the timer to give both states a block: {seen}")
    assert seen["on", True] >= 2 and seen["off", True] >= 2, seen
    assert seen["on", False] + seen["off", False] <= (seen["on", True] + seen["off", True]) // 4

    with FlippingHost(period_s=None).running():
        always = harness.run(_flipping_plan(runs=4))
    assert {b.regime for b, before in zip(always.blocks, always.probes)
            if before.start_ns >= STARTUP_NS} <= {"shared", "unknown"}
    found = _by_role(flipping.samples)
    flip, ref = found["flipping"], found["steady"]
    if ref.result.iso.cv > 0.3:
        pytest.skip(f"other tenants disturbed the reference (isolated CV "
                    f"{ref.result.iso.cv:.0%}): nothing to compare against")
    # Two estimates of one quantity match when their 95% intervals overlap (each point lies
    # outside the other's interval often enough by chance alone), once each is widened by
    # what separates two processes of the same aggressor: the flipping and the steady copies
    # are different processes, and their Δ differ by 5-8 % on this host with the same sign
    # for both copies of a role, either way from run to run (their buffers' pages). The
    # reference ran in the same rotation of blocks as the flipping copies, so a real host
    # that changed meanwhile moved both alike. Unstratified, the flipping copies' Δ falls
    # far outside this (1.0 against 1.9 in a run that spent most blocks not shared).
    shared = flip.by_regime["shared"]
    widen = 1 + PROCESS_SPREAD
    assert shared.delta_ci[0] / widen <= ref.result.delta_ci[1] and \
        ref.result.delta_ci[0] / widen <= shared.delta_ci[1], (shared, ref.result)
    assert ref.result.delta > 1.2  # the simulated sharing is really observable
    calm = flip.by_regime["not-shared"]
    assert calm.delta_ci[0] <= 1.05 and calm.delta < 1.15, calm
