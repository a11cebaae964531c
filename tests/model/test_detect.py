"""`model detect` on fake sysfs trees (tests/host/fake_host.py) and on this host."""

from datetime import datetime, timezone

import pytest
import yaml
from host.fake_host import big_little, hybrid_x86_vm, pi4, single_cpu, xeon_cat_v2

from intercore.host.topology import read_topology
from intercore.model.calculus import analyze
from intercore.model.detect import build_model, detect, to_yaml
from intercore.model.loader import loads

WHEN = datetime(2025, 1, 2, tzinfo=timezone.utc)


def detected(tmp_path, machine):
    machine(tmp_path)
    data = build_model(read_topology(tmp_path), kernel="6.1", now=WHEN)
    text = to_yaml(data)
    assert yaml.safe_load(text) == data  # what is written is what was built
    return data, loads(text, "host.yaml")


def test_vm_gets_an_external_initiator_and_low_trust(tmp_path):
    data, p = detected(tmp_path, hybrid_x86_vm)
    assert p.topology_trust == "low" and p.host["hypervisor"] == "KVM"
    assert p.initiators == ("cpu0", "cpu1", "external")
    assert [p.components[f"cpu{i}"].cpu for i in (0, 1)] == [0, 1]
    assert "external" not in {c for c in data["components"] if c.startswith("cpu")}
    ext = {t.name: t for t in p.transactions.values() if t.initiator == "external"}
    assert {t.target for t in ext.values()} == {"l3", "dram"}
    assert any(a.kind == "premise" for a in p.assumptions)
    # ranges fold the per-CPU entries
    assert {"cpu[0-1]", "l1d_[0-1]", "l2_[0-1]", "l3"} <= set(data["components"])
    assert "cpu[i]>l1d_[i]" in data["links"]


def test_vm_caches_and_unknowns(tmp_path):
    _, p = detected(tmp_path, hybrid_x86_vm)
    l1d, l2, l3 = (p.components[n] for n in ("l1d_1", "l2_1", "l3"))
    assert (l1d.size, l1d.ways, l1d.sets, l1d.line, l1d.private_to) == \
        (48 * 1024, 12, 64, 64, "cpu1")
    assert (l2.size, l2.level, l2.verified) == (2 << 20, 2, True)
    # sysfs cannot tell inclusion: assumed inclusive, marked unverified
    assert l3.verified is False and set(l3.inclusive_of) == {"l1d_0", "l1d_1", "l2_0", "l2_1"}
    assert all(p.components[n].verified is False for n in ("fabric", "memctrl", "dram"))
    assert p.components["dram"].banks is None  # no bank split from a guess


def test_vm_transactions_per_cpu_and_their_verdicts(tmp_path):
    _, p = detected(tmp_path, hybrid_x86_vm)
    assert {n for n in p.transactions if n.startswith("cpu1_")} == {
        f"cpu1_{lv}_{op}" for lv in ("l1d", "l2", "l3", "dram") for op in ("ld", "st")}
    t = p.transactions["cpu1_dram_st"]
    assert t.refills == (("cpu1", "l3"), ("cpu1", "l2_1"), ("cpu1", "l1d_1"))
    assert t.writeback == ("cpu1", "fabric", "memctrl", "dram")
    a = analyze(p, 2)
    names = a.problem.transactions
    free = {frozenset(names[i] for i in s) for s in a.free}
    itf = {frozenset(names[i] for i in s) for s, _ in a.interference}
    assert frozenset({"cpu0_l2_ld", "cpu1_l2_st"}) in free        # private caches
    assert frozenset({"cpu0_l3_ld", "cpu1_l3_st"}) in itf         # the shared L3
    assert frozenset({"cpu0_l1d_ld", "cpu1_dram_ld"}) in itf      # inclusion, assumed
    assert frozenset({"cpu0_l1d_ld", "external_l3_st"}) in itf    # co-tenants


def test_pi4_board_has_a_shared_l2_and_no_vm_parts(tmp_path):
    _, p = detected(tmp_path, pi4)
    assert p.topology_trust == "high" and "external" not in p.components
    l2 = p.components["l2"]
    assert (l2.size, l2.line, l2.private_to) == (1 << 20, None, None)
    assert set(l2.inclusive_of) == {f"l1d_{i}" for i in range(4)}
    assert p.transactions["cpu3_l2_ld"].refills == (("cpu3", "l1d_3"),)


def test_smt_siblings_share_their_l1_and_l2(tmp_path):
    data, p = detected(tmp_path, xeon_cat_v2)
    assert p.components["l1d_0"].private_to is None  # cpu0 and cpu4 share it
    assert ("cpu4", "l1d_0") in p.links and ("cpu0", "l1d_0") in p.links
    assert "cpu[0,4]_l1d_ld" in data["transactions"]
    v = analyze(p, 2)
    names = v.problem.transactions
    itf = {frozenset(names[i] for i in s) for s, _ in v.interference}
    assert frozenset({"cpu0_l1d_ld", "cpu4_l1d_st"}) in itf


def test_clusters_each_get_their_l2(tmp_path):
    data, p = detected(tmp_path, big_little)
    assert p.transactions["cpu1_l2_ld"].target == "l2_0"
    assert p.transactions["cpu5_l2_ld"].target == "l2_1"
    assert {"cpu[0-3]_l2_ld", "cpu[4-5]_l2_ld"} <= set(data["transactions"])
    assert set(p.components["l2_1"].inclusive_of) == {"l1d_4", "l1d_5"}


def test_single_cpu_writes_plain_names(tmp_path):
    data, p = detected(tmp_path, single_cpu)
    assert p.initiators == ("cpu0",) and "cpu0>l1d_0" in data["links"]
    assert p.title.endswith("1 CPU")


def test_this_host():
    data = detect()
    p = loads(to_yaml(data), "host.yaml")
    topo = read_topology()
    cpus = [c for c in p.initiators if c != "external"]
    assert [p.components[c].cpu for c in cpus] == list(topo.online_cpus)
    assert (p.topology_trust == "low") == (topo.hypervisor is not None)
    if len(p.initiators) >= 2:
        counts = analyze(p, 2).counts
        assert counts["interference"] > 0


@pytest.mark.parametrize("machine", [hybrid_x86_vm, pi4, xeon_cat_v2, big_little])
def test_every_detected_model_analyses(tmp_path, machine):
    _, p = detected(tmp_path, machine)
    assert analyze(p, 2).counts["k_sets"] > 0
