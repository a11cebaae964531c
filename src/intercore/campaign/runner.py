"""Running a campaign: every (setup, round) slot exactly once, in a stored, shuffled order.

`start` plans a campaign file, stores the plan with its schedule, and runs it; `resume`
re-plans the stored campaign's file and runs the slots not yet recorded, in the same order.
A slot is recorded only when its run has finished, in the same transaction as its raw samples
(store/campaigns.py), so a campaign killed at any moment (even with SIGKILL) loses at most the
run in flight and never records a run twice.

Resume refuses when the plan no longer matches: a setup's content hash covers its resolved
configuration, the workload binaries and the host, so a changed hash means the runs still to
come would not measure what the recorded ones did. `force` runs them anyway; every run keeps
the hash it ran under and the report warns about setups measured under several.
"""

from __future__ import annotations

import hashlib
import queue
import sys
import threading
import time
from collections import deque
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping, Protocol, Sequence

from .. import __version__
from ..base import yamlfile
from ..base.errors import InputError
from ..base.locks import exclusive
from ..store import Recording, Store
from ..store.campaigns import CampaignRow, RunAttachment, Slot, SlotTaken
from ..store.records import InvocationRecord
from ..measure.harness.store import utc
from ..measure.harness.schedule import shuffled_rounds
from ..mitigate.bandwidth.resctrl import Resctrl
from .enforce import Enforcement, Unenforceable, enforcement_for
from .executors import HOST_KEYS, executor_for
from .executors.base import Executor, GroupRequest, RunOutput, RunRequest
from .plan import CampaignPlan, Setup, make_plan
from .spec import Campaign, load_campaign, place_error

# --quick: a smoke test of the whole pipeline, not evidence.
QUICK_REPETITIONS = 5
QUICK_ROUNDS = 2
POLL_S = 1.0  # how often a campaign on several boards asks for more of them


class Listener(Protocol):
    """What the runner reports while it works (the CLI draws progress from it)."""

    def phase(self, text: str) -> None: ...

    def session(self, campaign: CampaignRow, total: int, recorded: int) -> None: ...

    def run_started(self, slot: Slot, setup: Setup) -> None: ...

    def run_finished(self, slot: Slot, status: str, seconds: float, detail: str) -> None: ...


class _Silent:
    def phase(self, text: str) -> None:
        pass

    def session(self, campaign: CampaignRow, total: int, recorded: int) -> None:
        pass

    def run_started(self, slot: Slot, setup: Setup) -> None:
        pass

    def run_finished(self, slot: Slot, status: str, seconds: float, detail: str) -> None:
        pass


@dataclass
class SessionResult:
    """What one `run` or `resume` did."""

    campaign: str
    campaign_id: int
    total: int
    done: int = 0
    skipped: int = 0
    already: int = 0
    started_at: float = 0.0
    finished_at: float = 0.0
    regime: str = "unknown"
    warnings: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return self.already + self.done + self.skipped == self.total

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "complete": self.complete,
                "wall_s": self.finished_at - self.started_at}


# --- pure parts -----------------------------------------------------------------------------

def schedule(setups: Sequence[str], rounds: int, seed: int) -> tuple[Slot, ...]:
    """Rounds (numbered from 1, as stored) run one after another; within each, every setup
    once, in a shuffled order (measure.harness.schedule.shuffled_rounds).
    Deterministic for a seed."""
    return tuple((r + 1, name) for r, name in shuffled_rounds(setups, rounds, seed))


def run_seed(seed: int, setup: str, round_: int) -> int:
    """Seed of one run (pair order, victim inputs): distinct per setup and round, stable."""
    digest = hashlib.sha256(f"{seed}/{setup}/{round_}".encode()).digest()
    return int.from_bytes(digest[:4], "little") & 0x7FFFFFFF


def group_seed(seed: int, names: Sequence[str], round_: int) -> int:
    """Seed of a group's run: a lone setup keeps its own run seed."""
    return run_seed(seed, ",".join(sorted(names)), round_)


