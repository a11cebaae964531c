"""The model forms of issue 15 on hand-made models whose counts are worked out by hand:
multi-path transactions, declared non-interference, platform routing rules, transactions
derived from the apps' accesses, named configurations; and their malformed variants."""

import textwrap

import pytest
from model_builders import platform, row, table, verdicts

from intercore.base.errors import InputError
from intercore.model.calculus import analyze
from intercore.model.loader import loads

# A DMA engine and a CPU; the DMA reaches sram_a through noc_a and sram_b through noc_b.
COPY = """\
platform: copy
components:
  cpu: {kind: initiator}
  dma: {kind: initiator}
  noc_a: {kind: transporter}
  noc_b: {kind: transporter}
  sram_a: {kind: target}
  sram_b: {kind: target}
links: [cpu>noc_a, cpu>noc_b, dma>noc_a, dma>noc_b, noc_a>sram_a, noc_b>sram_b]
rules: []
apps: {C: cpu, D: dma}
transactions:
  copy:
    app: D
    legs:
      - {name: read, op: load, target: sram_a}
      - {name: write, op: store, target: sram_b}
  c_a: {app: C, op: load, target: sram_a}
  c_b: {app: C, op: load, target: sram_b}
"""


def counts(p, k=2):
    c = analyze(p, k).counts
    return c["interference"], c["free"], c["redundant"], c["k_sets"]


def test_dma_copy_legs_cross_different_interconnects():
    p = platform(COPY)
    copy = p.transactions["copy"]
    assert [(leg.name, leg.op, leg.path) for leg in copy.legs] == [
        ("read", "load", ("dma", "noc_a", "sram_a")),
        ("write", "store", ("dma", "noc_b", "sram_b"))]
    # F(copy) = {dma.load, noc_a.load, sram_a.load, dma.store, noc_b.store, sram_b.store};
    # c_a shares noc_a.load and sram_a.load (the read leg), c_b loads what the write leg
    # stores (load/store of noc_b and sram_b). c_a and c_b are both on the cpu: exclusive.
    assert counts(p) == (2, 0, 0, 2)
    read = row(p, "copy", "c_a")
    assert read.legs == ("copy.read",) and read.rule == "shared"
    assert set(read.services) == {"noc_a.load", "sram_a.load"}
    write = row(p, "copy", "c_b")
    assert write.legs == ("copy.write",) and write.rule == "load/store"
    assert set(write.components) == {"noc_b", "sram_b"}


def test_declared_non_interfering_pair_on_a_component_and_the_platform():
    declared = COPY.replace(
        "  noc_b: {kind: transporter}\n",
        "  noc_b:\n    kind: transporter\n    non_interfering:\n"
        "      - {pairs: [[load, store]], why: separate read and write networks, "
        "ref: NoC manual 3.2}\n") + textwrap.dedent("""\
        non_interfering:
          - id: SRAM-RW
            pairs: [[sram_b.load, sram_b.store]]
            why: dual-ported SRAM, one port reads while the other writes
            ref: SoC TRM 7.1
            reviewer: J. Doe
        """)
    p = platform(declared)
    assert [d.id for d in p.non_interfering] == ["N1", "SRAM-RW"]
    # only noc_b's pair declared: sram_b's load/store still contend
    only_noc = platform(declared.split("non_interfering:\n  - id")[0])
    assert counts(only_noc) == (2, 0, 0, 2)
    # both declared: the copy's write leg no longer interferes with c_b's read
    assert counts(p) == (1, 1, 0, 2)
    free = row(p, "copy", "c_b")
    assert set(free.relies_on) == {"N1", "SRAM-RW"}
    t = table(p)
    shown = {d["id"]: d for d in t.non_interfering}
    assert shown["SRAM-RW"]["why"].startswith("dual-ported") and \
        shown["SRAM-RW"]["ref"] == "SoC TRM 7.1" and shown["N1"]["component"] == "noc_b"
    assert "## Declared non-interference" in t.to_markdown()


def test_axi_rule_is_one_user_of_declared_non_interference():
    p = platform(COPY.replace("  noc_b: {kind: transporter}",
                              "  noc_b: {kind: transporter, rw_independent: true}")
                 .replace("rules: []", "rules: [axi_rw]"))
    t = table(p)
    (axi,) = t.non_interfering
    assert axi["id"] == "axi_rw:noc_b" and axi["rule"] == "axi_rw"
    assert axi["pairs"] == [["noc_b.load", "noc_b.store"]] and "IHI 0022" in axi["ref"]
    assert counts(p) == (2, 0, 0, 2)  # sram_b's load/store still contend


