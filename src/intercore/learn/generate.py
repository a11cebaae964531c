"""`learn dataset`: draw programs, then build, trace and measure each, in a stored order, and
measure again, later, those whose regions lack shared-regime pairs; `export` writes the
dataset directory that training reads.

Each program is built and traced once, in the drawn order, and recorded with its features;
it is then measured in attempts until the stop rule (learn/pooling.py) closes it: every
region has `target_pairs` pairs in the label regime, pooled over its attempts, or
`max_attempts` were made. Measuring pays only while the host shares its last-level cache, so
the run measures (the open program with the fewest attempts) while the canary says it does,
and traces the next program, or waits, while it does not. Each trace and each attempt is an
invocation in the store, an attempt with its samples and its provenance (attempt number,
pairs planned, regimes, SCHED_FIFO granted, the binary's hash); a killed generation loses at
most the step in flight, and a resume goes on (the campaign runner's guarantee, by the same
means).

Labels come from the pooled pairs whose halves both ran in the `shared` regime (the canary
saw the victim's and the aggressors' CPUs share the last-level cache): a region with fewer
than `min_pairs` of them gets no label, and the dataset records every regime's pair count.
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol, Sequence

from .. import __version__
from ..base.errors import InputError
from ..base.locks import exclusive
from ..measure.harness.store import utc
from ..store import Store
from ..store.learn import AttemptAttachment, AttemptRow, ProgramAttachment, ProgramTaken
from ..store.records import InvocationRecord
from . import pooling
from .dataset import Dataset, ProgramRecord
from .extract import extract, victim_argv
from .hierarchy import Hierarchy
from .programs import ProgramSpec, build, draw, k_sweep

LABEL_REGIME = "shared"


@dataclass(frozen=True)
class Settings:
    programs: int = 300
    seed: int = 1
    families: tuple[str, ...] = ()
    sweep: bool = True           # add the paper's K sweep (Fig. 2 and 5)
    pairs: int = 40              # paired repetitions per attempt at a program, at most
    min_pairs: int = 10          # shared-regime pairs a region needs for a label
    target_pairs: int = 30       # shared-regime pairs per region after which a program closes
    max_attempts: int = 4        # ... or after this many attempts
    aggressor: str = "BwWrite(LLC)"
    victim_cpu: int | None = None
    label_regime: str = LABEL_REGIME  # "any" only for smoke tests: not evidence
    # SCHED_FIFO priority of the victim, the aggressors and the canary (0: SCHED_OTHER). Other
    # tenants of the CPUs then cannot preempt a repetition or a probe; on this 2-vCPU host
    # that lifted the share of shared-regime blocks from a few percent to most of them.
    priority: int = 1
    block_pairs: int | None = 4  # pairs between two canary probes (None: the harness's choice)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Settings:
        # Datasets stored before these settings existed were measured at SCHED_OTHER with the
        # harness's block size.
        legacy = {"priority": 0, "block_pairs": None, "target_pairs": 0, "max_attempts": 1}
        return cls(**{**legacy, **d, "families": tuple(d.get("families", ()))})


def program_seed(seed: int, program: str, attempt: int = 1) -> int:
    """Seed of one attempt at measuring a program (pair order, aggressor placement draws):
    stable, and different for every attempt."""
    key = f"{seed}/{program}" if attempt == 1 else f"{seed}/{program}/{attempt}"
    digest = hashlib.sha256(key.encode()).digest()
    return int.from_bytes(digest[:4], "little") & 0x7FFFFFFF


def plan(settings: Settings, hierarchy: Hierarchy) -> list[ProgramSpec]:
    specs = draw(settings.programs, hierarchy, settings.seed, settings.families or None)
    if settings.sweep and (not settings.families or "matmul" in settings.families):
        specs += k_sweep()
    return specs


@dataclass
class Measured:
    """What one attempt at measuring a program produced: its store records."""

    workloads: list
    samples: list
    started_at: float
    finished_at: float
    info: dict[str, Any] = field(default_factory=dict)


class Measurer(Protocol):
    def describe(self) -> dict[str, Any]: ...

    def shared_now(self) -> bool | None:
        """Whether the host shares its last-level cache with the aggressors' CPU right now
        (None: it cannot tell)."""

    def measure(self, exe: Path, spec: ProgramSpec, settings: Settings, attempt: int,
                pairs: int) -> Measured: ...


class Listener(Protocol):
    def phase(self, text: str) -> None: ...

    def program(self, done: int, total: int, name: str, status: str) -> None: ...


class _Silent:
    def phase(self, text: str) -> None:
        pass

    def program(self, done: int, total: int, name: str, status: str) -> None:
        pass


MIN_ATTEMPT_PAIRS = 8   # two blocks of four: the fewest pairs an attempt is worth its start-up
RATE_WINDOW = 30        # attempts over which the recent share of shared pairs is taken
WAIT_S = 20.0           # between two looks at a host that does not share its cache now


def rule(settings: Settings) -> pooling.StopRule:
    return pooling.StopRule(max(settings.target_pairs, settings.min_pairs),
                            max(settings.max_attempts, 1), settings.label_regime)


class _Generation:
    """One run over a stored dataset: its store, settings and the state of its programs."""

    def __init__(self, store: Store, row: Any, settings: Settings, hierarchy: Hierarchy,
                 measurer: Measurer, workdir: Path, say: Listener):
        self.store, self.ls, self.row = store, store.learn, row
        self.settings, self.hierarchy = settings, hierarchy
        self.measurer, self.workdir, self.say = measurer, workdir, say
        self.rule = rule(settings)
        self.host_id = _host_id(store)
        self.refresh()

    def refresh(self) -> None:
        self.done = self.ls.done(self.row.id)
        self.attempts = self.ls.attempts(self.row.id)
        self.closed = self.ls.closed(self.row.id)
        rows = sorted((a for rows in self.attempts.values() for a in rows),
                      key=lambda a: a.invocation_id)
        self.recent = [a.summary for a in rows][-RATE_WINDOW:]
        self.records = {r["spec"]["name"]: r for r in self.ls.records(self.row.id)}

    def pooled(self, spec: ProgramSpec, extra: dict[int, list[pooling.Pair]] | None = None
               ) -> dict[int, list[pooling.Pair]]:
        ids = [r.id for r in spec.regions]
        per = [pooling.region_pairs(self.store.samples_for(a.invocation_id), ids)
               for a in self.attempts.get(spec.name, [])]
        return pooling.pool([*per, *([extra] if extra else [])])

    def _invocation(self, spec: ProgramSpec, started: float, finished: float,
                    params: dict[str, Any], summary: dict[str, Any]) -> InvocationRecord:
        return InvocationRecord(
            self.host_id, "learn dataset", tuple(sys.argv), utc(started), utc(finished),
            __version__, params={"dataset": self.row.name, "program": spec.to_dict(),
                                 **params, "settings": self.settings.to_dict()},
            summary=summary)

    def trace(self, spec: ProgramSpec) -> str:
        """Build and trace a program and record it, features only: it is then open."""
        started = time.time()
        self.say.phase(f"{spec.name}: build")
        exe = build(spec, self.workdir)
        self.say.phase(f"{spec.name}: trace")
        regions, t = extract(victim_argv(exe), self.hierarchy, skip=1, include_total=False)
        info = {"records": t.records, "seconds": t.seconds, "cpu_seconds": t.cpu_seconds,
                "exe_sha256": _sha256(exe)}
        record = ProgramRecord(spec, tuple(regions), {}, info)
        try:
            self.store.record(self._invocation(spec, started, time.time(), {"phase": "trace"},
                                               info), [], [],
                              attachments=[ProgramAttachment(self.row.id, spec.name, spec.hash,
                                                             record.to_dict())])
        except ProgramTaken:  # another process traced this program first
            return "already"
        self.done[spec.name] = spec.hash
        self.records[spec.name] = record.to_dict()
        return f"traced: {len(regions)} regions, {t.records / 1e6:.0f} M records"

    def measure(self, spec: ProgramSpec) -> str:
        """One more attempt at an open program, recorded with the stop rule's verdict on the
        pairs pooled with its earlier attempts."""
        regime = self.settings.label_regime
        attempt = len(self.attempts.get(spec.name, [])) + 1
        exe = self.workdir / spec.name
        if not exe.exists():
            exe = build(spec, self.workdir)
        traced = self.records[spec.name].get("trace", {}).get("exe_sha256")
        if traced and traced != _sha256(exe):
            self.ls.close(self.row.id, spec.name, {
                "reason": "rebuilt", "attempts": attempt - 1,
                "text": "the rebuilt binary differs from the traced one (another compiler?): "
                        "its samples would not describe the traced code",
                "closed_at": utc(time.time()).isoformat()})
            self.closed[spec.name] = {"reason": "rebuilt"}
            return "closed: the rebuilt binary differs from the traced one"
        before = pooling.kept(self.pooled(spec), regime)
        pairs = self.settings.pairs if attempt == 1 else self.rule.next_pairs(
            before, pooling.kept_rate(self.recent, regime), self.settings.pairs,
            min(MIN_ATTEMPT_PAIRS, self.settings.pairs))
        self.say.phase(f"{spec.name}: attempt {attempt}, {pairs} pairs")
        m = self.measurer.measure(exe, spec, self.settings, attempt, pairs)
        mine = pooling.region_pairs(m.samples, [r.id for r in spec.regions])
        counts = pooling.kept(self.pooled(spec, mine), regime)
        summary = {"attempt": attempt, "pairs_planned": pairs,
                   "pairs": pooling.regimes(mine[spec.regions[0].id]),
                   "kept": {str(k): v for k, v in pooling.kept(mine, regime).items()},
                   "pooled_kept": {str(k): v for k, v in counts.items()},
                   "seconds": round(m.finished_at - m.started_at, 3),
                   "exe_sha256": _sha256(exe), **m.info}
        verdict = self.rule.verdict(counts, attempt)
        if verdict is not None:
            verdict = {**verdict, "closed_at": utc(m.finished_at).isoformat()}
        try:
            inv = self.store.record(self._invocation(spec, m.started_at, m.finished_at,
                                               {"phase": "measure", "attempt": attempt,
                                                "pairs": pairs}, summary),
                              m.workloads, m.samples, attachments=[AttemptAttachment(
                                  self.row.id, spec.name, attempt, summary, verdict)])
        except ProgramTaken:  # another process made this attempt, or closed the program
            self.refresh()
            return "already"
        self.attempts.setdefault(spec.name, []).append(
            AttemptRow(spec.name, attempt, inv, summary, utc(m.finished_at).isoformat()))
        self.recent = [*self.recent, summary][-RATE_WINDOW:]
        fewest = min(counts.values(), default=0)
        text = f"attempt {attempt}: {fewest} {regime} pairs in its poorest region"
        if verdict is not None:
            self.closed[spec.name] = verdict
            return f"{text}; closed ({verdict['reason']})"
        return text

    def settle(self, spec: ProgramSpec) -> bool:
        """Close an open program whose stored attempts already meet the stop rule (a resume
        with a looser rule, or a program traced and never measured under a bound of 0)."""
        n = len(self.attempts.get(spec.name, []))
        if not n:
            return False
        verdict = self.rule.verdict(pooling.kept(self.pooled(spec), self.settings.label_regime),
                                    n)
        if verdict is None:
            return False
        verdict = {**verdict, "closed_at": utc(time.time()).isoformat()}
        self.ls.close(self.row.id, spec.name, verdict)
        self.closed[spec.name] = verdict
        return True

    def recently_shared(self) -> bool:
        """Whether the last attempt kept at least a quarter of its pairs: then the host
        probably still shares its cache, and the next attempt need not look first."""
        last = self.recent[-1] if self.recent else {}
        return pooling.kept_rate([last], self.settings.label_regime, floor=0.0) >= 0.25 \
            if last.get("pairs") else False

    def next_open(self, programs: Sequence[ProgramSpec]) -> ProgramSpec | None:
        """The open program with the fewest attempts (the earliest drawn among equals):
        attempts at a program spread over the run, and so over the host's regimes."""
        open_ = [s for s in programs if s.name in self.done and s.name not in self.closed]
        return min(open_, key=lambda s: len(self.attempts.get(s.name, [])), default=None)


