"""The worst-aggressor search: the space it explores, and that it finds a planted winner."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest

from intercore.host.topology import default_placement, largest_private, read_topology
from intercore.measure.harness import paired as harness
from intercore.measure.aggressors import search
from intercore.measure.aggressors.presets import PRESETS, Footprints
from intercore.measure.harness.session import Request, resolve, named_lookup

sys.path.insert(0, str(Path(__file__).parent.parent))
from _flipping import aggressor_argv, usable  # noqa: E402

TOPO = read_topology()
pytestmark = pytest.mark.skipif(len(TOPO.online_cpus) < 2,
                                reason="needs two online CPUs (victim + aggressor)")
VCPU, ACPUS = default_placement(TOPO)
L2 = largest_private(TOPO, VCPU).size


def test_the_space_covers_kinds_accesses_footprints_mlp_and_cores():
    fp = Footprints.for_host(TOPO, VCPU)
    space = search.candidates(fp, [1, 2, 3])
    assert space[:len([p for p in PRESETS if fp.host_bank or not p.startswith("Bk")])] == \
        [p for p in PRESETS if fp.host_bank or not p.startswith("Bk")]
    assert len(space) == len(set(space))
    assert {s.split(":")[0] for s in space if ":" in s} == {"bw", "pll"}
    assert any("op=rmw" in s for s in space) and any("mlp=16" in s for s in space)
    assert any(s.count("+") == 2 and "@3" in s for s in space)  # three cores
    assert len(search.candidates(fp, [1])) < len(space)
    # What made stress-ng's cache and stream stressors strong: random lines around the
    # shared cache's size, several streams, and non-temporal stores.
    assert any("pattern=rand" in s and "op=rmw" in s for s in space)
    assert any("streams=4" in s for s in space) and any("op=nt" in s for s in space)


def _samples(rows_by_set):
    """Samples from {set: [(regime, iso ns, int ns), ...]} (one victim, region 0)."""
    from intercore.base.sample import Sample

    samples, pair = [], 0
    for label, rows in rows_by_set.items():
        for regime, a, b in rows:
            samples += [Sample(0, 2 * pair, pair, "iso", "", 0, "total", a, a, 0, 1,
                               regime=regime),
                        Sample(0, 2 * pair + 1, pair, "int", label, 0, "total", b, b, 0, 1,
                               regime=regime)]
            pair += 1
    return samples


def _regions(rows_by_set):
    """Comparisons over every pair of `_samples(rows_by_set)`."""
    from intercore.measure.harness.comparison import comparisons

    return comparisons(_samples(rows_by_set))


def test_ranking_in_shared_blocks_ignores_what_not_shared_pairs_say():
    # "noisy" looks strongest over all pairs (host noise in its not-shared pairs); in the
    # shared blocks "strong" is.
    regions = _regions({
        "strong": [("shared", 100, 300)] * 3 + [("not-shared", 100, 100)] * 5,
        "noisy": [("shared", 100, 150)] * 3 + [("not-shared", 100, 400)] * 5,
        "absent": [("not-shared", 100, 500)] * 8})
    specs = ["noisy", "absent", "strong"]
    shared = search.rank(regions, specs, "shared")
    assert [r.spec for r in shared] == ["strong", "noisy", "absent"]
    assert [r.n for r in shared] == [3, 3, 0] and shared[0].delta == 3.0
    assert [r.spec for r in search.rank(regions, specs, "all")][0] == "absent"
    assert [r.spec for r in search.short_of(shared, 3)] == ["absent"]
    assert shared[2].to_dict()["n"] == 0 and shared[2].to_dict()["delta"] is None


def test_a_refused_search_offers_its_strongest_candidate_over_all_pairs():
    """Short of shared pairs, the search is refused; what it offers instead is the last
    round's strongest over every pair it has, ranked in "all" (the CLI marks it
    provisional), never a candidate without a pair."""
    from intercore.measure.harness.session import Result

    regions = _regions({
        "strong": [("shared", 100, 300)] * 2 + [("not-shared", 100, 100)] * 5,
        "loud": [("not-shared", 100, 500)] * 8,
        "silent": []})
    specs = ["strong", "loud", "silent"]
    ranking = search.rank(regions, specs, "shared")
    plan = resolve(Request("ptrchase", aggressors=("BwRead(LLC)",), canary=False), TOPO)
    run = Result(plan, regions, "all", [])
    found = search.SearchResult("ptrchase", "shared",
                                [search.Round(0, 3, ranking, ["strong", "loud"], [run])])
    assert [r.spec for r in search.short_of(ranking, 3)] == ["strong", "loud", "silent"]
    offer = found.strongest_so_far()
    assert (offer.spec, offer.regime, offer.n, offer.delta) == ("loud", "all", 8, 5.0)
    assert search.SearchResult("ptrchase").strongest_so_far() is None


def test_a_round_restricted_to_shared_blocks_that_saw_none_still_offers_its_strongest():
    """The harness drops a comparison with no pair in the requested regime; a round ranked
    in shared blocks on a host that never shared its cache thus has no comparison at all.
    Its strongest so far comes from every pair the round measured, from its samples."""
    from intercore.measure.harness.comparison import comparisons
    from intercore.measure.harness.paired import Outcome
    from intercore.measure.harness.session import Result

    samples = _samples({"loud": [("not-shared", 100, 500)] * 4,
                        "soft": [("not-shared", 100, 150)] * 4})
    plan = resolve(Request("ptrchase", aggressors=("BwRead(LLC)",), canary=False), TOPO)
    restricted = comparisons(samples, regime="shared")
    assert restricted == []
    stopped = {"loud": "gave up after 4 of 24 pairs: 0 in shared blocks, 2 wanted",
               "soft": "ran to --max-runs (24 pairs): 0 pairs in shared blocks, 2 wanted"}
    run = Result(plan, restricted, "not-shared", [],
                 outcome=Outcome(plan, samples, {}, {}, 0.0, 1.0, stopped=stopped))
    ranking = search.rank(restricted, ["soft", "loud"], "shared")
    found = search.SearchResult("ptrchase", "shared",
                                [search.Round(0, 2, ranking, ["soft", "loud"], [run])])
    offer = found.strongest_so_far()
    assert (offer.spec, offer.regime, offer.n, offer.delta) == ("loud", "all", 4, 5.0)
    # The refusal says how many candidates stopped short of the cap, out of reach.
    why = search.refusal(ranking, 2, found.rounds[0], "search round 1")
    assert "2 of 2 candidates had fewer than 2 pairs" in why
    assert "1 of them stopped before it as out of reach" in why


def test_a_shared_round_runs_until_every_candidate_has_its_shared_pairs():
    req = Request("ptrchase", aggressors=("BwRead(LLC)",), runs=100, until_ci=0.1)
    r = search.regime_request(req, ["a", "b"], 6, "shared")
    assert (r.aggressors, r.runs, r.until_pairs, r.regime, r.until_ci) == \
        (("a", "b"), 6, 6, "shared", None)
    assert r.max_runs == search.MAX_RUNS_FACTOR * 6
    plain = search.regime_request(req, ["a"], 6, "all")
    assert (plain.until_pairs, plain.regime, plain.max_runs) == (None, None, None)
    assert search.stratum_for(replace(req, canary=False), TOPO, VCPU, ACPUS[0]) == "all"


@pytest.mark.slow
@pytest.mark.skipif(usable() is not None, reason=str(usable()))
def test_search_finds_the_planted_strongest_aggressor_and_saves_it(tmp_path):
    """The victim fits its private cache; the planted aggressor preempts it on its own CPU
    every 250 µs and overwrites that cache (tests/_flipping.py's test aggressor, always on);
    the others stay in their own private cache on another CPU."""
    planted = "cmd:" + " ".join(aggressor_argv(VCPU, 8 * L2, name="planted")) + f"@{VCPU}"
    weak = [f"bw:op=read,size={L2 // 8}@{ACPUS[0]}", f"bw:op=write,size={L2 // 4}@{ACPUS[0]}",
            f"pll:op=read,size={L2 // 8},mlp=2@{ACPUS[0]}"]
    victim = f"ptrchase:size={3 * L2 // 4},accesses=300K"
    req = Request(victim, aggressors=("BwRead(LLC)",), victim_cpu=VCPU, canary=False, seed=2)
    db = tmp_path / "r.db"
    found = search.search(req, db=db, argv=["test"], first_pairs=3,
                          candidates_list=[weak[0], planted, weak[1], weak[2]], topo=TOPO)
    assert [len(r.ranking) for r in found.rounds] == [4, 2]
    assert [r.pairs for r in found.rounds] == [3, 6]
    assert found.winner.spec == planted
    assert found.winner.estimate().delta > 1.2
    for r in found.rounds:
        assert all(x.regime == "all" for x in r.ranking)  # no canary ran: no regime claimed
        assert len(r.results) == 1 and r.results[0].invocation_id is not None
    name = search.save_winner(db, TOPO, found)
    assert name == f"worst:ptrchase:accesses={300 * 1024},size={3 * L2 // 4}"
    # `-a @worst:VICTIM`, spelt as the user spells the victim, finds it again.
    again = resolve(Request(victim, aggressors=(f"@worst:{victim}",), victim_cpu=VCPU,
                            canary=False), TOPO, named=named_lookup(db, TOPO))
    [aset] = again.sets
    assert aset.label == f"@worst:{victim} = {planted}"
    assert aset.members[0].command[0].endswith("ic-periodic")


def test_candidates_that_would_not_fit_in_memory_at_once_are_cut_into_batches():
    sizes = [(L2 // 8, "read"), (L2 // 4, "read"), (L2 // 8, "write"), (L2 // 2, "read")]
    specs = [f"bw:op={op},size={n}@{ACPUS[0]}" for n, op in sizes] + \
        [f"cmd:sleep 1@{ACPUS[0]}"]  # an external stressor's memory is its own
    req = Request("ptrchase:size=64K", aggressors=tuple(specs), victim_cpu=VCPU, canary=False)
    # The harness may take 60 % of what is available: here 3/8 of L2 per batch.
    cap = 3 * L2 // 8
    got = search.memory_batches(req, TOPO, available=int(cap / 0.6) + 1)
    assert got == [specs[:2], specs[2:3], specs[3:]]
    assert search.memory_batches(req, TOPO, available=1 << 40) == [specs]


@pytest.mark.slow
@pytest.mark.skipif(usable() is not None, reason=str(usable()))
def test_a_round_too_big_for_memory_runs_in_batches_and_the_final_round_head_to_head(
        tmp_path, monkeypatch):
    planted = "cmd:" + " ".join(aggressor_argv(VCPU, 8 * L2, name="planted")) + f"@{VCPU}"
    weak = [f"bw:op=read,size={L2 // 4}@{ACPUS[0]}", f"bw:op=write,size={L2 // 4}@{ACPUS[0]}",
            f"pll:op=read,size={L2 // 4},mlp=2@{ACPUS[0]}"]
    # Room for two quarter-L2 buffers at a time: round 1's four candidates take two runs.
    monkeypatch.setattr(harness, "mem_available", lambda: int(L2 // 2 / 0.6) + 1)
    req = Request(f"ptrchase:size={3 * L2 // 4},accesses=300K", aggressors=("BwRead(LLC)",),
                  victim_cpu=VCPU, canary=False, seed=2)
    phases: list[str] = []
    found = search.search(req, db=None, argv=["test"], first_pairs=3,
                          candidates_list=[weak[0], planted, weak[1], weak[2]], topo=TOPO,
                          on_phase=phases.append)
    assert [len(r.results) for r in found.rounds] == [2, 1]
    assert [len(r.ranking) for r in found.rounds] == [4, 2]
    assert found.winner.spec == planted
    assert any("batch 2/2" in p for p in phases)
    assert found.rounds[0].to_dict()["batches"] == 2


def _waiting(shared_blocks: int, blocks: int, pairs_run: int, pairs_shared: int, left: int):
    """A set of a search round waiting for 3 pairs in shared blocks (cap 36), after
    `pairs_run` pairs of which `pairs_shared` were shared, in a run of `blocks` blocks of
    which `shared_blocks` were shared: why it gives up, or None."""
    plan = harness.Plan(harness.VictimSpec("ptrchase"), (), 3, VCPU, until_pairs=3,
                        stop_regime="shared", max_runs=search.MAX_RUNS_FACTOR * 3)
    live = {p: (1.0, 1.1, "shared" if p < pairs_shared else "not-shared")
            for p in range(pairs_run)}
    records = [harness.BlockRecord(i, 0, "a", 0, 1, 2,
                                   "shared" if i < shared_blocks else "not-shared", {})
               for i in range(blocks)]
    return harness._hopeless(plan, live, left, records)


def test_a_search_gives_up_waiting_for_shared_blocks_only_when_the_host_cannot_give_them():
    # None of 100 blocks shared: at most 3.7 % at 95 %, 27 pairs left give 1 of the 3.
    why = _waiting(0, 100, pairs_run=9, pairs_shared=0, left=27)
    assert why is not None and why.startswith("gave up after 9 of 36 pairs: 0 in shared")
    assert "0 of the run's 100 blocks" in why and "3.7%" in why
    # Before a quarter of the cap it waits, however rare the regime has been: it comes in
    # spells.
    assert _waiting(0, 100, pairs_run=8, pairs_shared=0, left=28) is None
    # A host that shares a fifth of the time can still give the 2 missing pairs.
    assert _waiting(20, 100, pairs_run=9, pairs_shared=1, left=27) is None
    # Rare sharing, but only one pair missing and many left: it waits.
    assert _waiting(1, 100, pairs_run=9, pairs_shared=2, left=27) is None
    # A set with its pairs has nothing to give up.
    assert _waiting(0, 100, pairs_run=12, pairs_shared=3, left=24) is None
