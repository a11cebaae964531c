"""The board at the other end: what it is, whether our binaries run there, installing them.

Nothing but the workload binaries and a POSIX shell (with od, grep, mkfifo, mktemp and
sha256sum) is needed on the board: no Python. Its topology is read by the host's own code
from a copy of the sysfs and procfs files that code looks at, fetched in one command. The
binaries are pushed only when the board's copy has another sha256, then run once to prove
they execute there.
"""

from __future__ import annotations

import shlex
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Mapping

from ....base.errors import HostUnsupported, InputError, NativeError
from ....host.topology import Topology, read_topology
from .transport import Connection

# Cross-built trees: the board's `uname -m` and the ELF e_machine values it executes.
_ELF_MACHINES = {3: "x86 (i386)", 8: "MIPS", 20: "PowerPC", 21: "PowerPC64", 22: "s390",
                 40: "32-bit Arm", 62: "x86-64", 183: "AArch64", 243: "RISC-V",
                 258: "LoongArch"}


def elf_machine(header: bytes) -> tuple[int, int]:
    """(e_machine, word size in bits) of an ELF file's first 20 bytes."""
    if len(header) < 20 or header[:4] != b"\x7fELF" or header[4] not in (1, 2) \
            or header[5] not in (1, 2):
        raise ValueError("not an ELF file")
    order: Literal["little", "big"] = "little" if header[5] == 1 else "big"
    return int.from_bytes(header[18:20], order), 32 if header[4] == 1 else 64


def runs_on(machine: str, e_machine: int, bits: int) -> bool | None:
    """Whether a kernel reporting `uname -m` = machine executes this ELF machine; None when
    the machine name is not one we know (the post-push trial run decides then). 64-bit Arm
    and x86 kernels also run their 32-bit siblings' binaries (e.g. a 32-bit userland)."""
    m = machine.lower()
    if m in ("x86_64", "amd64"):
        return e_machine in (62, 3)
    if m in ("i386", "i486", "i586", "i686"):
        return e_machine == 3
    if m in ("aarch64", "arm64", "aarch64_be"):
        return e_machine in (183, 40)
    if m.startswith("arm"):
        return e_machine == 40
    if m.startswith("riscv"):
        return e_machine == 243 and str(bits) in m
    if m.startswith("ppc64"):
        return e_machine == 21
    if m in ("ppc", "powerpc"):
        return e_machine == 20
    if m == "s390x":
        return e_machine == 22
    if m.startswith("mips"):
        return e_machine == 8
    if m.startswith("loongarch"):
        return e_machine == 258
    return None


# Everything read_topology and detect_hypervisor look at, printed in one `grep -H` process.
_SNAPSHOT_FILES = (
    "/sys/devices/system/cpu/online", "/sys/devices/system/cpu/present",
    "/sys/devices/system/cpu/cpu[0-9]*/online",
    "/sys/devices/system/cpu/cpu[0-9]*/topology/core_id",
    "/sys/devices/system/cpu/cpu[0-9]*/topology/physical_package_id",
    *(f"/sys/devices/system/cpu/cpu[0-9]*/cache/index[0-9]*/{leaf}"
      for leaf in ("level", "type", "size", "shared_cpu_list", "ways_of_associativity",
                   "number_of_sets", "coherency_line_size")),
    "/proc/cpuinfo", "/sys/hypervisor/type",
    "/sys/devices/virtual/dmi/id/product_name", "/sys/devices/virtual/dmi/id/sys_vendor",
    "/sys/devices/system/clocksource/clocksource0/available_clocksource",
)
_SNAPSHOT_CMD = ("echo '==uname'; uname -s; uname -n; uname -r; uname -m; uname -v; "
                 "echo '==files'; grep -H '' " + " ".join(_SNAPSHOT_FILES) + " 2>/dev/null; true")


@dataclass(frozen=True)
class BoardSnapshot:
    system: str
    hostname: str
    kernel: str
    machine: str
    version: str
    files: Mapping[str, str]  # remote path -> content

    @classmethod
    def parse(cls, text: str) -> BoardSnapshot:
        head, sep, body = text.partition("==files\n")
        uname = head.split("==uname\n", 1)[-1].splitlines()
        if not sep or len(uname) < 5:
            raise NativeError(f"the board's system description is incomplete: {text[:300]!r}")
        files: dict[str, list[str]] = {}
        for line in body.splitlines():
            path, colon, value = line.partition(":")
            if colon and path.startswith(("/sys/", "/proc/")) and ".." not in path:
                files.setdefault(path, []).append(value)
        system, hostname, kernel, machine, version = uname[:5]
        return cls(system, hostname, kernel, machine, version,
                   {p: "\n".join(v) + "\n" for p, v in files.items()})

    def topology(self) -> Topology:
        """The board's topology, read by the same code as this host's, from a copy."""
        with tempfile.TemporaryDirectory(prefix="ic-board-") as root:
            for path, content in self.files.items():
                target = Path(root) / path.lstrip("/")
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(content)
            return read_topology(Path(root))


