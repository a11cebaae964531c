"""Generated programs: what they are (ProgramSpec), how they are drawn from the families, and
how one becomes a binary (render the C templates, compile against the victim kit).

A program holds 2-6 regions of one family, so that splitting the dataset by family never
splits a program. It is an ordinary victim (docs/native-contract.md): `PROG gen --reps N
--sync` runs under the paired harness like `ic-victim`, and its regions carry trace marks.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import subprocess
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable

import jinja2

from ..base.errors import HostUnsupported, InputError, NativeError
from ..base.parse import human_size
from ..base.native import kit_dir
from .families import (ELEMS, FAMILIES, MEMORY_BYTES, MEMORY_MULTIPLE, OPT_LEVELS, PROGRAM_BYTES,
                       TARGET_OPS)
from .hierarchy import MEMORY, Hierarchy

VICTIM_KIND = "gen"  # the one kind a generated program's driver knows
_SHAPE_TRIES = 40


@dataclass(frozen=True)
class RegionSpec:
    id: int
    variant: str
    elem: str
    # Where the working set was drawn to live: a cache level, DRAM beyond the last, "sweep"
    # for the K sweep; `multiple` is its size over that level's (the last level's for DRAM).
    # Datasets drawn before DRAM existed drew a level, then 0.25-8 times its size.
    level: str
    multiple: float
    shape: dict[str, Any]

    @property
    def name(self) -> str:
        return f"{self.variant}-{self.elem}-{human_size(self.shape['bytes']).replace(' ', '')}"


@dataclass(frozen=True)
class ProgramSpec:
    name: str
    family: str
    opt: str
    regions: tuple[RegionSpec, ...]

    @property
    def hash(self) -> str:
        text = json.dumps(self.to_dict(), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "family": self.family, "opt": self.opt,
                "regions": [asdict(r) for r in self.regions]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ProgramSpec:
        return cls(d["name"], d["family"], d["opt"],
                   tuple(RegionSpec(**r) for r in d["regions"]))


# --- drawing -------------------------------------------------------------------------------

def working_set(rng: random.Random, hierarchy: Hierarchy) -> tuple[str, float, int]:
    """(where it lives, multiple, bytes): a level drawn among the cache levels and DRAM,
    then a size log-uniform between the next inner level's and its own (from a quarter
    of L1; DRAM up to MEMORY_MULTIPLE times the last level, or MEMORY_BYTES)."""
    sizes = [lv.size for lv in hierarchy.levels]
    # The shared level and DRAM twice as often as each private level: some families refuse
    # a large shape and draw again, and the private levels barely slow down.
    i = rng.choices(range(len(sizes) + 1), weights=[1] * (len(sizes) - 1) + [2, 2])[0]
    lo = sizes[i - 1] if i else sizes[0] / 4
    hi = sizes[i] if i < len(sizes) else max(min(sizes[-1] * MEMORY_MULTIPLE, MEMORY_BYTES),
                                             2 * sizes[-1])
    nbytes = int(lo * (hi / lo) ** rng.random())
    ref = sizes[min(i, len(sizes) - 1)]
    return (hierarchy.levels[i].name if i < len(sizes) else MEMORY,
            round(nbytes / ref, 4), nbytes)


def _region(rng: random.Random, rid: int, family: str, hierarchy: Hierarchy, room: int
            ) -> RegionSpec:
    """A region whose shape fits the family's budget and `room` bytes of memory."""
    fam = FAMILIES[family]
    for _ in range(_SHAPE_TRIES):
        variant = rng.choice(fam.variants)
        elem = rng.choice(fam.elems)
        level, multiple, nbytes = working_set(rng, hierarchy)
        shape = fam.shape(variant, ELEMS[elem][1], nbytes, rng) \
            if nbytes <= room else None
        if shape:
            return RegionSpec(rid, variant, elem, level, multiple, shape)
    raise RuntimeError(f"family {family}: no region shape fits after {_SHAPE_TRIES} draws")


