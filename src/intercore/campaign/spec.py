"""The campaign file: one YAML document describing a configuration space (paper 001 §3).

    name: sp-impact
    platform: host                  # or a platform model file, relative to this file
    repetitions: 30                 # iso/int pairs per run
    rounds: 3                       # every setup runs once per round, rounds interleaved
    seed: 1
    executor: local                 # or {kind: ssh, host, ...}, or {kind: labgrid, tags: ...}
    guests:
      linux: {kind: critical, cpu: 0, tasks: [qsort, {name: susan-c, victim: "susan:mode=corners"}]}
      # or the user's own program, as `intercore measure run -- ./ctl ARGS` takes it:
      #   tasks: [{name: ctl, program: [./control, --steps, "20000"]}]
      interf: {kind: engine, aggressor: bw}
    generators:
      engine: {cpus: [auto], line_sizes: [native], sizes: [32KiB, 1MiB], ops: [read, write]}
      colouring: {colours: 8, guests: [interf, linux], min_colours: {linux: 2}}
      bandwidth: {unit: percent, guests: {interf: {budgets: [10, 50], periods_us: [0]}}}
    include: ["interf_write_*"]     # glob patterns over setup names (default: all)
    exclude: []

Everything is checked on load, errors name the file, line and field (intercore.base.yamlfile):
victims and their parameters against the measurement core's own option tables, and every
guest a generator names against `guests`. docs/campaigns.md is the reference.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (BaseModel, BeforeValidator, ConfigDict, Field, field_validator,
                      model_validator)

from ..base import yamlfile
from ..base.errors import InputError
from ..base.parse import format_cpu_list, parse_cpu_list
from ..base.parse import parse_size as parse_size_text
from ..measure.aggressors.catalog import ALIASES, HARNESS_OPTIONS, kinds
from ..measure.aggressors.presets import OPS
from ..measure.program import executable
from .executors.ssh.transport import check_host

_NAME = re.compile(r"^[A-Za-z0-9_.:=,+-]+$")  # no blanks, '@', '/' or glob characters
MAX_NAME = 100
# The measurement core's bw kernel has read, write and rmw; "rw" is the paper's read/write.
ENGINE_OPS = {"read": "read", "write": "write", "rw": "rmw"}


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def check_name(value: str, what: str) -> str:
    if not _NAME.match(value):
        raise ValueError(f"{what} {value!r} may use only letters, digits and _ . : = , + -")
    if len(value) > MAX_NAME:  # names become file names (a report's NAME.html: 255 bytes)
        raise ValueError(f"{what} of {len(value)} characters: at most {MAX_NAME}")
    return value


def split_victim(text: str) -> tuple[str, tuple[str, ...]]:
    """`susan:mode=corners,width=512` -> ("susan", ("mode=corners", "width=512"))."""
    name, _, inline = text.partition(":")
    return name.strip(), tuple(p.strip() for p in inline.split(",") if p.strip())


def check_victim(text: str) -> str:
    """The victim kind (or alias) and its parameters against `ic-victim --list`."""
    name, params = split_victim(text)
    victims = kinds("ic-victim")
    kind_name = ALIASES[name].kind if name in ALIASES else name
    if kind_name not in victims:
        raise ValueError(f"unknown victim {name!r}; known: {', '.join([*victims, *ALIASES])}")
    kind = victims[kind_name]
    for item in params:
        key, eq, value = item.partition("=")
        opt = kind.option(key.strip())
        if not eq or opt is None or key.strip() in HARNESS_OPTIONS:
            known = ", ".join(o.name for o in kind.options if o.name not in HARNESS_OPTIONS)
            raise ValueError(f"{item!r} is not a parameter of {kind_name} (key=value with "
                             f"key one of: {known})")
        if opt.choices and value.strip() not in opt.choices:
            raise ValueError(f"{item!r}: {key} is one of {', '.join(opt.choices)}")
        if opt.type == "size":
            try:
                parse_size_text(value)
            except ValueError:
                raise ValueError(f"{item!r}: cannot parse the size (examples: 4096, 8M, "
                                 "32KiB)") from None
    return text


def _words(value: Any) -> Any:
    # A program's command line as exec takes it: `--steps: 2000` read as a number stays text.
    if isinstance(value, list):
        return [str(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v
                for v in value]
    return value


class Task(_Model):
    """One critical task, named for setup names: a victim of the measurement core, or the
    user's own program (its path, relative to the campaign file, and its own arguments),
    measured as `intercore measure run -- PROGRAM ARGS` measures it."""

    name: str
    victim: str | None = None
    program: Annotated[tuple[str, ...], BeforeValidator(_words), Field(min_length=1)] | None \
        = None

    @model_validator(mode="before")
    @classmethod
    def _from_string(cls, value: Any) -> Any:
        return {"name": value, "victim": value} if isinstance(value, str) else value

    @model_validator(mode="after")
    def _one(self) -> Task:
        if (self.victim is None) == (self.program is None):
            raise ValueError("give either `victim` (a built-in victim) or `program` (your "
                             "program: [PATH, ARGS...]), not " +
                             ("both" if self.victim is not None else "neither"))
        return self

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return check_name(v, "task name")

    @field_validator("victim")
    @classmethod
    def _victim(cls, v: str | None) -> str | None:
        if v is not None and "/" in v.partition(":")[0]:
            raise ValueError(f"{v!r} is a path: name your program with `program: [{v}, "
                             "ARGS...]` and give the task a `name`")
        return v if v is None else check_victim(v)


class Guest(_Model):
    """A guest: the critical one (runs the tasks) or the contention engine."""

    kind: Literal["critical", "engine"]
    cpu: int | None = Field(None, ge=0, description="critical: the CPU its tasks run on")
    tasks: tuple[Task, ...] = ()
    aggressor: Literal["bw", "pll"] = Field("bw", description="engine: the ic-aggr kernel")
    mlp: int = Field(1, ge=1, le=16, description="engine with pll: lists in flight")

    @model_validator(mode="after")
    def _per_kind(self) -> Guest:
        if self.kind == "critical":
            if not self.tasks:
                raise ValueError("a critical guest needs at least one task")
            names = [t.name for t in self.tasks]
            if len(set(names)) != len(names):
                raise ValueError(f"task names must be unique (got {names})")
            if {"aggressor", "mlp"} & self.model_fields_set:
                raise ValueError("aggressor and mlp belong to the engine guest")
        elif self.tasks or self.cpu is not None:
            raise ValueError("an engine guest takes no tasks or cpu: its CPUs come from "
                             "generators.engine.cpus")
        elif "mlp" in self.model_fields_set and self.aggressor != "pll":
            raise ValueError("mlp applies to aggressor: pll only")
        return self


def _size(value: Any) -> int:
    if isinstance(value, bool):
        raise ValueError("a size is a number of bytes or a string such as 32KiB")
    if isinstance(value, int):
        size = value
    else:
        try:
            size = parse_size_text(str(value))
        except ValueError:
            raise ValueError(f"cannot parse size {value!r} (examples: 4096, 32KiB, 4MiB; "
                             "write 1.5 MiB as 1536KiB)") from None
    if size < 4096:
        raise ValueError(f"size {value!r} is below the engine's 4 KiB minimum")
    return size


class EngineGenerator(_Model):
    """Equation (1): G = M × L × W × O."""

    guest: str | None = None
    cpus: tuple[str, ...] = ("auto",)
    line_sizes: tuple[int | None, ...] = (None,)
    sizes: tuple[int, ...] = Field(..., min_length=1)
    ops: tuple[Literal["read", "write", "rw"], ...] = Field(..., min_length=1)

    @field_validator("cpus", mode="before")
    @classmethod
    def _cpus(cls, value: Any) -> Any:
        if not isinstance(value, (list, tuple)) or not value:
            raise ValueError("a list of CPU configurations: auto, or CPU lists such as 1-3")
        out = []
        for item in value:
            if item == "auto":
                out.append("auto")
                continue
            try:
                cpus = parse_cpu_list(str(item))
            except ValueError as exc:
                raise ValueError(str(exc)) from None
            if not cpus:
                raise ValueError(f"CPU configuration {item!r} names no CPU")
            out.append(format_cpu_list(cpus))
        return out

    @field_validator("line_sizes", mode="before")
    @classmethod
    def _lines(cls, value: Any) -> Any:
        if not isinstance(value, (list, tuple)) or not value:
            raise ValueError("a list of cache-line sizes: native, or bytes such as 64")
        out: list[int | None] = []
        for item in value:
            if item == "native":
                out.append(None)
            elif isinstance(item, int) and not isinstance(item, bool) and item > 0 \
                    and item & (item - 1) == 0:
                out.append(item)
            else:
                raise ValueError(f"line size {item!r}: native or a power of two in bytes")
        return out

    @field_validator("sizes", mode="before")
    @classmethod
    def _sizes(cls, value: Any) -> Any:
        if not isinstance(value, (list, tuple)):
            raise ValueError("a list of workload sizes such as [32KiB, 1MiB]")
        return [_size(v) for v in value]

    @field_validator("cpus", "line_sizes", "sizes", "ops")
    @classmethod
    def _unique(cls, v: tuple) -> tuple:
        if len(set(v)) != len(v):
            raise ValueError(f"values must be distinct (got {list(v)})")
        return v


class ColouringGenerator(_Model):
    """Equations (2)–(3): S colours split into N contiguous masks, one per guest."""

    colours: int = Field(..., ge=1, le=64, description="S")
    guests: tuple[str, ...] = Field(..., min_length=1,
                                    description="N guests; the first gets the lowest colours")
    min_colours: dict[str, int] = Field(default_factory=dict)


class BandwidthGuest(_Model):
    budgets: tuple[int, ...] = Field(..., min_length=1)
    periods_us: tuple[int, ...] = Field((0,), min_length=1,
                                        description="0 = the mechanism's own period")

    @field_validator("budgets")
    @classmethod
    def _budgets(cls, v: tuple[int, ...]) -> tuple[int, ...]:
        if any(b < 1 for b in v) or len(set(v)) != len(v):
            raise ValueError(f"budgets must be distinct positive integers (got {list(v)})")
        return v

    @field_validator("periods_us")
    @classmethod
    def _periods(cls, v: tuple[int, ...]) -> tuple[int, ...]:
        if any(p < 0 for p in v) or len(set(v)) != len(v):
            raise ValueError(f"periods must be distinct integers >= 0 (got {list(v)})")
        return v


class BandwidthGenerator(_Model):
    """Equation (4): every (budget, period) pair per guest."""

    unit: Literal["percent", "MBps"] = "MBps"
    guests: dict[str, BandwidthGuest] = Field(..., min_length=1)

    @model_validator(mode="after")
    def _percent(self) -> BandwidthGenerator:
        if self.unit == "percent":
            for name, g in self.guests.items():
                if max(g.budgets) > 100:
                    raise ValueError(f"guest {name}: a percentage budget is at most 100")
        return self


class Generators(_Model):
    engine: EngineGenerator | None = None
    colouring: ColouringGenerator | None = None
    bandwidth: BandwidthGenerator | None = None


class Executor(_Model):
    """Where the runs execute: this host, one board over ssh, or every board of a kind that
    a labgrid coordinator lends (docs/lab.md). The ssh options serve both remote kinds; a
    labgrid board's address, user and port come from its place's NetworkService."""

    kind: Literal["local", "ssh", "labgrid"] = "local"
    host: str | None = None
    port: int | None = Field(None, ge=1, le=65535)
    user: str | None = None
    identity: str | None = None
    workdir: str = "/tmp/intercore"
    bin_dir: str | None = None
    known_hosts: str | None = None
    accept_new_host_key: bool = False
    config: str | None = None
    # labgrid: the coordinator (default $LG_COORDINATOR), and one place or the tags that
    # every place of the board kind carries; `wait` bounds the wait for the first board.
    coordinator: str | None = None
    place: str | None = None
    tags: dict[str, str] = Field(default_factory=dict)
    wait: float = Field(600.0, gt=0, description="seconds to wait for the first place")

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        return {"kind": value} if isinstance(value, str) else value

    @field_validator("host")
    @classmethod
    def _host(cls, v: str | None) -> str | None:
        if v:
            check_host(v)
        return v

    @field_validator("host", "user")
    @classmethod
    def _no_option(cls, v: str | None) -> str | None:
        # ssh would read "-oProxyCommand=..." as an option, not as a host or a user.
        if v is not None and (not v.strip() or v.startswith("-") or any(c.isspace() for c in v)):
            raise ValueError(f"{v!r} is not a host or user name (no leading '-', no blanks)")
        return v

    @model_validator(mode="after")
    def _per_kind(self) -> Executor:
        remote = {"host", "user", "identity", "port", "bin_dir", "known_hosts", "config"}
        lab = {"coordinator", "place", "tags"}
        given = self.model_fields_set
        if self.kind == "local" and given & (remote | lab):
            raise ValueError(f"{', '.join(sorted(given & (remote | lab)))} belong to the ssh "
                             "and labgrid executors")
        if self.kind == "ssh":
            if not self.host:
                raise ValueError("the ssh executor needs a host")
            if given & lab:
                raise ValueError(f"{', '.join(sorted(given & lab))} belong to the labgrid "
                                 "executor")
        if self.kind == "labgrid":
            if self.host:
                raise ValueError("a labgrid board's address comes from its place's "
                                 "NetworkService: give place or tags, not host")
            if (self.place is None) == (not self.tags):
                raise ValueError("the labgrid executor needs a place or tags (one of them), "
                                 "e.g. tags: {board: rpi4}")
        return self

    def ssh(self) -> dict[str, Any] | None:
        """The ssh settings (intercore.campaign.executors.ssh.SshTarget); for labgrid, all
        but the host, which each place supplies."""
        if self.kind == "local":
            return None
        out: dict[str, Any] = {"host": self.host, "port": self.port, "user": self.user,
                               "identity": self.identity, "workdir": self.workdir}
        if self.kind == "ssh":
            out["port"] = self.port or 22
        else:
            del out["host"]  # each place's NetworkService gives it
            if self.port is None:
                del out["port"]
        extra = ("bin_dir", "known_hosts", "accept_new_host_key", "config")
        return {**out, **{k: getattr(self, k) for k in extra if k in self.model_fields_set}}

    def labgrid(self) -> dict[str, Any] | None:
        if self.kind != "labgrid":
            return None
        return {"coordinator": self.coordinator, "place": self.place, "tags": dict(self.tags),
                "wait": self.wait}


class Campaign(_Model):
    name: str
    description: str = ""
    platform: str = "host"
    platform_sha256: str | None = None  # filled by load_campaign for a platform model file
    # Bounds far above any campaign anyone waits for, so that a typo (an extra 000) is refused
    # at validation rather than planned into a schedule that never ends.
    repetitions: int = Field(30, ge=1, le=100_000)
    rounds: int = Field(1, ge=1, le=1000)
    seed: int = Field(1, ge=0, lt=2**63)  # the native tools take a 64-bit seed
    executor: Executor = Executor()
    guests: dict[str, Guest] = Field(..., min_length=1)
    generators: Generators = Generators()
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return check_name(v, "campaign name")

    @field_validator("guests")
    @classmethod
    def _guest_names(cls, v: dict[str, Guest]) -> dict[str, Guest]:
        for name in v:
            check_name(str(name), "guest name")
        return v

    @property
    def critical(self) -> tuple[str, Guest]:
        return next((n, g) for n, g in self.guests.items() if g.kind == "critical")

    @property
    def engine(self) -> tuple[str, Guest] | None:
        return next(((n, g) for n, g in self.guests.items() if g.kind == "engine"), None)


def _cross_check(c: Campaign, doc: yamlfile.Document) -> None:
    """Rules spanning fields, reported at the line of the offending value."""
    critical = [n for n, g in c.guests.items() if g.kind == "critical"]
    engines = [n for n, g in c.guests.items() if g.kind == "engine"]
    if len(critical) != 1:
        raise doc.error(f"exactly one guest must be kind: critical (got {len(critical)})",
                        ("guests",))
    if len(engines) > 1:
        raise doc.error(f"at most one guest may be kind: engine (got {', '.join(engines)})",
                        ("guests", engines[1]))
    gen = c.generators
    if gen.engine is not None:
        if not engines:
            raise doc.error("generators.engine needs a guest of kind: engine",
                            ("generators", "engine"))
        if gen.engine.guest is not None and gen.engine.guest != engines[0]:
            raise doc.error(f"{gen.engine.guest!r} is not the engine guest ({engines[0]})",
                            ("generators", "engine", "guest"))
        if c.guests[engines[0]].aggressor == "pll" and "rw" in gen.engine.ops:
            raise doc.error(f"op rw needs aggressor: bw (pll has {', '.join(OPS['pll'])})",
                            ("generators", "engine", "ops"))
    elif engines:
        raise doc.error(f"guest {engines[0]!r} is an engine but generators.engine is missing",
                        ("guests", engines[0]))
    if gen.colouring is not None:
        col = gen.colouring
        for i, g in enumerate(col.guests):
            if g not in c.guests:
                raise doc.error(f"unknown guest {g!r} (guests: {', '.join(c.guests)})",
                                ("generators", "colouring", "guests", i))
        if len(set(col.guests)) != len(col.guests):
            raise doc.error("a guest may appear only once", ("generators", "colouring",
                                                             "guests"))
        if len(col.guests) > col.colours:
            raise doc.error(f"{len(col.guests)} guests cannot share {col.colours} colours",
                            ("generators", "colouring", "guests"))
        for g, n in col.min_colours.items():
            if g not in col.guests:
                raise doc.error(f"{g!r} is not one of the colouring guests",
                                ("generators", "colouring", "min_colours", g))
            if not 1 <= n <= col.colours:
                raise doc.error(f"must be in 1..{col.colours}",
                                ("generators", "colouring", "min_colours", g))
    if gen.bandwidth is not None:
        for g in gen.bandwidth.guests:
            if g not in c.guests:
                raise doc.error(f"unknown guest {g!r} (guests: {', '.join(c.guests)})",
                                ("generators", "bandwidth", "guests", g))


def _platform(c: Campaign, doc: yamlfile.Document, path: Path) -> Campaign:
    if c.platform == "host":
        return c
    model = Path(c.platform).expanduser()
    if not model.is_absolute():
        model = path.parent / model
    if not model.is_file():
        raise doc.error(f"platform model file {str(model)!r} not found (or use: host)",
                        ("platform",))
    digest = hashlib.sha256(yamlfile.read_bytes(model)).hexdigest()
    return c.model_copy(update={"platform": str(model.resolve()), "platform_sha256": digest})


def load_campaign(path: str | Path) -> Campaign:
    """Read, validate and cross-check a campaign file; InputError with file:line on failure."""
    path = Path(path)
    doc = yamlfile.read(path)
    if isinstance(doc.data, dict) and "platform_sha256" in doc.data:
        raise doc.error("is computed, not given", ("platform_sha256",))
    campaign = yamlfile.validate(doc, Campaign)
    _cross_check(campaign, doc)
    return _programs(_platform(campaign, doc, path), doc, path)


def _programs(c: Campaign, doc: yamlfile.Document, path: Path) -> Campaign:
    """The critical tasks' programs as absolute paths, each an executable file, before any
    work: a relative path is the campaign file's directory's, as for `platform`."""
    name, guest = c.critical
    tasks = []
    for i, task in enumerate(guest.tasks):
        if task.program is not None:
            where = ("guests", name, "tasks", i, "program")
            if c.executor.kind != "local":
                raise doc.error(f"a program runs with the local executor only: the "
                                f"{c.executor.kind} executor's target has no copy of it",
                                where)
            prog, *args = task.program
            try:
                exe = executable(path.parent / Path(prog).expanduser(), field="program")
            except InputError as exc:
                raise doc.error(exc.message, where) from None
            task = task.model_copy(update={"program": (str(exe), *args)})
        tasks.append(task)
    guests = {**c.guests, name: guest.model_copy(update={"tasks": tuple(tasks)})}
    return c.model_copy(update={"guests": guests})



def place_error(path: str | Path, campaign: Campaign, exc: InputError) -> InputError:
    """An error the executor found in one of the campaign's requests (a CPU the target lacks,
    a size beyond its memory), moved to the line of the campaign field it came from: the
    executor's checks speak in the options of `intercore measure run`."""
    where = f"{exc.source or ''} {exc.field or ''}"
    critical = campaign.critical[0]
    if "victim" in where and "cpu" in where:
        loc: tuple = ("guests", critical, "cpu")
    elif "aggressor-cpus" in where:
        loc = ("generators", "engine", "cpus")
    elif "aggressor" in where or "engine" in where:
        loc = ("generators", "engine")
    else:
        loc = ("guests", critical, "tasks")
    return yamlfile.read(path).error(exc.message, loc)
