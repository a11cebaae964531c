"""When the run-time manager (native/manage, `intercore compile manage`) can help, and why it
cannot where it cannot: the check it makes before it starts a program, which the benchmark of
its effect (bench/fusion.py) makes too."""

from __future__ import annotations

from ..host.perf import EVENTS, probe_event, read_paranoid


def why_it_cannot_help(cpus: tuple[int, ...] | list[int], predicted: bool,
                       misses: str | None = "probe") -> str | None:
    """The reason the manager's signal cannot help here, None when it can (issue 23 item 6).
    It favours a thread by giving it a CPU the others do not share, so it needs two; and it
    must tell cache-hungry threads from merely busy ones: by their cache misses (a PMU) or by
    their predicted sensitivity (--heatmap, --sensitivity). CPU share alone ranks busy threads
    first, which is the scheduler's own signal: so driven, on this two-CPU host without a PMU,
    it made the fused signal pipeline's p99 5 % worse (bench/fusion.py, issue 23).
    `misses` is why the cache-miss counter cannot be opened (None: it can); "probe" asks."""
    if len(cpus) < 2:
        return (f"it favours a thread with a CPU of its own and may use {len(cpus)} "
                "(--cpus, or this process's affinity): give it two or more")
    if misses == "probe":
        spec = next(e for e in EVENTS if e.name == "cache-misses")
        misses = probe_event(spec, read_paranoid()).reason
    if misses is not None and not predicted:
        return (f"no cache-miss counter ({misses}) and no predicted sensitivity (--heatmap, "
                "--sensitivity): ranked by CPU share alone it would favour busy threads, not "
                "cache-hungry ones")
    return None
