"""What the learning stage reads from an executable: its region markers, its instructions
(capstone) and the source line of each (DWARF, pyelftools).

Static instructions are decoded once per PC the trace saw, never per dynamic record.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from ..base.errors import HostUnsupported, InputError

# ictrace_format.h: nopl disp32(%rax) with disp32 = 0x4943'0000 | end << 15 | id.
_MARKER = re.compile(rb"\x0f\x1f\x80(..)\x43\x49", re.DOTALL)
_SHF_EXECINSTR = 0x4
_MASK_REG = re.compile(r"^k[0-7]$")


@dataclass(frozen=True)
class Marker:
    address: int  # link-time address of the marker instruction
    region: int
    end: bool


@dataclass(frozen=True)
class StaticInsn:
    address: int
    size: int
    mnemonic: str
    operands: str  # as capstone prints them
    signature: str  # operand kinds: R GPR, X/Y/Z vector, M<bytes> memory, I immediate
    groups: tuple[str, ...]  # capstone's groups (jump, call, sse2, avx, ...)

    @property
    def token(self) -> str:
        """The instruction type: mnemonic plus operand signature (`vaddps:Y,Y,M32`)."""
        return f"{self.mnemonic}:{self.signature}" if self.signature else self.mnemonic


@dataclass(frozen=True)
class SourceLine:
    file: str
    line: int


def _libs():
    try:
        import capstone
        from elftools.elf.elffile import ELFFile
    except ImportError as exc:
        raise HostUnsupported(f"the learning stage needs its extra ({exc.name} is missing): "
                              "pip install 'intercore[learn]'") from None
    return capstone, ELFFile


class Binary:
    """An ELF executable or shared object, read once and kept open only while reading."""

    def __init__(self, path: Path):
        self.path = Path(path)
        capstone, ELFFile = _libs()
        try:
            data = self.path.read_bytes()
        except OSError as exc:
            raise InputError(f"cannot read: {exc.strerror}", source=str(path)) from None
        if data[:4] != b"\x7fELF":
            raise InputError("not an ELF executable", source=str(path))
        import io

        try:
            self._elf = ELFFile(io.BytesIO(data))
            self.machine = self._elf["e_machine"]
            self.pie = self._elf["e_type"] == "ET_DYN"
            self._sections = [(s["sh_addr"], s.data(), s.name) for s in self._elf.iter_sections()
                              if s["sh_flags"] & _SHF_EXECINSTR and s["sh_type"] != "SHT_NOBITS"]
        except Exception as exc:  # pyelftools raises its own zoo on truncated files
            raise InputError(f"not a readable ELF file ({exc})", source=str(path)) from None
        if self.machine != "EM_X86_64":
            raise HostUnsupported(f"{path}: {self.machine} code; the tracer and its marker "
                                  "encoding are implemented for x86-64 only")
        self._cs = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
        self._cs.detail = True
        self._capstone = capstone
        self._decoded: dict[int, StaticInsn | None] = {}

    # --- markers and symbols -----------------------------------------------------------

    @cached_property
    def markers(self) -> tuple[Marker, ...]:
        out = []
        for addr, data, _ in self._sections:
            for m in _MARKER.finditer(data):
                low = int.from_bytes(m.group(1), "little")
                out.append(Marker(addr + m.start(), low & 0x7FFF, bool(low & 0x8000)))
        return tuple(out)

    @property
    def stripped(self) -> bool:
        return self._elf.get_section_by_name(".symtab") is None

    @property
    def has_lines(self) -> bool:
        return self._elf.get_section_by_name(".debug_line") is not None

    @cached_property
    def _symbols(self) -> tuple[list[int], list[tuple[int, str]]]:
        tab = self._elf.get_section_by_name(".symtab")
        funcs = sorted((s["st_value"], s["st_size"], s.name) for s in
                       (tab.iter_symbols() if tab else ()) if s["st_info"]["type"] == "STT_FUNC"
                       and s["st_value"])
        return [f[0] for f in funcs], [(f[1], f[2]) for f in funcs]

    def function_at(self, address: int) -> str | None:
        starts, rest = self._symbols
        i = bisect.bisect_right(starts, address) - 1
        if i < 0:
            return None
        size, name = rest[i]
        return name if address < starts[i] + max(size, 1) else None

    # --- instructions ------------------------------------------------------------------

    def _bytes_at(self, address: int, n: int = 16) -> bytes | None:
        for addr, data, _ in self._sections:
            if addr <= address < addr + len(data):
                return data[address - addr:address - addr + n]
        return None

    def insn(self, address: int) -> StaticInsn | None:
        """The instruction at a link-time address, or None outside the code."""
        if address not in self._decoded:
            code = self._bytes_at(address)
            decoded = next(self._cs.disasm(code, address, 1), None) if code else None
            self._decoded[address] = self._describe(decoded) if decoded else None
        return self._decoded[address]

    def _describe(self, ins) -> StaticInsn:
        x86 = self._capstone.x86
        kinds = []
        for op in ins.operands:
            if op.type == x86.X86_OP_REG:
                name = ins.reg_name(op.reg) or ""
                kinds.append(name[0].upper() if name.startswith(("xmm", "ymm", "zmm"))
                             else "K" if _MASK_REG.match(name) else "R")
            elif op.type == x86.X86_OP_MEM:
                kinds.append(f"M{op.size}")
            elif op.type == x86.X86_OP_IMM:
                kinds.append("I")
        groups = tuple(sorted(ins.group_name(g) or str(g) for g in ins.groups))
        return StaticInsn(ins.address, ins.size, ins.mnemonic, ins.op_str, ",".join(kinds),
                          groups)

    # --- source lines ------------------------------------------------------------------

    @cached_property
    def _lines(self) -> tuple[list[int], list[SourceLine | None]]:
        """Line-table rows sorted by address; a sequence end maps to None."""
        rows: list[tuple[int, SourceLine | None]] = []
        if not self._elf.has_dwarf_info():
            return [], []
        dwarf = self._elf.get_dwarf_info()
        for cu in dwarf.iter_CUs():
            program = dwarf.line_program_for_CU(cu)
            if program is None:
                continue
            header = program.header
            files = header["file_entry"]
            dirs = header["include_directory"]
            version = header["version"]
            for entry in program.get_entries():
                st = entry.state
                if st is None:
                    continue
                if st.end_sequence:
                    rows.append((st.address, None))
                    continue
                index = st.file if version >= 5 else st.file - 1
                if not 0 <= index < len(files):
                    continue
                fe = files[index]
                name = fe.name.decode(errors="replace")
                d = fe.dir_index if version >= 5 else fe.dir_index - 1
                if not name.startswith("/") and 0 <= d < len(dirs):
                    name = f"{dirs[d].decode(errors='replace')}/{name}"
                rows.append((st.address, SourceLine(name, st.line)))
        rows.sort(key=lambda r: (r[0], r[1] is not None))
        return [r[0] for r in rows], [r[1] for r in rows]

    def source_line(self, address: int) -> SourceLine | None:
        addrs, lines = self._lines
        i = bisect.bisect_right(addrs, address) - 1
        return lines[i] if i >= 0 else None
