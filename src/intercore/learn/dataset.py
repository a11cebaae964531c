"""A learning dataset on disk: features of every region of every generated program, the
labels measured for them, and the provenance a reader needs to trust both.

    DIR/dataset.json       provenance: host, cache hierarchy, seed, harness design, regime
                           counts, generator parameters, the hash of programs.jsonl.gz
    DIR/programs.jsonl.gz  one program per line: its spec, its regions' features, and per
                           region the label and the raw paired times it came from

Everything a model is trained or evaluated on comes through `load`, which checks the file
against its hash and names file:line:field on anything malformed.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

import numpy as np

from ..base import outputs, yamlfile
from ..base.errors import InputError
from .features import RegionFeatures
from .hierarchy import Hierarchy
from .programs import ProgramSpec

FORMAT = 1
META = "dataset.json"
PROGRAMS = "programs.jsonl.gz"
# The nearest-rank percentile of T_int that defines the safe slowdown (the maximum below 100
# pairs).
SAFE_PERCENTILE = 99.0


@dataclass(frozen=True)
class Label:
    """What the paired harness measured for one region, restricted to one host regime.

    delta = median(T_int) / median(T_iso) over n pairs; delta_safe = the SAFE_PERCENTILE-th
    nearest-rank T_int over median(T_iso); `pairs` counts every pair per regime, kept or not.
    """

    n: int
    delta: float
    delta_ci: tuple[float, float]
    delta_safe: float
    iso_median_ns: float
    regime: str
    pairs: dict[str, int]
    iso_ns: tuple[float, ...] = field(default=(), repr=False)
    int_ns: tuple[float, ...] = field(default=(), repr=False)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["delta_ci"] = list(self.delta_ci)
        d["iso_ns"], d["int_ns"] = list(self.iso_ns), list(self.int_ns)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Label:
        return cls(int(d["n"]), float(d["delta"]), (float(d["delta_ci"][0]),
                                                      float(d["delta_ci"][1])),
                   float(d["delta_safe"]), float(d["iso_median_ns"]), str(d["regime"]),
                   {str(k): int(v) for k, v in d["pairs"].items()},
                   tuple(float(x) for x in d.get("iso_ns", ())),
                   tuple(float(x) for x in d.get("int_ns", ())))


def make_label(iso_ns: Iterable[float], int_ns: Iterable[float], regime: str,
               pairs: dict[str, int], *, seed: int = 0) -> Label:
    """A label from paired times of one regime (element i of both is one pair)."""
    from ..measure.harness.stats import bootstrap_delta_ci, delta

    iso = np.asarray(list(iso_ns), dtype=float)
    intf = np.asarray(list(int_ns), dtype=float)
    med_iso = float(np.median(iso))
    safe = float(np.percentile(intf, SAFE_PERCENTILE, method="higher")) / med_iso
    ci = bootstrap_delta_ci(iso, intf, seed=seed) if iso.size >= 3 else (math.nan, math.nan)
    return Label(int(iso.size), delta(iso, intf), (float(ci[0]), float(ci[1])), safe, med_iso,
                 regime, dict(pairs), tuple(iso.tolist()), tuple(intf.tolist()))


@dataclass(frozen=True)
class ProgramRecord:
    spec: ProgramSpec
    regions: tuple[RegionFeatures, ...]
    labels: dict[int, Label]  # by region id; a region without a usable label is absent
    trace: dict[str, Any] = field(default_factory=dict)  # records, seconds, ...
    measure: dict[str, Any] = field(default_factory=dict)  # invocation, aggressor, regimes

    def to_dict(self) -> dict[str, Any]:
        return {"spec": self.spec.to_dict(), "regions": [r.to_dict() for r in self.regions],
                "labels": {str(k): v.to_dict() for k, v in sorted(self.labels.items())},
                "trace": self.trace, "measure": self.measure}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ProgramRecord:
        return cls(ProgramSpec.from_dict(d["spec"]),
                   tuple(RegionFeatures.from_dict(r) for r in d["regions"]),
                   {int(k): Label.from_dict(v) for k, v in d["labels"].items()},
                   d.get("trace", {}), d.get("measure", {}))


@dataclass(frozen=True)
class Example:
    """One labelled region, as models see it."""

    program: str
    family: str
    opt: str
    region: RegionFeatures
    label: Label

    @property
    def key(self) -> str:
        return f"{self.program}/{self.region.region}"


@dataclass
class Dataset:
    meta: dict[str, Any]
    programs: list[ProgramRecord]
    path: Path | None = None

    @property
    def hierarchy(self) -> Hierarchy:
        return Hierarchy.from_dict(self.meta["hierarchy"])

    @property
    def hash(self) -> str:
        return self.meta.get("programs_sha256", "")[:16]

    def examples(self) -> list[Example]:
        out = []
        for p in self.programs:
            for r in p.regions:
                label = p.labels.get(r.region)
                if label is not None:
                    out.append(Example(p.spec.name, p.spec.family, p.spec.opt, r, label))
        return out

    def families(self) -> list[str]:
        return sorted({p.spec.family for p in self.programs})

    def labelled_for(self) -> dict[str, str]:
        """What a prediction from these labels is for: the host regime the labels were
        taken in, the class of host they were measured on and the aggressor set."""
        host = self.meta.get("host", {})
        cls = " ".join(str(host[k]) for k in ("arch", "cpu") if host.get(k))
        if host.get("hypervisor"):
            cls += f" ({host['hypervisor']} guest)"
        regime = self.meta.get("label_regime", "unknown")
        return {"regime": {"any": "every regime (labels not restricted)"}.get(
                    regime, f"the {regime} regime"),
                "host": f"{cls or 'an unrecorded host'}, {self.hierarchy.describe()}",
                "aggressor": self.meta.get("measurer", {}).get("aggressor", {}).get(
                    "label", self.meta.get("generator", {}).get("aggressor", "unrecorded"))}

    def summary(self) -> dict[str, Any]:
        ex = self.examples()
        return {"programs": len(self.programs),
                "regions": sum(len(p.regions) for p in self.programs),
                "labelled_regions": len(ex), "families": self.families(),
                "hash": self.hash, "host": self.meta.get("host", {}),
                "hierarchy": self.hierarchy.describe(),
                "regimes": self.meta.get("regimes", {}),
                "attempts": self.meta.get("attempts", {}).get("total"),
                "closed_by": self.meta.get("attempts", {}).get("programs", {})}

    # --- files --------------------------------------------------------------------------

    def save(self, directory: Path) -> None:
        """Write both files; the programs first, so the provenance names their hash."""
        directory.mkdir(parents=True, exist_ok=True)
        # No time or file name in the gzip header: the same dataset exported twice is the same
        # bytes, so its hash names its content (a shipped dataset re-exported reads as unchanged).
        with outputs.replacing(directory / PROGRAMS) as tmp:
            with open(tmp, "wb") as raw, \
                    gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=9,
                                  mtime=0) as gz, \
                    io.TextIOWrapper(gz, encoding="utf-8") as f:
                for p in self.programs:
                    f.write(json.dumps(p.to_dict(), separators=(",", ":")) + "\n")
            digest = _sha256(tmp)
        self.meta = {**self.meta, "format": FORMAT, "programs_sha256": digest,
                     "program_count": len(self.programs),
                     "region_count": sum(len(p.regions) for p in self.programs),
                     "labelled_regions": len(self.examples())}
        text = json.dumps(self.meta, indent=2, sort_keys=True) + "\n"
        outputs.write_text(directory / META, text)
        self.path = directory


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def load(directory: Path) -> Dataset:
    directory = Path(directory)
    meta_path = directory / META
    if not meta_path.is_file():
        raise InputError(f"no {META} here: not a dataset directory (make one with "
                         "`intercore learn dataset`)", source=str(directory))
    meta = yamlfile.read_json(meta_path).data
    if not isinstance(meta, dict):
        raise InputError("not a JSON object", source=str(meta_path))
    for key in ("format", "hierarchy", "programs_sha256"):
        if key not in meta:
            raise InputError("missing", source=str(meta_path), field=key)
    if meta["format"] != FORMAT:
        raise InputError(f"format {meta['format']}, this intercore reads {FORMAT}",
                         source=str(meta_path), field="format")
    try:
        Hierarchy.from_dict(meta["hierarchy"])
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"malformed ({exc})", source=str(meta_path), field="hierarchy") from None
    programs_path = directory / PROGRAMS
    if not programs_path.is_file():
        raise InputError("missing", source=str(programs_path))
    if _sha256(programs_path) != meta["programs_sha256"]:
        raise InputError(f"does not match the hash in {META}: the file was changed or "
                         "truncated", source=str(programs_path))
    return Dataset(meta, list(_read_programs(programs_path)), directory)


def _read_programs(path: Path) -> Iterator[ProgramRecord]:
    try:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            # A line at a time, each held to the loader's bounds (a line of 1 MiB at most is
            # read: a gzip bomb without newlines is refused, not held in memory).
            for number, line in enumerate(iter(lambda: f.readline(yamlfile.MAX_BYTES + 1),
                                               ""), 1):
                try:
                    yield ProgramRecord.from_dict(yamlfile.json_value(line, str(path),
                                                                      line=number))
                except KeyError as exc:
                    raise InputError("missing", source=str(path), line=number,
                                     field=str(exc.args[0])) from None
                except (TypeError, AttributeError) as exc:
                    raise InputError(f"malformed record ({exc})", source=str(path),
                                     line=number) from None
    except (OSError, EOFError, gzip.BadGzipFile, UnicodeDecodeError) as exc:
        raise InputError(f"unreadable ({exc})", source=str(path)) from None


# --- splits ----------------------------------------------------------------------------------

def split_by_family(examples: list[Example], test: Iterable[str]
                    ) -> tuple[list[Example], list[Example]]:
    """Train on every family but `test`: a program, and so every region of it, is wholly on
    one side."""
    test = set(test)
    return [e for e in examples if e.family not in test], [e for e in examples
                                                           if e.family in test]


def family_folds(families: list[str], k: int, seed: int = 0) -> list[list[str]]:
    """Families dealt into k groups, reproducibly."""
    import random

    order = sorted(families)
    random.Random(seed).shuffle(order)
    return [sorted(order[i::k]) for i in range(k)]
