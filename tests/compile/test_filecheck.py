"""FileCheck-style tests of the IR: each tests/compile/filecheck/*.comp names its command on a
`// RUN:` line (%s is the file) and what the output must contain in `// CHECK` lines, checked
by the `filecheck` package (a Python port of LLVM's FileCheck). `// RUN: not intercore ...`
is a program the compiler must refuse: exit 2, nothing on stdout, and the checks apply to
stderr (the `error:` line and its excerpt)."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

CASES = sorted((Path(__file__).parent / "filecheck").glob("*.comp"))


def run_line(path: Path) -> tuple[list[str], bool]:
    """The command, and whether it must fail (`not`)."""
    for line in path.read_text().splitlines():
        if line.startswith("// RUN:"):
            cmd = shlex.split(line.removeprefix("// RUN:").replace("%s", str(path)))
            refused = cmd[0] == "not"
            cmd = cmd[refused:]
            assert cmd[0] == "intercore"
            return [sys.executable, "-m", "intercore", *cmd[1:]], refused
    raise AssertionError(f"{path} has no RUN line")


@pytest.mark.slow
@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_filecheck(path: Path) -> None:
    cmd, refused = run_line(path)
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if refused:
        assert (out.returncode, out.stdout) == (2, ""), out.stdout + out.stderr
    else:
        assert out.returncode == 0, out.stderr
    checked = out.stderr if refused else out.stdout
    check = subprocess.run([sys.executable, "-m", "filecheck", str(path)], input=checked,
                           capture_output=True, text=True, timeout=60)
    assert check.returncode == 0, check.stdout + check.stderr + "\n--- output ---\n" + checked