def run_groups(slots: Sequence[Slot], setups: Mapping[str, Setup]) -> list[list[Slot]]:
    """The slots to run, grouped into interleaved runs: the slots of one round whose setups
    measure the same victim (task, parameters, CPU) and need no enforcement run together, so
    their aggressor sets take turns in blocks and meet the same host regimes. A setup under
    enforcement runs alone (its victim's resctrl group cannot change between blocks). Groups
    come in the order of their first slot, their slots in schedule order."""
    groups: dict[tuple, list[Slot]] = {}
    for slot in slots:
        setup = setups[slot[1]]
        r = setup.request
        key = (slot[0], r.victim, r.victim_params, r.victim_args, r.victim_cpu) \
            if not setup.needs \
            else (slot[0], "alone", slot[1])
        groups.setdefault(key, []).append(slot)
    return list(groups.values())


@dataclass(frozen=True)
class PlanChanges:
    """How a re-planned campaign differs from the stored one."""

    removed: tuple[str, ...]
    changed: tuple[tuple[str, str, str], ...]  # (setup, stored hash, current hash)
    added: tuple[str, ...]

    def describe(self) -> list[str]:
        return ([f"setup {n} is no longer in the campaign" for n in self.removed]
                + [f"setup {n}: hash {a} is now {b}" for n, a, b in self.changed]
                + [f"setup {n} is new; it is not in the stored schedule and will not run"
                   for n in self.added])


def plan_changes(stored: CampaignRow, plan: CampaignPlan) -> PlanChanges:
    before = {name: s["hash"] for name, s in stored.setups.items()}
    now = {s.name: s.hash for s in plan.setups}
    return PlanChanges(
        removed=tuple(n for n in before if n not in now),
        changed=tuple((n, before[n], now[n]) for n in before if n in now and now[n] != before[n]),
        added=tuple(n for n in now if n not in before))


def quick(campaign: Campaign) -> Campaign:
    return campaign.model_copy(update={"repetitions": min(campaign.repetitions,
                                                          QUICK_REPETITIONS),
                                       "rounds": min(campaign.rounds, QUICK_ROUNDS)})


# --- planning -------------------------------------------------------------------------------

def plan_file(path: Path, *, quick_mode: bool) -> tuple[CampaignPlan, Executor]:
    """Load and plan a campaign file for the executor it names, and check every distinct
    request against the machine (CPUs exist, victim parameters resolve), so that a campaign
    that cannot run fails before anything is stored rather than halfway through."""
    campaign = load_campaign(path)
    if quick_mode:
        campaign = quick(campaign)
    executor = executor_for(campaign)
    try:
        plan = make_plan(campaign, source=str(path), host=executor.describe())
        for request in dict.fromkeys(s.request for s in plan.setups):
            try:
                executor.plan(request)
            except InputError as exc:
                raise place_error(path, campaign, exc) from None
        return plan, executor
    except BaseException:
        executor.close()
        raise


# --- side effects ---------------------------------------------------------------------------

def _probe_sharing(plan: CampaignPlan) -> dict[str, Any] | None:
    """The shared-cache canary, once per session, on this host only (it is local)."""
    if plan.executor != "local":
        return None
    from ..host.topology import read_topology
    from ..measure.regime.canary import run_canary

    return run_canary(read_topology()).to_dict()


def _host_id(store: Store, executor: Executor) -> int:
    described = executor.describe()
    missing = [k for k in HOST_KEYS if k not in described]
    if missing:
        raise RuntimeError(f"executor {executor.name} describe() lacks {missing}")
    environment = getattr(executor, "environment", None)
    info = {"executor": described, **(environment() if environment else {})}
    fingerprint, hostname, kernel, cpu_model, ncpus = (described[k] for k in HOST_KEYS)
    return store.ensure_host(fingerprint, hostname, kernel, cpu_model, ncpus, info)



