"""What the CLI prints into a pipe: whole lines, no colour, no boxes, whatever the path length
or the environment says about colour."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from intercore.cli import output

ANSI = re.compile(r"\x1b\[")


def intercore(*args: str, cwd: Path | None = None, env: dict | None = None
              ) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "intercore", *args], capture_output=True,
                          text=True, timeout=120, cwd=cwd,
                          env={**os.environ, "FORCE_COLOR": "1", "COLUMNS": "60", **(env or {})})


@pytest.fixture
def long_dir(tmp_path: Path) -> Path:
    """A checkout-like directory whose path is far longer than any terminal line."""
    path = tmp_path
    for part in ("a-clone-of-intercore-in-a-directory-with-a-long-name",
                 "and another level with spaces in its name", "x" * 120):
        path = path / part
    path.mkdir(parents=True)
    return path


@pytest.mark.slow
def test_an_error_with_a_long_path_is_one_uncoloured_line(long_dir: Path):
    taskset = long_dir / "set.yaml"
    taskset.write_text("name: t\ntasks:\n  - name: a\n    workload: matrix1\n    period: 10\n")
    result = intercore("measure", "matrix", "set.yaml", cwd=long_dir)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and not ANSI.search(result.stderr)
    assert result.stderr.startswith("error: set.yaml:5: tasks[0].period:")
    absolute = intercore("measure", "matrix", str(taskset), cwd=long_dir)
    assert absolute.stderr.startswith(f"error: {taskset}:5: tasks[0].period: ")
    assert absolute.stderr.count("\n") == 1


@pytest.mark.slow
def test_usage_errors_in_a_pipe_are_plain_click_lines():
    result = intercore("measure", "run", "matmul", "--runs", "many")
    assert result.returncode == 2
    assert not ANSI.search(result.stderr) and "╭" not in result.stderr
    assert "Error: Invalid value for '--runs' / '-n'" in result.stderr


@pytest.mark.slow
def test_help_in_a_pipe_is_plain_text_wrapped_by_paragraph():
    result = intercore("measure", "run", "--help", env={"COLUMNS": "100"})
    assert result.returncode == 0
    out = result.stdout
    assert not ANSI.search(out) and "╭" not in out and "│" not in out
    assert "Aggressors stay resident and are paused (spinning on registers, still holding " \
           "their CPU)" in " ".join(out.split())
    assert max(map(len, out.splitlines())) <= 100


@pytest.mark.slow
def test_result_lines_in_a_pipe_are_whole_lines(tmp_path: Path):
    long_name = tmp_path / ("campaign-" + "w" * 150 + ".yaml")
    long_name.write_text(Path(__file__).parents[2].joinpath(
        "examples/campaigns/small.yaml").read_text())
    result = intercore("measure", "campaign", "validate", str(long_name))
    assert result.returncode == 0, result.stderr
    assert not ANSI.search(result.stdout)
    assert result.stdout.startswith(f"{long_name}: valid campaign small, 12 setups ")
    assert result.stdout.count("\n") == 1


@pytest.mark.slow
def test_a_measurement_in_a_pipe_has_no_progress_residue():
    # A progress bar drawn nowhere used to leave an empty line in logs, one per bar.
    result = intercore("measure", "run", "matmul:n=32,k=512,m=9", "-a", "bw:op=read,size=64K",
                       "--runs", "3", "--no-canary", "--no-store")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("matmul:") and "\n\n" not in result.stdout
    assert not ANSI.search(result.stdout + result.stderr)


def test_warning_lines_keep_their_brackets_and_length(capsys):
    message = "[bold]not markup[/] " + "/very/long/path" * 20
    output.warn(message)
    output.warn(message, label="note", to_stderr=True)
    captured = capsys.readouterr()
    assert captured.out == f"warning: {message}\n"
    assert captured.err == f"note: {message}\n"


def test_every_command_group_uses_plain_help_in_a_pipe():
    """The root's rich_markup_mode=MARKUP reaches every group and command (typer passes it
    down); one that set its own would box and wrap its help in pipes."""
    import typer

    from intercore.cli.main import app

    assert output.MARKUP is None  # pytest's stdout is not a terminal
    stack, seen = [("intercore", typer.main.get_command(app))], 0
    while stack:
        path, command = stack.pop()
        seen += 1
        assert getattr(command, "rich_markup_mode", None) is None, path
        for name, sub in getattr(command, "commands", {}).items():
            stack.append((f"{path} {name}", sub))
    assert seen > 30


def test_every_command_has_json():
    """The README's promise: every command a user runs takes --json (manage lacked it)."""
    import typer

    from intercore.cli.main import app

    stack, leaves, without = [("intercore", typer.main.get_command(app))], 0, []
    while stack:
        path, command = stack.pop()
        subs = getattr(command, "commands", {})
        stack += [(f"{path} {name}", sub) for name, sub in subs.items()]
        if not subs:
            leaves += 1
            if "--json" not in {o for p in command.params for o in getattr(p, "opts", ())}:
                without.append(path)
    assert leaves > 30 and without == []


@pytest.mark.slow
def test_help_examples_are_printed_as_written_and_parse_as_shell():
    """Every indented paragraph of a command's help (its examples) reaches --help line for
    line, not re-wrapped into one paragraph, and is valid shell as written: `-a BwWrite(LLC)`
    unquoted was a syntax error a user pasted."""
    import shutil
    import subprocess

    from intercore.cli.main import command

    stack, checked = [("intercore", command())], 0
    while stack:
        path, cmd = stack.pop()
        stack += [(f"{path} {n}", sub) for n, sub in getattr(cmd, "commands", {}).items()]
        for paragraph in (cmd.help or "").split("\n\n"):
            if not paragraph.startswith("\b\n"):
                continue
            script = paragraph[2:]
            checked += 1
            if shutil.which("bash"):
                got = subprocess.run(["bash", "-n", "-c", script], capture_output=True, text=True)
                assert got.returncode == 0, f"{path}: {script!r}: {got.stderr}"
    assert checked > 20

    import sys

    out = subprocess.run([sys.executable, "-m", "intercore", "mitigate", "monitor", "--help"],
                         capture_output=True, text=True, timeout=60).stdout
    assert "\n      intercore mitigate apply plan.json\n" in out


@pytest.mark.slow
def test_usage_lines_name_arguments_plainly():
    """Arguments as written, not as choice lists: no `{ID}`, `[[CAMPAIGN]]`, `{X...}...`."""
    import re
    import subprocess
    import sys

    from intercore.cli.main import command

    stack, seen = [command()], 0
    while stack:
        cmd = stack.pop()
        stack += list(getattr(cmd, "commands", {}).values())
        for param in cmd.params:
            if hasattr(param, "_usage_display_name"):
                seen += 1
                usage = param._usage_display_name()
                assert not re.search(r"[{}]|\[\[|\.\.\.\S*\.\.\.", usage), usage
    assert seen > 20
    out = subprocess.run([sys.executable, "-m", "intercore", "measure", "campaign", "status",
                          "--help"],
                         capture_output=True, text=True, timeout=60).stdout
    assert out.startswith("Usage: intercore measure campaign status [OPTIONS] [CAMPAIGN]\n")
