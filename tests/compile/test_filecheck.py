"""FileCheck-style tests of the IR: each tests/compile/filecheck/*.comp names its command on a
`// RUN:` line (%s is the file) and what the output must contain in `// CHECK` lines, checked
by the `filecheck` package (a Python port of LLVM's FileCheck)."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

CASES = sorted((Path(__file__).parent / "filecheck").glob("*.comp"))


def run_line(path: Path) -> list[str]:
    for line in path.read_text().splitlines():
        if line.startswith("// RUN:"):
            cmd = shlex.split(line.removeprefix("// RUN:").replace("%s", str(path)))
            assert cmd[0] == "intercore"
            return [sys.executable, "-m", "intercore", *cmd[1:]]
    raise AssertionError(f"{path} has no RUN line")


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_filecheck(path: Path) -> None:
    out = subprocess.run(run_line(path), capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    check = subprocess.run([sys.executable, "-m", "filecheck", str(path)], input=out.stdout,
                           capture_output=True, text=True, timeout=60)
    assert check.returncode == 0, check.stdout + check.stderr + "\n--- output ---\n" + out.stdout
