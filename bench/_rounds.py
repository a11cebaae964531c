"""The options of a bench that probes in rounds (bench/canary_probe.py, bench/core_probe.py)."""

from __future__ import annotations

import argparse
import sys

from intercore.measure.harness.session import DEFAULT_RUNS


def round_args(doc: str, rounds: int, gap: float) -> argparse.Namespace | None:
    """--rounds, --gap, --cost-pairs, --seed and --json, checked before any work: None after
    an `error:` line naming the option (the caller exits 2)."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=rounds, help=f"rounds (default {rounds})")
    ap.add_argument("--gap", type=float, default=gap,
                    help=f"idle seconds before each round (default {gap:g})")
    # The cost is judged on the measurement a user gets by default (`measure run --runs`): a
    # shorter one pays more, since every set gets at least four blocks and so five probes
    # whatever they cost (40 pairs: 4.2-6.2 % here, against 3.8 % at 100).
    ap.add_argument("--cost-pairs", type=int, default=DEFAULT_RUNS,
                    help="pairs of the measurement the cost is taken from (default "
                         f"{DEFAULT_RUNS}, measure run's)")
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    for opt, value in (("--rounds", args.rounds), ("--cost-pairs", args.cost_pairs)):
        if value < 1:
            print(f"error: {opt} must be at least 1", file=sys.stderr)
            return None
    if args.gap < 0:
        print("error: --gap must not be negative", file=sys.stderr)
        return None
    return args


# A probe judged against a truth: it must agree in this share of the truth-decided rounds and
# leave at most this share of all rounds unknown.
AGREEMENT_GOAL = 0.9
UNKNOWN_GOAL = 0.2


def judge_agreement(goals, name: str, agreement, why_not: str | None, decided: str,
                    cost: float | None, cost_goal: float) -> None:
    """`NAME_agreement` and `NAME_unknown_share`, refused with `why_not` when the truth cannot
    judge, else printed with what the truth decided (`decided`); `NAME_cost` always."""
    if why_not is not None:
        goals.refuse(f"{name}_agreement", ">=", AGREEMENT_GOAL, why_not)
        goals.refuse(f"{name}_unknown_share", "<=", UNKNOWN_GOAL, why_not)
    else:
        print(f"{name}_agreement: {agreement.agreement:.3f} ({decided})")
        goals.check(f"{name}_agreement", agreement.agreement, ">=", AGREEMENT_GOAL)
        goals.check(f"{name}_unknown_share", agreement.unknown_share, "<=", UNKNOWN_GOAL)
    goals.check(f"{name}_cost", cost, "<=", cost_goal)


def print_confusion(agreement, states: tuple[str, ...], width: int) -> None:
    """The confusion matrix: truth rows, probe columns."""
    print("truth \\ probe".ljust(16) + "".join(f"{s:>{width}}" for s in states))
    for truth, row in agreement.confusion.items():
        print(f"{truth:<16}" + "".join(f"{row[s]:>{width}}" for s in states))
