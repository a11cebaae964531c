"""What every timeline a test writes must be: the trace-event format's JSON Object Format."""

from __future__ import annotations

PHASES = {"X", "i", "C", "M"}


def check_trace_event_format(doc: dict) -> None:
    """The JSON Object Format of the trace-event spec, as far as this writer uses it."""
    assert isinstance(doc["traceEvents"], list) and doc["displayTimeUnit"] in ("ms", "ns")
    for e in doc["traceEvents"]:
        assert e["ph"] in PHASES, e
        assert isinstance(e["name"], str) and e["name"]
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int)
        if e["ph"] == "M":
            assert e["name"] in ("process_name", "thread_name") and e["args"]["name"]
            continue
        assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0
        if e["ph"] == "X":
            assert isinstance(e["dur"], (int, float)) and e["dur"] >= 0
        if e["ph"] == "i":
            assert e["s"] in ("t", "p", "g")
        if e["ph"] == "C":
            assert e["args"] and all(isinstance(v, (int, float)) for v in e["args"].values())
    named = {(e["pid"], e["tid"]) for e in doc["traceEvents"] if e["name"] == "thread_name"}
    used = {(e["pid"], e["tid"]) for e in doc["traceEvents"] if e["ph"] in ("X", "i")}
    assert used <= named  # every track has a name
