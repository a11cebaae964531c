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

from ..errors import HostUnsupported, InputError, NativeError
from ..host.parse import human_size
from ..native import kit_dir
from .families import ELEMS, FAMILIES, OPT_LEVELS, TARGET_OPS, WS_MULTIPLES
from .hierarchy import Hierarchy

VICTIM_KIND = "gen"  # the one kind a generated program's driver knows
_SHAPE_TRIES = 40


@dataclass(frozen=True)
class RegionSpec:
    id: int
    variant: str
    elem: str
    level: str  # the cache level the working set was drawn against ("sweep" for sweeps)
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

def _region(rng: random.Random, rid: int, family: str, hierarchy: Hierarchy) -> RegionSpec:
    fam = FAMILIES[family]
    for _ in range(_SHAPE_TRIES):
        variant = rng.choice(fam.variants)
        elem = rng.choice(fam.elems)
        level = rng.choice(hierarchy.levels)
        multiple = rng.choice(WS_MULTIPLES)
        shape = fam.shape(variant, ELEMS[elem][1], int(level.size * multiple), rng)
        if shape:
            return RegionSpec(rid, variant, elem, level.name, multiple, shape)
    raise RuntimeError(f"family {family}: no region shape fits after {_SHAPE_TRIES} draws")


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
    (variant x element type x working set against a cache level) and one optimisation
    level. Deterministic for a seed and hierarchy."""
    names = check_families(families) if families else sorted(FAMILIES)
    rng = random.Random(seed)
    out = []
    for i in range(count):
        family = names[i % len(names)]
        regions = tuple(_region(rng, r + 1, family, hierarchy)
                        for r in range(rng.randint(2, 6)))
        out.append(ProgramSpec(f"{family}-{i:04d}", family, rng.choice(list(OPT_LEVELS)),
                               regions))
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
