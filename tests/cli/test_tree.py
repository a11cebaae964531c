"""The command line grouped by pipeline stage (issue 19): every command a module-level function
that can be imported and run alone, the stages as groups in --help, and the flat names of the
earlier releases hidden from --help but answering exactly as the new names do."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from _old_names import old_form
from intercore.cli import legacy
from intercore.cli.main import app
from intercore.measure.periodic.matrix import InterferenceMatrix

EXAMPLES = Path(__file__).parents[2] / "examples"
runner = CliRunner()


def _commands(group: typer.Typer, path: tuple[str, ...] = ()):
    for info in group.registered_commands:
        yield (*path, info.name), info.callback
    for sub in group.registered_groups:
        yield from _commands(sub.typer_instance, (*path, sub.name))


COMMANDS = list(_commands(app))


def test_the_top_level_is_the_pipeline():
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    listed = {line.split()[0] for line in result.stdout.split("Commands:")[1].splitlines()
              if line.startswith("  ")}
    assert listed == {"doctor", "model", "measure", "learn", "compile", "mitigate", "results",
                     "assess", "dossier", "demo"}


@pytest.mark.parametrize("path, function", COMMANDS, ids=lambda v: " ".join(v)
                         if isinstance(v, tuple) else "")
def test_each_command_is_a_module_level_function_that_runs_alone(path, function):
    module = importlib.import_module(function.__module__)
    assert getattr(module, function.__name__) is function, \
        f"{' '.join(path)}: {function.__qualname__} is not importable from {module.__name__}"
    alone = typer.Typer()
    alone.command()(function)
    result = runner.invoke(alone, ["--help"])
    assert result.exit_code == 0, result.output
    assert function.__doc__.split("\n")[0].split()[0] in result.stdout
    assert "--json" in result.stdout


def test_every_stage_has_its_commands():
    paths = {" ".join(path) for path, _ in COMMANDS}
    assert {"model analyze", "measure run", "measure matrix", "measure campaign run",
            "measure profile show", "learn train", "compile build", "compile manage",
            "mitigate plan", "mitigate monitor", "mitigate protection", "mitigate service install",
            "results list"} <= paths
    assert len(paths) == len(COMMANDS) > 50


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("tree")
    InterferenceMatrix(tasks=("victim", "noise"), statistic="max",
                       directed=((None, 2.3), (1.1, None)), n=((0, 40), (40, 0)),
                       provenance={"source": "tests/cli/test_tree.py"}).save_json(d / "m.json")
    return d


# New command lines whose output does not depend on time: results, and refusals of bad input
# (exit 2) or of what this host lacks (exit 3). Each is run again under its old name.
SIGNAL = str(EXAMPLES / "apps/signal/signal.comp")
SAME = [
    ("measure", "run", "nosuchvictim", "--no-store"),
    ("measure", "workloads", "--json"),
    ("measure", "kit", "--cflags", "--libs"),
    ("measure", "matrix", "{T}/missing.yaml"),
    ("measure", "campaign", "validate", str(EXAMPLES / "campaigns/small.yaml")),
    ("measure", "campaign", "status", "--db", "{T}/missing.db"),
    ("measure", "profile", "run", "--interval", "0s", "--", "true"),
    ("measure", "profile", "show", "1", "--db", "{T}/missing.db"),
    ("measure", "counters", "list", "--target-cpu", "100000"),
    ("compile", "build", SIGNAL, "--emit", "dfg"),
    ("compile", "manage", "--cpus", "100000", "--", "true"),
    ("mitigate", "plan", str(EXAMPLES / "tasksets/paper-000.yaml"), "-m", "{T}/m.json",
     "--json"),
    ("mitigate", "status", "{T}/missing.json"),
    ("mitigate", "protection", "--taskset", "{T}/missing.yaml"),
    ("mitigate", "monitor", "--plan", "{T}/missing.json"),
    ("mitigate", "regulate", "--plan", "{T}/missing.json", "--budget", "50%"),
    ("mitigate", "gang", "--taskset", "{T}/missing.yaml"),
    ("mitigate", "mba", "doe", "-o", "{T}/missing/out"),
    ("mitigate", "service", "install", "--plan", "{T}/missing.json"),
    ("mitigate", "tegra", "status"),
]


def test_every_old_name_is_tried():
    tried = {old_form(argv)[0] for argv in SAME}
    assert tried == {*legacy.MOVED, *legacy.REGROUPED, "measure", "compile"}


@pytest.mark.parametrize("new", SAME, ids=lambda argv: " ".join(argv[:3]))
def test_an_old_name_answers_as_the_new_one(scratch, new):
    old = old_form(new)
    assert old is not None and old != new
    argv = [[a.replace("{T}", str(scratch)) for a in line] for line in (new, old)]
    now, before = (runner.invoke(app, line) for line in argv)
    assert now.exception is None or isinstance(now.exception, SystemExit), now.exception
    assert (before.exit_code, before.stdout, before.stderr) == \
        (now.exit_code, now.stdout, now.stderr), " ".join(old)
    # The cases cover results and refusals alike.
    assert now.exit_code in (0, 2, 3)


def test_a_stage_that_was_one_command_shows_its_commands_when_asked():
    for stage in ("measure", "compile"):
        result = runner.invoke(app, [stage, "--help"])
        assert result.exit_code == 0 and "Commands:" in result.stdout, stage
    # Arguments that name none of its commands go to the first, as they went to the command.
    result = runner.invoke(app, ["measure", "--runs", "2", "--help"])
    assert "Usage: intercore measure run [OPTIONS]" in result.stdout
