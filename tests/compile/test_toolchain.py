"""One C compiler for every back end: the user's C and the runtime are compiled by the same
compiler with the same flags whether the generated code is C or MLIR, so comparing the back
ends compares the back ends; the output and OUT.build/build.json say which compiler it was."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from intercore.compile import build as builder
from intercore.base.errors import InputError

ALARMS = Path(__file__).parent / "programs" / "alarms"
HAVE_MLIR = all(shutil.which(t) for t in ("mlir-opt-19", "mlir-translate-19", "clang-19"))


def _build(tmp_path: Path, backend: str, cc: Path, calls: Path) -> tuple[dict, str, list[str]]:
    """Build the alarms program with `cc` (a wrapper recording each call); its record, the
    line the compiler printed, and the wrapper's calls of this build."""
    out = tmp_path / f"alarms-{backend}"
    run = subprocess.run([sys.executable, "-m", "intercore", "compile", "build",
                          str(ALARMS / "alarms.comp"), "-s", str(ALARMS / "alarms.c"),
                          "-o", str(out), "--backend", backend],
                         capture_output=True, text=True, timeout=300,
                         env={**os.environ, "CC": str(cc)})
    assert run.returncode == 0, run.stderr
    record = json.loads((tmp_path / f"alarms-{backend}.build" / "build.json").read_text())
    said = next(line for line in run.stdout.splitlines() if line.startswith("built "))
    lines = calls.read_text().splitlines()
    calls.unlink()
    return record, said, lines


@pytest.mark.slow
@pytest.mark.skipif(not HAVE_MLIR, reason="mlir-19-tools and clang-19 are not installed")
def test_both_back_ends_compile_the_users_c_with_the_same_compiler(tmp_path) -> None:
    calls = tmp_path / "calls.log"
    cc = tmp_path / "mycc"
    cc.write_text(f"#!/bin/sh\necho \"$*\" >> {calls}\nexec {shutil.which('cc')} \"$@\"\n")
    cc.chmod(0o755)
    user_c = str(ALARMS / "alarms.c")
    flags = " ".join(builder.CFLAGS)
    seen = {}
    for backend in ("c", "mlir"):
        record, said, lines = _build(tmp_path, backend, cc, calls)
        # the wrapper compiled the user's C, with the C back end's flags
        assert [line for line in lines if user_c in line and line.startswith(flags)], lines
        # and no other tool was handed a C file
        others = [cmd for cmd in record["commands"] if cmd[0] != str(cc)]
        assert not [a for cmd in others for a in cmd if a.endswith(".c")], others
        assert record["backend"] == backend
        assert record["c_compiler"]["command"] == str(cc)
        assert record["c_compiler"]["flags"] == list(builder.CFLAGS)
        assert record["c_compiler"]["version"].startswith(("cc (", "gcc (", "clang"))
        assert record["c_compiler"]["said"] in said
        seen[backend] = record
    assert seen["c"]["c_compiler"] == seen["mlir"]["c_compiler"]
    assert seen["c"]["generated_code_by"] == seen["c"]["c_compiler"]["said"]
    assert seen["mlir"]["generated_code_by"] == "mlir-opt-19, mlir-translate-19 and clang-19 -O2"


def test_a_compiler_that_cannot_say_what_it_is_is_refused(tmp_path) -> None:
    mute = tmp_path / "mute-cc"
    mute.write_text("#!/bin/sh\nexit 1\n")
    mute.chmod(0o755)
    with pytest.raises(InputError, match="--version` failed: cannot record which compiler"):
        builder.compiler(str(mute))
