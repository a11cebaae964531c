"""`intercore measure campaign validate | plan` end to end, through the installed entry point."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from intercore.host.topology import read_topology

pytestmark = pytest.mark.slow

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "campaigns"
SP_IMPACT = str(EXAMPLES / "sp-impact.yaml")
NO_RESCTRL = not Path("/sys/fs/resctrl/info").is_dir()

MALFORMED = """\
name: broken
guests:
  crit:
    kind: critical
    tasks: [ptrchase]
  eng:
    kind: engine
generators:
  engine:
    sizes: [1MiB]
    ops: [write, smash]
"""


def intercore(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "intercore", *args], capture_output=True,
                          text=True, timeout=120)


def test_plan_json_lists_the_papers_84_setups_with_hashes():
    proc = intercore("measure", "campaign", "plan", SP_IMPACT, "--any-host", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["count"] == len(out["setups"]) == 273
    assert (out["interference"], out["solo"]) == (252, 21)
    configs = {s["config"] for s in out["setups"] if s["engine"]}
    assert len(configs) == 84 and "interf_write_1MiB_cc4" in configs
    assert {s["config"] for s in out["setups"] if not s["engine"]} == {
        "solo", "solo_cc2", "solo_cc3", "solo_cc4", "solo_cc5", "solo_cc6", "solo_cc7"}
    hashes = [s["hash"] for s in out["setups"]]
    assert len(set(hashes)) == len(hashes) and all(len(h) == 16 for h in hashes)
    by_name = {s["name"]: s for s in out["setups"]}
    assert by_name["interf_write_1MiB@qsort"]["unenforceable"] is None
    if NO_RESCTRL:
        reason = by_name["interf_write_1MiB_cc4@qsort"]["unenforceable"]
        assert reason.startswith("needs l3-cat") and "resctrl" in reason
    assert out["colour_export"] is None


def test_plan_table_marks_what_this_host_skips():
    proc = intercore("measure", "campaign", "plan", SP_IMPACT, "--any-host")
    assert proc.returncode == 0, proc.stderr
    assert "84" not in proc.stderr
    assert "252 interference and 21 solo setups (91 configurations × 3 tasks)" in proc.stdout
    row = next(line for line in proc.stdout.splitlines() if " interf_read_2MiB_cc3 " in line)
    assert "interf=0x1f, linux=0xe0" in row
    if NO_RESCTRL:
        assert "skipped (1)" in row
        assert "(1) needs l3-cat:" in proc.stdout
    plain = next(line for line in proc.stdout.splitlines() if " interf_read_2MiB " in line)
    assert "runs" in plain


def test_export_colours_in_bao_and_jailhouse_syntax():
    bao = intercore("measure", "campaign", "plan", SP_IMPACT, "--any-host", "--export-colours",
                    "bao")
    assert bao.returncode == 0, bao.stderr
    block = bao.stdout[bao.stdout.index("/* cc4:"):]
    assert "interf: colours 0-3; linux: colours 4-7" in block
    assert ".colors = 0b00001111," in block and ".colors = 0b11110000," in block
    jh = intercore("measure", "campaign", "plan", SP_IMPACT, "--any-host", "--export-colours",
                   "jailhouse",
                   "--json")
    text = json.loads(jh.stdout)["colour_export"]
    assert ".llc_way_size = 0x8000," in text  # 8 colours of 4 KiB pages
    cc2 = text[text.index("/* cc2:"):]
    assert "{ .start = 6, .size = 2, }," in cc2 and "{ .start = 0, .size = 6, }," in cc2
    bad = intercore("measure", "campaign", "plan", SP_IMPACT, "--any-host", "--export-colours",
                    "xen")
    assert bad.returncode == 2 and "--export-colours" in " ".join(bad.stderr.split())


def test_small_campaign_plans_one_skipped_coloured_setup():
    proc = intercore("measure", "campaign", "plan", str(EXAMPLES / "small.yaml"), "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    coloured = [s for s in out["setups"] if s["needs"]]
    assert {s["config"] for s in coloured} == {"interf_write_64MiB_cc1"}
    assert {s["config"] for s in out["setups"] if not s["needs"]} == {
        "solo", "interf_read_1MiB", "interf_write_1MiB", "interf_read_64MiB",
        "interf_write_64MiB"}
    assert out["warnings"] == []
    if NO_RESCTRL:
        assert all(s["unenforceable"] for s in coloured)


def test_validate_summarises_a_good_file():
    proc = intercore("measure", "campaign", "validate", str(EXAMPLES / "small.yaml"), "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["valid"] is True and out["count"] == 12 and out["configurations"] == 6


@pytest.mark.parametrize("command", [("validate", "--json"), ("plan", "--json")])
def test_validate_and_plan_accept_what_run_accepts_on_this_host(command):
    """sp-impact's engine runs on CPUs 1-3: valid where they exist, refused at its line where
    they do not (as `campaign run` would refuse it), by plan as by validate; `plan --any-host`
    lists its setups whatever the host (test_plan_json_lists_the_papers_84_setups...)."""
    proc = intercore("measure", "campaign", command[0], SP_IMPACT, *command[1:])
    if {1, 2, 3} <= set(read_topology().online_cpus):
        assert proc.returncode == 0, proc.stderr
        out = json.loads(proc.stdout)
        assert out["count"] == 273 and out.get("valid", True) is True
    else:
        assert proc.returncode == 2 and proc.stdout == ""
        assert proc.stderr.startswith(f"error: {SP_IMPACT}:37: generators.engine.cpus: CPU ")


@pytest.mark.parametrize("command", [("validate",), ("plan",), ("plan", "--json"), ("run",)])
def test_malformed_campaign_exits_2_with_file_line_and_writes_no_store(tmp_path, command):
    path = tmp_path / "broken.yaml"
    path.write_text(MALFORMED)
    db = tmp_path / "store.db"
    extra = ("--db", str(db)) if command[0] == "run" else ()
    proc = intercore("measure", "campaign", *command, str(path), *extra)
    assert proc.returncode == 2, proc.stderr
    # (rich wraps the message at the terminal width; compare it as one line)
    assert f"{path}:11: generators.engine.ops[1]:" in " ".join(proc.stderr.split())
    assert proc.stdout == ""
    assert not db.exists()
