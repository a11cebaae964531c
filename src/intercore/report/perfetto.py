"""A Timeline (timeline.py) as Perfetto's own protobuf trace, built offline with the `perfetto`
Python package (`pip install 'intercore[lab]'`): a track per process and thread as in the
JSON, slices as BEGIN/END pairs, instants, and a counter track per counter name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..base import outputs
from ..base.errors import HostUnsupported
from .timeline import Timeline

# Perfetto's sequence flag: this packet does not depend on earlier incremental state.
_SEQ_ID = 1


def _modules() -> tuple[Any, Any]:
    try:
        from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
        from perfetto.trace_builder.proto_builder import TraceProtoBuilder
    except ImportError as exc:
        raise HostUnsupported("a Perfetto protobuf trace needs the perfetto package: "
                              "pip install 'intercore[lab]' (or write .json, which Perfetto "
                              "opens too)") from exc
    return pb, TraceProtoBuilder


def _annotations(event: Any, args: dict[str, Any]) -> None:
    for key, value in args.items():
        if value is None:
            continue
        note = event.debug_annotations.add()
        note.name = key
        if isinstance(value, bool):
            note.bool_value = value
        elif isinstance(value, int):
            note.int_value = value
        elif isinstance(value, float):
            note.double_value = value
        else:
            note.string_value = str(value)


def write(tl: Timeline, path: Path) -> int:
    """Write the trace; returns its number of packets."""
    pb, Builder = _modules()
    builder = Builder()
    uuids: dict[Any, int] = {}

    def track(key: Any, name: str, parent: int | None = None, counter: bool = False) -> int:
        if key not in uuids:
            uuids[key] = len(uuids) + 1
            packet = builder.add_packet()
            desc = packet.track_descriptor
            desc.uuid = uuids[key]
            desc.name = name
            if parent is not None:
                desc.parent_uuid = parent
            if counter:
                desc.counter.SetInParent()
        return uuids[key]

    pending: list[tuple] = []

    def emit(ts_ns: float, kind: int, track_uuid: int, name: str | None = None,
             args: dict[str, Any] | None = None, value: float | None = None) -> None:
        # Ends sort before what begins at the same time, the later-begun slice's end first.
        order = -len(pending) if kind == pb.TrackEvent.TYPE_SLICE_END else len(pending)
        pending.append((ts_ns, 0 if kind == pb.TrackEvent.TYPE_SLICE_END else 1, order, kind,
                        track_uuid, name, args, value))

    def packet_of(ts_ns: float, kind: int, track_uuid: int, name: str | None,
                  args: dict[str, Any] | None, value: float | None) -> None:
        packet = builder.add_packet()
        packet.timestamp = int(round(ts_ns))
        packet.trusted_packet_sequence_id = _SEQ_ID
        event = packet.track_event
        event.type = kind
        event.track_uuid = track_uuid
        if name is not None:
            event.name = name
        if value is not None:
            event.double_counter_value = value
        if args:
            _annotations(event, args)

    for pid, name in tl.processes.items():
        track(("p", pid), name)
    for (pid, tid), name in tl.threads.items():
        track(("t", pid, tid), name, uuids[("p", pid)])
    T = pb.TrackEvent
    for e in tl.sorted_events():
        if e.ph == "C":
            for value in e.args.values():
                uuid = track(("c", e.pid, e.name), e.name, uuids[("p", e.pid)], counter=True)
                emit(e.ts_ns, T.TYPE_COUNTER, uuid, value=float(value))
            continue
        uuid = uuids[("t", e.pid, e.tid)]
        if e.ph == "X":
            emit(e.ts_ns, T.TYPE_SLICE_BEGIN, uuid, e.name, e.args)
            emit(e.ts_ns + (e.dur_ns or 0.0), T.TYPE_SLICE_END, uuid)
        elif e.ph == "i":
            emit(e.ts_ns, T.TYPE_INSTANT, uuid, e.name, e.args)
    for ts, _, _, kind, uuid, name, args, value in sorted(pending, key=lambda p: p[:3]):
        packet_of(ts, kind, uuid, name, args, value)
    data = builder.serialize()
    outputs.write_bytes(path, data)
    return len(builder.trace.packet)
