"""Reading model files: range expansion, resolution, routing, and errors that name the file,
the line and the field."""

import textwrap

import pytest

from intercore.base.errors import InputError
from intercore.model import ranges
from intercore.model.loader import load, loads, with_rules
from intercore.model.rules import RULES

GOOD = """\
platform: small
components:
  core[0-1]: {kind: initiator, role: core}
  l1d[0-1]:
    kind: target
    role: cache
    private_to: "core[i]"
  bus: {kind: transporter}
  mem: {kind: target, role: memory, banks: 4}
links: ["core[i]>l1d[i]", "core[i]>bus", bus>mem]
apps: {"A[0-1]": "core[i]"}
data: {"d[0-1]": mem}
transactions:
  t[0-1]_l1: {app: "A[i]", op: load, target: "l1d[i]"}
  t[0-1]_mem: {app: "A[i]", op: store, data: "d[i]", refill: ["l1d[i]"], writeback: true}
"""


def error(text: str) -> InputError:
    with pytest.raises(InputError) as info:
        loads(textwrap.dedent(text), "m.yaml")
    return info.value


def test_ranges_expand_and_resolve():
    p = loads(GOOD, "m.yaml")
    assert list(p.components) == ["core0", "core1", "l1d0", "l1d1", "bus", "mem"]
    assert p.components["l1d1"].private_to == "core1"
    assert p.apps == {"A0": ("core0",), "A1": ("core1",)}
    t = p.transactions["t1_mem"]
    assert (t.initiator, t.target, t.path) == ("core1", "mem", ("core1", "bus", "mem"))
    assert t.refills == (("core1", "l1d1"),) and t.writeback == t.path
    assert ("core0", "l1d0") in p.links and ("core0", "l1d1") not in p.links
    assert p.rules == tuple(RULES)  # no rules: list means all of them
    assert len(p.hash) == 64 and p.text == GOOD


@pytest.mark.parametrize("spec, indices", [("0-3", (0, 1, 2, 3)), ("0-1,5", (0, 1, 5)),
                                           ("7", (7,))])
def test_parse_indices(spec, indices):
    assert ranges.parse_indices(spec) == indices


@pytest.mark.parametrize("spec, words", [("3-1", "backwards"), ("", "empty"), ("a", "not N"),
                                         ("0-1,1", "twice"), ("0-99999", "more than")])
def test_bad_indices(spec, words):
    with pytest.raises(ValueError, match=words):
        ranges.parse_indices(spec)


def test_load_reads_a_file_and_hashes_its_bytes(tmp_path):
    import hashlib
    path = tmp_path / "m.yaml"
    path.write_text(GOOD)
    assert load(path).hash == hashlib.sha256(GOOD.encode()).hexdigest()
    with pytest.raises(InputError, match="cannot read"):
        load(tmp_path / "missing.yaml")


# Each malformed model: (what is wrong, text, line, field, words in the message)
MALFORMED = [
    ("link to an unknown component", GOOD.replace("bus>mem", "bus>memory"), 10, "links[2]",
     "unknown component 'memory'"),
    ("path not connected", GOOD.replace(', "core[i]>bus", bus>mem', ", bus>mem"), 15,
     "transactions.t0_mem", "no path from core0 to mem"),
    ("duplicate names", GOOD.replace("  bus: {kind: transporter}",
                                     "  bus: {kind: transporter}\n  l1d1: {kind: target}"),
     9, "components.l1d1", "declared twice"),
    ("duplicate across sections", GOOD.replace('apps: {"A[0-1]"', 'apps: {bus: core0, "A[0-1]"'),
     11, "apps.bus", "declared twice"),
    ("bad range", GOOD.replace("core[0-1]:", "core[1-0]:"), 3, "components.core[1-0]",
     "runs backwards"),
    ("bad range syntax", GOOD.replace("core[0-1]:", "core[0-1:"), 3, "components.core[0-1",
     "not NAME[RANGE]"),
    ("unknown rule", GOOD + "rules: [axi_rw, inclusive_l2]\n", 16, "rules[1]",
     "unknown rule 'inclusive_l2'"),
    ("[i] outside a range", GOOD.replace("bus>mem", '"bus>mem[i]"'), 10, "links[2]",
     "no entry was declared as mem"),
    ("range member that does not exist", GOOD.replace('private_to: "core[i]"',
                                                      'private_to: "cores[i]"'),
     7, "components.l1d0.private_to", "unknown component 'cores0'"),
    ("[*] where one name is expected", GOOD.replace('private_to: "core[i]"',
                                                    'private_to: "core[*]"'),
     7, "components.l1d[0-1].private_to", "names 2 entries where one is expected"),
    ("wrong kind of component", GOOD.replace("bus>mem", "mem>bus"), 10, "links[2]",
     "mem is a target"),
    ("op the target lacks", GOOD.replace("mem: {kind: target, role: memory, banks: 4}",
                                         "mem: {kind: target, role: memory, services: [load]}"),
     15, "transactions.t0_mem.op", "offers no store service"),
    ("unknown field", GOOD.replace("bus: {kind: transporter}", "bus: {kind: transporter, "
                                   "width: 64}"), 8, "components.bus.width", "unknown field"),
    ("attribute on the wrong kind", GOOD.replace("bus: {kind: transporter}",
                                                 "bus: {kind: transporter, banks: 2}"),
     8, "components.bus.banks", "does not apply"),
    ("bank outside the memory", GOOD.replace('data: {"d[0-1]": mem}',
                                             'data: {"d[0-1]": {at: mem, banks: [4]}}'),
     12, "data.d0.banks", "banks 0-3"),
]


