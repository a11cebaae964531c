"""What the native tools can run, asked from the tools themselves (`--list`), and victim specs.

The option tables live once, in C; Python reads them instead of keeping a second copy.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from functools import lru_cache

from ...base.errors import InputError, NativeError
from ...base.native import tool
from ..harness.paired import VictimSpec
from .presets import PRESETS, Footprints
from ...base.units import size_arg, workload_size

# Named victim configurations from the papers.
ALIASES: dict[str, VictimSpec] = {
    # paper 000 §4.4: the matrix multiply of the Solo / Interference / Protected experiment
    "matrix1": VictimSpec("matmul", (("n", "256"), ("k", "4096"), ("m", "9")), "matrix1"),
}


@dataclass(frozen=True)
class Option:
    name: str
    type: str
    default: object
    min: object
    max: object
    help: str
    choices: tuple[str, ...] = ()


@dataclass(frozen=True)
class Kind:
    name: str
    help: str
    options: tuple[Option, ...]
    regions: tuple[str, ...]

    def option(self, name: str) -> Option | None:
        return next((o for o in self.options if o.name == name), None)

    def to_dict(self) -> dict:
        d = {"name": self.name, "help": self.help,
             "options": [o.__dict__ for o in self.options]}
        if self.regions:
            d["regions"] = list(self.regions)
        return d


@lru_cache(maxsize=2)
def kinds(binary: str) -> dict[str, Kind]:
    proc = subprocess.run([str(tool(binary)), "--list"], capture_output=True, text=True,
                          timeout=30)
    if proc.returncode != 0:
        raise NativeError(f"{binary} --list failed: {proc.stderr.strip()}")
    out = {}
    for line in proc.stdout.splitlines():
        d = json.loads(line)
        opts = tuple(Option(o["name"], o.get("type", ""), o.get("default"), o.get("min"),
                            o.get("max"), o.get("help", ""), tuple(o.get("choices") or ()))
                     for o in d.get("options", []))
        out[d["kind"]] = Kind(d["kind"], d.get("help", ""), opts, tuple(d.get("regions", [])))
    return out


def catalog() -> dict:
    return {
        "aggressors": [k.to_dict() for k in kinds("ic-aggr").values()],
        "victims": [k.to_dict() for k in kinds("ic-victim").values()],
        "presets": [{"name": n, "kind": k, "op": op, "target": t}
                    for n, (k, op, t) in PRESETS.items()],
        "aliases": [{"name": n, **v.to_dict()} for n, v in ALIASES.items()],
    }


# Options the harness sets itself; a user giving them as victim parameters is a mistake.
HARNESS_OPTIONS = {"cpu", "reps", "sync", "seed", "rt-priority", "mlock"}


def parse_victim(text: str, params: list[str], fp: Footprints) -> VictimSpec:
    """`matmul`, `matrix1`, `ptrchase:size=8M` plus `-p key=value` items, checked against the
    victim's own option table."""
    name, _, inline = text.partition(":")
    name = name.strip()
    items = [p for p in inline.split(",") if p.strip()] + list(params)
    base = ALIASES.get(name)
    victims = kinds("ic-victim")
    kind_name = base.kind if base else name
    if kind_name not in victims:
        raise InputError(f"unknown victim {name!r}; known: "
                         f"{', '.join([*victims, *ALIASES])}", field="VICTIM")
    kind = victims[kind_name]
    values = dict(base.params) if base else {}
    given: set[str] = set()
    for item in items:
        key, eq, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not eq or not key:
            raise InputError(f"{item!r} is not key=value", field="--param")
        if key in given:  # which one was meant? (an alias's own values may be overridden)
            raise InputError(f"{key!r} given twice in {text!r} and --param", field="--param")
        given.add(key)
        opt = kind.option(key)
        if opt is None or key in HARNESS_OPTIONS:
            known = ", ".join(o.name for o in kind.options if o.name not in HARNESS_OPTIONS)
            raise InputError(f"{kind_name} has no parameter {key!r} (parameters: {known})",
                             field="--param")
        if opt.type == "size":
            value = str(workload_size(value, field=f"--param {key}"))
        values[key] = value
    shown = ":".join(filter(None, (name, ",".join(items))))
    if kind_name == "ptrchase" and "size" not in values:
        # Default to the working set that shows shared-cache interference on this host.
        values["size"] = str(fp.shared_victim)
        shown += f":size={size_arg(fp.shared_victim)}"
    return VictimSpec(kind_name, tuple(values.items()), shown)
