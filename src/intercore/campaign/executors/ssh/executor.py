"""The `ssh` executor: runs a campaign's requests on a remote Linux board.

A run reproduces the measurement core's paired design remotely: the driver (driver.sh,
passed on the command line, never stored on the board) starts the aggressors pinned with
their control blocks, starts the victim with `--sync`, and for each repetition, in the
iso/int order drawn here from the request's seed and streamed a window ahead, pauses or
resumes the aggressors with SIGUSR1/SIGUSR2, waits until every control block reports the new
state, and tells the victim "go". The victim's JSON lines come back over the session's stdout
and become samples through the harness's own parser; the workload records are built by the
local executor's `to_output`, so local and remote runs are stored alike.

The driver is the session leader sshd made it. A watcher process reads the session's stdin:
when the connection drops (or this process dies, taking its ssh clients with it), stdin ends
before the driver's "end" command and the watcher kills the whole session and removes its
scratch directory at once, even in the middle of a long repetition.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import Any

from ....base.errors import InputError, NativeError
from ....host.report import fingerprint
from ....host.topology import Topology
from ....measure.harness import paired as harness
from ....measure.harness.paired import READY_TIMEOUT_S, REP_TIMEOUT_S
from ....base.procs import NativeProcess
from ....measure.harness import schedule as sched
from ....base.native import bin_dir as default_bin_dir
from ..base import GroupRequest, RunOutput, RunRequest
from ..local import BINARIES, LocalExecutor, file_sha256, merged_plan, split_outcome
from . import board as board_mod
from .board import BoardSnapshot
from .transport import Connection, SshTarget, quoted

COMMANDS_AHEAD = 32
DRIVER = resources.files(__package__).joinpath("driver.sh").read_text()
# Joins one tool's arguments into one driver argument (see driver.sh).
UNIT_SEPARATOR = "\x1f"


def block_size(plan: harness.Plan) -> sched.BlockSize:
    """A board's block size: as the plan gives it, else uncalibrated (no switch cost is
    measured on a board before the run)."""
    if plan.block_pairs is not None:
        return sched.BlockSize(plan.block_pairs, "as given")
    return sched.uncalibrated_block_pairs(min(plan.pairs_of(s) for s in range(len(plan.sets))))


def board_blocks(plan: harness.Plan) -> list[sched.Block]:
    """The blocks the driver runs, in order: the measurement core's own schedule
    (measure/harness/schedule.py) for the plan's sets, so a board measures in the order this host
    would."""
    return list(sched.blocks(len(plan.sets), [plan.pairs_of(s) for s in range(len(plan.sets))],
                             block_size(plan).pairs, plan.seed))


def board_schedule(plan: harness.Plan) -> list[sched.Rep]:
    """The repetitions the driver is sent, in order."""
    return [rep for block in board_blocks(plan) for rep in block.reps]


def bytes_total(words: list[int]) -> int:
    """Sum of the control blocks' 64-bit byte counters, read by od as (low, high) u32 pairs."""
    return sum(lo + (hi << 32) for lo, hi in zip(words[::2], words[1::2]))


def _joined(args: list[str]) -> str:
    if any(UNIT_SEPARATOR in a for a in args):
        raise InputError(f"an argument holds the byte 0x1f, which the remote driver uses to "
                         f"separate arguments: {args}")
    return UNIT_SEPARATOR.join(args)


def driver_args(plan: harness.Plan, remote_bin: str) -> list[str]:
    """The driver's arguments: BIN VCPU READY_TIMEOUT VICTIM AGGRESSOR..., each aggressor
    prefixed with the number of its set."""
    prio = ["--rt-priority", str(plan.aggressor_priority)] if plan.aggressor_priority else []
    vprio = ["--rt-priority", str(plan.victim_priority)] if plan.victim_priority else []
    victim = plan.victim.argv() + ["--reps", str(plan.total_reps), "--sync", "--cpu",
                                   str(plan.victim_cpu), "--seed", str(plan.seed), *vprio]
    return [remote_bin, str(plan.victim_cpu), str(int(READY_TIMEOUT_S)), _joined(victim),
            *(_joined([str(s), *m.argv(), "--cpu", str(m.cpu), *prio])
              for s, aset in enumerate(plan.sets) for m in aset.members)]


