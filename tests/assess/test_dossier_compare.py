"""`dossier diff` and `dossier verify`'s judgement on dossiers this test builds (dossier.build on
step artefacts it writes, as tests/assess/test_dossier.py does, then edited where a second
board or date would differ): which settings and figures are flagged, which figures count as
reproduced, that a host's configuration drift is named, and that a dossier that does not
read back (missing, another version, truncated, a field gone, a step artefact changed
since) is refused naming the file and field before anything is compared or measured."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from intercore.base import artefact
from intercore.assess import compare, diff, readback, verify
from intercore.base.errors import InputError
from intercore.mitigate.experiment.protection import SCENARIOS

from _board import board
from test_dossier import SNAPSHOT, _dossier, _system


def _made(directory: Path, beside: float = 2.0, snapshot: dict = SNAPSHOT) -> dict:
    directory.mkdir()
    doc = _dossier(directory, _system(directory), beside, ("shared", "not-shared"), snapshot)
    _write(directory, doc)
    return doc


def _write(directory: Path, doc: dict) -> None:
    (directory / readback.DOSSIER).write_text(artefact.dumps(doc))


def _figure(doc: dict, fid: str) -> dict:
    return next(f for f in doc["figures"] if f["id"] == fid)


def _other_kernel() -> dict:
    other = copy.deepcopy(SNAPSHOT)
    other["settings"]["kernel_cmdline"] = {"value": "quiet isolcpus=1", "sha256": "1" * 64}
    return other


# ---- judging one figure ------------------------------------------------------------------------

def _scenario(ratio, ci) -> dict:
    return {"id": "protection/ctl/solo", "what": "w", "regime": "not probed",
            "value": {"n": 10, "p99_ms": None, "misses": 1, "miss_ratio": ratio,
                      "miss_ratio_ci95": ci}}


@pytest.mark.parametrize("recorded, measured, verdict", [
    (_scenario(0.1, [0.02, 0.4]), _scenario(0.4, [0.2, 0.6]), compare.REPRODUCED),  # bound in
    (_scenario(0.1, [0.02, 0.4]), _scenario(0.41, [0.2, 0.6]), compare.NOT_REPRODUCED),
    (_scenario(0.1, [0.02, 0.4]), _scenario(None, None), compare.NOT_REPRODUCED),
    (_scenario(0.1, [None, None]), _scenario(0.1, [0.02, 0.4]), compare.NO_INTERVAL),
    (_scenario(0.1, [0.02, 0.4]), None, compare.MISSING),
])
def test_a_figure_is_judged_by_the_interval_the_dossier_states_for_it(recorded, measured,
                                                                      verdict):
    assert compare.against(recorded, measured)["verdict"] == verdict


def test_a_figure_without_any_interval_is_never_reproduced():
    matrix = {"id": "matrix/ctl/noise", "what": "w", "regime": "shared",
              "value": {"degradation": 2.0, "n": 20, "misses": 3}}
    judged = compare.against(matrix, copy.deepcopy(matrix))
    assert judged["verdict"] == compare.NO_INTERVAL and judged["quantities"] == []


# ---- diff ---------------------------------------------------------------------------------------

def test_two_runs_of_one_system_in_two_checkouts_differ_in_nothing(tmp_path):
    a, b = _made(tmp_path / "a"), _made(tmp_path / "b")
    assert a["system"]["source"] != b["system"]["source"]
    # A model `detect` wrote again: other bytes (its detection time), the same channels.
    model = b["sections"]["channels"]["platform"]
    b["inputs"][model["source"]] = model["sha256"] = "e" * 64
    result = diff.diff(a, b)
    assert result["settings"] == [] and result["flagged"] == []
    assert len(result["figures"]) == len(a["figures"])


def test_diff_flags_each_changed_setting_and_each_figure_outside_the_others_interval(tmp_path):
    a = _made(tmp_path / "a")
    b = _made(tmp_path / "b", beside=2.5, snapshot=_other_kernel())
    solo = _figure(b, "protection/ctl/solo")["value"]
    solo.update(miss_ratio=0.6, miss_ratio_ci95=[0.45, 0.8])        # outside a's [0.02, 0.4]
    _figure(b, "protection/ctl/protected")["value"].update(miss_ratio=0.3)  # inside a's
    b["figures"] = [f for f in b["figures"] if f["id"] != "protection/ctl/interference"]
    b["system"]["theta"] = 1.2
    b["sections"]["channels"]["rows"].pop()
    b["inputs"] = {p: ("0" * 64 if p.endswith("t.yaml") else h) for p, h in b["inputs"].items()}
    result = diff.diff(a, b)
    assert [s["setting"] for s in result["settings"]] == [
        "host.kernel_cmdline", "input.t.yaml", "platform.channels", "system.theta"]
    cmdline = result["settings"][0]
    assert (cmdline["a"], cmdline["b"]) == ("quiet <script>x</script>", "quiet isolcpus=1")
    flags = {f["id"]: f["flag"] for f in result["figures"]}
    assert flags == {"matrix/ctl/noise": "changed, no interval stated to judge it",
                     "protection/ctl/solo": "outside the other's interval",
                     "protection/ctl/interference": "only in A",
                     "protection/ctl/protected": None}
    assert result["flagged"] == ["matrix/ctl/noise", "protection/ctl/solo",
                                 "protection/ctl/interference"]
    solo_row = next(f for f in result["figures"] if f["id"] == "protection/ctl/solo")
    assert solo_row["quantities"] == [{"quantity": "miss_ratio", "a": 0.1,
                                       "a_interval": [0.02, 0.4], "b": 0.6,
                                       "b_interval": [0.45, 0.8], "b_in_a": False,
                                       "a_in_b": False}]


# ---- reading a dossier back ---------------------------------------------------------------------

def _refusal(directory: Path) -> str:
    with pytest.raises(InputError) as caught:
        readback.step_artefacts(directory, readback.read(directory, "DIR"))
    return str(caught.value)


def test_a_dossier_that_does_not_read_back_is_refused_naming_file_and_field(tmp_path):
    doc = _made(tmp_path / "d")
    path = tmp_path / "d" / readback.DOSSIER
    assert _refusal(tmp_path / "nowhere") == "DIR: " + f"{tmp_path / 'nowhere'} is not a " \
                                                       "dossier directory (no such directory)"
    _write(tmp_path / "d", {**doc, "format": "intercore.dossier/0"})
    assert _refusal(tmp_path / "d").startswith(f"{path}:2: format: format "
                                               "'intercore.dossier/0' is not")
    path.write_text(artefact.dumps(doc)[:500])
    assert _refusal(tmp_path / "d").startswith(f"{path}:")
    broken = copy.deepcopy(doc)
    del broken["figures"][1]["id"]
    _write(tmp_path / "d", broken)
    assert "figures[1].id: required field missing" in _refusal(tmp_path / "d")
    _write(tmp_path / "d", doc)
    step = tmp_path / "d" / "step-plan.json"
    step.write_text(step.read_text().replace('"theta"', '"theta" ', 1))
    assert _refusal(tmp_path / "d").startswith(f"{step}: changed since the dossier hashed it")


# ---- verify, up to the measuring -----------------------------------------------------------------

def test_verify_chooses_the_figures_and_the_steps_that_measure_them(tmp_path):
    _made(tmp_path / "d")
    req = verify.prepare(tmp_path / "d", ["protection/ctl/s*"], board())
    assert [f["id"] for f in req.chosen] == ["protection/ctl/solo"]
    assert req.steps == ("protection",)
    req = verify.prepare(tmp_path / "d", [], board())
    assert len(req.chosen) == 1 + len(SCENARIOS) and req.steps == ("matrix", "protection")
    with pytest.raises(InputError, match="--figure: 'validation/\\*' matches no figure"):
        verify.prepare(tmp_path / "d", ["validation/*"], board())


def test_verify_refuses_inputs_that_changed_since_the_dossier(tmp_path):
    _made(tmp_path / "d")
    taskset = tmp_path / "d" / "t.yaml"
    taskset.write_text(taskset.read_text().replace("deadline: 5ms", "deadline: 6ms"))
    with pytest.raises(InputError) as caught:
        verify.prepare(tmp_path / "d", [], board())
    assert str(caught.value).startswith(f"{taskset}: sha256 ")
    assert "nothing to reproduce" in str(caught.value)


def test_verify_names_every_setting_that_drifted_and_the_verdicts_say_so(tmp_path):
    _made(tmp_path / "d")
    req = verify.prepare(tmp_path / "d", ["protection/*"], board())
    assert verify.drift(req.dossier, SNAPSHOT) == []
    here = {**_other_kernel(), "fingerprint": "e" * 16}
    again = copy.deepcopy(req.dossier)
    _figure(again, "protection/ctl/solo")["value"]["miss_ratio"] = 0.9
    result = verify.verdicts(req, again, here)
    assert [d["setting"] for d in result["drift"]] == ["host.fingerprint",
                                                       "host.kernel_cmdline"]
    assert result["drift"][1]["here"] == "quiet isolcpus=1"
    assert {f["id"]: f["verdict"] for f in result["figures"]} == {
        f"protection/ctl/{s}": compare.NOT_REPRODUCED if s == "solo" else compare.REPRODUCED
        for s in SCENARIOS}
    assert not result["all_reproduced"]
    assert result["headline"] == ("2 of 3 figures reproduced within their stated interval; "
                                  "measured on a host whose configuration differs from the "
                                  "dossier's in host.fingerprint, host.kernel_cmdline")
    json.dumps(result, allow_nan=False)
