"""The bad-input corpus against every command that reads an input file.

Each file in corpus/ is one class of bad input: `any-*` files break the loader itself
(aliases, depth, binary, encodings, syntax, tags, wrong top-level types), `taskset-*`,
`matrix-*`, `campaign-*`, `model-*` and plan-mutations.json break one format's fields (wrong
types, out-of-range values, references to nothing). `campaign-host-*` files ask for more than
this host has (a CPU, memory): `campaign plan` still lists them, validate and run refuse.
Huge files, a directory and a missing path are made here. Every command that reads the
file must refuse it the same way: exit 2 (or 3 for a host that lacks something), one
`error:` line, no traceback, and nothing left behind: no file, no store row, no cgroup, no
/dev/shm block.

The commands run in-process (typer's runner) so that several hundred cases take seconds;
tests/cli checks the same contract through real processes.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from _old_names import old_form
from intercore.cli.main import app
from intercore.measure.periodic import taskset as tasksets
from intercore.measure.periodic.matrix import InterferenceMatrix
from intercore.mitigate.plan import algorithm1

CORPUS = Path(__file__).parent / "corpus"
EXAMPLES = Path(__file__).parents[2] / "examples"
ROOT = f"intercore-fuzz-{os.getpid()}"  # the cgroup root `cgroups apply` is pointed at

GENERIC = sorted(p.name for p in CORPUS.glob("any-*"))
MADE = ("made-huge.yaml", "made-many-values.yaml", "made-directory", "made-missing.yaml")


def _make(name: str, tmp: Path) -> Path:
    path = tmp / name
    if name == "made-huge.yaml":
        path.write_text("- padding\n" * (11 * 2**20 // 10))
    elif name == "made-many-values.yaml":
        path.write_text("- 1\n" * 200_000)  # 800 KB: under the size bound, over the values one
    elif name == "made-directory":
        path.mkdir()
    return path


# Each entry: the command line, with {F} for the file under test and {T} for the scratch dir.
TASKSET_COMMANDS = (
    ("measure", "matrix", "{F}", "--rounds", "1", "--block", "100ms", "-o", "{T}/m", "--db",
     "{T}/s.db"),
    ("mitigate", "plan", "{F}", "-m", "{T}/good-matrix.json", "-o", "{T}/p.json"),
    ("mitigate", "gang", "--taskset", "{F}", "--jobs", "2", "--db", "{T}/s.db"),
    ("mitigate", "protection", "--taskset", "{F}", "--jobs", "2", "--root", ROOT,
     "-o", "{T}/out", "--db", "{T}/s.db"),
)
MATRIX_COMMANDS = (("mitigate", "plan", "{T}/good-taskset.yaml", "-m", "{F}", "-o", "{T}/p.json"),)
PLAN_COMMANDS = (
    ("mitigate", "apply", "{F}", "--root", ROOT),
    ("mitigate", "status", "{F}"),
    ("mitigate", "teardown", "{F}"),
    ("mitigate", "freeze", "{F}", "noise"),
    ("mitigate", "thaw", "{F}", "noise"),
    ("mitigate", "attach", "{F}", "noise", "1"),
    ("mitigate", "monitor", "--plan", "{F}", "--duration", "1s"),
    ("mitigate", "regulate", "--plan", "{F}", "--budget", "50%", "--duration", "1s", "--db",
     "{T}/s.db"),
)
MODEL_COMMANDS = (
    ("model", "analyze", "{F}"),
    ("model", "validate", "{F}", "--quick", "--db", "{T}/s.db"),
)
CAMPAIGN_COMMANDS = (
    ("measure", "campaign", "validate", "{F}"),
    ("measure", "campaign", "plan", "{F}"),
    ("measure", "campaign", "run", "{F}", "--no-canary", "--db", "{T}/s.db"),
)
HEATMAP_COMMANDS = (
    ("compile", "manage", "--heatmap", "{F}", "--", "true"),
    ("compile", "build", str(EXAMPLES / "apps/signal/signal.comp"),
     "-s", str(EXAMPLES / "apps/signal/signal.c"),
     "--heatmap", "{F}", "-o", "{T}/sig"),
)
EVERY_COMMAND = (TASKSET_COMMANDS + MATRIX_COMMANDS + PLAN_COMMANDS + MODEL_COMMANDS
                 + CAMPAIGN_COMMANDS + HEATMAP_COMMANDS)


@pytest.fixture(scope="module")
def good(tmp_path_factory) -> dict[str, Any]:
    """Valid inputs beside the one under test, and a fresh plan to mutate."""
    d = tmp_path_factory.mktemp("good")
    taskset = d / "good-taskset.yaml"
    shutil.copy(EXAMPLES / "tasksets/paper-000.yaml", taskset)
    matrix = InterferenceMatrix(tasks=("victim", "noise"), statistic="max",
                                directed=((None, 2.3), (1.1, None)), n=((0, 40), (40, 0)),
                                provenance={"source": "tests/fuzz"})
    matrix.save_json(d / "good-matrix.json")
    plan = algorithm1.plan(tasksets.load(taskset), matrix, 1.5).to_dict()
    return {"dir": d, "plan": plan}


def _scratch(tmp_path: Path, good: dict[str, Any]) -> Path:
    """A directory holding the valid companions of the input under test, and nothing else."""
    scratch = tmp_path / "work"
    scratch.mkdir()
    for name in ("good-taskset.yaml", "good-matrix.json"):
        shutil.copy(good["dir"] / name, scratch / name)
    return scratch


def _cgroup_roots() -> set[Path]:
    found = set()
    for line in Path("/proc/mounts").read_text().splitlines():
        fields = line.split()
        if fields[2] in ("cgroup", "cgroup2"):
            found |= set(Path(fields[1]).glob(ROOT))
    return found


@pytest.fixture(autouse=True)
def remove_what_a_failure_created():
    """A command that wrongly accepted its input may have created our cgroup root: remove it
    (after the assertion has reported it) so that one failure does not cascade."""
    yield
    for root in _cgroup_roots():
        for group in sorted(root.rglob("*"), key=lambda p: -len(p.parts)):
            if group.is_dir():
                group.rmdir()
        root.rmdir()


def _shm() -> set[str]:
    return {p for p in os.listdir("/dev/shm") if p.startswith(f"intercore-{os.getpid()}-")}


def refuses(command: tuple[str, ...], path: Path, scratch: Path,
            option: str | None = None) -> None:
    """Run `command` on `path`; assert the bad-input contract (and that the error names
    `option`, when given)."""
    argv = [a.replace("{F}", str(path)).replace("{T}", str(scratch)) for a in command]
    before = {p: p.lstat().st_mtime_ns for p in scratch.rglob("*")}
    shm = _shm()  # another test of this process may have left its own
    content = path.read_bytes() if path.is_file() else None
    result = CliRunner().invoke(app, argv)
    where = f"intercore {' '.join(argv)}"
    assert isinstance(result.exception, SystemExit), \
        f"{where}: raised {result.exception!r}\n{result.stderr}"
    assert result.exit_code in (2, 3), f"{where}: exit {result.exit_code}\n{result.output}"
    assert "Traceback" not in result.output, where
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), f"{where}: {result.stderr!r}"
    assert option is None or f"{option}: " in lines[0], f"{where}: {lines[0]!r}"
    after = {p: p.lstat().st_mtime_ns for p in scratch.rglob("*")}
    assert after == before, f"{where}: left or changed {set(after) ^ set(before) or after}"
    if content is not None:
        assert path.read_bytes() == content, f"{where}: rewrote its input"
    assert not _cgroup_roots(), f"{where}: left a cgroup"
    assert _shm() <= shm, f"{where}: left {_shm() - shm} in /dev/shm"


@pytest.mark.slow
@pytest.mark.parametrize("command", EVERY_COMMAND, ids=lambda c: "-".join(c[:2]))
@pytest.mark.parametrize("name", GENERIC + list(MADE))
def test_every_reader_refuses_every_broken_file(tmp_path, good, name, command):
    scratch = _scratch(tmp_path, good)
    source = CORPUS / name if name.startswith("any-") else _make(name, tmp_path)
    refuses(command, source, scratch)
    if command in MATRIX_COMMANDS and source.is_file():
        as_csv = tmp_path / (source.stem + ".csv")  # the matrix loader picks CSV by suffix
        shutil.copy(source, as_csv)
        refuses(command, as_csv, scratch)


@pytest.mark.parametrize("command", [c for c in EVERY_COMMAND if old_form(c)],
                         ids=lambda c: "-".join(old_form(c)[:2]))
@pytest.mark.parametrize("name", ["any-aliases.yaml", "made-missing.yaml"])
def test_every_reader_refuses_under_its_old_name_as_under_its_new_one(tmp_path, good, name,
                                                                      command):
    """The flat names of earlier releases (cli/legacy.py) keep the same discipline, word for
    word: the same exit code and the same one error line."""
    scratch = _scratch(tmp_path, good)
    source = CORPUS / name if name.startswith("any-") else _make(name, tmp_path)
    refuses(old_form(command), source, scratch)
    lines = [CliRunner().invoke(app, [a.replace("{F}", str(source)).replace("{T}", str(scratch))
                                      for a in argv]) for argv in (command, old_form(command))]
    assert (lines[0].exit_code, lines[0].stderr) == (lines[1].exit_code, lines[1].stderr)


FORMATS = (("taskset-", TASKSET_COMMANDS), ("matrix-", MATRIX_COMMANDS),
           ("campaign-", CAMPAIGN_COMMANDS), ("model-", MODEL_COMMANDS))


@pytest.mark.parametrize("name, commands", [
    (p.name, commands) for prefix, commands in FORMATS
    for p in sorted(CORPUS.glob(f"{prefix}*"))], ids=lambda v: v if isinstance(v, str) else "")
def test_every_reader_refuses_each_bad_field(tmp_path, good, name, commands):
    scratch = _scratch(tmp_path, good)
    for command in commands:
        refuses(command, CORPUS / name, scratch)


MUTATIONS = {k: v for k, v in json.loads((CORPUS / "plan-mutations.json").read_text()).items()
             if not k.startswith("_")}


@pytest.mark.parametrize("name, command", [
    (name, command) for name, (_, _, *only) in sorted(MUTATIONS.items())
    for command in PLAN_COMMANDS if not only or command[1] in only[0]],
    ids=lambda v: v if isinstance(v, str) else "-".join(v[:2]))
def test_plan_readers_refuse_each_edited_plan(tmp_path, good, name, command):
    path, value, *_ = MUTATIONS[name]
    plan = json.loads(json.dumps(good["plan"]))
    target = plan
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    scratch = _scratch(tmp_path, good)
    edited = tmp_path / f"{name}.json"
    edited.write_text(json.dumps(plan, indent=2))
    refuses(command, edited, scratch)


def test_the_corpus_covers_every_class():
    """The classes the issue names, each with at least one file (and the counts reported)."""
    names = GENERIC + list(MADE)
    for word in ("aliases", "depth", "binary", "latin1", "huge", "directory", "missing",
                 "syntax", "python-tag", "duplicate-key", "many-values"):
        assert any(word in n for n in names), word
    for prefix, _ in FORMATS:
        assert len(list(CORPUS.glob(f"{prefix}*"))) >= 5, prefix
    assert len(MUTATIONS) >= 10
