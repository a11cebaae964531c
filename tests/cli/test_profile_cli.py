"""`intercore measure profile run` and `intercore measure counters` from the command line:
real runs, a real store, the exit codes of bad input (2) and of a host that lacks what is
asked (3)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from intercore.host.topology import read_topology
from intercore.measure.bandwidth import events as bwevents

TOPO = read_topology()
pytestmark = pytest.mark.skipif(len(TOPO.online_cpus) < 2, reason="the profiler needs 2 CPUs")


def intercore(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "intercore", *args], capture_output=True,
                          text=True, timeout=timeout)


@pytest.mark.slow
def test_self_test_is_flat_and_stored(tmp_path: Path):
    db, out = tmp_path / "r.db", tmp_path / "out"
    got = intercore("measure", "profile", "run", "--self-test", "100ms", "--interval", "100us",
                    "--source",
                    "sw:page-faults", "--db", str(db), "-o", str(out), "--json")
    assert got.returncode == 0, got.stderr
    doc = json.loads(got.stdout)
    assert doc["footprint"]["flat"]
    assert doc["sources"][0]["name"] == "sw:page-faults"
    assert Path(doc["plot"]).is_file()
    shown = intercore("measure", "profile", "show", str(doc["invocation"]), "--db", str(db), "-o",
                      str(out),
                      "--json")
    assert shown.returncode == 0, shown.stderr
    again = json.loads(shown.stdout)
    assert again["samples"] == doc["samples"]
    assert again["sources"][0]["mbps_median"] == doc["sources"][0]["mbps_median"]


@pytest.mark.slow
def test_victim_regions_become_tags(tmp_path: Path):
    got = intercore("measure", "profile", "run", "--victim", "phases:size=4M,compute=1ms",
                    "--reps", "2",
                    "--interval", "100us", "--source", "sw:page-faults", "--db",
                    str(tmp_path / "r.db"), "-o", str(tmp_path), "--json")
    assert got.returncode == 0, got.stderr
    doc = json.loads(got.stdout)
    names = [r["name"] for r in doc["regions"]]
    assert names.count("phases.stream") == 2 and names.count("phases.compute") == 4
    assert doc["tags"] == 2 * (2 + 2 * 2 + 2)


@pytest.mark.slow
@pytest.mark.parametrize("args, where", [
    (["--self-test", "100ms", "--interval", "0us"], "--interval"),
    (["--self-test", "100ms", "--source", "perf:no-such-event"], "--source"),
    ([], "COMMAND"),
    (["--self-test", "1s", "--", "true"], "COMMAND"),
    (["--self-test", "100ms", "--cpu", "0", "--target-cpu", "0"], "--cpu"),
])
def test_bad_input_exits_2_naming_the_option(tmp_path: Path, args, where):
    got = intercore("measure", "profile", "run", *args, "--db", str(tmp_path / "r.db"), "-o",
                    str(tmp_path))
    assert got.returncode == 2, got.stderr
    assert where in got.stderr
    assert not (tmp_path / "r.db").exists()


@pytest.mark.slow
def test_counters_list_names_every_source_with_its_verdict():
    got = intercore("measure", "counters", "list", "--json")
    assert got.returncode == 0, got.stderr
    doc = json.loads(got.stdout)
    names = {s["name"]: s for s in doc["sources"]}
    assert names["probe"]["available"]
    for s in doc["sources"]:
        assert s["available"] or s["reason"]


@pytest.mark.slow
def test_counters_self_test_says_what_the_host_lacks():
    report = bwevents.host_report(TOPO.online_cpus[-1])
    got = intercore("measure", "counters", "self-test", "--duration", "200ms")
    if not report.available and not Path("/sys/fs/resctrl/info").is_dir():
        assert got.returncode == 3
        assert "no hardware counter of memory traffic" in got.stderr
    else:  # a host with counters: each one gets a verdict
        assert got.returncode in (0, 1), got.stderr
        assert "verdict" in got.stdout


def test_a_sampler_on_the_victims_core_sibling_is_named_once(tmp_path: Path, monkeypatch):
    """sysfs on this host shows two cores; a tree that names CPUs 0 and 1 one core's threads
    stands in for a host that has them (the profile itself runs here, for real)."""
    monkeypatch.syspath_prepend(str(Path(__file__).parents[1] / "host"))
    from fake_host import hybrid_x86_vm
    from typer.testing import CliRunner

    from intercore.cli import profile
    from intercore.cli.main import app

    sysfs = tmp_path / "root"
    host = hybrid_x86_vm(sysfs)
    for cpu in (0, 1):
        host.cpu(cpu, core_id=0, thread_siblings="0-1")
    monkeypatch.setattr(profile, "read_topology", lambda: read_topology(sysfs))
    got = CliRunner().invoke(app, ["measure", "profile", "run", "--self-test", "50ms",
                                   "--interval", "100us",
                                   "--source", "sw:page-faults", "--cpu", "0", "--target-cpu",
                                   "1", "--db", str(tmp_path / "r.db"), "-o",
                                   str(tmp_path / "out"), "--json"], catch_exceptions=False)
    assert got.exit_code == 0, got.output
    doc = json.loads(got.stdout)
    named = [n for n in doc["notes"] if "shares a physical core" in n]
    assert named == ["the profiler's busy-wait sampler on CPU 0 shares a physical core with "
                     "the victim's CPU 1: sysfs names them hardware threads of one core "
                     "(thread_siblings); its own work slows the victim through the core, not "
                     "only through memory. Choose a CPU on another core"]