ROUTED = """\
platform: routed
components:
  core[0-1]: {kind: initiator, role: core}
  dsp: {kind: initiator, role: device}
  port[0-1]: {kind: transporter}
  bus: {kind: transporter}
  mem: {kind: target}
  sram: {kind: target}
links: ["core[i]>port[0-1]", "core[i]>bus", dsp>port1, "port[*]>mem", bus>sram]
rules: []
apps: {"A[0-1]": "core[i]", S: dsp}
transactions:
  c[0-1]m: {app: "A[i]", op: load, target: mem}
  dspm: {app: S, op: load, target: mem}
  c0s: {app: A0, op: load, target: sram}
routing:
  - {id: cores-port0, roles: [core], to: [mem], via: [port0], why: "address map: cores see the
      banks through port 0", ref: "SoC TRM 4.3"}
"""


def test_platform_routing_rule_applies_to_matching_transactions_only():
    with pytest.raises(InputError, match="more than one path from core0 to mem"):
        platform(ROUTED.split("routing:")[0])
    p = platform(ROUTED)
    assert p.transactions["c0m"].path == ("core0", "port0", "mem")
    assert p.transactions["c1m"].path == ("core1", "port0", "mem")
    assert p.transactions["dspm"].path == ("dsp", "port1", "mem")  # not a core
    assert p.transactions["c0s"].path == ("core0", "bus", "sram")  # not to mem
    (rule,) = p.routing
    assert rule.applied_to == ("c0m", "c1m")
    # pairs: c0m-c1m (port0, mem), c0m-dspm and c1m-dspm (mem) interfere; c0s is free
    # against c1m and dspm, exclusive with c0m. Triples: {c0m, c1m, dspm} connected,
    # {c0s, c1m, dspm} redundant (c0s alone).
    assert counts(p, 2) == (3, 2, 0, 5)
    assert counts(p, 3) == (1, 0, 1, 2)
    assert table(p).routing[0]["applied_to"] == ["c0m", "c1m"]
    # a transaction's own constraint that contradicts a rule is an error, not a silent pick
    clash = ROUTED.replace("c0s: {app: A0, op: load, target: sram}",
                           "c0s: {app: A0, op: load, target: mem, avoid: [port0]}")
    with pytest.raises(InputError, match="both required and avoided.*cores-port0"):
        platform(clash)


SHARED_CORE = """\
platform: apps
components:
  core[0-1]: {kind: initiator, role: core}
  bus: {kind: transporter}
  mem: {kind: target}
links: ["core[i]>bus", bus>mem]
rules: []
data: {d0: mem, log: mem}
apps:
  ctrl: {runs_on: core0, reads: [d0], writes: [log]}
  mon: {runs_on: ["core[0-1]"], reads: [d0]}
"""


def test_two_apps_sharing_an_initiator_share_its_transactions():
    p = platform(SHARED_CORE)
    txs = p.transactions
    assert set(txs) == {"core0_ld_mem", "core0_st_mem", "core1_ld_mem"}
    assert txs["core0_ld_mem"].apps == ("ctrl", "mon") and txs["core0_ld_mem"].derived
    assert txs["core0_ld_mem"].legs[0].data == ("d0",)
    assert txs["core0_st_mem"].apps == ("ctrl",) and txs["core1_ld_mem"].apps == ("mon",)
    # core0's two transactions exclude each other; each interferes with core1's load
    # (mem.load shared; mem load/store). Without merging, core0 would carry two identical
    # loads and the count would read 3.
    assert counts(p) == (2, 0, 0, 2)
    assert row(p, "core0_ld_mem", "core1_ld_mem").apps == ("ctrl", "mon")


def test_a_transaction_serving_two_apps_is_exclusive_only_when_both_are():
    one = SHARED_CORE + textwrap.dedent("""\
        assumptions:
          - {exclusive: [ctrl, mon], why: test, ref: test}
        """)
    # ctrl's store no longer meets mon's load on core1; the shared load does (mon issues
    # it too, and mon may run on both cores at once)
    assert verdicts(platform(one)) == {frozenset({"core0_ld_mem", "core1_ld_mem"}): "itf"}
    apart = SHARED_CORE.replace("mon: {runs_on: [\"core[0-1]\"], reads: [d0]}",
                                "mon: {runs_on: core0, reads: [d0]}\n  far: {runs_on: core1, "
                                "reads: [d0]}") + textwrap.dedent("""\
        config: {time_slices: {s1: [ctrl, mon], s2: [far]}}
        """)
    assert counts(platform(apart)) == (0, 0, 0, 0)
    half = apart.replace("s1: [ctrl, mon]", "s1: [ctrl]")  # mon runs in every slot
    assert verdicts(platform(half)) == {frozenset({"core0_ld_mem", "core1_ld_mem"}): "itf"}