def stored_settings(db: Path, name: str) -> Settings:
    """The settings the dataset `name` was started with: a resume measures by them (its
    aggressor set, CPUs, priority, blocks), whatever the resuming command line says."""
    with Store.open(db) as store:
        return Settings.from_dict(store.learn.find(name).settings["generator"])


def run(db: Path, name: str, hierarchy: Hierarchy, settings: Settings | None,
        measurer: Measurer, workdir: Path, *, resume: bool = False,
        listener: Listener | None = None, limit: int | None = None,
        wait_limit_s: float = 3600.0, overrides: dict[str, Any] | None = None
        ) -> dict[str, Any]:
    """Start (settings given) or resume the dataset `name` in the store at `db`.

    Every program is traced once and then measured in attempts until the stop rule closes
    it. Measuring only pays while the host shares its cache with the aggressors' CPU, so
    before each attempt the measurer looks (`shared_now`): when it does not, the run traces
    a program still to be traced instead, or, with none left, waits and looks again; after
    `wait_limit_s` of waiting in all it stops, resumable. At most `limit` attempts.
    `overrides` (a resume) change the stored settings of the stop rule and of the attempts
    from now on; the dataset keeps the history of such changes."""
    say = listener or _Silent()
    with exclusive(db), Store.open(db) as store:
        ls = store.learn
        if resume:
            row = ls.find(name)
            stored = Hierarchy.from_dict(row.settings["hierarchy"])
            if not stored.same_geometry(hierarchy):
                raise InputError(f"dataset {name} was traced on {stored.describe()}; this "
                                 f"run would trace on {hierarchy.describe()}", field="--resume")
            settings = Settings.from_dict(row.settings["generator"])
            changed = {k: v for k, v in (overrides or {}).items()
                       if getattr(settings, k) != v}
            if changed:
                settings = replace(settings, **changed)
                history = [*row.settings.get("changes", []),
                           {"at": utc(time.time()).isoformat(), "changed": changed}]
                ls.update_settings(row.id, {**row.settings, "generator": settings.to_dict(),
                                            "changes": history})
                row = ls.find(name)
        else:
            assert settings is not None
            specs = plan(settings, hierarchy)
            row = ls.create(name, {"generator": settings.to_dict(),
                                   "hierarchy": hierarchy.to_dict(),
                                   "measurer": measurer.describe()},
                            [s.to_dict() for s in specs])
        gen = _Generation(store, row, settings, hierarchy, measurer, workdir, say)
        programs = [ProgramSpec.from_dict(p) for p in row.programs]
        for spec in programs:
            if spec.name in gen.done and spec.name not in gen.closed:
                gen.settle(spec)
        total = len(programs)
        counts: Counter[str] = Counter()
        budget = math.inf if limit is None else limit
        waited = 0.0
        stopped = "every program is closed"
        gate = settings.label_regime != "any"

        def show(spec: ProgramSpec, status: str) -> None:
            say.program(len(gen.closed), total, spec.name, status)

        say.phase(f"dataset {name}: {len(gen.done)} of {total} programs traced, "
                  f"{len(gen.closed)} closed")
        while True:
            untraced = [s for s in programs if s.name not in gen.done]
            target = gen.next_open(programs)
            if target is None and not untraced:
                break
            if target is not None and counts["attempts"] >= budget:
                stopped = f"--limit of {limit} attempts reached"
                break
            shared = target is not None and (not gate or gen.recently_shared()
                                             or measurer.shared_now() is not False)
            if shared and target is not None:
                status = gen.measure(target)
                counts["attempts"] += status.startswith("attempt")
                show(target, status)
            elif untraced:
                status = gen.trace(untraced[0])
                counts["traced"] += status.startswith("traced")
                show(untraced[0], status)
            elif waited >= wait_limit_s:
                stopped = (f"the host did not share its last-level cache for {waited:.0f} s "
                           "of looking: resume later")
                break
            else:
                say.phase(f"waiting for the host to share its cache ({waited:.0f} s so far)")
                time.sleep(WAIT_S)
                waited += WAIT_S
        gen.refresh()
        return {"dataset": name, "planned": total, "recorded": len(gen.done),
                "closed": len(gen.closed), "this_run": counts["traced"],
                "attempts_this_run": counts["attempts"], "waited_s": waited,
                "stopped": stopped, "db": str(db)}


