"""`intercore model detect / analyze / validate / rules`, end to end through the real CLI."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from intercore.cli.main import app
from intercore.host.topology import read_topology
from intercore.measure.regime.canary import can_share

from _procs import native_processes

ROOT = Path(__file__).resolve().parents[2]
RPI4 = ROOT / "examples" / "platforms" / "rpi4.yaml"
TOPO = read_topology()


def intercore(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """The real command in its own process (validation starts native children)."""
    return subprocess.run([sys.executable, "-m", "intercore", *args], capture_output=True,
                          text=True, timeout=timeout)


def invoke(*args: str) -> subprocess.CompletedProcess:
    """In-process, for the commands that only read files: same exit codes and streams."""
    r = CliRunner().invoke(app, list(args))
    return subprocess.CompletedProcess(args, r.exit_code, r.stdout, r.stderr)


def flat(text: str) -> str:
    """Error text as one line (the console wraps it at the terminal width)."""
    return " ".join(text.split())


def test_help_teaches_each_command():
    for cmd in ("analyze", "detect", "validate", "rules"):
        proc = invoke("model", cmd, "--help")
        assert proc.returncode == 0 and "--json" in proc.stdout
    assert "intercore model analyze examples/platforms/rpi4.yaml" in \
        invoke("model", "analyze", "--help").stdout


def test_analyze_json_and_files(tmp_path):
    md, html = tmp_path / "c.md", tmp_path / "c.html"
    proc = invoke("model", "analyze", str(RPI4), "--json", "--markdown", str(md),
                     "--html", str(html), "--db", str(tmp_path / "none.db"))
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert {"model", "hash", "k", "channels", "free", "counts"} <= set(out)
    assert out["model"] == "bcm2711" and out["k"] == 2
    assert out["counts"]["interference"] == len(out["channels"]) > 0
    assert {"services", "components", "transactions", "rule"} <= set(out["channels"][0])
    assert out["hash"] in md.read_text() and out["hash"] in html.read_text()
    assert not (tmp_path / "none.db").exists()  # analyze only reads a store that exists


def test_analyze_console_summarises_large_tables():
    proc = invoke("model", "analyze", str(RPI4), "--k", "3")
    assert proc.returncode == 0, proc.stderr
    assert "non-exclusive 3-sets" in proc.stdout and "by shared resource" in proc.stdout


def test_analyze_disable_changes_the_verdicts():
    def counts(*extra):
        return json.loads(invoke("model", "analyze", str(RPI4), "--json", *extra)
                          .stdout)["counts"]
    assert counts("--disable", "inclusive_cache")["free"] > counts()["free"]


@pytest.mark.parametrize("args, words", [
    (["--k", "11"], "--k: k must be between 2 and 10"),
    (["--max-k", "1"], "--max-k: k must be between 2 and 10"),
    (["--disable", "nope"], "--disable: unknown rule 'nope'"),
])
def test_bad_options_exit_2(args, words):
    proc = invoke("model", "analyze", str(RPI4), *args)
    assert proc.returncode == 2 and words in flat(proc.stderr)


def test_malformed_model_exits_2_with_file_line_and_field(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(RPI4.read_text().replace("  - ddrc>lpddr4\n", "  - ddrc>lpddr5\n"))
    proc = invoke("model", "analyze", str(bad))
    assert proc.returncode == 2 and proc.stdout == ""
    line = next(i for i, text in enumerate(bad.read_text().splitlines(), 1) if "lpddr5" in text)
    err = flat(proc.stderr)
    assert f"{bad}:{line}: links[" in err and "unknown component 'lpddr5'" in err


def test_detect_writes_a_model_that_analyses(tmp_path):
    out = tmp_path / "host.yaml"
    proc = invoke("model", "detect", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "sysfs" in out.read_text()
    again = invoke("model", "detect", "-o", str(out))
    assert again.returncode == 2 and "--force" in flat(again.stderr)
    data = json.loads(invoke("model", "detect", "--json").stdout)
    assert data["model"]["platform"] == "host" and data["out"] is None
    proc = invoke("model", "analyze", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["model"] == "host"


def test_validate_refuses_a_board_model_this_host_cannot_run():
    proc = invoke("model", "validate", str(RPI4), "--no-store")
    assert proc.returncode == 2 and "no initiator names a host CPU" in flat(proc.stderr)


def test_rules_lists_the_eight_plugins():
    rules = json.loads(invoke("model", "rules", "--json").stdout)
    assert [r["code"] for r in rules] == ["R1", "R2", "R3", "R4", "R6", "R5", "R7", "R8"]
    assert all(r["reference"] for r in rules)


@pytest.mark.slow
@pytest.mark.skipif(len(TOPO.online_cpus) < 2, reason="needs a victim and an aggressor CPU")
def test_validate_quick_stores_verdicts_that_analyze_shows(tmp_path):
    model, db = tmp_path / "host.yaml", tmp_path / "r.db"
    assert invoke("model", "detect", "-o", str(model)).returncode == 0
    # the canary is the tour's test (tests/model/test_tour.py); here it would only add time
    proc = intercore("model", "validate", str(model), "--quick", "--runs", "3", "--json",
                     "--no-canary", "--db", str(db))
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert set(out) >= {"model", "hash", "regime", "canary", "verdicts", "counts",
                        "invocation_id", "skipped", "threshold"}
    assert out["canary"] == [] and out["regime"] == "unknown"
    assert len(out["verdicts"]) == 3 and sum(out["counts"].values()) == 3
    for v in out["verdicts"]:
        assert v["n"] == 3 and v["regime"] == out["regime"]
        through_llc = {v["victim"]["level"], v["aggressor"]["level"]} & {"LLC", "DRAM"} \
            and can_share(TOPO, v["victim"]["cpu"], v["aggressor"]["cpu"])
        # Without the canary no block is known to be shared: a pair through the shared cache
        # that showed no slowdown (or, free, showed none) is only provisional.
        seen = "confirmed" if v["expected"] == "interference" else "contradicted"
        assert v["verdict"] in ((seen, "unobservable") if through_llc else
                                ("confirmed", "not observed", "contradicted")), v
    con = sqlite3.connect(db)
    assert con.execute("SELECT COUNT(*) FROM model_verdicts WHERE invocation_id = ?",
                       (out["invocation_id"],)).fetchone()[0] == 3
    assert con.execute("SELECT command FROM invocations WHERE id = ?",
                       (out["invocation_id"],)).fetchone()[0] == "model validate"
    table = json.loads(invoke("model", "analyze", str(model), "--json", "--db", str(db))
                       .stdout)
    with_evidence = [c for c in (*table["channels"], *table["free"]) if c["evidence"]]
    assert len(with_evidence) == 3
    assert {c["evidence"]["invocation_id"] for c in with_evidence} == {out["invocation_id"]}
    shown = invoke("results", "show", str(out["invocation_id"]), "--db", str(db))
    assert shown.returncode == 0, shown.stderr
    assert not native_processes()


CONFIGURED = """\
platform: gated
components:
  core[0-1]: {kind: initiator, role: core}
  dsp: {kind: initiator}
  bus: {kind: transporter}
  mem: {kind: target}