@dataclass(frozen=True)
class _Session:
    store: Store
    row: CampaignRow
    plan: CampaignPlan
    executor: Executor
    host_id: int
    command: str
    argv: tuple[str, ...]
    canary: dict[str, Any] | None
    listener: Listener
    resctrl: Resctrl | None = None  # None: the host's own, at /sys/fs/resctrl
    running_canary: bool = True     # probe between the blocks of every run

    @property
    def regime(self) -> str:
        return self.canary["regime"] if self.canary else "unknown"

    def _recording(self, slot: Slot, setup: Setup, request: RunRequest, out: RunOutput,
                   enforcement: dict, board: dict[str, Any] | None) -> Recording:
        round_, name = slot
        # A running canary gave every sample its block's regime; a run without one has the
        # session's (or the executor's) regime for all of them.
        fallback = out.regime or self.regime
        samples = [s if s.regime is not None else replace(s, regime=fallback)
                   for s in out.samples]
        regimes = {s.regime for s in samples}
        regime = regimes.pop() if len(regimes) == 1 else "mixed" if regimes else fallback
        invocation = InvocationRecord(
            self.host_id, self.command, self.argv, utc(out.started_at), utc(out.finished_at),
            __version__,
            params={"campaign": self.row.name, "campaign_id": self.row.id, "setup": name,
                    "setup_hash": setup.hash, "round": round_, "request": asdict(request),
                    **({"board": board} if board is not None else {})},
            summary={"regime": regime, "canary": self.canary, "enforcement": enforcement,
                     "warnings": list(out.warnings),
                     **({"design": out.design} if out.design is not None else {})})
        return Recording(invocation, out.workloads, samples,
                         (RunAttachment(self.row.id, name, setup.hash, round_),))

    def record(self, group: Sequence[Slot], requests: Mapping[str, RunRequest],
               outputs: Mapping[str, RunOutput], enforcement: dict,
               board: dict[str, Any] | None = None) -> bool:
        """Store a group's runs with their slot rows, all in one transaction; False if
        another process recorded one of the slots (then none is recorded here). `board`:
        which of several interchangeable boards ran it (labgrid)."""
        setups = {s.name: s for s in self.plan.setups}
        try:
            self.store.record_all([
                self._recording(slot, setups[slot[1]], requests[slot[1]], outputs[slot[1]],
                                enforcement, board) for slot in group])
        except SlotTaken:
            return False
        return True

    def _unenforceable(self, setup: Setup) -> Unenforceable | None:
        if self.plan.executor == "local" or not setup.needs:
            return None
        return Unenforceable(f"needs {', '.join(setup.needs)}: enforcement through resctrl "
                             f"is implemented for this host only, not over "
                             f"{self.plan.executor}")

    def _skip(self, slot: Slot, setup: Setup, reason: str) -> str:
        round_, name = slot
        recorded = self.store.campaigns.record_skipped(self.row.id, name, setup.hash, round_,
                                                       reason)
        return "skipped" if recorded else "already"

    def group_request(self, group: Sequence[Slot]) -> GroupRequest:
        """The group as the executor runs it: every setup's request under the group's seed."""
        round_ = group[0][0]
        names = tuple(name for _, name in group)
        seed = group_seed(self.plan.seed, names, round_)
        setups = {s.name: s for s in self.plan.setups}
        return GroupRequest(names, tuple(replace(setups[n].request, seed=seed) for n in names),
                            seed, canary=self.running_canary)

    def _done(self, group: Sequence[Slot], request: GroupRequest,
              outputs: Mapping[str, RunOutput], enforcement: dict,
              board: dict[str, Any] | None = None) -> tuple[str, dict[str, str]]:
        """Record a finished group; its status and each slot's detail line."""
        recorded = self.record(group, dict(zip(request.names, request.requests)), outputs,
                               enforcement, board)
        where = f" on {board['place']}" if board else ""
        if len(group) > 1:
            where += f", interleaved with {len(group) - 1} more"
        return ("done" if recorded else "already"), {
            name: f"{len(out.samples)} samples in "
                  f"{out.finished_at - out.started_at:.1f}s{where}"
            for name, out in outputs.items()}

    def run_group(self, group: list[Slot]) -> tuple[str, dict[str, str]]:
        setups = {s.name: s for s in self.plan.setups}
        enforcement: Any = Enforcement()
        if len(group) == 1:
            enforcement = enforcement_for(setups[group[0][1]], resctrl=self.resctrl)
            if isinstance(enforcement, Unenforceable):
                return (self._skip(group[0], setups[group[0][1]], enforcement.reason),
                        {group[0][1]: enforcement.reason})
        request = self.group_request(group)
        with enforcement.applied() as applied:
            outputs = self.executor.run_group(request, on_start=applied.add_pid)
            report = applied.report()
        return self._done(group, request, outputs, report)

    def _skip_unenforceable(self, todo: list[Slot], result: SessionResult) -> list[Slot]:
        """Record the slots this executor cannot enforce as skipped; the rest, in order."""
        setups = {s.name: s for s in self.plan.setups}
        kept = []
        for slot in todo:
            reason = self._unenforceable(setups[slot[1]])
            if reason is None:
                kept.append(slot)
                continue
            self.listener.run_started(slot, setups[slot[1]])
            status = self._skip(slot, setups[slot[1]], reason.reason)
            self.listener.run_finished(slot, status, 0.0, reason.reason)
            _count(result, status)
        return kept

    def run(self, result: SessionResult) -> SessionResult:
        setups = {s.name: s for s in self.plan.setups}
        recorded = {(r.round, r.setup) for r in self.store.campaigns.runs(self.row.id)}
        result.already = len(recorded)
        self.listener.session(self.row, len(self.row.schedule), len(recorded))
        todo = self._skip_unenforceable(
            [slot for slot in self.row.schedule if slot not in recorded], result)
        groups = run_groups(todo, setups)
        if hasattr(self.executor, "boards"):
            self.run_on_boards(groups, result)
            return result
        for group in groups:
            for slot in group:
                self.listener.run_started(slot, setups[slot[1]])
            t0 = time.monotonic()
            status, details = self.run_group(group)
            for slot in group:
                self.listener.run_finished(slot, status, time.monotonic() - t0,
                                           details[slot[1]])
                _count(result, status)
        return result

    def run_on_boards(self, todo: list[list[Slot]], result: SessionResult) -> None:
        """Every group on whichever board is free, one run per board at a time, boards
        joining as the pool is lent them (executors/labgrid/pool.py). A group runs on one
        board (its setups meet that board's regimes alike); groups are taken in schedule
        order, and recorded here, in this thread (the store's), as they finish. A board
        that fails is retired and its group goes back to the front of the queue."""
        pool: Any = self.executor
        setups = {s.name: s for s in self.plan.setups}
        slots: deque[list[Slot]] = deque(todo)
        lock = threading.Lock()
        events: queue.Queue = queue.Queue()
        working: dict[str, threading.Thread] = {}

        def work(board: Any) -> None:
            while True:
                with lock:
                    if not slots:
                        events.put(("idle", board, None, None))
                        return
                    group = slots.popleft()
                events.put(("start", board, group, None))
                request = self.group_request(group)
                try:
                    outputs = board.executor.run_group(request)
                except Exception as exc:  # noqa: BLE001 - handed to the recording thread
                    with lock:
                        slots.appendleft(group)
                    events.put(("fail", board, group, exc))
                    return
                events.put(("done", board, group, (request, outputs)))

        def start(board: Any) -> None:
            thread = threading.Thread(target=work, args=(board,), daemon=True,
                                      name=f"board {board.place}")
            working[board.place] = thread
            thread.start()

        for board in pool.boards:
            start(board)
        last_error: Exception | None = None
        started: dict[str, float] = {}
        while slots or working:
            if not working and not pool.waiting and slots:
                raise last_error or RuntimeError("no board is left to run the campaign on")
            for board in pool.poll() if slots and pool.waiting else ():
                start(board)
            try:
                kind, board, group, payload = events.get(timeout=POLL_S)
            except queue.Empty:
                continue
            if kind == "start":
                started[board.place] = time.monotonic()
                for slot in group:
                    self.listener.run_started(slot, setups[slot[1]])
            elif kind == "done":
                request, outputs = payload
                status, details = self._done(group, request, outputs, {}, board.record)
                seconds = time.monotonic() - started.pop(board.place)
                for slot in group:
                    self.listener.run_finished(slot, status, seconds, details[slot[1]])
                    _count(result, status)
            else:
                working.pop(board.place).join()
                if kind == "fail":
                    last_error = payload
                    started.pop(board.place, None)
                    pool.retire(board, str(payload))
                    self.listener.phase(f"place {board.place} retired: {payload}")
        result.warnings += pool.warnings


