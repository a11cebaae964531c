"""The sample: one region of one victim repetition.

One definition for everything that handles samples: the harness and the ssh executor produce
it, the results store writes and reads it back (store/samples.py), the exports name their
columns after it, and the paired comparison, the campaign statistics and the reports read it.
A record module: data only, importable from any layer (tests/test_layers.py).

Adding a field is one line here, with a default (rows stored before the field existed read
back with it), plus a migration that adds the column to the `samples` table
(store/schema.py); the store, `results export` and everything reading samples then carry it.
tests/store/test_store_schema.py checks that the table and this record name the same columns.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Final, Literal, Mapping

Condition = Literal["iso", "int"]
ISO: Final = "iso"
INT: Final = "int"
CONDITIONS: tuple[str, ...] = (ISO, INT)
CLOCKS: tuple[str, ...] = ("cpu", "wall")
# Region 0 of every repetition, by name: the whole run (a program's own regions follow it).
TOTAL_REGION: Final = "total"


@dataclass(frozen=True)
class Sample:
    """`victim` names the victim workload: 0 from the harness (one victim per run), the index
    of its WorkloadRecord in a Store.record() call, its workload row id when read back from
    the store. `pair` links an iso sample to the int samples it is compared with;
    `aggressor_set` labels the aggressors active ('' in isolation). Times are ns; `cpu` is
    the CPU the repetition ended on and `nivcsw` its involuntary context switches (-1 when
    the victim could not tell). `regime` is the canary's cache-sharing regime around the
    sample's block (of the run, where no running canary probed). `block` and
    `block_start_ns` (ns since the run started) place the sample in the interleaved schedule
    (measure/harness/schedule.py); `clock` is what the markers read ('cpu': thread CPU time, 'wall':
    the cycle counter) and `descheduled` marks a wall-clock repetition that lost its CPU,
    which the comparison discards. `core` is whether the victim's CPU shared a physical core
    with the aggressor CPU around the block (harness.CORE_STATES), None where no core probe
    ran."""

    victim: int
    rep: int
    pair: int
    condition: Condition
    aggressor_set: str
    region: int
    region_name: str
    wall_ns: int
    cpu_ns: int
    nivcsw: int
    cpu: int
    regime: str | None = None
    counters: Mapping[str, float] = field(default_factory=dict)
    block: int | None = None
    block_start_ns: int | None = None
    clock: str = "cpu"
    descheduled: bool = False
    core: str | None = None

    def __post_init__(self) -> None:
        if self.clock not in CLOCKS:
            raise ValueError(f"clock must be one of {', '.join(CLOCKS)}; got {self.clock!r}")
        if self.condition not in CONDITIONS:
            raise ValueError(f"condition must be one of {', '.join(CONDITIONS)}; "
                             f"got {self.condition!r}")
        if (self.condition == ISO) != (self.aggressor_set == ""):
            raise ValueError("aggressor_set must be '' exactly for iso samples; "
                             f"got condition={self.condition!r}, "
                             f"aggressor_set={self.aggressor_set!r}")


# The fields stored one to one as columns of the `samples` table, in this order. `victim` is
# stored as the victim_id foreign key and `counters` in a table of their own (any names).
COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(Sample)
                                 if f.name not in ("victim", "counters"))
