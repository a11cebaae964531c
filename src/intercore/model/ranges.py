"""Range syntax for repeated entries of a platform model.

A key `core[0-3]` declares `core0` … `core3`; the range may sit anywhere in the name
(`c[0-1]_l1_load` gives `c0_l1_load`, `c1_l1_load`) and may list pieces (`cpu[0-4,6]`).
Inside such an entry `[i]` stands for the entry's own index (`private_to: "core[i]"`).
A reference elsewhere may name one member (`l1d[2]`), several (`bank[0-3]`) or every member
of a group (`l1d[*]`); where one name is expected it must resolve to exactly one.

Pure functions on strings; the loader turns their ValueErrors into file:line errors.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
_PATTERN = re.compile(r"^(?P<prefix>[A-Za-z_][A-Za-z0-9_-]*)\[(?P<spec>[^\[\]]*)\]"
                      r"(?P<suffix>[A-Za-z0-9_-]*)$")
INDEX = "[i]"
# A model of a whole server stays far below this; a typo like core[0-99999999] does not.
MAX_MEMBERS = 4096


@dataclass(frozen=True)
class Pattern:
    """`prefix[spec]suffix`: a ranged key or a reference to members of a group."""

    prefix: str
    spec: str
    suffix: str

    @property
    def group(self) -> tuple[str, str]:
        return (self.prefix, self.suffix)

    def name(self, index: int) -> str:
        return f"{self.prefix}{index}{self.suffix}"


def pattern(text: str) -> Pattern | None:
    """The pattern in `text`, or None when `text` has no brackets at all.

    Raises ValueError for brackets that do not form `name[spec]suffix`.
    """
    if "[" not in text and "]" not in text:
        return None
    m = _PATTERN.match(text)
    if not m:
        raise ValueError(f"{text!r} is not NAME[RANGE] (examples: core[0-3], l1d[i], bank[*])")
    return Pattern(m.group("prefix"), m.group("spec").strip(), m.group("suffix"))


def parse_indices(spec: str) -> tuple[int, ...]:
    """`0-3,6` -> (0, 1, 2, 3, 6). Empty, descending, repeated or huge ranges are errors."""
    if not spec:
        raise ValueError("empty range []")
    out: list[int] = []
    for part in spec.split(","):
        first, sep, last = part.strip().partition("-")
        if not first.isdigit() or (sep and not last.isdigit()):
            raise ValueError(f"range piece {part.strip()!r} is not N or N-M")
        lo, hi = int(first), int(last) if sep else int(first)
        if hi < lo:
            raise ValueError(f"range {part.strip()!r} runs backwards")
        if len(out) + hi - lo + 1 > MAX_MEMBERS:  # counted before a member is made
            raise ValueError(f"range [{spec}] has more than {MAX_MEMBERS} members")
        out.extend(range(lo, hi + 1))
    if len(set(out)) != len(out):
        raise ValueError(f"range [{spec}] names an index twice")
    return tuple(out)


def expand_key(key: str) -> list[tuple[str, int | None]]:
    """A mapping key -> [(name, index)]; index is None for a plain (unranged) key."""
    p = pattern(key)
    if p is None:
        if not NAME.match(key):
            raise ValueError(f"{key!r} is not a valid name (letters, digits, _ and -)")
        return [(key, None)]
    if p.spec in ("i", "*"):
        raise ValueError(f"{key!r}: a key declares members with a range like [0-3], "
                         f"not [{p.spec}]")
    return [(p.name(i), i) for i in parse_indices(p.spec)]


def substitute(text: str, index: int | None) -> str:
    """Replace `[i]` by the entry's index; `[i]` outside a ranged entry is an error."""
    if INDEX not in text:
        return text
    if index is None:
        raise ValueError(f"{text!r} uses [i] outside a ranged entry such as core[0-3]")
    return text.replace(INDEX, str(index))


Groups = dict[tuple[str, str], tuple[int, ...]]


def resolve(text: str, groups: Groups) -> list[str]:
    """A reference -> the names it stands for. `X[*]` needs a declared group X[...]."""
    p = pattern(text)
    if p is None:
        return [text]
    if p.spec == "i":
        raise ValueError(f"{text!r} uses [i] outside a ranged entry such as core[0-3]")
    if p.spec == "*":
        if p.group not in groups:
            raise ValueError(f"{text!r}: no entry was declared as "
                             f"{p.prefix}[...]{p.suffix}")
        return [p.name(i) for i in groups[p.group]]
    return [p.name(i) for i in parse_indices(p.spec)]


def resolve_one(text: str, groups: Groups) -> str:
    names = resolve(text, groups)
    if len(names) != 1:
        raise ValueError(f"{text!r} names {len(names)} entries where one is expected")
    return names[0]

