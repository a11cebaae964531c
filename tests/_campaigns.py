"""A tiny campaign file for the tests of the runner and the demo's campaign tour."""

from __future__ import annotations

from pathlib import Path

TINY = """\
name: tiny
repetitions: {reps}
rounds: 2
seed: 5
guests:
  crit:
    kind: critical
    tasks: [{{name: chase, victim: "ptrchase:size=256K"}}]
  engine:
    kind: engine
generators:
  engine:
    sizes: [{sizes}]
    ops: [write]
{extra}"""

def write_campaign(path: Path, *, reps: int = 3, sizes: str = "64KiB, 256KiB",
                   extra: str = "") -> Path:
    path.write_text(TINY.format(reps=reps, sizes=sizes, extra=extra))
    return path
