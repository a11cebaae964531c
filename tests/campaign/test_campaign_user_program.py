"""A campaign whose critical task is the user's own program (path and arguments, as
`intercore measure run -- ./prog ARGS` takes them): checked before any work (a missing or
non-executable file is FILE:LINE:field, exit 2), planned with the program's bytes in every
setup hash, and run by the local executor through ic-run, so its marked regions are
measured per setup. The example user program (examples/user-program), built with gcc."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from intercore.campaign.plan import make_plan
from intercore.campaign.spec import load_campaign
from intercore.base.errors import InputError
from intercore.store import Store

from _kit import REGIONS, build_example, need

CAMPAIGN = """\
name: mine
repetitions: 4
rounds: 1
guests:
  crit:
    kind: critical
    tasks:
      - name: ctl
        program: [{program}, --steps, 2000]
  engine:
    kind: engine
generators:
  engine:
    sizes: [64KiB]
    ops: [write]
{extra}"""


def _write(directory: Path, program: str = "./control", extra: str = "") -> Path:
    path = directory / "mine.yaml"
    path.write_text(CAMPAIGN.format(program=program, extra=extra))
    return path


def _plan(path: Path):
    return make_plan(load_campaign(path), source=str(path), host={})


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "intercore", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=600)


@pytest.fixture(scope="module")
def example(tmp_path_factory) -> Path:
    need("gcc")
    return build_example("gcc", tmp_path_factory.mktemp("example"))


@pytest.mark.slow
def test_the_program_is_a_task_of_the_critical_guest(example):
    campaign = load_campaign(_write(example))
    (task,) = campaign.critical[1].tasks
    # Relative to the campaign file, like `platform`; its arguments as exec takes them.
    assert task.program == (str(example / "control"), "--steps", "2000")
    plan = make_plan(campaign, source="mine.yaml", host={"executor": "test"})
    assert {s.request.victim for s in plan.setups} == {str(example / "control")}
    assert {s.request.victim_args for s in plan.setups} == {("--steps", "2000")}
    assert all(s.to_dict()["victim_args"] == ["--steps", "2000"] for s in plan.setups)


def test_a_rebuilt_program_gets_new_setup_hashes(example, tmp_path):
    copy = tmp_path / "control"
    copy.write_bytes((example / "control").read_bytes())
    copy.chmod(0o755)
    path = _write(tmp_path)
    before = {s.name: s.hash for s in _plan(path).setups}
    with open(copy, "ab") as f:
        f.write(b"\0")  # same path, same arguments, other bytes
    after = {s.name: s.hash for s in _plan(path).setups}
    assert before.keys() == after.keys() and not set(before.values()) & set(after.values())


@pytest.mark.parametrize("program, extra, words", [
    ("./missing", "", "no such file"),
    ("./controller.h", "", "not an executable file"),
    (".", "", "is a directory"),
    ("./control", "executor: {kind: ssh, host: board}\n", "local executor only"),
])
@pytest.mark.slow
def test_a_program_that_cannot_run_here_exits_2_naming_file_line_and_field(
        example, tmp_path, program, extra, words):
    path = _write(example, program, extra)
    for command in (("measure", "campaign", "validate"), ("measure", "campaign", "plan"),
                    ("measure", "campaign", "run")):
        db = tmp_path / "s.db"
        done = _cli(*command, str(path), "--db", str(db), cwd=tmp_path) \
            if command[1] == "run" else _cli(*command, str(path), cwd=tmp_path)
        assert done.returncode == 2, (command, done.stderr)
        line = done.stderr.strip()
        assert line.startswith(f"error: {path}:9: guests.crit.tasks[0].program: "), line
        assert words in line and "\n" not in line
        assert not db.exists()


@pytest.mark.parametrize("edit, field, words", [
    (lambda t: t.replace("        program: [./control, --steps, 2000]\n",
                         "        victim: ./control\n"), "guests.crit.tasks[0].victim",
     "is a path"),
    (lambda t: t.replace("        program:", "        victim: qsort\n        program:"),
     "guests.crit.tasks[0]", "not both"),
    (lambda t: t.replace("[./control, --steps, 2000]", "[]"),
     "guests.crit.tasks[0].program", "at least 1"),
])
def test_a_program_task_is_refused_when_malformed(example, edit, field, words):
    path = example / "bad.yaml"
    path.write_text(edit(CAMPAIGN.format(program="./control", extra="")))
    with pytest.raises(InputError) as info:
        load_campaign(path)
    assert info.value.field == field and words in info.value.message, str(info.value)


@pytest.mark.slow
def test_campaign_run_measures_the_programs_regions_in_every_setup(example, tmp_path):
    db = tmp_path / "s.db"
    done = _cli("campaign", "run", str(_write(example)), "--quick", "--no-canary", "--db",
                str(db), "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["done"] == doc["total"] == 2 and not doc["skipped"]  # solo + one engine setup
    with Store.open(db) as store:
        invocations = [i for i in store.invocations() if i.command != "campaign"]
        assert invocations
        for inv in invocations:
            victims = [w for w in store.workloads_for(inv.id) if w.role == "victim"]
            assert [w.kind for w in victims] == ["program"]
            assert victims[0].params["command"] == [str(example / "control"), "--steps",
                                                   "2000"]
            regions = {s.region_name for s in store.samples_for(inv.id)}
            assert regions == {"total", *REGIONS}
