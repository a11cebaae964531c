"""`intercore results timeline` of a short real `measure` run: the interleaved schedule the
harness planted (measure/harness/schedule.py, for the run's seed) is in the trace, block by block in
order, with each repetition under the right condition, its regions inside it, each aggressor
set on, paused or parked, and the regime as a track."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace

import pytest
from _store_fixtures import paired_run
from _trace import check_trace_event_format

from intercore.host.topology import read_topology
from intercore.measure.harness import schedule
from intercore.measure import recorded
from intercore.report import timeline

SETS = ("bw:op=write,size=256K", "bw:op=read,size=256K")
RUNS, BLOCK_PAIRS, SEED = 4, 2, 7


def intercore(*args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "intercore", *args], capture_output=True,
                          text=True, timeout=300, cwd=cwd)


def tracks(doc: dict) -> dict[str, list[dict]]:
    """thread name -> its slices in time order (one process in this trace)."""
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in doc["traceEvents"]
             if e["name"] == "thread_name"}
    out: dict[str, list[dict]] = {name: [] for name in names.values()}
    for e in doc["traceEvents"]:
        if e["ph"] == "X":
            out[names[(e["pid"], e["tid"])]].append(e)
    return out


def inside(inner: dict, outer: dict, slack_us: float = 0.002) -> bool:
    return outer["ts"] - slack_us <= inner["ts"] and \
        inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"] + slack_us


@pytest.mark.skipif(len(read_topology().online_cpus) < 2,
                    reason="needs two online CPUs (victim + aggressor)")
@pytest.mark.slow
def test_a_measure_trace_holds_the_planted_blocks_in_order(tmp_path):
    db = tmp_path / "m.db"
    run = intercore("measure", "run", "phases", *(a for s in SETS for a in ("-a", s)), "--runs",
                    str(RUNS), "--block-pairs", str(BLOCK_PAIRS), "--seed", str(SEED),
                    "--no-canary", "--db", str(db), "--json", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    invocation = json.loads(run.stdout)["invocation_id"]
    made = intercore("results", "timeline", str(invocation), "-o", str(tmp_path / "t.json"),
                     "--db", str(db), "--json", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    doc = json.loads((tmp_path / "t.json").read_text())
    check_trace_event_format(doc)
    assert json.loads(made.stdout)["events"] == len(doc["traceEvents"])
    t = tracks(doc)

    planted = list(schedule.blocks(len(SETS), RUNS, BLOCK_PAIRS, SEED))
    blocks = t["aggressor blocks"]
    assert [b["name"] for b in blocks] == [SETS[p.set_index] for p in planted]
    assert [b["args"]["block"] for b in blocks] == [p.index for p in planted]
    reps = t["victim repetitions"]
    assert [(r["name"], r["args"]["aggressor_set"] or None) for r in reps] == [
        ("interfered", SETS[p.set_index]) if rep.condition == "int" else ("isolated", None)
        for p in planted for rep in p.reps]
    for block, p in zip(blocks, planted):
        mine = [r for r in reps if r["args"]["block"] == p.index]
        assert len(mine) == 2 * p.pairs and all(inside(r, block) for r in mine)
    # each repetition's regions, in the victim's order, inside it
    regions = t["victim regions (placed)"]
    assert len(regions) == 2 * len(reps)
    for rep, (compute, stream) in zip(reps, zip(regions[::2], regions[1::2])):
        assert (compute["name"], stream["name"]) == ("phases.compute", "phases.stream")
        assert inside(compute, rep) and inside(stream, rep)
        assert compute["ts"] + compute["dur"] <= stream["ts"] + 0.002
    # per set: on under its interfered repetitions, paused under the isolated ones of its
    # blocks, parked through every other set's block
    for index, name in enumerate(SETS):
        track = t[f"aggressor {name}"]
        own = [b for b, p in zip(blocks, planted) if p.set_index == index]
        assert [e["name"] for e in track if e["name"] != "parked"] == [
            "on" if r["name"] == "interfered" else "paused" for r in reps
            if r["args"]["aggressor_set"] == name or
            (r["name"] == "isolated" and any(inside(r, b) for b in own))]
        parked = [e for e in track if e["name"] == "parked"]
        assert [(e["ts"], e["dur"]) for e in parked] == [
            (b["ts"], b["dur"]) for b, p in zip(blocks, planted) if p.set_index != index]
    # no canary ran: one regime run, `unknown`, over the whole schedule
    (regime,) = t["host regime (canary)"]
    assert regime["name"] == "unknown" and regime["args"]["blocks"] == len(planted)
    assert regime["ts"] == blocks[0]["ts"]

    perfetto = pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2")
    made = intercore("results", "timeline", str(invocation), "-o", str(tmp_path / "t.pftrace"),
                     "--db", str(db), cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    trace = perfetto.Trace()
    trace.ParseFromString((tmp_path / "t.pftrace").read_bytes())
    names = {p.track_event.name for p in trace.packet if p.HasField("track_event")}
    assert {*SETS, "on", "paused", "parked", "isolated", "interfered", "phases.compute"} <= names


def test_blocks_come_from_the_samples_where_no_block_record_was_kept(store, host_id):
    """A campaign run keeps no block records in its summary: the samples place the blocks."""
    inv, workloads, samples = paired_run(host_id, n=4, sets=("A", "B"))
    turn = {0: "A", 1: "B"}  # pairs 0-1 are block 0 (A's turn), pairs 2-3 block 1 (B's)
    samples = [replace(s, rep=2 * s.pair + (s.condition == "int"), block=s.pair // 2,
                       block_start_ns=1_000_000 * (s.pair // 2))
               for s in samples if s.condition == "iso" or s.aggressor_set == turn[s.pair // 2]]
    invocation = store.record(replace(inv, summary={}), workloads, samples)
    tl = timeline.build(recorded.load(store, invocation))
    threads = {tid: name for (_, tid), name in tl.threads.items()}
    blocks = sorted((e for e in tl.events if threads[e.tid] == "aggressor blocks"),
                    key=lambda e: e.ts_ns)
    assert [(e.name, e.ts_ns) for e in blocks] == [("A", 0), ("B", 1_000_000)]
    reps = [e for e in tl.events if threads[e.tid] == "victim repetitions"]
    assert len(reps) == 8
    for b in blocks:  # a block without a record ends with its last repetition
        mine = [r for r in reps if r.args["block"] == b.args["block"]]
        assert b.ts_ns + b.dur_ns == max(r.ts_ns + r.dur_ns for r in mine)
