"""`learn dataset`: draw programs, then for each one, in a stored order: build it, trace it,
measure its regions with the paired harness, and record features, labels and raw samples in
one transaction. Resumable like a campaign (learn/store.py); `export` writes the dataset
directory that training reads.

Labels come from the samples whose host regime is `shared` (the canary saw the victim's and
the aggressors' CPUs share the last-level cache): a region with fewer than `min_pairs` such
pairs gets no label, and the dataset records how many pairs each regime had.
"""

from __future__ import annotations

import fcntl
import hashlib
import sys
from collections import Counter
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterator, Protocol, Sequence

from .. import __version__
from ..errors import InputError
from ..measure.persist import utc
from ..store import Store
from ..store.learn import ProgramAttachment, ProgramTaken
from ..store.records import InvocationRecord
from .dataset import Dataset, Label, ProgramRecord, make_label
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
    pairs: int = 40              # paired repetitions per program at most (adaptive above 12)
    min_pairs: int = 10          # shared-regime pairs a region needs for a label
    aggressor: str = "BwWrite(LLC)"
    victim_cpu: int | None = None
    label_regime: str = LABEL_REGIME  # "any" only for smoke tests: not evidence

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Settings:
        return cls(**{**d, "families": tuple(d.get("families", ()))})


def program_seed(seed: int, program: str) -> int:
    """Seed of one program's measurement (pair order, aggressor placement draws): stable."""
    digest = hashlib.sha256(f"{seed}/{program}".encode()).digest()
    return int.from_bytes(digest[:4], "little") & 0x7FFFFFFF


@contextmanager
def exclusive(db: Path) -> Iterator[None]:
    """One dataset generation per store at a time: two would measure under each other's load
    and race for the same programs. The lock dies with its process, SIGKILL included."""
    db.parent.mkdir(parents=True, exist_ok=True)
    with open(db.with_name(db.name + ".learn.lock"), "a+") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise InputError(f"another `learn dataset` is generating into {db}; wait for it "
                             "or stop it first", field="--db") from None
        yield


def plan(settings: Settings, hierarchy: Hierarchy) -> list[ProgramSpec]:
    specs = draw(settings.programs, hierarchy, settings.seed, settings.families or None)
    if settings.sweep and (not settings.families or "matmul" in settings.families):
        specs += k_sweep()
    return specs


@dataclass
class Measured:
    """What measuring one program produced: store records plus labels per region."""

    workloads: list
    samples: list
    labels: dict[int, Label]
    pairs: dict[str, int]
    started_at: float
    finished_at: float
    info: dict[str, Any] = field(default_factory=dict)


class Measurer(Protocol):
    def describe(self) -> dict[str, Any]: ...

    def measure(self, exe: Path, spec: ProgramSpec, settings: Settings) -> Measured: ...


def labels_from(samples: Sequence[Any], region_ids: Sequence[int], min_pairs: int,
                seed: int = 0, regime: str = LABEL_REGIME
                ) -> tuple[dict[int, Label], dict[str, int]]:
    """Labels from raw samples (measure/sample.py): per region, the pairs whose iso and int
    halves both ran in `regime` ("any": every pair)."""
    want = regime
    labels: dict[int, Label] = {}
    pairs_by_regime: Counter[str] = Counter()
    for rid in region_ids:
        iso = {s.pair: s for s in samples if s.region == rid and s.condition == "iso"}
        intf = {s.pair: s for s in samples if s.region == rid and s.condition == "int"}
        both = sorted(set(iso) & set(intf))
        regimes: Counter[str] = Counter()
        kept = []
        for p in both:
            seen = iso[p].regime if iso[p].regime == intf[p].regime else "mixed"
            regimes[seen or "unknown"] += 1
            if seen == want or want == "any":
                kept.append(p)
        if rid == region_ids[0]:
            pairs_by_regime.update(regimes)
        if len(kept) >= min_pairs:
            labels[rid] = make_label([iso[p].cpu_ns for p in kept],
                                     [intf[p].cpu_ns for p in kept], want, dict(regimes),
                                     seed=seed)
    return labels, dict(pairs_by_regime)


class Listener(Protocol):
    def phase(self, text: str) -> None: ...

    def program(self, done: int, total: int, name: str, status: str) -> None: ...


