"""The dossier's logic on step artefacts this test writes (a made-up board, a hand-written
platform model, matrices whose regimes it chooses): which figures are flagged, what the
headline says about the run's regimes, which mitigation each channel gets and why, and that
the page escapes what the host and the user wrote. The real run is tests/mitigate/test_assess.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from intercore.assess import capacity, dossier, html, system as system_mod, verify
from intercore.assess.steps import Runner, Step
from intercore.measure.periodic.matrix import InterferenceMatrix, RegionCell
from intercore.mitigate.plan import algorithm1, region_matrix
from intercore.mitigate.experiment.protection import SCENARIOS
from intercore.model import calculus
from intercore.model.channels import build_table
from intercore.model.sharing import CpuChannels

from _board import board

MODEL = """format: 1
platform: two-cores
components:
  cpu[0-1]: {kind: initiator, role: core, cpu: '[i]'}
  l3: {kind: target, role: cache, level: 3, size: 4M}
  dram: {kind: target, role: memory}
  external: {kind: initiator, role: core}
links: ['cpu[i]>l3', 'cpu[i]>dram', external>l3]
apps: {'app[0-1]': 'cpu[i]', tenants: external}
transactions:
  cpu[0-1]_l3_ld: {app: 'app[i]', op: load, target: l3}
  cpu[0-1]_dram_ld: {app: 'app[i]', op: load, target: dram}
  external_l3_ld: {app: tenants, op: load, target: l3}
"""
TASKSET = """name: t
tasks:
  - {name: ctl, workload: ptrchase, period: 10ms, deadline: 5ms, cpu: 1, priority: 10,
     role: critical}
  - {name: noise, workload: BwWrite(LLC), period: 20ms, work: time:4ms, cpu: 1, priority: 10,
     role: best-effort}
