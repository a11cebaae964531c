"""Enforcement: resctrl groups per guest around a run, or the reason a setup cannot run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from _resctrl_fake import FakeKernel, Hardware

from intercore.campaign.enforce import (
    Enforcement,
    ResctrlEnforcement,
    Unenforceable,
    enforcement_for,
)
from intercore.campaign.plan import make_plan
from intercore.campaign.spec import load_campaign
from intercore.mitigate.bandwidth.resctrl import ResctrlError

CAMPAIGN = """\
name: t
guests:
  crit: {kind: critical, tasks: [ptrchase]}
  eng: {kind: engine}
generators:
  engine: {sizes: [1MiB], ops: [write]}
  colouring: {colours: 8, guests: [eng, crit], min_colours: {crit: 2}}
  bandwidth:
    unit: UNIT
    guests:
      eng: {budgets: [BUDGET], periods_us: [0, 1000]}
"""


def plan(tmp_path: Path, unit: str = "percent", budget: int = 25):
    path = tmp_path / "c.yaml"
    path.write_text(CAMPAIGN.replace("UNIT", unit).replace("BUDGET", str(budget)))
    return make_plan(load_campaign(path), source=str(path), host={"h": 1})


def setup_named(tmp_path, prefix, **kw):
    return next(s for s in plan(tmp_path, **kw).setups if s.name.startswith(prefix))


@pytest.fixture
def sleeper():
    procs = []

    def start() -> int:
        p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        procs.append(p)
        return p.pid

    yield start
    for p in procs:
        p.kill()
        p.wait()


def test_a_setup_needing_nothing_gets_a_no_op(tmp_path):
    s = setup_named(tmp_path, "solo")
    assert s.needs == ()
    e = enforcement_for(s, resctrl_root=tmp_path / "absent")
    assert isinstance(e, Enforcement) and not isinstance(e, ResctrlEnforcement)
    with e.applied() as active:
        active.add_pid("victim", 1)
        assert active.report() == {"backend": "none"}


def test_without_resctrl_a_colour_setup_is_unenforceable_with_the_reason(tmp_path):
    s = setup_named(tmp_path, "interf_write_1MiB_cc4_mbr-eng-25pct")
    e = enforcement_for(s, resctrl_root=tmp_path / "absent")
    assert isinstance(e, Unenforceable)
    assert e.reason.startswith("needs l3-cat, mba: ") and "no resctrl mounted" in e.reason


def test_the_live_host_says_why_when_it_has_no_resctrl(tmp_path):
    if Path("/sys/fs/resctrl/info").is_dir():
        pytest.skip("this host has resctrl mounted")
    e = enforcement_for(setup_named(tmp_path, "solo_cc4"))
    assert isinstance(e, Unenforceable) and "resctrl" in e.reason


def test_colours_and_budgets_are_written_per_guest_and_removed_after(tmp_path, sleeper):
    root = tmp_path / "resctrl"
    root.mkdir()
    kernel = FakeKernel.on_new_tree(root, Hardware(cbm_mask=0x7FF))  # 11 ways, Intel MBA
    s = setup_named(tmp_path, "interf_write_1MiB_cc4_mbr-eng-25pct")
    assert s.colours == {"eng": 0x0F, "crit": 0xF0} and s.bandwidth == {"eng": (25, 0)}
    e = enforcement_for(s, resctrl=kernel)
    assert isinstance(e, ResctrlEnforcement)
    crit, eng = f"intercore-{s.hash}-crit", f"intercore-{s.hash}-eng"
    with e.applied() as active:
        assert sorted(kernel.groups()) == sorted([crit, eng])
        # 8 colours over 11 ways: colours 0-3 -> ways 0-4, colours 4-7 -> ways 5-10.
        assert (f"{eng}/schemata", "L3:0=1f;1=1f\nMB:0=25;1=25\n") in kernel.writes
        assert (f"{crit}/schemata", "L3:0=7e0;1=7e0\n") in kernel.writes
        victim, aggressor, helper = sleeper(), sleeper(), sleeper()
        active.add_pid("victim", victim)
        active.add_pid("aggressor", aggressor)
        active.add_pid("spinner", helper)
        assert kernel.tasks(crit) == [victim] and kernel.tasks(eng) == [aggressor]
        report = active.report()
    assert kernel.groups() == []
    groups = {g["guest"]: g for g in report["groups"]}
    assert groups["crit"]["l3"]["requested"] == "0x7e0"
    assert groups["crit"]["l3"]["applied"] == {"L3": {"0": "7e0", "1": "7e0"}}
    assert groups["crit"]["pids"] == [victim]
    mb = groups["eng"]["mb"]
    # Intel MBA rounds 25% up to its 10% granularity; the report shows all three values.
    assert (mb["budget"], mb["written"], mb["expected"]) == (25, 25, 30)
    assert mb["applied"] == {"0": "30", "1": "30"} and mb["unit"] == "percent"
    assert report["default_group"] == [{"role": "spinner", "pid": helper}]
    assert report["last_cmd_status"] == "ok"


def test_amd_budgets_are_written_in_eighths_of_a_gigabyte(tmp_path):
    root = tmp_path / "resctrl"
    root.mkdir()
    kernel = FakeKernel.on_new_tree(root, Hardware(cbm_mask=0xFFFF, min_bandwidth=0,
                                                   bandwidth_gran=1), vendor="AuthenticAMD")
    s = setup_named(tmp_path, "interf_write_1MiB_mbr-eng-2000MBps", unit="MBps", budget=2000)
    e = enforcement_for(s, resctrl=kernel)
    with e.applied() as active:
        report = active.report()
    assert (f"intercore-{s.hash}-eng/schemata", "MB:0=16;1=16\n") in kernel.writes
    mb = report["groups"][0]["mb"]
    assert (mb["mode"], mb["written"], mb["expected_mbps"]) == ("amd", 16, 2000)


def test_mba_mbps_mount_takes_the_rate(tmp_path):
    root = tmp_path / "resctrl"
    root.mkdir()
    kernel = FakeKernel.on_new_tree(root, mount_options=("rw", "mba_MBps"))
    s = setup_named(tmp_path, "interf_write_1MiB_mbr-eng-700MBps", unit="MBps", budget=700)
    with enforcement_for(s, resctrl=kernel).applied() as active:
        assert active.report()["groups"][0]["mb"]["applied"] == {"0": "700", "1": "700"}


@pytest.mark.parametrize("hw, kw, prefix, words", [
    (Hardware(), {"unit": "MBps", "budget": 700}, "interf_write_1MiB_mbr-eng-700MBps",
     "mba_MBps"),                                       # Intel percentages, budget in MBps
    (Hardware(), {}, "interf_write_1MiB_mbr-eng-25pct-1000us", "no regulation period"),
    (Hardware(min_bandwidth=30), {}, "interf_write_1MiB_mbr-eng-25pct", "outside 30..100"),
    (Hardware(min_cbm_bits=2, cbm_mask=0xFF), {}, "interf_write_1MiB_cc7_",
     "fewer than min_cbm_bits=2"),                      # the engine's single colour = 1 way
    (Hardware(cbm_mask=0xF), {}, "solo_cc4", "8 colours cannot map onto a 4-bit"),
    (Hardware(num_closids=2), {}, "interf_write_1MiB_cc4_mbr", "CLOSIDs are free"),
    (Hardware(mb=False), {}, "interf_write_1MiB_mbr-eng-25pct", "no info/MB"),
])
def test_what_the_hardware_cannot_do_is_unenforceable(tmp_path, hw, kw, prefix, words):
    root = tmp_path / "resctrl"
    root.mkdir()
    kernel = FakeKernel.on_new_tree(root, hw)
    e = enforcement_for(setup_named(tmp_path, prefix, **kw), resctrl=kernel)
    assert isinstance(e, Unenforceable) and words in e.reason, getattr(e, "reason", e)
    assert kernel.groups() == []


def test_a_kernel_refusal_is_a_clear_failure_and_leaves_no_group(tmp_path):
    root = tmp_path / "resctrl"
    root.mkdir()
    kernel = FakeKernel.on_new_tree(root, Hardware(reject="pseudo-locked region on domain 1"))
    e = enforcement_for(setup_named(tmp_path, "solo_cc4"), resctrl=kernel)
    with pytest.raises(ResctrlError, match="last_cmd_status: pseudo-locked region on domain 1"):
        with e.applied():
            pytest.fail("the run must not start")
    assert kernel.groups() == []


def test_groups_left_by_a_killed_run_are_removed_first(tmp_path):
    root = tmp_path / "resctrl"
    root.mkdir()
    kernel = FakeKernel.on_new_tree(root)
    kernel.create_group("intercore-0123456789abcdef-crit")  # empty: its run died
    kernel.create_group("someone-else")
    with enforcement_for(setup_named(tmp_path, "solo_cc4"), resctrl=kernel).applied():
        assert "intercore-0123456789abcdef-crit" not in kernel.groups()
        assert "someone-else" in kernel.groups()
