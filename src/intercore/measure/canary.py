"""The shared-cache canary: is cross-core cache interference observable right now?

A pointer chase sized between the private and the shared cache runs paired, alone and against
a write thrasher as large as the shared cache on another CPU. On a VM whose vCPUs share an L3
only part of the time (stressors.md §2), the answer changes from minute to minute, so the
harness keeps the canary resident and probes between blocks (`running_plan`): every sample
carries the regime its block was measured in. `run_canary` is the one-off probe (`doctor`,
a campaign session).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from ..errors import NativeError
from ..host.topology import Topology, default_placement, llc
from .harness import NOT_SHARED_BELOW, SHARED_AT, CanaryPlan, Plan, VictimSpec, run
from .paired_comparison import comparisons
from .presets import AggressorSet, AggressorSpec, Footprints

# The running probe, sized for cost (bench/canary_probe.py measures it against the long
# probe first built: a chase of 4x the private cache, two laps, five pairs): a chase of twice
# the private cache, so half of it lives in the shared cache the thrasher competes for, one
# lap, and three pairs, up to five when those three disagree, so one repetition disturbed by
# another tenant does not decide a block's regime (the median of five does).
PROBE_PRIVATE_MULTIPLE = 2
PROBE_PAIRS = 3
PROBE_MAX_PAIRS = 5


@dataclass(frozen=True)
class CanaryResult:
    regime: str            # "shared" | "not-shared" | "unknown"
    ratio: float | None    # paired median of T_int / T_iso
    delta_ci: tuple[float, float] | None
    iso_ns: float | None   # median thread CPU time of one walk, alone
    int_ns: float | None
    n: int
    footprint: int
    thrasher: int
    victim_cpu: int | None
    aggressor_cpu: int | None
    reason: str

    def to_dict(self) -> dict:
        d = asdict(self)
        d["delta_ci"] = list(self.delta_ci) if self.delta_ci else None
        return d


def classify(ratio: float, ci_hi: float) -> str:
    if ratio >= SHARED_AT:
        return "shared"
    if ci_hi < NOT_SHARED_BELOW:
        return "not-shared"
    return "unknown"


def can_share(topology: Topology, a: int, b: int) -> bool:
    """Whether the topology says CPUs a and b share the last-level cache (a VM may say so and
    share it only part of the time: that is what the canary is for)."""
    shared = llc(topology)
    return shared is not None and {a, b} <= set(shared.shared_cpus)


def running_plan(topology: Topology, victim_cpu: int, aggressor_cpu: int | None
                 ) -> CanaryPlan | None:
    """The resident canary for a run with its victim on `victim_cpu`; None on one CPU."""
    if aggressor_cpu is None:
        return None
    fp = Footprints.for_host(topology, victim_cpu)
    size = min(max(PROBE_PRIVATE_MULTIPLE * fp.private, 2 * fp.line), fp.shared // 4)
    # One lap: the unrecorded walk before every probe brings the chase back into the caches.
    lap = max(1, size // fp.line)
    victim = VictimSpec("ptrchase", (("size", str(size)), ("accesses", str(lap))),
                        name="canary")
    thrasher = AggressorSpec("bw", "write", fp.shared, "canary thrasher", cpu=aggressor_cpu)
    return CanaryPlan(victim, thrasher, PROBE_PAIRS, PROBE_MAX_PAIRS)


def run_canary(topology: Topology, *, pairs: int = 8, victim_cpu: int | None = None,
               aggressor_cpu: int | None = None, seed: int = 7) -> CanaryResult:
    placement_v, placement_a = default_placement(topology)
    v = placement_v if victim_cpu is None else victim_cpu
    a = (placement_a[0] if placement_a else None) if aggressor_cpu is None else aggressor_cpu
    fp = Footprints.for_host(topology, v)
    if a is None:
        return CanaryResult("unknown", None, None, None, None, 0, fp.shared_victim, fp.shared,
                            v, None, "only one online CPU: no cross-core interference to see")
    thrasher = AggressorSpec("bw", "write", fp.shared, "canary thrasher", cpu=a)
    victim = VictimSpec("ptrchase", (("size", str(fp.shared_victim)),))
    plan = Plan(victim, (AggressorSet("canary", (thrasher,)),), pairs, v, seed=seed)
    try:
        outcome = run(plan)
    except NativeError as exc:
        return CanaryResult("unknown", None, None, None, None, 0, fp.shared_victim, fp.shared,
                            v, a, f"canary could not run: {exc}")
    walk = next(r for r in comparisons(outcome.samples, seed=seed) if r.region_name != "total")
    res = walk.result
    regime = classify(res.paired_median, res.delta_ci[1])
    reason = {
        "shared": f"a write thrasher on CPU {a} slowed a shared-cache-sized chase on CPU {v} "
                  f"by {res.paired_median:.2f}x",
        "not-shared": f"no slowdown ({res.paired_median:.2f}x): the CPUs do not share a cache "
                      "right now, cross-core results will read about 1x",
        "unknown": f"slowdown {res.paired_median:.2f}x is between {NOT_SHARED_BELOW} and "
                   f"{SHARED_AT}: partly shared or noisy",
    }[regime]
    return CanaryResult(regime, res.paired_median, tuple(res.delta_ci), res.iso.median,
                        res.int.median, res.n, fp.shared_victim, fp.shared, v, a, reason)