def test_configurations_disable_components_and_links():
    model = ROUTED + textwrap.dedent("""\
        configurations:
          no_dsp: {disabled: [dsp], note: DSP power-gated}
          one_port: {disabled: [port0]}
          no_link: {disabled: ["core1>bus"]}
        """)
    full = platform(model)
    assert counts(full) == (3, 2, 0, 5)
    no_dsp = loads(model, "m.yaml", config="no_dsp")
    assert no_dsp.configuration == "no_dsp" and no_dsp.dropped == ("dspm",)
    assert "dsp" not in no_dsp.initiators
    assert counts(no_dsp) == (1, 1, 0, 2)  # c0m x c1m; c0s x c1m is free
    # without port0 the cores' paths to mem break the routing rule: they are dropped
    one_port = loads(model, "m.yaml", config="one_port")
    assert set(one_port.dropped) == {"c0m", "c1m"}
    t = table(one_port)
    assert t.configuration == "one_port" and "c0m" in t.warnings[0]
    assert loads(model, "m.yaml", config="no_link").links == tuple(
        link for link in full.links if link != ("core1", "bus"))
    with pytest.raises(InputError, match="unknown configuration 'nope'") as info:
        loads(model, "m.yaml", config="nope")
    assert info.value.field == "--config"


# Each malformed form: (text, the text on the line the error names, field, words)
MALFORMED = [
    (COPY.replace("    legs:\n", "    op: load\n    legs:\n"), "    app: D", "transactions.copy",
     "a transaction with legs gives op"),
    (COPY.replace("target: sram_b}", "target: sram_c}"), "name: write",
     "transactions.copy.legs[1].target", "unknown component 'sram_c'"),
    (COPY.replace("{name: write, op: store, target: sram_b}",
                  "{name: write, op: store, target: sram_b, via: [sram_a]}"), "name: write",
     "transactions.copy.legs[1].via[0]", "'sram_a' is a target"),
    (COPY.replace("{name: write", "{name: read"), "op: store", "transactions.copy.legs[1]",
     "two legs are named 'read'"),
    (COPY.replace("  noc_b: {kind: transporter}",
                  "  noc_b: {kind: transporter, non_interfering: [{pairs: [[load, flush]], "
                  "why: w, ref: r}]}"), "flush", "components.noc_b.non_interfering[0].pairs[0]",
     "offers no 'flush' service"),
    (COPY + "non_interfering:\n  - {pairs: [[noc_a.load, noc_a.load]], why: w, ref: r}\n",
     "noc_a.load, noc_a.load", "non_interfering[0].pairs[0]",
     "always interferes with itself"),
    (COPY + "non_interfering:\n  - {pairs: [[noc_a.load, noc_a.store]], why: w}\n",
     "noc_a.load, noc_a.store", "non_interfering[0].ref", "required field missing"),
    (ROUTED.replace("via: [port0]", "via: [mem]"), "id: cores-port0", "routing[0].via[0]",
     "'mem' is a target"),
    (ROUTED.replace("via: [port0], ", ""), "id: cores-port0", "routing[0]", "give via"),
    (ROUTED.replace("roles: [core]", "from: [bus]"), "id: cores-port0", "routing[0].from[0]",
     "'bus' is a transporter"),
    (SHARED_CORE.replace("reads: [d0], writes", "reads: [d9], writes"), "ctrl:",
     "apps.ctrl.reads[0]", "neither data nor a target"),
    (SHARED_CORE.replace("mon: {runs_on: [\"core[0-1]\"]",
                         "mon: {runs_on: [\"core[0-1]\", bus]"), "mon:",
     "apps.mon.runs_on[2]", "'bus' is a transporter"),
    (SHARED_CORE + "transactions:\n  t: {app: mon, op: load, target: mem}\n", "  t: {",
     "transactions.t.app", "mon runs on 2 initiators"),
    (ROUTED + "configurations:\n  gated: {disabled: [gpu]}\n", "gated:",
     "configurations.gated.disabled[0]", "unknown component 'gpu'"),
    (ROUTED + "configurations:\n  gated: {disabled: [\"dsp>bus\"]}\n", "gated:",
     "configurations.gated.disabled[0]", "no link dsp>bus"),
]


@pytest.mark.parametrize("text, marker, field, words", MALFORMED,
                         ids=[m[2] + ":" + m[3][:20] for m in MALFORMED])
def test_malformed_new_forms_name_file_line_and_field(text, marker, field, words):
    line = next(n for n, t in enumerate(text.splitlines(), 1) if marker in t)
    with pytest.raises(InputError) as info:
        loads(text, "m.yaml")
    err = info.value
    assert (err.source, err.field) == ("m.yaml", field), str(err)
    assert words in err.message, str(err)
    assert err.line == line, str(err)
