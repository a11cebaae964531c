"""Trace a program's marked regions: Valgrind with intercore's `ictrace` tool writes the
record stream into a pipe, `ic-trace-stats` reads it on the other CPU and prints per-region,
per-static-instruction statistics. Nothing of the raw stream touches the disk.

Why Valgrind rather than a QEMU user-mode plugin (docs/learn.md has the measurements):
Debian's `valgrind` package ships the tool headers and static core libraries, so the tool
builds with apt alone and runs natively on x86-64 and arm64 boards; QEMU ships neither plugin
headers nor plugins and its user-mode plugin API had to be declared by hand, for about half
the throughput on this host.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from ..base.errors import HostUnsupported, InputError, NativeError
from ..measure.program import BLOCK_FD_ENV, block_names, names_block
from ..base.native import bin_dir, tool
from .binary import Binary
from .hierarchy import Hierarchy

# Reuse buckets (ic-trace-stats): b < 26 holds LRU stack distances in [2^(b-1), 2^b) lines
# (b = 0: distance 0), bucket 25 everything longer, bucket 26 first touches. Strides: 33
# signed log2 buckets of bytes, index 16 = stride 0.
REUSE_BUCKETS = 27
REUSE_COLD = 26
STRIDE_BUCKETS = 33
STRIDE_ZERO = 16


@dataclass(frozen=True)
class InsnStats:
    region: int
    pc: int  # run-time address
    length: int
    execs: int
    loads: int
    stores: int
    bytes: int
    regular: int  # accesses whose stride repeats the previous one
    served: tuple[int, ...]  # line accesses served by each cache level, then by memory
    stride: tuple[int, ...]
    reuse: tuple[int, ...]

    @property
    def accesses(self) -> int:
        return sum(self.served)


@dataclass(frozen=True)
class RegionStats:
    region: int
    entries: int
    counted_entries: int
    insns: int
    loads: int
    stores: int
    bytes: int
    footprint_lines: int
    served: tuple[int, ...]
    reuse: tuple[int, ...]
    begin_pcs: tuple[int, ...]
    end_pcs: tuple[int, ...]
    window: dict[str, list[int]] | None = None

    @property
    def l2_accesses(self) -> int:
        """Line accesses that missed L1: what the paper's L2_Access_MAP counts."""
        return sum(self.served[1:])


@dataclass(frozen=True)
class MappedObject:
    avma: int
    size: int
    bias: int
    path: str


@dataclass
class Trace:
    argv: tuple[str, ...]
    hierarchy: Hierarchy
    regions: dict[int, RegionStats]
    insns: list[InsnStats]
    objects: list[MappedObject]
    records: int
    exit_code: int
    seconds: float
    cpu_seconds: float
    unmatched_ends: int = 0
    stdout: str = field(default="", repr=False)
    # Region id -> name, as a user's program declares them (ic_user.h)
    declared: dict[int, str] = field(default_factory=dict)

    def main_object(self) -> MappedObject | None:
        target = os.path.realpath(self.argv[0])
        return next((o for o in self.objects if os.path.realpath(o.path) == target), None)

    def object_at(self, pc: int) -> MappedObject | None:
        return next((o for o in self.objects if o.avma <= pc < o.avma + o.size), None)


def tracer_info() -> dict[str, Any]:
    """What the package build found (native/trace/CMakeLists.txt writes it)."""
    path = bin_dir() / "ictrace.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {"built": False, "status": f"{path} is missing: reinstall intercore"}


def available() -> str | None:
    """None when tracing works here, else the reason it does not."""
    info = tracer_info()
    if not info.get("built"):
        return f"the tracer was {info.get('status', 'not built')}; install Valgrind " \
               "(Debian: apt-get install valgrind) and reinstall intercore"
    if not shutil.which("valgrind"):
        return "valgrind is not installed (Debian: apt-get install valgrind)"
    if not (Path(info["valgrind_lib"]) / f"vgpreload_core-{info['platform']}.so").exists():
        return f"Valgrind's core files are gone from {info['valgrind_lib']}; reinstall " \
               "valgrind, then intercore"
    return None


def _require() -> dict[str, Any]:
    reason = available()
    if reason:
        raise HostUnsupported(reason)
    return tracer_info()


def _valgrind_lib(info: dict[str, Any], into: Path) -> Path:
    """The launcher finds a tool and the core's preload library in one directory."""
    lib = into / "lib"
    lib.mkdir()
    system = Path(info["valgrind_lib"])
    (lib / info["tool"]).symlink_to((bin_dir() / info["tool"]).resolve())
    for name in (f"vgpreload_core-{info['platform']}.so", "default.supp"):
        if (system / name).exists():
            (lib / name).symlink_to(system / name)
    return lib


def check_markers(path: Path) -> Binary:
    binary = Binary(path)
    if not binary.markers:
        raise InputError("no region markers in this binary: mark regions with "
                         "IC_REGION_BEGIN/END (ic_region.h) or IC_TRACE_BEGIN/END "
                         "(ic_mark.h) and rebuild", source=str(path))
    return binary