links: ["core[i]>bus", dsp>bus, bus>mem]
rules: []
apps: {"A[0-1]": "core[i]", S: dsp}
transactions:
  c[0-1]: {app: "A[i]", op: load, target: mem}
  d: {app: S, op: store, target: mem}
configurations:
  dsp_off: {disabled: [dsp], note: the DSP is power-gated in flight}
"""


def test_analyze_config_leaves_out_what_it_disables(tmp_path):
    model = tmp_path / "gated.yaml"
    model.write_text(CONFIGURED)
    full = json.loads(invoke("model", "analyze", str(model), "--json").stdout)
    gated = json.loads(invoke("model", "analyze", str(model), "--json", "--config",
                              "dsp_off").stdout)
    assert full["counts"]["interference"] == 3 and full["configuration"] is None
    assert gated["counts"]["interference"] == 1 and gated["configuration"] == "dsp_off"
    assert any("dsp_off" in w and "d" in w for w in gated["warnings"])
    proc = invoke("model", "analyze", str(model), "--config", "flight")
    assert proc.returncode == 2 and "--config: unknown configuration 'flight'" in \
        flat(proc.stderr)


def test_malformed_leg_exits_2_with_file_line_and_field(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(CONFIGURED.replace(
        "  d: {app: S, op: store, target: mem}",
        "  d:\n    app: S\n    legs:\n      - {op: load, target: mem}\n"
        "      - {op: store, target: mem, via: [mem]}"))
    proc = invoke("model", "analyze", str(bad))
    line = next(i for i, t in enumerate(bad.read_text().splitlines(), 1) if "via: [mem]" in t)
    assert proc.returncode == 2 and proc.stdout == ""
    assert f"{bad}:{line}: transactions.d.legs[1].via[0]: 'mem' is a target" in \
        flat(proc.stderr)


@pytest.mark.slow
def test_analyze_max_k_10_on_every_bundled_model(tmp_path):
    for model in sorted((ROOT / "examples" / "platforms").glob("*.yaml")):
        proc = invoke("model", "analyze", str(model), "--max-k", "10", "--json")
        assert proc.returncode == 0, (model, proc.stderr)
        out = json.loads(proc.stdout)
        assert set(out["by_k"]) == {str(k) for k in range(2, 11)}
        for c in out["by_k"].values():
            assert c["interference"] + c["free"] + c["redundant"] == c["k_sets"]


def test_large_k_streams_every_pattern_as_jsonl_and_parquet(tmp_path):
    import pyarrow.parquet as pq

    model = ROOT / "examples" / "platforms" / "xeon-cascade-lake.yaml"
    jsonl, parquet = tmp_path / "t.jsonl", tmp_path / "t.parquet"
    proc = invoke("model", "analyze", str(model), "--k", "6", "--rows", "3", "--json",
                  "--jsonl", str(jsonl), "--parquet", str(parquet))
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["patterns"]["shown"]["interference"] == 3 == len(out["channels"])
    lines = [json.loads(x) for x in jsonl.read_text().splitlines()]
    assert lines[0]["kind"] == "header" and lines[0]["counts"] == out["counts"]
    rows = lines[1:]
    itf = [r for r in rows if r["kind"] == "interference"]
    assert len(itf) == out["patterns"]["total"]["interference"]
    for kind, key in (("interference", "interference"), ("free", "free"),
                      ("redundant", "redundant")):
        assert sum(r["count"] for r in rows if r["kind"] == kind) == out["counts"][key]
    assert all(len(r["transactions"]) == 6 for r in itf)
    table = pq.read_table(parquet)
    assert table.num_rows == len(rows)
    assert sum(table.column("count").to_pylist()) == out["counts"]["k_sets"]
