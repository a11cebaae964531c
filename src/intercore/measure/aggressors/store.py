"""Named aggressor sets in the results store (their table: store/named_sets.py).

`measure run VICTIM --search` saves its winner as `worst:VICTIM` for the host it ran on;
`-a @worst:VICTIM` reuses it. A user's program (`measure run --search -- ./prog ARGS`) is named
by its file name and content hash: its worst aggressor is the binary's, so a rebuilt program
is searched again rather than handed the old binary's winner; `-a @worst:./prog` finds it.
The worst aggressor is a property of a host (its caches, its placement), so a name is looked
up for this host's fingerprint only: the same store carried to another machine does not
silently hand over another host's winner.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...base.errors import InputError
from ...store import Store
from ..harness.paired import VictimSpec
from ..program import KIND as PROGRAM

PREFIX = "@"


def worst_name(victim: VictimSpec) -> str:
    """The canonical name of a victim's worst aggressor: kind and resolved parameters, so
    `ptrchase:size=8M` and `ptrchase:size=8388608` name the same set; a program by its file
    name and the first 16 hex digits of its sha256."""
    if victim.kind == PROGRAM:
        return f"worst:{PROGRAM}:{Path(victim.command[0]).name}:sha256={victim.digest[:16]}"
    params = ",".join(f"{k}={v}" for k, v in sorted(victim.params))
    return f"worst:{victim.kind}" + (f":{params}" if params else "")


def save(store: Store, host_id: int, name: str, spec: str, invocation_id: int | None,
         evidence: dict[str, Any]) -> None:
    """Save (or replace) `name` on this host."""
    store.named_sets.save(name, host_id, spec, invocation_id, evidence)


def lookup(db: Path | None, fingerprint: str, name: str) -> str:
    """The spec saved as `name` for the host with this fingerprint (InputError if none)."""
    hint = ("run `intercore measure run VICTIM --search` on this host first" if
            name.startswith("worst:") else "no such named set")
    if db is None or not Path(db).exists():
        raise InputError(f"{PREFIX}{name}: no results store to look it up in ({hint})",
                         field="--aggressor")
    with Store.open(db) as store:  # opening brings an older store to the named-sets schema
        spec = store.named_sets.spec(name, fingerprint)
    if spec is None:
        raise InputError(f"{PREFIX}{name}: not saved for this host in {db} ({hint})",
                         field="--aggressor")
    return spec
