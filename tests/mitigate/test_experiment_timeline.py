"""`intercore results timeline` of a real protection experiment (same-core, quick): the trace
is valid trace-event JSON, and the protected run's events come in the order the monitor and
the job runner made them: release, freeze of the noise group, the victim's job, thaw."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import defaultdict

import pytest
from _trace import check_trace_event_format

pytestmark = pytest.mark.slow


def intercore(*args, cwd):
    return subprocess.run([sys.executable, "-m", "intercore", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=600)


def test_the_protection_timeline_shows_jobs_freezes_and_thaws_in_order(tmp_path, real_cgroups,
                                                                       test_root):
    db = tmp_path / "x.db"
    run = intercore("mitigate", "protection", "--quick", "--placement", "same-core",
                    "--root", test_root, "--db", str(db), "-o", str(tmp_path / "out"), "--json",
                    cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    invocation = json.loads(run.stdout)["invocation_id"]
    made = intercore("results", "timeline", str(invocation), "-o", str(tmp_path / "t.json"),
                     "--db", str(db), "--json", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    doc = json.loads((tmp_path / "t.json").read_text())
    check_trace_event_format(doc)
    assert json.loads(made.stdout)["events"] == len(doc["traceEvents"])

    processes = {e["args"]["name"]: e["pid"] for e in doc["traceEvents"]
                 if e["name"] == "process_name"}
    assert set(processes) >= {f"same-core/{s}" for s in ("solo", "noise-alone", "interference",
                                                          "protected")}
    pid = processes["same-core/protected"]
    threads = {e["args"]["name"].split(" (CPU")[0]: e["tid"] for e in doc["traceEvents"]
               if e["name"] == "thread_name" and e["pid"] == pid}
    victim, noise_group = threads["same-core/victim"], threads["cgroup " + next(
        name.split(" ", 1)[1] for name in threads if name.startswith("cgroup ")
        and "victim" not in name)]
    events = [e for e in doc["traceEvents"] if e.get("pid") == pid and e["ph"] != "M"]
    by_job: dict[int, dict[str, dict]] = defaultdict(dict)
    for e in events:
        if e["tid"] == victim and "job" in e.get("args", {}):
            kind = "run" if e["ph"] == "X" else e["name"].split()[0]
            by_job[e["args"]["job"]][kind] = e
    assert len(by_job) == 20
    for parts in by_job.values():
        release, slice_, deadline = parts["release"], parts["run"], parts["deadline"]
        assert release["ts"] <= slice_["ts"] <= slice_["ts"] + slice_["dur"]
        assert deadline["ts"] > release["ts"]
    # Each freeze of the noise group comes with a victim release and ends after that job
    # started (the monitor thaws at completion): release <= freeze start <= job start.
    frozen = [e for e in events if e["tid"] == noise_group and e["ph"] == "X"]
    assert len(frozen) >= 15
    matched = 0
    for f in frozen:
        job = f["args"].get("job")
        if job is None or job not in by_job:
            continue
        release, run_ = by_job[job]["release"], by_job[job]["run"]
        assert release["ts"] <= f["ts"] + 1.0  # µs: the freeze follows the release
        assert f["ts"] + f["dur"] >= run_["ts"]  # thawed after the job began
        matched += 1
    assert matched >= 15
    # The noise task's own track: on while it runs a job, off while its group is frozen; its
    # `on` periods never overlap a freeze, and each freeze appears on it too.
    noise = threads["aggressor same-core/noise: on/frozen"]
    on = [e for e in events if e["tid"] == noise and e["name"] == "on"]
    off = [e for e in events if e["tid"] == noise and e["name"] == "frozen"]
    assert len(on) >= 20 and [(e["ts"], e["dur"]) for e in off] == \
        [(f["ts"], f["dur"]) for f in frozen]
    ns = 1e-3  # µs: the JSON's times are µs floats
    for e in on:
        assert not any(e["ts"] + ns < f["ts"] + f["dur"] and f["ts"] + ns < e["ts"] + e["dur"]
                       for f in frozen)
    assert [e["ts"] for e in doc["traceEvents"] if e["ph"] != "M"] == \
        sorted(e["ts"] for e in doc["traceEvents"] if e["ph"] != "M")

    # The same timeline as Perfetto's protobuf, read back with Perfetto's own classes.
    perfetto = pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2")
    made = intercore("results", "timeline", str(invocation), "-o", str(tmp_path / "t.pftrace"),
                     "--db", str(db), cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    trace = perfetto.Trace()
    trace.ParseFromString((tmp_path / "t.pftrace").read_bytes())
    names = {p.track_event.name for p in trace.packet if p.HasField("track_event")}
    assert {"release", "frozen", "job 0"} <= names
    stamps = [p.timestamp for p in trace.packet if p.HasField("track_event")]
    assert stamps == sorted(stamps)


def test_an_invocation_without_times_is_refused(tmp_path, store, host_id, make_run):
    invocation = store.record(*make_run(host_id))  # a paired measurement: no clock times
    made = intercore("results", "timeline", str(invocation), "-o", str(tmp_path / "t.json"),
                     "--db", str(store.path), cwd=tmp_path)
    assert made.returncode == 2
    assert "holds nothing with times" in made.stderr
    assert not (tmp_path / "t.json").exists()