class SshExecutor:
    """Runs requests on `target`. `on_start` is not called: the pids are on the board, and
    enforcement backends act on this host (the runner must not plan enforced setups here)."""

    name = "ssh"

    def __init__(self, target: SshTarget) -> None:
        self.target = target
        self.bin_dir = target.bin_dir or default_bin_dir()
        self.pushed: list[str] = []  # binaries uploaded by this executor (not already there)
        self._conn: Connection | None = None
        self._board: BoardSnapshot | None = None
        self._topo: Topology | None = None
        self._hashes: dict[str, str] | None = None
        self._installed = False

    # -- session state, each established once --

    @property
    def _remote_bin(self) -> str:
        return f"{self.target.workdir.rstrip('/') or '/'}/bin"

    def _binaries(self) -> dict[str, Path]:
        paths = {name: self.bin_dir / name for name in BINARIES}
        missing = [str(p) for p in paths.values() if not os.access(p, os.X_OK)]
        if missing:
            raise InputError(f"{', '.join(missing)} missing: build the native tools for the "
                             "board (see docs/remote-boards.md) and point `bin_dir:` at them",
                             field="ssh.bin_dir")
        return paths

    def _connect(self) -> Connection:
        if self._conn is None:
            binaries = self._binaries()
            conn = Connection(self.target)
            try:
                conn.open()
                board = board_mod.probe(conn)
                board_mod.check_binaries(board, binaries, self.target.label)
            except BaseException:
                conn.close()
                raise
            self._conn, self._board = conn, board
            self._topo = board.topology()
            self._hashes = {name: file_sha256(p) for name, p in binaries.items()}
        return self._conn

    def _install(self) -> None:
        conn = self._connect()
        if self._installed:
            return
        assert self._hashes is not None
        self.pushed += board_mod.install(conn, self._binaries(), self._hashes, self._remote_bin)
        self._installed = True

    # -- the Executor protocol --

    def describe(self) -> dict[str, Any]:
        self._connect()
        board, topo = self._board, self._topo
        assert board is not None and topo is not None and self._hashes is not None
        return {
            "executor": self.name,
            "fingerprint": fingerprint(topo, board.kernel),
            "hostname": board.hostname,
            "kernel": board.kernel,
            "cpu_model": topo.model_name or "unknown",
            "ncpus": len(topo.online_cpus),
            "binaries": dict(self._hashes),
            "info": {
                "system": board.system, "machine": board.machine,
                "kernel_version": board.version, "vendor": topo.vendor,
                "hypervisor": topo.hypervisor, "online_cpus": list(topo.online_cpus),
                "caches": [{"level": c.level, "type": c.type, "size": c.size,
                            "ways": c.ways, "line": c.line, "shared_cpus": list(c.shared_cpus)}
                           for c in topo.caches()],
            },
        }

    def identity(self) -> dict[str, Any]:
        """Which board this is (serial, model, firmware, kernel): recorded with its runs,
        never hashed, so that boards of one kind stay interchangeable."""
        conn = self._connect()
        assert self._board is not None
        return {"hostname": self._board.hostname, "kernel": self._board.kernel,
                "kernel_version": self._board.version, **board_mod.identity(conn)}

    def group_plan(self, group: GroupRequest) -> harness.Plan:
        """The group's sets in one plan, placed on the board. No running canary: its probes
        would need a second victim on the board (the session's regime applies instead)."""
        return merged_plan(group, [self.plan(r) for r in group.requests], None)

    def plan(self, request: RunRequest) -> harness.Plan:
        """The request checked and placed against the board's topology."""
        if any(item.strip().startswith("cmd:") for spec in request.engine
               for item in spec.split("+")):
            raise InputError("external `cmd:` aggressors cannot run on a board through the ssh "
                             "executor; use ic-aggr kinds (bw, pll, bankpll)", field="engine")
        self._connect()
        assert self._topo is not None
        plan = LocalExecutor(self._topo).plan(request)
        # Whether SCHED_FIFO is permitted is the board's business: the victim asks for it and
        # reports "rt": false when refused, as the native contract says.
        return plan if plan.victim_priority else replace(plan, victim_priority=1)

    def run(self, request: RunRequest, *, on_start: Any = None) -> RunOutput:
        group = GroupRequest(("run",), (request,), request.seed, canary=False)
        return self.run_group(group, on_start=on_start)["run"]

    def run_group(self, group: GroupRequest, *, on_start: Any = None) -> dict[str, RunOutput]:
        plan = self.group_plan(group)
        self._install()
        started = time.time()
        driver = self._start_driver(plan)
        try:
            run = _drive(driver, plan)
        except NativeError as e:
            failed = next((ln for ln in driver.lines if ln.get("event") == "driver.fail"), None)
            if failed is None:
                raise
            raise NativeError(f"{driver.name}: {failed['who']} failed "
                              f"(exit {failed['rc']}): {e}") from None
        finally:
            driver.kill()  # no-op after a clean end; otherwise the board sees the session end
        outcome = harness.Outcome(plan, harness.parse_samples(run.lines, run.meta, {}, "cpu"),
                                  {"ready": run.ready, "end": run.end}, run.aggressor_stats,
                                  started, time.time(), blocks=run.blocks,
                                  block_size=block_size(plan))
        outputs = split_outcome(outcome, group)
        if not run.driver_ready.get("pinned"):
            for output in outputs.values():
                output.warnings.append(f"{self.target.label}: no taskset on the board, so the "
                                       "remote driver was not kept on the victim's CPU between "
                                       "repetitions")
        return outputs

    def _start_driver(self, plan: harness.Plan) -> NativeProcess:
        conn = self._connect()
        command = quoted(["exec", "sh", "-c", DRIVER, "ic-driver",
                          *driver_args(plan, self._remote_bin)])
        return NativeProcess(f"remote driver on {self.target.label}", ["ssh", "..."],
                             conn.session(command))

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        self._installed = False


