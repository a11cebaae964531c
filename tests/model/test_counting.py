"""Large k: the symmetry-quotient counts against brute force (the definitions of phylog.md
§2 applied literally to every k-set) for every k up to 10, and the patterns it lists."""

import pytest
import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from model_builders import from_data
from test_calculus import reference

from intercore.model.calculus import build, classify
from intercore.model.counting import K_MAX, count, representative
from intercore.model.loader import load
from test_calculus import MYSYS


@st.composite
def replicated(draw):
    """A platform of up to 10 initiators in blocks of identical ones (a cluster of cores, a
    DSP array): buses in a chain, shared targets, private targets, an inclusive target,
    read/write independence, exclusivity and time slices. Identical blocks exercise the
    twin classes; the random parts break symmetry."""
    n_bus = draw(st.integers(1, 3))
    n_shared = draw(st.integers(1, 3))
    attach = [draw(st.integers(0, n_bus - 1)) for _ in range(n_shared)]
    blocks = draw(st.lists(st.integers(1, 4), min_size=1, max_size=4))
    blocks = blocks[:next((i for i in range(len(blocks)) if sum(blocks[:i + 1]) > 10),
                          len(blocks))] or [2]
    comps = {f"bus{b}": {"kind": "transporter", "rw_independent": draw(st.booleans())}
             for b in range(n_bus)}
    comps.update({f"shared{j}": {"kind": "target"} for j in range(n_shared)})
    links = [f"bus{b}>bus{b + 1}" for b in range(n_bus - 1)]
    links += [f"bus{a}>shared{j}" for j, a in enumerate(attach)]
    apps, txs, n = {}, {}, 0
    privates = []
    for size in blocks:
        entry = draw(st.integers(0, n_bus - 1))
        shape = draw(st.lists(st.tuples(st.sampled_from([None, *range(n_shared)]),
                                        st.sampled_from(["load", "store"])),
                              min_size=1, max_size=2))
        for _ in range(size):
            cpu = f"cpu{n}"
            comps[cpu] = {"kind": "initiator"}
            comps[f"priv{n}"] = {"kind": "target", "private_to": cpu}
            privates.append(f"priv{n}")
            links += [f"{cpu}>bus{entry}", f"{cpu}>priv{n}"]
            apps[f"app{n}"] = cpu
            for r, (target, op) in enumerate(shape):
                if target is not None and attach[target] < entry:
                    target = None
                txs[f"t{n}_{r}"] = {"app": f"app{n}", "op": op,
                                    "target": f"priv{n}" if target is None
                                    else f"shared{target}"}
            n += 1
    if draw(st.booleans()):
        comps["shared0"]["inclusive_of"] = privates
    assumptions = []
    if n > 2 and draw(st.booleans()):
        pair = draw(st.lists(st.sampled_from(sorted(apps)), min_size=2, max_size=2,
                             unique=True))
        assumptions.append({"exclusive": pair, "why": "test", "ref": "test"})
    config = {}
    if n > 2 and draw(st.booleans()):
        config["time_slices"] = {"s1": ["app0"], "s2": ["app1"]}
    rules = sorted(draw(st.sets(st.sampled_from(["axi_rw", "inclusive_cache"]))))
    return {"platform": "blocks", "components": comps, "links": links, "apps": apps,
            "transactions": txs, "rules": rules, "assumptions": assumptions,
            "config": config}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(replicated())
@pytest.mark.slow
def test_counts_equal_brute_force_for_every_k_up_to_10(model):
    problem = build(from_data(model))
    counted = count(problem, K_MAX)
    for k in range(2, K_MAX + 1):
        itf, free, redundant = reference(problem, k)
        assert counted.at(k) == {"interference": len(itf), "free": len(free),
                                 "redundant": redundant,
                                 "k_sets": len(itf) + len(free) + redundant}, k


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(replicated())
def test_patterns_partition_the_sets_and_representatives_belong_to_them(model):
    problem = build(from_data(model))
    counted = count(problem, K_MAX)
    sym = counted.symmetry
    itf_sets = {k: {frozenset(s) for s, _ in classify(problem, k).interference}
                for k in range(2, min(K_MAX, problem.n_initiators) + 1)}
    for k, sets in itf_sets.items():
        assert sum(p.counts[k] for p in counted.itf_patterns) == len(sets)
        assert sum(p.counts[k] for p in counted.free_patterns) == counted.at(k)["free"]
        assert sum(c[k] for c in counted.redundant_parts.values()) == \
            counted.at(k)["redundant"]
        for p in counted.itf_patterns:
            if p.counts[k]:
                rep = representative(sym, p.support, k)
                assert rep is not None and frozenset(rep) in sets


def test_twin_initiators_form_classes_on_the_bundled_models():
    sym = count(build(load(MYSYS)), 4).symmetry
    assert len(sym.classes) == 4  # mySys has no two interchangeable initiators
    rpi4 = count(build(load("examples/platforms/rpi4.yaml")), 5).symmetry
    # c0 writes shared data, c1 reads it, c2 drives the UART, c3 broadcasts TLB
    # invalidations: no two cores are interchangeable, and the VideoCore is alone.
    assert sorted(len(c) for c in rpi4.classes) == [1, 1, 1, 2]
    xeon = count(build(load("examples/platforms/xeon-cascade-lake.yaml")), 8).symmetry
    assert max(len(c) for c in xeon.classes) >= 6


def test_k_above_the_initiators_counts_zero_and_mysys_keeps_its_oracle():
    counted = count(build(load(MYSYS)), K_MAX)
    assert [counted.at(k)["interference"] for k in (2, 3, 4)] == [12, 8, 1]
    assert [counted.at(k)["free"] for k in (2, 3, 4)] == [28, 8, 0]
    assert [counted.at(k)["k_sets"] for k in (2, 3, 4)] == [40, 33, 4]
    assert all(counted.at(k)["k_sets"] == 0 for k in range(5, K_MAX + 1))
    assert all(len(s) <= 4 for s in itertools.chain.from_iterable(
        [representative(counted.symmetry, p.support, 2)] for p in counted.itf_patterns
        if p.counts[2]))
