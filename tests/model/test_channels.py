"""The channel table: JSON shape, stamps, provenance of each row, evidence, rendering."""

import json
import math
from datetime import datetime, timezone

from model_builders import platform, row

from intercore import __version__
from intercore.model.calculus import analyze
from intercore.model.channels import Evidence, build_table, compact

MODEL = """
    platform: tiny
    title: two cores <and> a bus
    topology_trust: low
    components:
      c[0-1]: {kind: initiator, role: core}
      l1d[0-1]: {kind: target, role: cache, level: 1, private_to: "c[i]"}
      bus: {kind: transporter, role: bus, verified: false}
      mem: {kind: target, role: memory}
      regs: {kind: target, role: registers}
    links: ["c[i]>l1d[i]", "c[i]>bus", bus>mem, bus>regs]
    apps: {A: c0, B: c1}
    transactions:
      a_l1: {app: A, op: load, target: l1d0}
      a_mem: {app: A, op: load, target: mem}
      b_l1: {app: B, op: load, target: l1d1}
      b_mem: {app: B, op: store, target: mem}
      b_regs: {app: B, op: load, target: regs}
    assumptions:
      - {id: S1, tx: a_l1, interfere_with: l1d1.load, why: "<b>aliasing</b>", ref: "TRM §1"}
      - {id: S2, tx: b_regs, not_interfere_with: bus, why: posted writes, ref: TRM §2}
      - {id: S3, premise: cores are not SMT siblings, why: pinned, ref: deployment}
"""

WHEN = datetime(2025, 1, 2, 3, 4, 5, tzinfo=timezone.utc)


def test_json_has_the_documented_shape_and_stamp():
    p = platform(MODEL)
    d = build_table(analyze(p, 2), p, date=WHEN).to_dict()
    assert {"model", "hash", "k", "channels", "free", "counts"} <= set(d)
    assert (d["model"], d["hash"], d["k"], d["tool_version"], d["date"]) == \
        ("tiny", p.hash, 2, __version__, "2025-01-02T03:04:05+00:00")
    assert set(d["counts"]) >= {"interference", "free", "redundant"}
    for c in d["channels"]:
        assert {"services", "components", "transactions", "rule", "reference", "apps",
                "initiators", "assumptions", "unverified", "evidence"} <= set(c)
    json.dumps(d)  # plain data all the way down


def test_rows_carry_rule_assumptions_and_unverified_facts():
    p = platform(MODEL)
    mem = row(p, "a_mem", "b_mem")
    assert mem.rule == "load/store" and mem.unverified == ("bus",)
    assert set(mem.components) == {"bus", "mem"}
    # S1 made a_l1 touch l1d1: the channel exists only through that assumption
    added = row(p, "a_l1", "b_l1")
    assert (added.rule, added.assumptions, added.services) == \
        ("assumption", ("S1",), ("l1d1.load",))
    # S2 removed the bus from b_regs: the pair with a_mem is free because of it
    free = row(p, "a_mem", "b_regs")
    assert "S2" in free.relies_on and "S3" in free.relies_on
    assert row(p, "a_l1", "b_regs").relies_on == ("S3",)  # nothing shared: only the premise


def test_warnings_markdown_and_html():
    p = platform(MODEL)
    t = build_table(analyze(p, 2), p, date=WHEN)
    assert any("topology_trust is low" in w for w in t.warnings)
    assert any("bus" in w and "not verified" in w for w in t.warnings)
    md = t.to_markdown()
    for text in (p.hash, f"intercore {__version__}", "2025-01-02T03:04:05+00:00",
                 "## Channels (AMC 20-193 RU3)", "## Interference-free", "| S2 |", "TRM §2"):
        assert text in md
    html = t.to_html_section()
    assert "&lt;b&gt;aliasing&lt;/b&gt;" in html and "<b>aliasing" not in html
    assert "two cores &lt;and&gt; a bus" in html


def test_evidence_fills_the_column():
    p = platform(MODEL)
    ev = Evidence("confirmed", 1.42, (1.30, 1.55), 10, "shared", "b_mem", "a_mem", 7)
    t = build_table(analyze(p, 2), p, {frozenset({"a_mem", "b_mem"}): ev})
    [r] = [r for r in t.channels if set(r.transactions) == {"a_mem", "b_mem"}]
    assert r.evidence == ev
    assert "confirmed: Δ 1.42 [1.30, 1.55] n=10, canary shared, invocation 7" in t.to_markdown()
    assert r.to_dict()["evidence"]["delta_ci"] == [1.30, 1.55]
    nan = Evidence("not observed", 1.0, (math.nan, math.nan), 1, "unknown", "x", "y")
    assert nan.to_dict()["delta_ci"] == [None, None] and "[?, ?]" in nan.text()


def test_compact_folds_bank_services():
    services = tuple(f"dram#b{b}.load" for b in range(8)) + ("ddrc.load", "dram#b3.store")
    assert compact(services) == ["dram#b[0-7].load", "ddrc.load", "dram#b[3].store"]
