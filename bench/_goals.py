"""Goals of a benchmark, failing closed.

Every figure a benchmark promises is checked here: a figure that is missing (None, NaN, no
sample) fails its goal; it is never read as 0, which would pass a "<=" goal. A figure the
host cannot produce is refused with the reason (not printed as a number). The last lines a
benchmark prints are one line per goal:

    goal <name>: <value> <op> <target>: PASS | FAIL | MISSING (<why>) | REFUSED (<reason>)

and its exit status is 1 when any goal failed or is missing, 3 when none failed but some
were refused, 0 otherwise. `make bench` runs every script and names those that did not pass.
(Files in bench/ starting with "_" are helpers, not benchmarks.)
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass

_OPS = {"<=": operator.le, ">=": operator.ge, "==": operator.eq, "<": operator.lt,
        ">": operator.gt}


@dataclass
class Goal:
    name: str
    value: float | None
    op: str
    target: float
    verdict: str
    note: str = ""

    def line(self) -> str:
        shown = "-" if self.value is None else f"{self.value:.4g}"
        note = f" ({self.note})" if self.note else ""
        return f"goal {self.name}: {shown} {self.op} {self.target:g}: {self.verdict}{note}"


class Goals:
    def __init__(self) -> None:
        self.goals: list[Goal] = []

    def check(self, name: str, value: float | None, op: str, target: float,
              missing: str = "no figure was produced") -> bool:
        """Record one goal; None or NaN is MISSING, which fails."""
        if value is None or (isinstance(value, float) and math.isnan(value)):
            self.goals.append(Goal(name, None, op, target, "MISSING", missing))
            return False
        ok = _OPS[op](value, target)
        self.goals.append(Goal(name, float(value), op, target, "PASS" if ok else "FAIL"))
        return ok

    def check_all(self, name: str, values: list[float | None], op: str, target: float,
                  worst=max) -> bool:
        """One goal over several figures: the worst of them, and MISSING if any is missing
        (or if there are none)."""
        gone = sum(v is None or (isinstance(v, float) and math.isnan(v)) for v in values)
        if not values or gone:
            return self.check(name, None, op, target,
                              f"{gone} of {len(values)} figures missing" if values
                              else "no figure was produced")
        return self.check(name, worst(values), op, target)

    def refuse(self, name: str, op: str, target: float, reason: str) -> None:
        """The host cannot support this figure: refused with the reason, not printed."""
        self.goals.append(Goal(name, None, op, target, "REFUSED", reason))

    def finish(self) -> int:
        for goal in self.goals:
            print(goal.line())
        verdicts = {g.verdict for g in self.goals}
        if not self.goals or verdicts & {"FAIL", "MISSING"}:
            return 1
        return 3 if "REFUSED" in verdicts else 0


