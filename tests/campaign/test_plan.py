"""Planning: the paper's 84, names, baselines, run requests and content hashes."""

from __future__ import annotations

import dataclasses
import re
import textwrap
from pathlib import Path

from intercore.campaign.plan import NEED_CAT, NEED_MBA, NEED_STRIDE, make_plan
from intercore.campaign.spec import load_campaign
from intercore.host.topology import read_topology
from intercore.measure.aggressors.presets import Footprints, parse_set

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "campaigns"
HOST = {"executor": "local", "fingerprint": "abc", "binaries": {"ic-victim": "1", "ic-aggr": "2"}}
SIZES = ["32KiB", "512KiB", "1MiB", "1536KiB", "2MiB", "4MiB"]

BASE = """\
name: t
guests:
  crit:
    kind: critical
    tasks: [ptrchase]
  eng:
    kind: engine
generators:
  engine:
    sizes: [1MiB]
    ops: [write]
"""


def plan_of(tmp_path: Path, text: str, host=HOST):
    path = tmp_path / "c.yaml"
    path.write_text(textwrap.dedent(text))
    return make_plan(load_campaign(path), source=str(path), host=host)


def sp_impact(host=HOST):
    path = EXAMPLES / "sp-impact.yaml"
    return make_plan(load_campaign(path), source=str(path), host=host)


def test_sp_impact_plans_the_papers_84_interference_setups_and_7_solos():
    plan = sp_impact()
    interference = {s.config for s in plan.setups if s.request.engine}
    solos = {s.config for s in plan.setups if not s.request.engine}
    expected = {f"interf_{op}_{size}{cc}" for op in ("read", "write") for size in SIZES
                for cc in ["", *(f"_cc{n}" for n in range(2, 8))]}
    assert len(expected) == 84
    assert interference == expected
    assert solos == {"solo", *(f"solo_cc{n}" for n in range(2, 8))}
    tasks = ["qsort", "susan-c", "susan-s"]
    assert len(plan.setups) == (84 + 7) * len(tasks)
    assert plan.to_dict()["count"] == 273
    assert {s.name for s in plan.setups} == {f"{c}@{t}" for c in expected | solos for t in tasks}


def test_sp_impact_colours_the_critical_guest_from_the_top_and_never_with_one_colour():
    plan = sp_impact()
    for s in plan.setups:
        if s.config.endswith("_cc4"):
            assert s.colours["linux"] == 0xF0 and s.colour_count == 4
            if s.request.engine:
                assert s.colours["interf"] == 0x0F
        if "_cc" not in s.config:
            assert s.colours == {} and s.colour_count is None
        assert s.colour_count != 1
        assert (NEED_CAT in s.needs) == bool(s.colours)
        assert s.colour_space == 8


def test_every_baseline_is_the_plain_solo_of_its_task():
    plan = sp_impact()
    names = {s.name for s in plan.setups}
    for s in plan.setups:
        if s.config == "solo":
            assert s.baseline is None
        else:
            assert s.baseline == f"solo@{s.task}" and s.baseline in names


def test_engine_variants_become_measurement_core_aggressor_specs():
    plan = sp_impact()
    s = plan.setup("interf_write_1MiB_cc4@susan-c")
    r = s.request
    assert r.victim == "susan" and r.victim_params == ("mode=corners",)
    assert r.victim_cpu == 0 and r.reps == 30 and r.seed == 1
    assert r.engine == ("bw:op=write,size=1MiB",) * 3 and r.engine_cpus == (1, 2, 3)
    assert s.contention == {"op": "write", "size": 1 << 20, "size_h": "1MiB", "cpus": "1-3",
                            "line": None, "aggressor": "bw"}
    assert s.roles == {"victim": "linux", "aggressor": "interf"}
    solo = plan.setup("solo_cc2@qsort")
    assert solo.request.engine == () and solo.request.engine_cpus is None
    assert solo.colours == {"linux": 0xC0}
    # The specs are the measurement core's own grammar, with the sizes it is given.
    topo = read_topology()
    aset = parse_set("+".join(r.engine), Footprints.for_host(topo), topo)
    assert [(m.kind, m.op, m.size) for m in aset.members] == [("bw", "write", 1 << 20)] * 3


def test_rw_maps_to_rmw_and_pll_carries_its_mlp(tmp_path):
    plan = plan_of(tmp_path, BASE.replace("[write]", "[rw]"))
    assert plan.setup("interf_rw_1MiB").request.engine == ("bw:op=rmw,size=1MiB",)
    plan = plan_of(tmp_path, BASE.replace("    kind: engine\n",
                                          "    kind: engine\n    aggressor: pll\n    mlp: 6\n"))
    assert plan.setup("interf_write_1MiB").request.engine == ("pll:op=write,size=1MiB,mlp=6",)


def test_single_task_names_are_the_papers_and_solo_comes_first(tmp_path):
    plan = plan_of(tmp_path, BASE)
    assert [s.name for s in plan.setups] == ["solo", "interf_write_1MiB"]
    assert plan.setups[1].baseline == "solo"
    assert plan.setups[1].request.engine_cpus is None  # auto: the harness places it


