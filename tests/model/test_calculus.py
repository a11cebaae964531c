"""The interference calculus: pml-analyzer's published oracle, the literal definitions of
phylog.md §2 as a reference implementation, and the properties the issue asks for."""

import itertools
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from model_builders import from_data, verdicts

from intercore.base.errors import InputError
from intercore.model.calculus import analyze, build, classify
from intercore.model.loader import load

MYSYS = Path(__file__).parent / "data" / "mysys.yaml"


# ---- the oracle ------------------------------------------------------------------------------

@pytest.mark.parametrize("k, itf, free, total", [(2, 12, 28, 40), (3, 8, 8, 33), (4, 1, 0, 4)])
def test_mysys_counts_match_pml_analyzer(k, itf, free, total):
    counts = analyze(load(MYSYS), k).counts
    assert (counts["interference"], counts["free"], counts["k_sets"]) == (itf, free, total)


def test_mysys_pairs_and_free_triples_match_pml_analyzer():
    p = load(MYSYS)
    itf2 = {s for s, v in verdicts(p, 2).items() if v == "itf"}
    # MySys_itf_2.txt
    assert itf2 == {frozenset(x.split()) for x in (
        "t14 t23", "t12 t24", "t21 t31", "t31 t41", "t22 t41", "t14 t41", "t23 t41",
        "t25 t41", "t14 t25", "t12 t22", "t14 t24", "t12 t23")}
    free3 = {s for s, v in verdicts(p, 3).items() if v == "free"}
    # MySys_free_3.txt
    assert free3 == {frozenset(x.split()) for x in (
        "t11 t26 t41", "t13 t26 t41", "t13 t21 t41", "t11 t21 t41", "t12 t26 t41",
        "t11 t24 t41", "t13 t24 t41", "t12 t21 t41")}


def test_k_outside_2_to_10_is_input_error_and_above_the_initiators_is_zero():
    p = load(MYSYS)
    for k in (1, 11):
        with pytest.raises(InputError, match="between 2 and 10") as info:
            analyze(p, k)
        assert info.value.field == "--k"
    # mySys has 4 initiators: no 5 of its transactions can run together
    assert analyze(p, 5).counts == {"interference": 0, "free": 0, "redundant": 0,
                                    "k_sets": 0}


# ---- the definitions, literally ----------------------------------------------------------------

def reference(problem, k):
    """phylog.md §2 as written: active nodes, edges through transactions, connectivity."""
    txs = range(len(problem.transactions))
    F = [set(problem.names(problem.footprint[t], problem.services)) for t in txs]
    index = {s: i for i, s in enumerate(problem.services)}

    def related(a, b):
        return bool(problem.neighbours[index[a]] >> index[b] & 1)

    itf, free, redundant = {}, set(), 0
    for M in itertools.combinations(txs, k):
        if any(problem.exclusive[a] >> b & 1 for a, b in itertools.combinations(M, 2)):
            continue
        nodes = {frozenset((s, s2)) for t, t2 in itertools.permutations(M, 2)
                 for s in F[t] for s2 in F[t2] if related(s, s2)}
        if not nodes:
            free.add(M)
            continue
        touches = {t: {n for n in nodes if n & F[t]} for t in M}
        reached, todo = set(), [next(iter(nodes))]
        while todo:
            n = todo.pop()
            if n in reached:
                continue
            reached.add(n)
            for t in M:
                if n in touches[t]:
                    todo.extend(touches[t] - reached)
        if reached == nodes and all(touches[t] for t in M):
            itf[M] = set().union(*nodes)
        else:
            redundant += 1
    return itf, free, redundant


def fast(problem, k):
    a = classify(problem, k)
    return ({s: set(problem.names(ch, problem.services)) for s, ch in a.interference},
            set(a.free), a.redundant)


# ---- random models ---------------------------------------------------------------------------

@st.composite
def structures(draw):
    """A random platform: initiators entering a chain of buses, shared targets hanging off
    the chain, private targets, random read/write independence, inclusion and exclusivity."""
    n_init = draw(st.integers(2, 4))
    n_bus = draw(st.integers(1, 3))
    n_shared = draw(st.integers(1, 3))
    entry = [draw(st.integers(0, n_bus - 1)) for _ in range(n_init)]
    attach = [draw(st.integers(0, n_bus - 1)) for _ in range(n_shared)]
    rw = [draw(st.booleans()) for _ in range(n_bus)]
    inclusive = draw(st.booleans())
    txs = []
    for i in range(n_init):
        for _ in range(draw(st.integers(1, 3))):
            reachable = [j for j in range(n_shared) if attach[j] >= entry[i]]
            target = draw(st.sampled_from([None, *reachable]))  # None: the private target
            txs.append((i, draw(st.sampled_from(["load", "store"])), target,
                        draw(st.booleans())))
    exclusive = draw(st.booleans()) and n_init > 2
    rules = draw(st.sets(st.sampled_from(["axi_rw", "inclusive_cache", "miss_refill"])))
    return dict(n_init=n_init, n_bus=n_bus, n_shared=n_shared, entry=entry, attach=attach,
                rw=rw, inclusive=inclusive, txs=txs, exclusive=exclusive, rules=sorted(rules))


