#!/usr/bin/env python3
"""A campaign's wall time on one labgrid place versus several (issue 14's closing figure).

    python bench/lab_scaling.py [--sessions N] [--lab EXECUTOR.yaml --one PLACE]

The same campaign (4 setups x 2 rounds, quick) is run through `intercore measure campaign run` with
the labgrid executor, alternately on one place (`place: ONE`) and on every place the executor
section's tags select, N sessions each in the order ABBA ABBA... so drift of the host falls
on both arms alike. Each session writes a fresh store; its wall time is the command's, from
start (reserving places) to exit (places released). Printed per arm: n, median, min and max.

Without --lab the lab is built on this machine (tests/campaign/_labgrid.py and _sshd.py): a
coordinator and an exporter on 127.0.0.1 exporting one throwaway sshd as the NetworkService
of two places. Both places are then this machine: their runs share its CPUs, so a second
place adds no capacity, and the speed-up is refused with that reason rather than printed.
With --lab, EXECUTOR.yaml is the `executor:` section of a real lab (kind labgrid, tags naming
two or more boards, identity, known_hosts, bin_dir ...) and ONE is one of those places.

Goals (bench/_goals.py): every slot of every session recorded exactly once, with the place
it ran on; the speed-up median(one place) / median(all places) >= 1.5 with two boards,
refused when the places resolve to one machine (same address and port, or the same host name
and serial number in the boards' records).
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import yaml
from _goals import Goals

ROOT = Path(__file__).resolve().parents[1]
SPEEDUP_GOAL = 1.5
CAMPAIGN = {
    "name": "scaling", "repetitions": 10, "rounds": 2, "seed": 5,
    "guests": {"crit": {"kind": "critical", "tasks": [{"name": "chase",
                                                       "victim": "ptrchase:size=256K"}]},
               "engine": {"kind": "engine"}},
    "generators": {"engine": {"sizes": ["64KiB", "256KiB", "1MiB"], "ops": ["write"]}},
}
SLOTS = 8  # (3 interference setups + solo) x 2 rounds
LOOPBACK_PLACES = ("board-a", "board-b")


def loopback_lab(stack: ExitStack, tmp: Path) -> tuple[dict, str] | str:
    """The executor section of a lab on this machine and its first place, or why not."""
    sys.path.insert(0, str(ROOT / "tests" / "campaign"))  # the tests' lab, not a copy of it
    from _labgrid import labgrid_tool, loopback_lab as lab_of
    from _sshd import loopback_sshd, sshd_binary

    sshd = sshd_binary()
    if sshd is None:
        return "needs sshd (apt-get install openssh-server)"
    if labgrid_tool("labgrid-coordinator") is None:
        return "needs labgrid (pip install 'intercore[lab]')"
    server = stack.enter_context(loopback_sshd(tmp, sshd))
    services = {p: {"address": "127.0.0.1", "port": server.port, "username": server.user}
                for p in LOOPBACK_PLACES}
    lab = stack.enter_context(lab_of(tmp, services, {"bench": "scaling"}))
    return {"kind": "labgrid", "coordinator": lab.address, "tags": {"bench": "scaling"},
            "identity": str(server.client_key), "known_hosts": str(server.known_hosts),
            "config": str(server.empty_config), "workdir": str(tmp / "board"),
            "wait": 120}, LOOPBACK_PLACES[0]


def session(tmp: Path, executor: dict, name: str) -> tuple[float, list[dict], int]:
    """One `measure campaign run` into a fresh store: its wall time, the boards of its runs, and how
    many slots were recorded more than once."""
    path, db = tmp / f"{name}.yaml", tmp / f"{name}.db"
    path.write_text(yaml.safe_dump({**CAMPAIGN, "executor": executor}))
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "intercore", "measure", "campaign", "run",
                           str(path), "--quick", "--no-canary", "--db", str(db)],
                          capture_output=True, text=True, timeout=1800)
    wall = time.monotonic() - started
    if done.returncode != 0:
        raise RuntimeError(f"{name}: campaign run exited {done.returncode}: "
                           f"{done.stderr.strip()[-2000:]}")
    with sqlite3.connect(db) as conn:
        params = [json.loads(p) for (p,) in conn.execute(
            "SELECT i.params_json FROM campaign_runs r JOIN invocations i "
            "ON i.id = r.invocation_id")]
        twice = conn.execute("SELECT COUNT(*) - COUNT(DISTINCT setup || '/' || round) "
                             "FROM campaign_runs").fetchone()[0]
    return wall, [p.get("board") or {} for p in params], twice


def one_machine(boards: list[dict]) -> str | None:
    """The machine all these boards resolve to, if they are one."""
    places = {b.get("place") for b in boards}
    if len(places) < 2:
        return None
    endpoints = {(b.get("address"), b.get("port")) for b in boards}
    identities = {(b.get("hostname"), b.get("serial")) for b in boards}
    if len(endpoints) == 1:
        address, port = next(iter(endpoints))
        return f"{address}:{port}"
    if len(identities) == 1 and None not in next(iter(identities)):
        hostname, serial = next(iter(identities))
        return f"{hostname} (serial {serial})"
    return None


def spread(values: list[float]) -> str:
    return (f"median {statistics.median(values):.2f} s, min {min(values):.2f} s, "
            f"max {max(values):.2f} s, n {len(values)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=3, help="sessions per arm")
    parser.add_argument("--lab", type=Path, help="executor section of a real labgrid lab")
    parser.add_argument("--one", help="with --lab: the place of the one-place arm")
    args = parser.parse_args()
    if args.sessions < 1:
        parser.error("--sessions must be at least 1")
    if (args.lab is None) != (args.one is None):
        parser.error("--lab and --one go together")
    goals = Goals()
    # The lab (stack) stops before its directory is removed.
    with tempfile.TemporaryDirectory(prefix="lab-scaling-") as tmp, ExitStack() as stack:
        tmp = Path(tmp)
        if args.lab is not None:
            every, one = yaml.safe_load(args.lab.read_text()), args.one
        else:
            found = loopback_lab(stack, tmp)
            if isinstance(found, str):
                goals.refuse("lab_runs_recorded_once", "==", 1, found)
                goals.refuse("lab_speedup_all_vs_one_place", ">=", SPEEDUP_GOAL, found)
                return goals.finish()
            every, one = found
        single = {k: v for k, v in every.items() if k != "tags"} | {"place": one}
        walls: dict[str, list[float]] = {"one": [], "all": []}
        boards: list[dict] = []
        exact = 0
        order = [arm for k in range(args.sessions)
                 for arm in (("one", "all") if k % 2 == 0 else ("all", "one"))]
        for i, arm in enumerate(order):
            wall, found_boards, twice = session(tmp, single if arm == "one" else every,
                                                f"{arm}-{i}")
            walls[arm].append(wall)
            exact += twice == 0 and len(found_boards) == SLOTS and \
                all(b.get("place") for b in found_boards)
            if arm == "all":
                boards += found_boards
            used = sorted({b.get("place") for b in found_boards})
            print(f"session {i + 1}/{len(order)}: {arm} ({', '.join(used)}), {wall:.2f} s",
                  flush=True)
    print(f"lab_wall_one_place: {spread(walls['one'])}")
    print(f"lab_wall_all_places: {spread(walls['all'])}")
    goals.check("lab_runs_recorded_once", exact / len(order), "==", 1)
    same = one_machine(boards)
    places = sorted({b.get("place") for b in boards})
    if len(places) < 2:
        goals.refuse("lab_speedup_all_vs_one_place", ">=", SPEEDUP_GOAL,
                     f"the runs went to {len(places)} place(s), not several")
    elif same is not None:
        goals.refuse("lab_speedup_all_vs_one_place", ">=", SPEEDUP_GOAL,
                     f"places {', '.join(places)} all resolve to one machine, {same}: their "
                     "runs share its CPUs, so another place adds no capacity and a ratio "
                     "would measure scheduling, not scaling")
    else:
        goals.check("lab_speedup_all_vs_one_place",
                    statistics.median(walls["one"]) / statistics.median(walls["all"]), ">=",
                    SPEEDUP_GOAL)
    return goals.finish()


if __name__ == "__main__":
    sys.exit(main())