def _count(result: SessionResult, status: str) -> None:
    if status == "already":
        result.already += 1
    else:
        setattr(result, status, getattr(result, status) + 1)


def _execute(store: Store, row: CampaignRow, plan: CampaignPlan, executor: Executor,
             command: str, listener: Listener, probe: bool,
             resctrl: Resctrl | None = None) -> SessionResult:
    result = SessionResult(row.name, row.id, len(row.schedule), started_at=time.time())
    listener.phase("host identity")
    host_id = _host_id(store, executor)
    listener.phase("shared-cache canary")
    canary = _probe_sharing(plan) if probe else None
    session = _Session(store, row, plan, executor, host_id, command, tuple(sys.argv), canary,
                       listener, resctrl, running_canary=probe)
    result.regime = session.regime
    if canary and canary["regime"] != "shared":
        result.warnings.append(f"canary: {canary['reason']}")
    session.run(result)
    result.finished_at = time.time()
    return result


def start(path: Path, db: Path, *, quick_mode: bool = False, name: str | None = None,
          canary: bool = True, listener: Listener | None = None,
          resctrl: Resctrl | None = None) -> SessionResult:
    """Plan the campaign file, store it under `name` (default: its own), and run it.
    `resctrl` enforces through another resctrl tree than the host's (tests, a fake kernel)."""
    listener = listener or _Silent()
    listener.phase("planning")
    plan, executor = plan_file(path, quick_mode=quick_mode)
    try:
        with exclusive(db), Store.open(db) as store:
            order = schedule([s.name for s in plan.setups], plan.rounds, plan.seed)
            row = store.campaigns.create(name or plan.name, str(path.resolve()),
                                   yamlfile.read_text(path), plan.to_dict(), order,
                                   {"quick": quick_mode})
            return _execute(store, row, plan, executor, "campaign run", listener, canary,
                            resctrl)
    finally:
        executor.close()