@dataclass
class _RemoteRun:
    driver_ready: dict
    ready: dict
    end: dict
    lines: list[dict]
    meta: dict[int, harness.RepMeta]
    aggressor_stats: dict[str, list[dict]]
    blocks: list[harness.BlockRecord]


def _drive(driver: NativeProcess, plan: harness.Plan) -> _RemoteRun:
    """Feed the driver the repetition schedule and read the run back."""
    blocks = board_blocks(plan)
    schedule = [rep for block in blocks for rep in block.reps]
    driver_ready = _expect(driver, "driver.ready", READY_TIMEOUT_S)
    ready = _expect(driver, "ready", READY_TIMEOUT_S)
    meta = {}
    sent = 0
    t0 = time.monotonic()
    spans: dict[int, list[int]] = {}  # block -> [start, end] as this host sees them
    for rep, r in enumerate(schedule):
        # A window of commands ahead: the board never waits for a round trip, and neither
        # side's pipes fill while the other is blocked writing.
        while sent < min(len(schedule), rep + COMMANDS_AHEAD):
            _send(driver, f"{schedule[sent].condition} {schedule[sent].set_index}")
            sent += 1
            if sent == len(schedule):
                _send(driver, "end")
        _expect(driver, "rep", REP_TIMEOUT_S)
        counters = _expect(driver, "driver.rep", 30.0)
        # Seen from here, a round trip late: the block's start as this host knows it.
        now = int((time.monotonic() - t0) * 1e9)
        span = spans.setdefault(r.block, [now, now])
        span[1] = now
        meta[rep] = harness.RepMeta(rep, r.pair, r.condition, plan.sets[r.set_index].label,
                                    bytes_total(counters["after"])
                                    - bytes_total(counters["before"]), r.block, span[0])
    while driver.read_event(120.0).get("event") != "driver.done":
        pass  # the victim's samples, its end line and the aggressors' statistics
    lines = driver.finish(timeout=30.0)
    end: dict = next((ln for ln in reversed(lines) if ln.get("event") == "end"), {})
    owner = [aset.label for aset in plan.sets for _ in aset.members]  # by driver index
    stats: dict[str, list[dict]] = {}
    for ln in sorted((ln for ln in lines if ln.get("event") == "driver.aggressor"),
                     key=lambda ln: ln["index"]):
        if ln["line"].get("event") == "stats":
            stats.setdefault(owner[ln["index"]], []).append(ln["line"])
    # The blocks as the harness records its own (no canary: regime unknown; the byte
    # counters are per repetition, in the samples).
    records = [harness.BlockRecord(b.index, b.round, plan.sets[b.set_index].label,
                                   spans[b.index][0], spans[b.index][1], b.pairs,
                                   harness.UNKNOWN, {})
               for b in blocks if b.index in spans]
    return _RemoteRun(driver_ready, ready, end, lines, meta, stats, records)


def _send(driver: NativeProcess, line: str) -> None:
    try:
        driver.send(line)
    except OSError:  # the ssh client is gone: say why, from its exit status and stderr
        driver.proc.wait(timeout=10)
        assert driver.proc.stderr is not None  # NativeProcess pipes stderr
        err = driver.proc.stderr.read().decode(errors="replace").strip()
        raise NativeError(f"{driver.name}: the ssh session ended mid-run "
                          f"(exit {driver.proc.returncode}){': ' + err if err else ''}") from None


def _expect(driver: NativeProcess, event: str, timeout: float) -> dict:
    """The next line, which must be `event`; anything else ends the run with the driver's own
    account of what failed (its exit status and the failing tool's stderr)."""
    got = driver.read_event(timeout)
    if got.get("event") == event:
        return got
    # End of input makes the board stop everything; the driver's exit says why it failed.
    driver.finish(timeout=60.0)
    raise NativeError(f"{driver.name}: expected a {event!r} line, got {got}")