def test_several_cpu_and_line_configurations_are_named_and_strides_flagged(tmp_path):
    plan = plan_of(tmp_path, BASE.replace("    sizes:", "    cpus: [auto, 0]\n"
                                                     "    line_sizes: [native, 128]\n    sizes:"))
    names = [s.name for s in plan.setups if s.request.engine]
    assert names == ["interf_write_1MiB_cpuauto_linenative", "interf_write_1MiB_cpuauto_line128",
                     "interf_write_1MiB_cpu0_linenative", "interf_write_1MiB_cpu0_line128"]
    assert plan.setup("interf_write_1MiB_cpu0_line128").needs == (NEED_STRIDE,)
    assert plan.setup("interf_write_1MiB_cpu0_linenative").needs == ()
    assert plan.setup("interf_write_1MiB_cpu0_linenative").request.engine_cpus == (0,)


def test_bandwidth_setups_are_named_by_guest_budget_and_period(tmp_path):
    plan = plan_of(tmp_path, BASE + (
        "  bandwidth:\n"
        "    unit: percent\n"
        "    guests:\n"
        "      eng: {budgets: [10, 50], periods_us: [0, 1000]}\n"
        "      crit: {budgets: [90]}\n"))
    interf = [s.name for s in plan.setups if s.request.engine]
    assert interf == ["interf_write_1MiB_mbr-eng-10pct_mbr-crit-90pct",
                      "interf_write_1MiB_mbr-eng-10pct-1000us_mbr-crit-90pct",
                      "interf_write_1MiB_mbr-eng-50pct_mbr-crit-90pct",
                      "interf_write_1MiB_mbr-eng-50pct-1000us_mbr-crit-90pct"]
    # A solo keeps only the critical guest's own budget.
    assert [s.name for s in plan.setups if not s.request.engine] == ["solo",
                                                                      "solo_mbr-crit-90pct"]
    s = plan.setup("interf_write_1MiB_mbr-eng-50pct-1000us_mbr-crit-90pct")
    assert s.bandwidth == {"eng": (50, 1000), "crit": (90, 0)}
    assert s.needs == (NEED_MBA,) and s.bandwidth_unit == "percent"
    assert s.to_dict()["bandwidth"]["eng"] == {"budget": 50, "unit": "percent",
                                               "period_us": 1000}


def test_critical_guest_first_in_the_colouring_takes_the_low_colours(tmp_path):
    plan = plan_of(tmp_path, BASE + "  colouring:\n    colours: 4\n    guests: [crit, eng]\n")
    # b = 0 leaves crit uncoloured (0 = every colour, as in Bao): the plain setup.
    assert [s.name for s in plan.setups if s.request.engine] == [
        "interf_write_1MiB", "interf_write_1MiB_cc1", "interf_write_1MiB_cc2",
        "interf_write_1MiB_cc3"]
    s = plan.setup("interf_write_1MiB_cc3")
    assert s.colours == {"crit": 0b0111, "eng": 0b1000}


def test_include_and_exclude_keep_the_baselines_and_warn_on_unused_patterns(tmp_path):
    text = BASE.replace("[1MiB]", "[1MiB, 2MiB]").replace("[write]", "[read, write]") + \
        "include: ['interf_write_*', 'interf_nothing']\nexclude: ['*_2MiB']\n"
    plan = plan_of(tmp_path, text)
    assert [s.name for s in plan.setups] == ["solo", "interf_write_1MiB"]
    assert plan.warnings == ("pattern 'interf_nothing' matches no setup",)


def test_hashes_are_16_hex_unique_and_stable():
    a, b = sp_impact(), sp_impact()
    hashes = [s.hash for s in a.setups]
    assert all(re.fullmatch(r"[0-9a-f]{16}", h) for h in hashes)
    assert len(set(hashes)) == len(hashes)
    assert hashes == [s.hash for s in b.setups]


def test_hashes_cover_host_binaries_and_configuration_but_not_rounds(tmp_path):
    base = plan_of(tmp_path, BASE)
    other_binary = {**HOST, "binaries": {"ic-victim": "1", "ic-aggr": "changed"}}
    assert all(x.hash != y.hash for x, y in zip(base.setups,
                                                plan_of(tmp_path, BASE, other_binary).setups))
    more_reps = plan_of(tmp_path, BASE + "repetitions: 31\n")
    assert all(x.hash != y.hash for x, y in zip(base.setups, more_reps.setups))
    more_rounds = plan_of(tmp_path, BASE + "rounds: 5\n")
    assert [x.hash for x in base.setups] == [y.hash for y in more_rounds.setups]
    assert more_rounds.rounds == 5


def test_plan_to_dict_lists_every_setup_with_name_and_hash():
    plan = sp_impact()
    d = plan.to_dict()
    assert d["count"] == len(d["setups"]) == 273
    assert (d["interference"], d["solo"], d["configurations"]) == (252, 21, 91)
    assert d["tasks"] == ["qsort", "susan-c", "susan-s"]
    first = d["setups"][0]
    assert {"name", "hash", "baseline", "needs", "victim", "engine", "colours",
            "bandwidth"} <= set(first)
    cc = next(x for x in d["setups"] if x["name"] == "interf_read_4MiB_cc2@qsort")
    assert cc["colours"] == {"interf": "0x3f", "linux": "0xc0"} and cc["needs"] == ["l3-cat"]
    assert dataclasses.asdict(plan.setups[0].request)["reps"] == 30