def resume(ref: str, db: Path, *, force: bool = False, canary: bool = True,
           listener: Listener | None = None, resctrl: Resctrl | None = None) -> SessionResult:
    """Run the slots of a stored campaign that have no record yet, in the stored order."""
    listener = listener or _Silent()
    if not db.exists():
        raise InputError(f"no results store at {db}", field="--db")
    with exclusive(db), Store.open(db) as store:
        row = store.campaigns.find(ref)
        source = Path(row.source)
        if not source.is_file():
            raise InputError(f"campaign {row.name}: its file {source} is gone; resume re-reads "
                             "it to check that the remaining runs measure what the recorded "
                             "ones did")
        listener.phase("re-planning")
        plan, executor = plan_file(source, quick_mode=bool(row.options.get("quick")))
        try:
            changes = plan_changes(row, plan)
            if changes.removed or (changes.changed and not force):
                hint = "" if changes.removed else \
                    " (--force runs the remaining slots under the new hashes)"
                raise InputError(f"campaign {row.name} changed since it was planned{hint}: "
                                 + "; ".join(changes.describe()), source=str(source))
            result = _execute(store, row, plan, executor, "campaign resume", listener,
                              canary, resctrl)
            result.warnings += changes.describe()
            return result
        finally:
            executor.close()
