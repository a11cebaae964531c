"""Links and paths, generated for every command that writes an output (issue 18).

Each command is paired with every class of bad place for what it writes: a directory that
does not exist (none may be made), a file where a directory belongs and the reverse, a path
under a file, a dangling symlink as the directory, a /proc file and a device where a file
belongs, a store that is not SQLite or has a second hard link, and a task set whose name
(which names the outputs) leads out of the directory. The contract is the corpus's
(test_corpus.refuses): exit 2, one `error:` line that names the option, nothing made or
changed, no traceback; checked before any work, so each case takes no measurement.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from intercore.store import Store

from test_corpus import EXAMPLES, _scratch, good, refuses  # noqa: F401 (good: a fixture)

SIGNAL = (str(EXAMPLES / "apps/signal/signal.comp"), "-s",
          str(EXAMPLES / "apps/signal/signal.c"))

# Where a file goes ({T}: the scratch directory, made afresh for each case).
FILE_CLASSES = {
    "missing-parent": "{T}/gone/out",
    "directory": "{T}/adir",
    "under-a-file": "{T}/notes.txt/out",
    "dangling-link-parent": "{T}/dangling/out",
    "proc-file": "/proc/version",
    # Its own null device: a writer that renamed over /dev/null itself replaced the host's
    # (an older release did so; so did this test, run against it).
    "device": "{T}/null",
}
# A prefix of several files (PREFIX.json, PREFIX-before.dot ...): a directory of that name is
# no obstacle, and a device has no suffixed siblings.
PREFIX_CLASSES = {k: v for k, v in FILE_CLASSES.items()
                  if k in ("missing-parent", "under-a-file", "dangling-link-parent")}
PREFIX_CLASSES["proc"] = "/proc/intercore-out"
DIR_CLASSES = {
    "missing-parent": "{T}/gone/out",
    "a-file": "{T}/notes.txt",
    "under-a-file": "{T}/notes.txt/out",
    "dangling-link-parent": "{T}/dangling/out",
    "proc-file": "/proc/version",
}
STORE_CLASSES = {
    "missing-parent": "{T}/gone/s.db",
    "directory": "{T}/adir",
    "under-a-file": "{T}/notes.txt/s.db",
    "not-sqlite": "{T}/notes.txt",
    "hard-linked": "{T}/linked.db",
}

MATRIX = ("measure", "matrix", "{T}/good-taskset.yaml", "--rounds", "1", "--block", "1ms",
          "--no-canary")
# (command with {P} for the path under test, the option that names it)
FILES = (
    (("mitigate", "plan", "{T}/good-taskset.yaml", "-m", "{T}/good-matrix.json", "-o", "{P}"),
     "--output"),
    (("compile", "build", *SIGNAL, "-o", "{P}"), "--out"),
    (("measure", "campaign", "report", "small", "-o", "{P}"), "--output"),
    (("measure", "campaign", "export", "small", "--csv", "{P}"), "--csv"),
    (("results", "export", "--csv", "{P}"), "--csv"),
    (("results", "timeline", "1", "-o", "{P}"), "--output"),
    (("results", "merge", "{T}/lab.db", "-o", "{P}"), "--output"),
    (("mitigate", "monitor", "--plan", "{T}/plan.json", "--log", "{P}"), "--log"),
    (("model", "analyze", "{T}/model.yaml", "--html", "{P}"), "--html"),
)
PREFIXES = (
    (MATRIX + ("-o", "{P}"), "--out"),
    (("compile", "build", *SIGNAL, "--draw", "{P}"), "--draw"),
)
DIRS = (
    (("mitigate", "gang", "--taskset", "{T}/good-taskset.yaml", "-o", "{P}"), "--out"),
    (("measure", "profile", "run", "-o", "{P}", "--", "true"), "--out"),
    (("learn", "dataset", "--small", "--out", "{P}"), "--out"),
    (("learn", "train", "--dataset", "{T}/ds", "-o", "{P}"), "--out"),
    (("learn", "evaluate", "--dataset", "{T}/ds", "--figures", "{P}"), "--figures"),
    (("mitigate", "service", "install", "--plan", "{T}/plan.json", "--unit-dir", "{P}"),
     "--unit-dir"),
    (("mitigate", "protection", "--quick", "--out", "{P}"), "--out"),
    (("measure", "run", "matmul", "--runs", "3", "--no-canary", "--plot", "{P}"), "--plot"),
    (("mitigate", "mba", "doe", "-o", "{P}"), "--out"),
    (("assess", "{T}/system.yaml", "-o", "{P}"), "--out"),
    (("dossier", "verify", "{T}", "-o", "{P}"), "--out"),
)
STORES = (
    (("measure", "run", "matmul", "--runs", "3", "--no-canary", "--db", "{P}"), "--db"),
    (MATRIX + ("--db", "{P}"), "--db"),
    (("measure", "campaign", "run", "{T}/small.yaml", "--no-canary", "--db", "{P}"), "--db"),
    (("mitigate", "gang", "--taskset", "{T}/good-taskset.yaml", "--db", "{P}"), "--db"),
    (("model", "validate", "{T}/model.yaml", "--quick", "--db", "{P}"), "--db"),
    (("learn", "dataset", "--small", "--db", "{P}"), "--db"),
    (("assess", "{T}/system.yaml", "-o", "{T}/dossier", "--db", "{P}"), "--db"),
)
# A task set's name names matrix's outputs when -o is left out.
NAMES = ("../../x", "..", ".hidden", "sub/x")

CASES = [(kind, cls, place, command, option)
         for kind, commands, classes in (("file", FILES, FILE_CLASSES),
                                         ("prefix", PREFIXES, PREFIX_CLASSES),
                                         ("dir", DIRS, DIR_CLASSES),
                                         ("store", STORES, STORE_CLASSES))
         for command, option in commands for cls, place in classes.items()]


def _companions(scratch: Path) -> None:
    """What the commands read beside the path under test, and the obstacles the classes
    name: a directory, a text file, a dangling link, a device, a store with a second name."""
    (scratch / "adir").mkdir()
    (scratch / "notes.txt").write_text("notes\n")
    (scratch / "dangling").symlink_to(scratch / "gone")
    shutil.copy(EXAMPLES / "campaigns/small.yaml", scratch / "small.yaml")
    shutil.copy(EXAMPLES / "platforms/rpi4.yaml", scratch / "model.yaml")
    (scratch / "system.yaml").write_text("name: s\nplatform: model.yaml\n"
                                         "taskset: good-taskset.yaml\n")
    os.mknod(scratch / "null", stat.S_IFCHR | 0o666, os.makedev(1, 3))
    Store.open(scratch / "lab.db").close()
    os.link(scratch / "lab.db", scratch / "linked.db")


@pytest.fixture
def scratch(tmp_path, good, monkeypatch) -> Path:  # noqa: F811 (the fixture imported above)
    path = _scratch(tmp_path, good)
    _companions(path)
    monkeypatch.chdir(path)  # what a command makes by default lands here, and is seen
    return path


@pytest.mark.parametrize("kind, cls, place, command, option", CASES,
                         ids=[f"{c[3][0]}-{c[4]}-{c[1]}" for c in CASES])
def test_every_writer_refuses_every_bad_place(scratch, kind, cls, place, command, option):
    path = place.replace("{T}", str(scratch))
    refuses(tuple(a.replace("{P}", path) for a in command), Path(path), scratch,
            option=option)


@pytest.mark.parametrize("command", [MATRIX[:2] + ("{F}",) + MATRIX[3:]], ids=["matrix"])
@pytest.mark.parametrize("name", NAMES)
def test_a_name_from_an_input_stays_in_the_directory(scratch, name, command):
    taskset = scratch / "named.yaml"
    text = (scratch / "good-taskset.yaml").read_text()
    taskset.write_text(text.replace("name: paper-000", f"name: {name!r}", 1))
    assert taskset.read_text() != text
    refuses(command, taskset, scratch, option="name")
    assert not list(scratch.parents[1].glob("x.*"))