def _parse(lines: list[str]) -> tuple[dict[int, RegionStats], list[InsnStats], dict]:
    regions, insns, end = {}, [], {}
    for text in lines:
        if not text.strip():
            continue
        d = json.loads(text)
        event = d.pop("event")
        if event == "region":
            regions[d["region"]] = RegionStats(
                d["region"], d["entries"], d["counted_entries"], d["insns"], d["loads"],
                d["stores"], d["bytes"], d["footprint_lines"], tuple(d["served"]),
                tuple(d["reuse"]), tuple(d["begin_pcs"]), tuple(d["end_pcs"]),
                d.get("window"))
        elif event == "insn":
            insns.append(InsnStats(d["region"], d["pc"], d["len"], d["execs"], d["loads"],
                                   d["stores"], d["bytes"], d["regular"], tuple(d["served"]),
                                   tuple(d["stride"]), tuple(d["reuse"])))
        elif event == "end":
            end = d
    return regions, insns, end


def trace(argv: Sequence[str], hierarchy: Hierarchy, *, skip: int = 0, runs: int = 1,
          window: int = 0, seed: int = 1, timeout: float | None = None, cwd: Path | None = None,
          on_run: Callable[[int, int, float | None], None] | None = None) -> Trace:
    """Run argv under the tracer `runs` times into one stream: the runs before the last warm
    the modelled caches (Valgrind lays a program out the same way every run, so its data
    lands on the same simulated lines), and in the last `skip` outermost region entries are
    simulated but not counted. `window` > 0 also keeps that many consecutive dynamic
    instructions per region. `on_run(run, runs, seconds_left)` reports each run as it starts,
    with an estimate from the runs before it (None for the first)."""
    info = _require()
    if not argv:
        raise InputError("no program to trace")
    check_markers(Path(argv[0]))
    t0, c0 = time.monotonic(), _children_cpu()
    deadline = None if timeout is None else t0 + timeout
    with tempfile.TemporaryDirectory(prefix="intercore-trace-") as tmp:
        lib = _valgrind_lib(info, Path(tmp))
        maps = Path(tmp) / "maps"
        read_fd, write_fd = os.pipe()
        block = names_block()
        stats = vg = None
        out = err = b""
        try:
            stats = subprocess.Popen(
                [str(tool("ic-trace-stats")), "--cache", hierarchy.stats_arg(), "--line",
                 str(hierarchy.line), "--skip", str(skip), "--runs", str(runs), "--window",
                 str(window), "--seed", str(seed)], stdin=read_fd, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE)
            os.close(read_fd)
            read_fd = -1
            for run in range(runs):
                if on_run:
                    spent = time.monotonic() - t0
                    on_run(run, runs, spent / run * (runs - run) if run else None)
                vg = subprocess.Popen(
                    ["valgrind", "--quiet", "--tool=ictrace", f"--out-fd={write_fd}",
                     f"--maps={maps}", *argv], pass_fds=(write_fd, block),
                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                    cwd=cwd, env={**os.environ, "VALGRIND_LIB": str(lib),
                                  BLOCK_FD_ENV: str(block)})
                out, err = vg.communicate(
                    timeout=None if deadline is None else max(deadline - time.monotonic(), 0))
                if vg.returncode != 0:
                    break
            os.close(write_fd)
            write_fd = -1
            s_out, s_err = stats.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            raise NativeError(f"tracing {argv[0]} took longer than {timeout:.0f} s") from None
        finally:
            for fd in (read_fd, write_fd):
                if fd >= 0:
                    os.close(fd)
            for proc in (vg, stats):
                if proc and proc.poll() is None:
                    proc.kill()
                    proc.wait()
            names = block_names(block)
            os.close(block)
        assert vg is not None  # runs >= 1 (the option's minimum): valgrind ran
        regions, insns, end = _parse(s_out.decode().splitlines())
        if vg.returncode != 0 and not end.get("complete"):
            raise NativeError(f"valgrind exited {vg.returncode} tracing {argv[0]}: "
                              f"{err.decode(errors='replace').strip()[-600:]}")
        if stats.returncode != 0 or not end.get("complete"):
            raise NativeError("ic-trace-stats failed: "
                              f"{s_err.decode(errors='replace').strip()[-600:]}")
        objects = _maps(maps)
    if not any(r.counted_entries for r in regions.values()):
        raise InputError("the program ran but never entered a marked region"
                         + (f" after the {skip} warm-up entries" if skip else ""),
                         source=str(argv[0]))
    return Trace(tuple(argv), hierarchy, regions, insns, objects, end["records"],
                 end["exit_code"], time.monotonic() - t0, _children_cpu() - c0,
                 end.get("unmatched_ends", 0), out.decode(errors="replace"), names)


def _maps(path: Path) -> list[MappedObject]:
    out: list[MappedObject] = []
    try:
        text = path.read_text()
    except OSError:
        return out
    for line in text.splitlines():
        parts = line.split(" ", 3)
        if len(parts) == 4:
            out.append(MappedObject(int(parts[0], 16), int(parts[1]), int(parts[2]), parts[3]))
    return out


def _children_cpu() -> float:
    r = os.times()
    return r.children_user + r.children_system