def _host_id(store: Store) -> int:
    from ..host.report import host_report
    from ..host.topology import read_topology
    from ..measure.harness.store import host_id

    report = host_report()
    return host_id(store, read_topology(), report.fingerprint(), report.to_dict())


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def export(db: Path, name: str, directory: Path, extra_meta: dict[str, Any] | None = None
           ) -> Dataset:
    """The dataset directory of everything recorded so far: every traced program, labelled
    from the pairs pooled over all its attempts, with each attempt's provenance."""
    with Store.open(db) as store:
        ls = store.learn
        row = ls.find(name)
        settings = Settings.from_dict(row.settings["generator"])
        attempts, closed = ls.attempts(row.id), ls.closed(row.id)
        records = [_pooled_record(store, ProgramRecord.from_dict(r), settings,
                                  attempts.get(r["spec"]["name"], []),
                                  closed.get(r["spec"]["name"]))
                   for r in ls.records(row.id)]
        # The hosts that measured, as the store recorded them: not the host exporting.
        hosts: Counter[tuple[str, str, str, str]] = Counter()
        for rows_ in attempts.values():
            for a in rows_:
                inv = store.get_invocation(a.invocation_id)
                assert inv is not None  # an attempt's invocation is a foreign key
                h = inv.host
                hosts[(h.fingerprint, h.kernel, h.cpu_model, json.dumps(dict(h.info)))] += 1
    pairs: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    rows = [a for r in records for a in r.measure["attempts"]]
    for r in records:
        pairs.update(r.measure["pairs"])
        reasons[(r.measure["closed"] or {}).get("reason", "open")] += 1
    measured = [_host_meta(*key) for key, _ in hosts.most_common()]
    meta = {"name": name, "created": row.created_at, "intercore": __version__,
            "hierarchy": row.settings["hierarchy"], "generator": row.settings["generator"],
            "measurer": row.settings.get("measurer", {}),
            "host": measured[0] if measured else {},
            **({"other_hosts": measured[1:]} if len(measured) > 1 else {}),
            "regimes": dict(pairs),
            "label_regime": settings.label_regime,
            "changes": row.settings.get("changes", []),  # --resume changes to the stop rule
            "attempts": {"total": len(rows), "programs": dict(reasons),
                         "measure_seconds": round(sum(a.get("seconds", 0) for a in rows), 1),
                         "first": min((a["recorded_at"] for a in rows), default=None),
                         "last": max((a["recorded_at"] for a in rows), default=None)},
            **(extra_meta or {})}
    ds = Dataset(meta, records)
    ds.save(directory)
    return ds


def _host_meta(fingerprint: str, kernel: str, cpu: str, info_json: str) -> dict[str, Any]:
    info = json.loads(info_json)
    return {"fingerprint": fingerprint, "arch": info.get("arch"), "kernel": kernel, "cpu": cpu,
            "hypervisor": (info.get("cpu") or {}).get("hypervisor")}


def _pooled_record(store: Store, record: ProgramRecord, settings: Settings,
                   attempts: Sequence[Any], closed: dict[str, Any] | None) -> ProgramRecord:
    ids = [r.id for r in record.spec.regions]
    pooled = pooling.pool(pooling.region_pairs(store.samples_for(a.invocation_id), ids)
                          for a in attempts)
    labels = pooling.labels(pooled, settings.min_pairs, settings.label_regime, settings.seed)
    # A program recorded before attempts existed kept its one attempt's summary in the record.
    rows = [{"attempt": a.attempt, "invocation_id": a.invocation_id,
             "recorded_at": a.recorded_at, **(a.summary or record.measure)} for a in attempts]
    return replace(record, labels=labels,
                   measure={"pairs": pooling.regimes(pooled.get(ids[0], [])),
                            "attempts": rows, "closed": closed})