"""
SNAPSHOT = {"fingerprint": "f" * 16,
            "settings": {"kernel_cmdline": {"value": "quiet <script>x</script>",
                                            "sha256": "0" * 64}}}


def _system(tmp_path: Path, mitigations: str = "[freeze]", taskset: str = TASKSET,
            heatmap: dict | None = None) -> system_mod.System:
    (tmp_path / "m.yaml").write_text(MODEL)
    (tmp_path / "t.yaml").write_text(taskset)
    extra = ""
    if heatmap is not None:
        (tmp_path / "h.json").write_text(json.dumps(heatmap))
        extra = "heatmaps: {ctl: h.json}\n"
    (tmp_path / "s.yaml").write_text(
        f"name: s\nplatform: m.yaml\ntaskset: t.yaml\nmitigations: {mitigations}\n{extra}")
    return system_mod.load(tmp_path / "s.yaml", board())


def _scenario() -> dict:
    return {"n": 10, "p50_ms": 1.0, "p99_ms": None, "max_ms": 2.0, "misses": 1,
            "miss_ratio": 0.1, "miss_ratio_ci95": [0.02, 0.4]}


def _dossier(tmp_path: Path, system: system_mod.System, beside: float,
             regimes: tuple[str, str], snapshot: dict = SNAPSHOT,
             measured: tuple[RegionCell, ...] = (), search: dict | None = None) -> dict:
    """The dossier of a run whose matrix gave D[ctl][noise] = `beside`, measured in
    regimes[0], and D[noise][ctl] = 1.1 in regimes[1]; the validation refused."""
    platform = system.platform
    matrix = InterferenceMatrix(
        tasks=("ctl", "noise"), statistic="max", directed=((None, beside), (1.1, None)),
        n=((0, 20), (10, 0)), misses=((0, 3), (0, 0)),
        regime_of=((None, regimes[0]), (regimes[1], None)))
    # the regions step as assess runs it: the matrix joined with the platform model's channels
    regions = region_matrix.build(system.taskset, matrix, channels=CpuChannels(platform),
                                  heatmaps=system.heatmaps, job_source="step-matrix.json")
    if measured:  # as the regions step adds them (assess/regions.py), below the job's value
        regions = regions.model_copy(update={"regions": (*regions.regions, *measured)})
    plan = algorithm1.plan(system.taskset, regions, system.theta,
                           matrix_source="step-regions.json")
    protection = {"tasks": {"ctl": {**{s: _scenario() for s in SCENARIOS}, "noise": "noise",
                                    "protection_refused": None, "notes": [],
                                    "figures": []}}, "invocation_id": 2} \
        if "freeze" in system.mitigations else {"refused": "freeze is not allowed"}
    results = {
        "platform": {"source": platform.source, "sha256": platform.hash},
        "channels": build_table(calculus.analyze(platform, 2), platform).to_dict(),
        "validation": {"refused": "the model is not of this host"},
        **({"search": search} if search is not None else {}),
        "matrix": {"matrix": matrix.model_dump(mode="json"), "invocation_id": 1,
                   "blocks": [{"label": "round 0: ctl + noise", "regime": r, "seconds": 0.5}
                              for r in regimes]},
        "regions": regions.model_dump(mode="json"),
        "plan": plan.to_dict(), "protection": protection}
    run = Runner(tmp_path, len(results), lambda _: None)
    done = {name: run(Step(name, name, {}, lambda r=result: r))
            for name, result in results.items()}
    # An empty sysfs: a host with no counter of memory traffic, as a VM without a PMU
    return dossier.build(done, system, platform, snapshot, capacity.section(system, tmp_path),
                         tmp_path, tmp_path / "s.db", quick=True)


def test_a_figure_is_flagged_exactly_when_no_shared_regime_pair_supports_it(tmp_path):
    doc = _dossier(tmp_path, _system(tmp_path), 2.0, ("shared", "not-shared"))
    flags = {f["id"]: f["flag"] for f in doc["figures"]}
    assert flags["matrix/ctl/noise"] is None
    assert all(flags[f"protection/ctl/{s}"] for s in SCENARIOS)  # no canary ran there
    assert doc["flagged"] == [f"protection/ctl/{s}" for s in SCENARIOS]
    assert doc["regimes"]["matrix_seconds"] == {"shared": 0.5, "not-shared": 0.5}
    assert doc["headline"] == "3 of 4 figures have no shared-regime support"


@pytest.mark.parametrize("beside, claimed", [(2.0, False), (0.8, True)])
def test_a_matrix_cell_below_one_says_it_is_no_speed_up(tmp_path, beside, claimed):
    doc = _dossier(tmp_path, _system(tmp_path), beside, ("shared", "shared"))
    [cell] = [f for f in doc["figures"] if f["id"] == "matrix/ctl/noise"]
    assert cell["what"].startswith("max response time of ctl beside noise over alone")
    assert ("no slowdown was seen, and none is claimed" in cell["what"]) == claimed


def test_a_run_with_no_shared_block_says_so(tmp_path):
    doc = _dossier(tmp_path, _system(tmp_path), 2.0, ("not-shared", "unknown"))
    assert doc["flagged"] == [f["id"] for f in doc["figures"]]
    assert "no block was measured while the CPUs shared their cache" in doc["headline"]
    assert "measured in the 'not-shared' regime" in doc["figures"][0]["flag"]


@pytest.mark.parametrize("beside, mitigations, by, why", [
    (2.0, "[freeze]", "freeze (whole job)", "every pair on it is separated"),
    (1.2, "[freeze]", "unmitigated", "ctl/noise: I = 1.2000 is at most θ = 1.5"),
    (2.0, "[regulate]", "unmitigated", "freeze is not allowed"),
])
def test_each_channel_names_the_plans_mitigation_or_why_it_has_none(tmp_path, beside,
                                                                    mitigations, by, why):
    # noise on CPU 0, ctl on CPU 1: the model's channels between the two are the pair's.
    taskset = TASKSET.replace("time:4ms, cpu: 1", "time:4ms, cpu: 0")
    doc = _dossier(tmp_path, _system(tmp_path, mitigations, taskset), beside,
                   ("shared", "shared"))
    section = doc["sections"]["channels"]
    rows = section["rows"]
    ours = [r for r in rows if "external" not in r["initiators"]]
    assert ours and all(r["mitigation"]["by"] == by and why in r["mitigation"]["why"]
                        for r in ours), ours[0]["mitigation"]
    tenants = [r for r in rows if "external" in r["initiators"]]
    assert tenants and all(r["mitigation"]["by"] == "unmitigated" and
                           "external is not a host CPU" in r["mitigation"]["why"]
                           for r in tenants)
    assert all(r["verdict"] == {"verdict": "not validated",
                                "why": "the model is not of this host"} for r in rows)
    # The plan's own list says the same of each channel between the tasks.
    between = section["between_tasks"]
    assert between and all(c["pairs"] == ["ctl/noise"] and c["mitigation"] == by and
                           why in c["reason"] for c in between)
    services = {s for r in ours for s in r["services"]}
    assert {c["channel"] for c in between} <= services


def test_on_one_cpu_the_channel_is_its_time_which_the_models_table_has_no_row_for(tmp_path):
    doc = _dossier(tmp_path, _system(tmp_path), 2.0, ("shared", "shared"))
    section = doc["sections"]["channels"]
    ours = [r for r in section["rows"] if "external" not in r["initiators"]]
    assert ours and all(r["mitigation"]["by"] == "not between the system's tasks"
                        for r in ours)
    between = {c["channel"]: c["mitigation"] for c in section["between_tasks"]}
    assert between["cpu1 time"] == "freeze (whole job)"
    page = html.render(doc)
    assert "cpu1 time" in page and "not between the system" in page


def test_the_page_is_offline_and_escapes_what_it_quotes(tmp_path):
    doc = _dossier(tmp_path, _system(tmp_path), 2.0, ("shared", "not-shared"))
    page = html.render(doc)
    assert "<script" not in page and "&lt;script&gt;" in page
    assert "http://" not in page and "https://" not in page and " src=" not in page
    for fid in doc["flagged"]:
        assert fid.split("/")[-1] in page


HEATMAP = {"format": "intercore.heatmap/1", "regions": [
    {"region": "lut", "delta": 1.4, "interval": [1.3, 2.4], "weight": 0.3},
    {"region": "pid", "delta": 1.0, "interval": [1.0, 1.1], "weight": 0.7}]}


@pytest.mark.parametrize("noise_cpu, windows", [(0, ["lut"]), (1, [])])
def test_a_heatmap_puts_each_region_in_the_dossier_and_its_windows_in_the_plan(
        tmp_path, noise_cpu, windows):
    taskset = TASKSET.replace("time:4ms, cpu: 1", f"time:4ms, cpu: {noise_cpu}")
    system = _system(tmp_path, taskset=taskset, heatmap=HEATMAP)
    doc = _dossier(tmp_path, system, 2.0, ("shared", "shared"))
    heat = str(tmp_path / "h.json")
    assert doc["inputs"][heat] == system.files[heat]
    [row] = doc["sections"]["timing"]["tasks"]
    assert [(c["region"], c["provenance"], c["value"], c["bound"], c["source"])
            for c in row["regions"]] == [("lut", "predicted", 1.4, 2.4, heat),
                                          ("pid", "predicted", 1.0, 1.1, heat)]
    plan = doc["sections"]["plan"]
    [ctl] = [g for g in plan["groups"] if g["name"] == "ctl"]
    assert ctl["windows"] == windows
    warned = [w["code"] for w in plan["warnings"]]
    assert ("whole-jobs" in warned) == (not windows)
    covers = {r["mitigation"]["by"] for r in doc["sections"]["channels"]["rows"]
              if "external" not in r["initiators"]}
    assert covers == ({"freeze windows"} if windows else {"not between the system's tasks"})
    assert {c["mitigation"] for c in doc["sections"]["channels"]["between_tasks"]} == \
        {"freeze windows" if windows else "freeze (whole job)"}
    page = html.render(doc)
    assert "lut" in page and ("whole jobs" in page) == (not windows)


def test_a_measured_region_is_a_figure_that_verify_measures_again(tmp_path):
    system = _system(tmp_path)
    lut = RegionCell(task="ctl", beside="noise", region="lut", provenance="measured",
                     value=1.3, bound=1.5, n=6, ci=(1.1, 1.5), regime="shared",
                     source="store invocation 7")
    doc = _dossier(tmp_path, system, 2.0, ("shared", "shared"), measured=(lut,))
    [row] = doc["sections"]["timing"]["tasks"]
    [cell] = row["regions"]
    assert cell["figure"] == "regions/ctl/noise/lut"
    [fig] = [f for f in doc["figures"] if f["id"] == "regions/ctl/noise/lut"]
    assert fig["value"] == {"delta": 1.3, "delta_ci": [1.1, 1.5], "n": 6}
    assert fig["flag"] is None and fig["provenance"]["store"] == {"invocation_id": 7,
                                                                   "runs": ["lut"]}
    assert fig["provenance"]["files"] == system.task_files
    assert verify.choose(doc, ["regions/*"]) == [fig]
    assert verify.MEASURED_BY["regions"] == "regions"


def _searched(refused: str | None) -> dict:
    """The search step's artefact for ctl: PLLWrite(DRAM) found over 12 pairs, its region lut
    beside it; refused, as the strongest so far, provisional."""
    found = {"n": 12, "delta": 1.4, "delta_ci": [1.2, 1.6], "paired_max": 2.0,
             "aggressor": "PLLWrite(DRAM)", "ranked_in": "all" if refused else "shared",
             "provisional": refused is not None, "invocation_id": 9,
             "regime": "not-shared" if refused else "shared"}
    return {"tasks": {"ctl": {
        "task": "ctl", "candidates": 10, "aggressor_cpus": [0], "pairs": 2,
        "refused": refused, "saved_as": None if refused else "@worst:program:x:sha256=0",
        "found": found, "search": {"rounds": [{"regime_blocks": {"shared": 1}},
                                              {"regime_blocks": {"shared": 2,
                                                                 "not-shared": 5}}]},
        "regions": [{"region": "lut", "n": 12, "delta": 1.1, "delta_ci": [1.0, 1.2],
                     "paired_max": 1.3}]}}, "notes": []}


@pytest.mark.parametrize("refused", [None, "search round 1: 10 of 10 candidates had fewer "
                                           "than 2 pairs in shared blocks"])
def test_the_worst_aggressor_found_is_a_figure_for_the_task_and_each_region(tmp_path,
                                                                            refused):
    system = _system(tmp_path)
    doc = _dossier(tmp_path, system, 2.0, ("shared", "shared"), search=_searched(refused))
    [row] = doc["sections"]["timing"]["tasks"]
    worst = row["worst_found"]
    assert (worst["refused"], worst["candidates"], worst["aggressor_cpus"]) == \
        (refused, 10, [0])
    whole, lut = worst["figure"], *worst["regions"]
    assert (whole["id"], lut["id"]) == ("search/ctl", "search/ctl/lut")
    assert whole["value"] == {"aggressor": "PLLWrite(DRAM)", "provisional": bool(refused),
                              "delta": 1.4, "delta_ci": [1.2, 1.6], "n": 12,
                              "paired_max": 2.0}
    assert lut["value"]["delta"] == 1.1 and lut["value"]["aggressor"] == "PLLWrite(DRAM)"
    assert doc["regimes"]["search_blocks"] == {"shared": 3, "not-shared": 5}
    assert ("provisional" in whole["what"]) == bool(refused)
    assert ("2 round(s)" in whole["what"]) != bool(refused)
    # Ranked over all pairs when refused: no shared-regime pair supports it, so it is flagged.
    assert (whole["flag"] is None) != bool(refused)
    assert whole["provenance"]["store"] == {"invocation_id": 9, "runs": ["PLLWrite(DRAM)"]}
    assert verify.choose(doc, ["search/*"]) == [whole, lut]
    assert verify.MEASURED_BY["search"] == "search"
    page = html.render(doc)
    assert "PLLWrite(DRAM)" in page and ("search refused" in page) == bool(refused)
    # Values read as name and value, an interval in brackets, not as raw JSON.
    assert "delta 1.4; delta ci [1.2, 1.6]; n 12; paired max 2" in page
    assert '{"delta"' not in page and "&quot;delta&quot;" not in page


def test_a_task_the_search_left_out_says_why_and_an_older_dossier_has_no_search(tmp_path):
    system = _system(tmp_path)
    note = "ctl is not searched: it is the built-in ptrchase"
    doc = _dossier(tmp_path, system, 2.0, ("shared", "shared"),
                   search={"tasks": {}, "notes": [note]})
    assert doc["sections"]["timing"]["tasks"][0]["worst_found"] == {"why_not": note}
    assert note in html.render(doc)
    (tmp_path / "old").mkdir()
    older = _dossier(tmp_path / "old", system, 2.0, ("shared", "shared"))
    assert older["sections"]["timing"]["tasks"][0]["worst_found"] is None
    assert not [f for f in older["figures"] if f["id"].startswith("search/")]
