"""Setup names, after paper 001 §4.1: `solo`, `interf_<access>_<buffer_size>`, `_cc<n>`.

A name is built from parts, each present only when the setup has that dimension:

    solo | interf_<op>_<size>          the contention engine (paper: read/write, e.g. 1MiB)
      [_cpu<list>]                     engine CPU configuration, when the campaign has several
      [_line<bytes>]                   engine access stride, when the campaign has several
      [_cc<n>]                         colours of the critical guest (with one critical and
                                       one engine guest, n names the assignment)
      [_mbr-<guest>-<budget><unit>[-<period>us]]...   one per guest with a bandwidth budget
      [@<task>]                        the critical task, when the critical guest has several

e.g. `interf_write_1MiB_cc4`, `solo_cc2`, `interf_rw_4MiB_mbr-engine-50pct@qsort`.
"""

from __future__ import annotations

from ..base.units import size_arg

SOLO = "solo"
UNIT_SUFFIX = {"percent": "pct", "MBps": "MBps"}


def engine_part(op: str, size: int) -> str:
    return f"interf_{op}_{size_arg(size)}"


def cpus_part(cpus: str) -> str:
    return f"_cpu{cpus}"


def line_part(line: int | None) -> str:
    return f"_line{'native' if line is None else line}"


def colour_part(count: int) -> str:
    return f"_cc{count}"


def bandwidth_part(guest: str, budget: int, unit: str, period_us: int) -> str:
    period = f"-{period_us}us" if period_us else ""
    return f"_mbr-{guest}-{budget}{UNIT_SUFFIX[unit]}{period}"


def task_part(task: str) -> str:
    return f"@{task}"