def render(s, name=lambda n: n, extra_assumptions=()):
    """The structure as a model document; `name` renames every component."""
    comps = {}
    for i in range(s["n_init"]):
        comps[name(f"cpu{i}")] = {"kind": "initiator"}
        comps[name(f"priv{i}")] = {"kind": "target", "private_to": name(f"cpu{i}")}
    for b in range(s["n_bus"]):
        comps[name(f"bus{b}")] = {"kind": "transporter", "rw_independent": s["rw"][b]}
    for j in range(s["n_shared"]):
        comps[name(f"shared{j}")] = {"kind": "target"}
    if s["inclusive"]:
        comps[name("shared0")]["inclusive_of"] = [name(f"priv{i}") for i in range(s["n_init"])]
    links = [f"{name(f'bus{b}')}>{name(f'bus{b + 1}')}" for b in range(s["n_bus"] - 1)]
    links += [f"{name(f'cpu{i}')}>{name(f'bus{e}')}" for i, e in enumerate(s["entry"])]
    links += [f"{name(f'cpu{i}')}>{name(f'priv{i}')}" for i in range(s["n_init"])]
    links += [f"{name(f'bus{a}')}>{name(f'shared{j}')}" for j, a in enumerate(s["attach"])]
    txs = {}
    for n, (i, op, target, refill) in enumerate(s["txs"]):
        tx = {"app": f"app{i}", "op": op,
              "target": name(f"priv{i}") if target is None else name(f"shared{target}")}
        if refill and target is not None:
            tx["refill"] = [name(f"priv{i}")]
        txs[f"t{n}"] = tx
    assumptions = list(extra_assumptions)
    if s["exclusive"]:
        assumptions.append({"exclusive": ["app0", "app1"], "why": "time slices", "ref": "test"})
    return {"platform": "random", "components": comps, "links": links,
            "apps": {f"app{i}": name(f"cpu{i}") for i in range(s["n_init"])},
            "transactions": txs, "rules": s["rules"], "assumptions": assumptions}


PROPERTY = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(structures(), st.integers(2, 4))
def test_fast_classification_equals_the_definitions(s, k):
    problem = build(from_data(render(s)))
    k = min(k, problem.n_initiators)
    assert fast(problem, k) == reference(problem, k)


@PROPERTY
@given(structures(), st.integers(2, 4))
def test_every_non_exclusive_k_set_is_classified_exactly_once(s, k):
    problem = build(from_data(render(s)))
    k = min(k, problem.n_initiators)
    a = classify(problem, k)
    listed = [tuple(m) for m, _ in a.interference] + [tuple(m) for m in a.free]
    assert len(listed) == len(set(listed))
    non_exclusive = [M for M in itertools.combinations(range(len(problem.transactions)), k)
                     if not any(problem.exclusive[x] >> y & 1
                                for x, y in itertools.combinations(M, 2))]
    assert set(listed) <= set(non_exclusive)
    assert len(listed) + a.redundant == len(non_exclusive) == a.counts["k_sets"]


@PROPERTY
@given(structures(), st.data())
def test_adding_a_shared_service_never_makes_interference_free(s, data):
    before_model = render(s)
    tx = data.draw(st.sampled_from(sorted(before_model["transactions"])))
    comp = data.draw(st.sampled_from(sorted(before_model["components"])))
    op = data.draw(st.sampled_from(["load", "store", ""]))
    added = {"tx": [tx], "interfere_with": [f"{comp}.{op}" if op else comp],
             "why": "property test", "ref": "test"}
    before = from_data(before_model)
    after = from_data(render(s, extra_assumptions=[added]))
    for k in range(2, min(4, len(before.initiators)) + 1):
        was, now = verdicts(before, k), verdicts(after, k)
        for kset, verdict in was.items():
            if verdict == "itf":
                assert now.get(kset) == "itf", (kset, tx, comp)  # connected stays connected


@PROPERTY
@given(structures(), st.randoms(use_true_random=False))
def test_renaming_components_changes_nothing(s, rnd):
    originals = [f"cpu{i}" for i in range(s["n_init"])] + \
        [f"priv{i}" for i in range(s["n_init"])] + \
        [f"bus{b}" for b in range(s["n_bus"])] + [f"shared{j}" for j in range(s["n_shared"])]
    fresh = [f"n{n}" for n in range(len(originals))]
    rnd.shuffle(fresh)
    mapping = dict(zip(originals, fresh))
    plain, renamed = from_data(render(s)), from_data(render(s, name=mapping.get))
    for k in range(2, min(4, len(plain.initiators)) + 1):
        a, b = analyze(plain, k), analyze(renamed, k)
        assert a.counts == b.counts
        assert verdicts(plain, k) == verdicts(renamed, k)

        def channels(analysis, rename):
            names, services = analysis.problem.transactions, analysis.problem.services
            return {frozenset(names[i] for i in m):
                    {rename(s) for s in analysis.problem.names(ch, services)}
                    for m, ch in analysis.interference}

        def forward(svc):
            comp, _, op = svc.partition(".")
            return f"{mapping[comp]}.{op}"

        assert channels(a, forward) == channels(b, lambda x: x)