@pytest.mark.parametrize("what, text, line, field, words", MALFORMED,
                         ids=[m[0] for m in MALFORMED])
def test_malformed_models_name_file_line_and_field(what, text, line, field, words):
    err = error(text)
    assert (err.source, err.line, err.field) == ("m.yaml", line, field), str(err)
    assert words in err.message
    assert str(err).startswith(f"m.yaml:{line}: {field}: ")


def test_ambiguous_route_asks_for_via():
    text = GOOD.replace("bus: {kind: transporter}",
                        "bus: {kind: transporter}\n  bus2: {kind: transporter}").replace(
        "bus>mem", "bus>mem, core0>bus2, bus2>mem")
    err = error(text)
    assert "more than one path from core0 to mem" in err.message and "via" in err.message
    fixed = text.replace("data: \"d[i]\", refill", "data: \"d[i]\", via: [bus], refill")
    assert loads(fixed, "m.yaml").transactions["t0_mem"].path == ("core0", "bus", "mem")


def test_composite_is_an_initiator_a_target_and_their_port():
    text = GOOD.replace("  bus: {kind: transporter}", "  bus: {kind: transporter}\n"
                        "  gpu: {kind: composite, initiator: g, target: g_regs, port: g_port}")
    text = text.replace("bus>mem", "bus>mem, gpu<>bus").replace(
        'apps: {"A[0-1]": "core[i]"}', 'apps: {"A[0-1]": "core[i]", G: gpu}')
    text += "  g_mem: {app: G, op: load, target: mem}\n  a_regs: {app: A0, op: store, " \
            "target: gpu}\n"
    p = loads(text, "m.yaml")
    assert {n: p.components[n].kind for n in ("g", "g_regs", "g_port")} == \
        {"g": "initiator", "g_regs": "target", "g_port": "transporter"}
    assert p.transactions["g_mem"].path == ("g", "g_port", "bus", "mem")
    assert p.transactions["a_regs"].path == ("core0", "bus", "g_port", "g_regs")
    # a device's port is not a way through for others: core0's own path to mem is unique
    assert p.transactions["t0_mem"].path == ("core0", "bus", "mem")


def test_assumptions_need_a_rationale_and_a_reference_and_one_kind():
    base = GOOD + "assumptions:\n  - {tx: t0_l1, not_interfere_with: bus.load"
    assert "required field missing" in error(base + ", why: x}\n").message
    err = error(GOOD + "assumptions:\n  - {transparent: bus, premise: p, why: x, ref: y}\n")
    assert "exactly one of" in err.message and err.line == 17
    err = error(base + ", interfere_with: bus.load, why: x, ref: y}\n")
    assert "exactly one of" in err.message


def test_service_added_and_removed_for_one_transaction_is_an_error():
    text = GOOD + ("assumptions:\n"
                   "  - {tx: t0_mem, interfere_with: l1d1.load, why: a, ref: b}\n"
                   "  - {app: A0, not_interfere_with: l1d1, why: a, ref: b}\n")
    err = error(text)
    assert (err.line, err.field) == (18, "assumptions[1].not_interfere_with")
    assert "both added to and removed from the footprint of t0_mem" in err.message


def test_with_rules_switches_and_rejects_unknown():
    p = loads(GOOD, "m.yaml")
    assert "inclusive_cache" not in with_rules(p, disable=["inclusive_cache"]).rules
    with pytest.raises(InputError) as info:
        with_rules(p, enable=["nope"])
    assert info.value.field == "--enable"


def test_unused_transactions_are_checked_but_not_analysed():
    text = GOOD + ("  spare: {app: A0, op: load, target: l1d0, used: false}\n"
                   "assumptions:\n"
                   "  - {tx: [spare, t0_l1], interfere_with: bus, why: a, ref: b}\n")
    p = loads(text, "m.yaml")
    assert "spare" not in p.transactions
    assert p.assumptions[0].subjects == ("t0_l1",)
    assert "unknown app" in error(text.replace("app: A0, op: load, target: l1d0, used",
                                               "app: A9, op: load, target: l1d0, used")).message