def _regions(rng: random.Random, family: str, hierarchy: Hierarchy) -> tuple[RegionSpec, ...]:
    out: list[RegionSpec] = []
    for rid in range(1, rng.randint(2, 6) + 1):
        room = PROGRAM_BYTES - sum(r.shape["bytes"] for r in out)
        out.append(_region(rng, rid, family, hierarchy, room))
    return tuple(out)


def check_families(families: Iterable[str]) -> list[str]:
    """The families named, sorted; an unknown one is the user's --families error."""
    names = sorted(families)
    unknown = [f for f in names if f not in FAMILIES]
    if unknown:
        raise InputError(f"unknown kernel families {unknown}; known: {', '.join(FAMILIES)}",
                         field="--families")
    return names


def draw(count: int, hierarchy: Hierarchy, seed: int,
         families: Iterable[str] | None = None) -> list[ProgramSpec]:
    """`count` programs, the families in turn, each with 2-6 regions drawn independently
    (variant x element type x working set, working_set) within PROGRAM_BYTES of memory,
    and one optimisation level. Deterministic for a seed and hierarchy."""
    names = check_families(families) if families else sorted(FAMILIES)
    rng = random.Random(seed)
    out = []
    for i in range(count):
        family = names[i % len(names)]
        out.append(ProgramSpec(f"{family}-{i:04d}", family, rng.choice(list(OPT_LEVELS)),
                               _regions(rng, family, hierarchy)))
    return out


# The paper's Fig. 2 and 5: C[8x8] = A[8xK] B[Kx8] with K swept, int32, six regions a program.
SWEEP_K = tuple(64 << i for i in range(12))


def k_sweep(opt: str = "O2") -> list[ProgramSpec]:
    regions = []
    for i, k in enumerate(SWEEP_K):
        ops, nbytes = 64 * k, 4 * (16 * k + 64)
        regions.append(RegionSpec(i % 6 + 1, "ijk", "u32", "sweep", float(k),
                                  {"n": 8, "m": 8, "k": k, "ops": ops, "bytes": nbytes,
                                   "passes": max(1, round(TARGET_OPS / ops))}))
    return [ProgramSpec(f"matmul-ksweep-{j}", "matmul", opt, tuple(regions[6 * j:6 * j + 6]))
            for j in range(len(regions) // 6)]


# --- building ------------------------------------------------------------------------------

@lru_cache(maxsize=1)
def _templates() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(Path(__file__).with_name("kernels")),
        undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
        keep_trailing_newline=True)


def cflags(opt: str) -> tuple[str, ...]:
    return ("-std=gnu11", "-g", *OPT_LEVELS[opt])


def render(spec: ProgramSpec) -> str:
    regions = []
    for r in spec.regions:
        ctype, _, is_float = ELEMS[r.elem]
        regions.append({"id": r.id, "name": r.name, "variant": r.variant, "ctype": ctype,
                        "is_float": is_float, "describe": f"{r.variant}, {r.elem}, "
                        f"{human_size(r.shape['bytes'])}, {r.shape['passes']} pass(es)",
                        **r.shape})
    return _templates().get_template("program.c.j2").render(
        name=spec.name, family=spec.family, regions=regions, cflags=" ".join(cflags(spec.opt)))


def compiler() -> str:
    cc = os.environ.get("CC", "cc")
    if not shutil.which(cc):
        raise HostUnsupported(f"no C compiler ({cc}) to build the generated kernels; install "
                              "gcc or set CC")
    return cc


def build(spec: ProgramSpec, into: Path) -> Path:
    """Write the program's source and compile it into `into`; returns the executable."""
    kit = kit_dir()
    if not (kit / "lib" / "libicvictimdriver.a").exists():
        raise HostUnsupported(f"the victim kit is missing from {kit}: reinstall intercore")
    into.mkdir(parents=True, exist_ok=True)
    source = into / f"{spec.name}.c"
    exe = into / spec.name
    source.write_text(render(spec))
    cmd = [compiler(), *cflags(spec.opt), "-I", str(kit / "include"), str(source), "-L",
           str(kit / "lib"), "-licvictimdriver", "-liccommon", "-lm", "-o", str(exe)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise NativeError(f"compiling {source} failed:\n{done.stderr.strip()[-2000:]}")
    return exe