class _Silent:
    def phase(self, text: str) -> None:
        pass

    def program(self, done: int, total: int, name: str, status: str) -> None:
        pass


def run(db: Path, name: str, hierarchy: Hierarchy, settings: Settings | None,
        measurer: Measurer, workdir: Path, *, resume: bool = False,
        listener: Listener | None = None, limit: int | None = None) -> dict[str, Any]:
    """Start (settings given) or resume the dataset `name` in the store at `db`; runs the
    programs not yet recorded, at most `limit` of them."""
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
        else:
            assert settings is not None
            specs = plan(settings, hierarchy)
            row = ls.create(name, {"generator": settings.to_dict(),
                                   "hierarchy": hierarchy.to_dict(),
                                   "measurer": measurer.describe()},
                            [s.to_dict() for s in specs])
        done = ls.done(row.id)
        programs = [ProgramSpec.from_dict(p) for p in row.programs]
        todo = [s for s in programs if s.name not in done]
        if limit is not None:
            todo = todo[:limit]
        host_id = _host_id(store)
        recorded = failed = 0
        total = len(row.programs)
        say.phase(f"dataset {name}: {len(done)} of {total} programs recorded")
        for spec in todo:
            status = _one(store, row.id, spec, settings, hierarchy, measurer, workdir, host_id,
                          say)
            recorded += status == "done"
            failed += status == "failed"
            say.program(len(done) + recorded + failed, total, spec.name, status)
        return {"dataset": name, "planned": total, "recorded": len(done) + recorded,
                "this_run": recorded, "failed": failed, "db": str(db)}


def _host_id(store: Store) -> int:
    from ..host.report import host_report
    from ..host.topology import read_topology
    from ..measure.persist import host_id

    report = host_report()
    return host_id(store, read_topology(), report.fingerprint(), report.to_dict())


def _one(store: Store, dataset_id: int, spec: ProgramSpec, settings: Settings,
         hierarchy: Hierarchy, measurer: Measurer, workdir: Path, host_id: int,
         say: Listener) -> str:
    say.phase(f"{spec.name}: build")
    exe = build(spec, workdir)
    say.phase(f"{spec.name}: trace")
    regions, t = extract(victim_argv(exe), hierarchy, skip=1, include_total=False)
    say.phase(f"{spec.name}: measure")
    m = measurer.measure(exe, spec, settings)
    record = ProgramRecord(spec, tuple(regions), m.labels,
                           {"records": t.records, "seconds": t.seconds,
                            "cpu_seconds": t.cpu_seconds},
                           {**m.info, "pairs": m.pairs})
    invocation = InvocationRecord(
        host_id, "learn dataset", tuple(sys.argv), utc(m.started_at), utc(m.finished_at),
        __version__, params={"program": spec.to_dict(), "settings": settings.to_dict()},
        summary={"pairs": m.pairs, "labelled": sorted(m.labels)})
    try:
        store.record(invocation, m.workloads, m.samples,
                     attachments=[ProgramAttachment(dataset_id, spec.name, spec.hash,
                                                    record.to_dict())])
    except ProgramTaken:  # another process finished this program first
        return "already"
    return "done"


def export(db: Path, name: str, directory: Path, extra_meta: dict[str, Any] | None = None
           ) -> Dataset:
    """The dataset directory of everything recorded so far."""
    from ..host.report import host_report

    with Store.open(db) as store:
        row = store.learn.find(name)
        records = [ProgramRecord.from_dict(r) for r in store.learn.records(row.id)]
    pairs: Counter[str] = Counter()
    for r in records:
        pairs.update(r.measure.get("pairs", {}))
    report = host_report()
    info = report.to_dict()
    meta = {"name": name, "created": row.created_at, "intercore": __version__,
            "hierarchy": row.settings["hierarchy"], "generator": row.settings["generator"],
            "measurer": row.settings.get("measurer", {}),
            "host": {"fingerprint": report.fingerprint(), "arch": info["arch"],
                     "kernel": info["kernel_release"], "cpu": info["cpu"]["model_name"],
                     "hypervisor": info["cpu"]["hypervisor"]},
            "regimes": dict(pairs),
            "label_regime": row.settings["generator"].get("label_regime", LABEL_REGIME),
            **(extra_meta or {})}
    ds = Dataset(meta, records)
    ds.save(directory)
    return ds