# Which board this is, beyond its kind: never part of a setup's hash (boards of one kind are
# interchangeable), recorded with every run. Device-tree strings end in NUL, hence `tr`.
_IDENTITY_FILES = {
    "serial": ("/sys/firmware/devicetree/base/serial-number", "/sys/class/dmi/id/product_serial",
               "/sys/class/dmi/id/board_serial"),
    "model": ("/sys/firmware/devicetree/base/model", "/sys/class/dmi/id/product_name"),
    "firmware": ("/sys/firmware/devicetree/base/chosen/bootloader/version",
                 "/sys/firmware/devicetree/base/chosen/u-boot,version",
                 "/sys/class/dmi/id/bios_version", "/etc/nv_tegra_release"),
    "firmware_date": ("/sys/firmware/devicetree/base/chosen/bootloader/build-timestamp",
                      "/sys/class/dmi/id/bios_date"),
}
_IDENTITY_CMD = ("for f in " + " ".join(p for paths in _IDENTITY_FILES.values() for p in paths)
                 + "; do [ -r \"$f\" ] && { printf '%s\\t' \"$f\"; head -c 200 \"$f\" | "
                 "tr -d '\\000\\n'; echo; }; done 2>/dev/null; true")


def identity(conn: Connection) -> dict[str, str | None]:
    """The board's serial number, model and firmware, where it tells them (None if not)."""
    found = {}
    for line in conn.check(_IDENTITY_CMD, "reading the board's identity").splitlines():
        path, tab, value = line.partition("\t")
        if tab and value.strip():
            found[path] = value.strip()
    return {key: next((found[p] for p in paths if p in found), None)
            for key, paths in _IDENTITY_FILES.items()}


def probe(conn: Connection) -> BoardSnapshot:
    """The board's uname and the system files its topology is read from, in one command."""
    return BoardSnapshot.parse(conn.check(_SNAPSHOT_CMD, "reading the board"))


def check_binaries(board: BoardSnapshot, binaries: Mapping[str, Path], label: str) -> None:
    """Refuse, before anything is pushed, binaries built for another architecture."""
    for path in binaries.values():
        with open(path, "rb") as f:
            try:
                machine, bits = elf_machine(f.read(20))
            except ValueError:
                raise InputError(f"{path} is not an ELF executable",
                                 field="ssh.bin_dir") from None
        if runs_on(board.machine, machine, bits) is False:
            kind = _ELF_MACHINES.get(machine, f"ELF machine {machine}")
            raise HostUnsupported(
                f"{label} runs {board.machine}, but {path} is a {bits}-bit "
                f"{kind} binary. Build the native tools for the board, e.g. "
                "`cmake -S native -B build-board -DCMAKE_TOOLCHAIN_FILE=<your toolchain "
                "file> && cmake --build build-board`, and set `bin_dir: build-board/bin` "
                "in the campaign's ssh section (docs/remote-boards.md)")


def install(conn: Connection, binaries: Mapping[str, Path], hashes: Mapping[str, str],
            remote_bin: str) -> list[str]:
    """Push the binaries whose copy in `remote_bin` has another sha256 than `hashes`, then
    prove every one executes there. Returns the names pushed."""
    label = conn.target.label
    quoted_bin = shlex.quote(remote_bin)
    listing = conn.check(f"cd {quoted_bin} 2>/dev/null && sha256sum "
                         f"{' '.join(binaries)} 2>/dev/null; true", "hashing the binaries")
    there = {}
    for line in listing.splitlines():
        digest, _, name = line.partition("  ")
        there[name.strip()] = digest
    pushed = []
    for name, path in binaries.items():
        if there.get(name) == hashes[name]:
            continue
        # $$, the session's shell: two pushes to one board never write the same file.
        partial = shlex.quote(f"{remote_bin}/.{name}.partial.") + "$$"
        final = shlex.quote(f"{remote_bin}/{name}")
        # cat over the session needs neither scp nor an sftp server on the board.
        conn.check(f"mkdir -p {quoted_bin} && cat > {partial} && chmod 755 {partial} "
                   f"&& mv -f {partial} {final}", f"pushing {name}", stdin=path.read_bytes())
        pushed.append(name)
    for name in binaries:
        done = conn.run(f"{shlex.quote(remote_bin + '/' + name)} --list")
        if done.returncode != 0:
            err = done.stderr.decode(errors="replace").strip()
            raise HostUnsupported(
                f"{label}: {name} does not run on the board ({err}); build the "
                "native tools for it and set `bin_dir:` in the campaign's ssh section "
                "(docs/remote-boards.md)")
    return pushed
