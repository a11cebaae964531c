"""The worst-aggressor search: the space it explores, and that it finds a planted winner."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from intercore.host.topology import default_placement, largest_private, read_topology
from intercore.measure import search
from intercore.measure.presets import PRESETS, Footprints
from intercore.measure.session import Request, resolve, named_lookup

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
        assert r.result.invocation_id is not None
    name = search.save_winner(db, TOPO, found)
    assert name == f"worst:ptrchase:accesses={300 * 1024},size={3 * L2 // 4}"
    # `-a @worst:VICTIM`, spelt as the user spells the victim, finds it again.
    again = resolve(Request(victim, aggressors=(f"@worst:{victim}",), victim_cpu=VCPU,
                            canary=False), TOPO, named=named_lookup(db, TOPO))
    [aset] = again.sets
    assert aset.label == f"@worst:{victim} = {planted}"
    assert aset.members[0].command[0].endswith("ic-periodic")
