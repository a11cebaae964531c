"""`intercore results merge`: several results stores into one, on the Store API.

What a merge promises:
- **Idempotent.** An invocation is identified by its content (host fingerprint, command, argv,
  start and finish times, status, version, params, summary), never by its row id, so an
  invocation already in the target, or in two of the inputs, is added once; merging the same
  stores again adds nothing. A campaign is identified by its plan hash and creation time, a
  learning dataset by its settings and creation time.
- **Provenance.** Every invocation and campaign brought in gets an origin row (provenance.py):
  the store it was first recorded in and its id there, carried on through later merges. Hosts
  keep their fingerprints, campaign runs and samples their invocation.
- **Any schema version.** Each input is read into memory and migrated there
  (Store.snapshot); no input file is changed.
- **All or nothing.** Everything is checked before the target is touched, the merged store is
  written to a temporary file beside the target and renamed over it at the end; a refused or
  interrupted merge leaves the target as it was and no temporary file.

The target, when it exists, is merged into (its rows keep their ids), so `merge A B -o all`
run twice gives the same store. The same campaign name with another campaign behind it (the
same campaign file run on another host into another store) is renamed NAME@STORE, STORE
being the input file's stem; the report compares such campaigns host by host. A dataset
name taken by another dataset is renamed the same way.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Sequence, TypeVar

from ..base import outputs
from ..base.errors import InputError
from .bandwidth import ProfileAttachment
from .campaigns import CampaignRow, RunAttachment, RunRow
from .db import Attachment, Store
from .jobs import JobRun, JobsAttachment
from .learn import DatasetRow
from .provenance import OriginAttachment
from .records import InvocationRecord, StoredInvocation, WorkloadRecord
from .validation import ValidationAttachment

# Every table a merge carries; a table of the schema that is not here would be dropped, so a
# store holding rows in one is refused (tests/store/test_store_merge.py keeps this complete).
CARRIED = frozenset({
    "hosts", "invocations", "workloads", "samples", "counters", "jobs",
    "model_validations", "model_verdicts", "campaigns", "campaign_runs", "bw_profiles",
    "named_sets", "learn_datasets", "learn_programs", "learn_attempts", "invocation_origins",
    "campaign_origins",
})

Progress = Callable[[str, int, int], None]  # (store, invocations done, of total)


def content_key(inv: StoredInvocation) -> str:
    """What identifies an invocation in any store: everything it recorded but its row ids."""
    doc = [inv.host.fingerprint, inv.command, list(inv.argv), inv.started_at.isoformat(),
           inv.finished_at.isoformat(), inv.status, inv.tool_version, inv.params, inv.summary]
    return hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()


def _campaign_key(row: CampaignRow) -> tuple[str, str]:
    return row.plan_hash, row.created_at.isoformat()


def _dataset_key(row: DatasetRow) -> tuple[str, str]:
    return json.dumps(row.settings, sort_keys=True), row.created_at


@dataclass
class StoreMerged:
    """What one input added to the target."""

    path: str
    schema_version: int           # the file's, before it was migrated in memory
    invocations: int = 0          # added
    already: int = 0              # in the target, or an earlier input, already
    samples: int = 0              # added with the invocations
    campaigns: int = 0            # added
    renamed: dict[str, str] = field(default_factory=dict)  # name there -> name in the target
    skipped_runs: int = 0         # added
    datasets: int = 0             # learning datasets added
    renamed_datasets: dict[str, str] = field(default_factory=dict)


@dataclass
class MergeResult:
    target: str
    existed: bool                 # merged into an existing store
    stores: list[StoreMerged]
    invocations: int = 0          # in the merged store
    campaigns: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def merge(inputs: Sequence[Path], target: Path, progress: Progress | None = None
          ) -> MergeResult:
    """Merge `inputs` into `target` (created, or merged into when it exists). Every input is
    checked before anything is written; then each is read again, one at a time."""
    if not inputs:
        raise InputError("give at least one store to merge", field="STORES")
    target = Path(target)
    for path in map(Path, inputs):
        if not path.exists():  # the output itself among them too: it is no store yet
            raise InputError("no results store here", source=str(path))
    existed = target.exists()
    sources: list[Path] = []
    for path in map(Path, inputs):
        if path.resolve() != target.resolve() and \
                path.resolve() not in {p.resolve() for p in sources}:
            sources.append(path)
    versions = {}
    for path in ([target] if existed else []) + sources:
        with Store.snapshot(path) as snap:
            _check_carried(snap)
            versions[path] = snap.found_version
    if existed:
        _check_unused(target)
    result = MergeResult(str(target), existed, [StoreMerged(str(p), versions[p])
                                                for p in sources])
    _write(target, existed, sources, result, progress)
    return result


def _check_carried(snap: Store) -> None:
    for table in sorted(snap.tables_with_rows() - CARRIED):
        raise InputError(f"holds rows in table {table}, which this release cannot merge",
                         source=str(snap.path))


def _check_unused(target: Path) -> None:
    """The target is renamed over: refuse one that another process has open, whose connection
    would go on writing into the replaced file (its -wal would then belong to the new one)."""
    wal = Path(f"{target}-wal")
    if wal.exists() and wal.stat().st_size > 0:
        raise InputError(f"{target} is open in another process (its write-ahead log {wal.name} "
                         "is in use); merge into it when nothing writes to it, or choose "
                         "another -o", field="--output")


def _write(target: Path, existed: bool, sources: Sequence[Path], result: MergeResult,
           progress: Progress | None) -> None:
    with outputs.replacing(target) as temp:
        try:
            if existed:
                with Store.snapshot(target) as base:
                    base.save_as(temp)
            with Store.open(temp) as out:
                merger = _Merger(out)
                for path, report in zip(sources, result.stores):
                    with Store.snapshot(path) as src:
                        merger.merge(src, str(path.resolve()), path.stem, report, progress)
                result.invocations = len(merger.seen)
                result.campaigns = len(out.campaigns.all())
            # Closing the last connection checkpointed the WAL into the file and removed it.
            with open(temp, "rb") as f:
                os.fsync(f.fileno())
        finally:
            for leftover in (Path(f"{temp}-wal"), Path(f"{temp}-shm")):
                leftover.unlink(missing_ok=True)
    _fsync_dir(target.absolute().parent)


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class _Merger:
    """Merges stores into `out` one after the other, remembering what `out` holds."""

    def __init__(self, out: Store) -> None:
        self.out = out
        self.seen = {content_key(inv): inv.id for inv in out.invocations()}
        self._slots: dict[int, dict[tuple[str, int], RunRow]] = {}
        self._programs: dict[int, set[str]] = {}
        self._attempts: dict[int, set[tuple[str, int]]] = {}

    def slots(self, campaign_id: int) -> dict[tuple[str, int], RunRow]:
        if campaign_id not in self._slots:
            self._slots[campaign_id] = {(r.setup, r.round): r
                                        for r in self.out.campaigns.runs(campaign_id)}
        return self._slots[campaign_id]

    def merge(self, src: Store, origin: str, stem: str, report: StoreMerged,
              progress: Progress | None) -> None:
        campaigns = self._campaigns(src, origin, stem, report)
        datasets = self._datasets(src, stem, report)
        runs: dict[int, tuple[CampaignRow, RunRow]] = {}
        skipped: list[tuple[CampaignRow, RunRow]] = []
        for row in src.campaigns.all():
            for run in src.campaigns.runs(row.id):
                if run.invocation_id is None:
                    skipped.append((campaigns[row.id], run))
                else:
                    runs[run.invocation_id] = (campaigns[row.id], run)
        invocations = list(src.invocations())
        for done, inv in enumerate(invocations, 1):
            key = content_key(inv)
            if key in self.seen:
                report.already += 1
            else:
                self.seen[key] = self._invocation(src, inv, runs.get(inv.id), datasets, origin,
                                                  report)
                report.invocations += 1
            if progress is not None:
                progress(origin, done, len(invocations))
        for row, run in skipped:
            report.skipped_runs += self._skipped(row, run, origin)
        for source_id, dataset in datasets.items():
            # a program closed in the source is closed in the target (the first close stands)
            for program, closed in src.learn.closed(source_id).items():
                self.out.learn.close(dataset.id, program, closed)
        for named in src.named_sets.all():
            host = src.host(named.fingerprint)
            assert host is not None  # the foreign key guarantees it
            searched = src.get_invocation(named.invocation_id) \
                if named.invocation_id is not None else None
            self.out.named_sets.save(
                named.name, self._host(host), named.spec,
                None if searched is None else self.seen.get(content_key(searched)),
                named.evidence, named.created_at)

    def _host(self, h: Any) -> int:
        return self.out.ensure_host(h.fingerprint, h.hostname, h.kernel, h.cpu_model, h.ncpus,
                                    dict(h.info))

    def _campaigns(self, src: Store, origin: str, stem: str, report: StoreMerged
                   ) -> dict[int, CampaignRow]:
        """Each campaign of `src` as one of the target (_adopt), a new one with its origin."""
        def create(row: CampaignRow, name: str) -> CampaignRow:
            made = self.out.campaigns.create(name, row.source, row.source_text, row.plan,
                                             row.schedule, row.options,
                                             created_at=row.created_at)
            first = src.origins.of_campaign(row.id)
            self.out.origins.add_campaign(made.id, first.store if first else origin,
                                          first.origin_id if first else row.id,
                                          first.origin_name if first else row.name)
            return made

        mapped, added, renamed = _adopt(self.out.campaigns.all(), src.campaigns.all(),
                                        _campaign_key, stem, create)
        report.campaigns += added
        report.renamed.update(renamed)
        return mapped

    def _datasets(self, src: Store, stem: str, report: StoreMerged) -> dict[int, DatasetRow]:
        """Each learning dataset of `src` as one of the target (_adopt)."""
        mapped, added, renamed = _adopt(
            self.out.learn.all(), src.learn.all(), _dataset_key, stem,
            lambda row, name: self.out.learn.create(name, row.settings, row.programs,
                                                    row.created_at))
        report.datasets += added
        report.renamed_datasets.update(renamed)
        return mapped

    def _invocation(self, src: Store, inv: StoredInvocation,
                    run: tuple[CampaignRow, RunRow] | None, datasets: dict[int, DatasetRow],
                    origin: str, report: StoreMerged) -> int:
        workloads = src.workloads_for(inv.id)
        index = {w.id: i for i, w in enumerate(workloads)}
        records = [WorkloadRecord(w.role, w.name, w.kind, w.params,  # type: ignore[arg-type]
                                  w.cpu, w.stats) for w in workloads]
        samples = [replace(s, victim=index[s.victim]) for s in src.samples_for(inv.id)]
        attachments: list[Attachment] = []
        job_runs = src.jobs.runs(inv.id)
        if job_runs:
            attachments.append(JobsAttachment([JobRun(r.label, index[r.task], r.deadline_ns,
                                                      r.jobs) for r in job_runs]))
        validation = src.validations.of_invocation(inv.id)
        if validation is not None:
            attachments.append(ValidationAttachment(validation.header, [
                replace(v, victim=index[v.victim]) for v in validation.verdicts]))
        profile = src.profiles.of_invocation(inv.id)
        if profile is not None:
            attachments.append(ProfileAttachment(profile))
        if run is not None:
            row, r = run
            slots = self.slots(row.id)
            if (r.setup, r.round) in slots:
                raise _slot_conflict(row, r, origin)
            attachments.append(RunAttachment(row.id, r.setup, r.setup_hash, r.round,
                                             r.recorded_at))
        program = src.learn.program_of(inv.id)
        if program is not None:
            dataset = datasets[program.dataset_id]
            done = self._programs.setdefault(dataset.id, set(self.out.learn.done(dataset.id)))
            if program.program in done:
                raise InputError(f"dataset {dataset.name!r}: program {program.program} is "
                                 "recorded by another run in the target or an earlier store; "
                                 "merge will not choose between them", source=origin)
            done.add(program.program)
            attachments.append(replace(program, dataset_id=dataset.id))
        attempt = src.learn.attempt_of(inv.id)
        if attempt is not None:
            dataset = datasets[attempt.dataset_id]
            made = self._attempts.setdefault(dataset.id, {
                (a.program, a.attempt) for rows in self.out.learn.attempts(dataset.id).values()
                for a in rows})
            if (attempt.program, attempt.attempt) in made:
                raise InputError(f"dataset {dataset.name!r}: attempt {attempt.attempt} at "
                                 f"program {attempt.program} is recorded by another run in the "
                                 "target or an earlier store; merge will not choose between "
                                 "them", source=origin)
            made.add((attempt.program, attempt.attempt))
            attachments.append(replace(attempt, dataset_id=dataset.id))
        first = src.origins.of_invocation(inv.id)
        attachments.append(OriginAttachment(first.store, first.origin_id) if first
                           else OriginAttachment(origin, inv.id))
        record = InvocationRecord(self._host(inv.host), inv.command, inv.argv, inv.started_at,
                                  inv.finished_at, inv.tool_version, inv.params, inv.summary,
                                  inv.status)  # type: ignore[arg-type]
        invocation_id = self.out.record(record, records, samples, attachments=attachments)
        if run is not None:
            self.slots(run[0].id)[(run[1].setup, run[1].round)] = \
                replace(run[1], invocation_id=invocation_id)
        report.samples += len(samples)
        return invocation_id

    def _skipped(self, row: CampaignRow, run: RunRow, origin: str) -> int:
        there = self.slots(row.id).get((run.setup, run.round))
        if there is not None:
            if (there.status, there.setup_hash, there.reason) != \
                    (run.status, run.setup_hash, run.reason):
                raise _slot_conflict(row, run, origin)
            return 0
        self.out.campaigns.record_skipped(row.id, run.setup, run.setup_hash, run.round,
                                          run.reason or "", recorded_at=run.recorded_at)
        self.slots(row.id)[(run.setup, run.round)] = run
        return 1


Named = TypeVar("Named", CampaignRow, DatasetRow)


def _adopt(have: Sequence[Named], rows: Sequence[Named], key: Callable[[Named], Any],
           stem: str, create: Callable[[Named, str], Named]
           ) -> tuple[dict[int, Named], int, dict[str, str]]:
    """Each of `rows` (a source's campaigns or datasets) as a row of the target: the one with
    the same key when the target has it (`have`), else `create(row, name)`, renamed
    NAME@STEM when its name is taken. Returns {source id: target row}, how many were made,
    and {name there: name in the target} of the renamed."""
    by_key = {key(r): r for r in have}
    mapped: dict[int, Named] = {}
    made, renamed = 0, {}
    for row in rows:
        found = by_key.get(key(row))
        if found is None:
            name = _free_name({r.name for r in by_key.values()}, row.name, stem)
            found = by_key[key(row)] = create(row, name)
            made += 1
            if name != row.name:
                renamed[row.name] = name
        mapped[row.id] = found
    return mapped, made, renamed


def _free_name(taken: set[str], name: str, stem: str) -> str:
    if name not in taken:
        return name
    candidate, n = f"{name}@{stem}", 2
    while candidate in taken:
        candidate, n = f"{name}@{stem}.{n}", n + 1
    return candidate


def _slot_conflict(row: CampaignRow, run: RunRow, origin: str) -> InputError:
    return InputError(f"campaign {row.name!r}: round {run.round} of setup {run.setup} is "
                      "recorded by another run in the target or an earlier store (a copy of "
                      "one store resumed in two places?); merge will not choose between them",
                      source=origin)
