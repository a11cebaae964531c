"""The campaign file: what loads, and every error naming file, line and field."""

from __future__ import annotations

import hashlib
import textwrap
from pathlib import Path

import pytest

from intercore.campaign.spec import load_campaign
from intercore.base.errors import InputError

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "campaigns"

BASE = """\
name: t
guests:
  linux:
    kind: critical
    cpu: 0
    tasks:
      - qsort
      - name: susan-c
        victim: "susan:mode=corners"
  interf:
    kind: engine
generators:
  engine:
    sizes: [32KiB, 1MiB]
    ops: [read, write]
"""


def write(tmp_path: Path, text: str, name: str = "c.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def error(tmp_path: Path, text: str) -> InputError:
    path = write(tmp_path, text)
    with pytest.raises(InputError) as info:
        load_campaign(path)
    assert info.value.source == str(path)
    return info.value


def test_minimal_campaign_loads_with_defaults(tmp_path):
    c = load_campaign(write(tmp_path, BASE))
    assert c.name == "t" and c.platform == "host"
    assert (c.repetitions, c.rounds, c.seed) == (30, 1, 1)
    assert c.executor.kind == "local" and c.executor.ssh() is None
    assert c.critical[0] == "linux" and c.engine[0] == "interf"
    assert [t.name for t in c.critical[1].tasks] == ["qsort", "susan-c"]
    assert c.critical[1].tasks[0].victim == "qsort"
    eng = c.generators.engine
    assert eng.sizes == (32768, 1 << 20) and eng.cpus == ("auto",) and eng.line_sizes == (None,)


@pytest.mark.parametrize("example", ["sp-impact.yaml", "small.yaml"])
def test_examples_load(example):
    assert load_campaign(EXAMPLES / example).name


def test_ssh_executor_and_cpu_lists_normalise(tmp_path):
    text = BASE.replace("    sizes:", "    cpus: [auto, '3,1-2', 0]\n    line_sizes: [native, 128]"
                                       "\n    sizes:") + textwrap.dedent("""\
        executor:
          kind: ssh
          host: board
          user: root
        """)
    c = load_campaign(write(tmp_path, text))
    assert c.generators.engine.cpus == ("auto", "1-3", "0")
    assert c.generators.engine.line_sizes == (None, 128)
    assert c.executor.ssh() == {"host": "board", "port": 22, "user": "root", "identity": None,
                                "workdir": "/tmp/intercore"}


def test_platform_model_path_is_resolved_and_hashed(tmp_path):
    (tmp_path / "models").mkdir()
    model = tmp_path / "models" / "zcu104.yaml"
    model.write_text("name: zcu104\n")
    c = load_campaign(write(tmp_path, BASE + "platform: models/zcu104.yaml\n"))
    assert c.platform == str(model.resolve())
    assert c.platform_sha256 == hashlib.sha256(model.read_bytes()).hexdigest()


@pytest.mark.parametrize("edit, line, field, words", [
    # a victim parameter the measurement core does not have
    (lambda t: t.replace("susan:mode=corners", "susan:colour=red"), 9,
     "guests.linux.tasks[1].victim", "not a parameter of susan"),
    (lambda t: t.replace("      - qsort\n", "      - quicksort\n"), 7,
     "guests.linux.tasks[0].victim", "unknown victim"),
    (lambda t: t.replace("susan:mode=corners", "susan:mode=edges"), 9,
     "guests.linux.tasks[1].victim", "one of smooth, corners"),
    (lambda t: t.replace("      - qsort\n", "      - ptrchase:size=8Q\n"), 7,
     "guests.linux.tasks[0].victim", "cannot parse the size"),
    (lambda t: t.replace("[32KiB, 1MiB]", "[32KiB, 1XB]"), 14, "generators.engine.sizes",
     "cannot parse size"),
    (lambda t: t.replace("[read, write]", "[read, sideways]"), 15, "generators.engine.ops[1]",
     "read"),
    (lambda t: t.replace("[read, write]", "[read, read]"), 15, "generators.engine.ops",
     "distinct"),
    (lambda t: t.replace("    sizes:", "    cpus: [1-x]\n    sizes:"), 14,
     "generators.engine.cpus", "bad CPU list"),
    (lambda t: t.replace("    kind: engine", "    kind: critical\n    tasks: [qsort]"), 3,
     "guests", "exactly one guest"),
    (lambda t: t + "  colouring:\n    colours: 8\n    guests: [interf, linus]\n", 18,
     "generators.colouring.guests[1]", "unknown guest 'linus'"),
    (lambda t: t + "  colouring:\n    colours: 8\n    guests: [interf, linux]\n"
                   "    min_colours: {linux: 9}\n", 19,
     "generators.colouring.min_colours.linux", "1..8"),
    (lambda t: t + "  colouring:\n    colours: 1\n    guests: [interf, linux]\n", 18,
     "generators.colouring.guests", "cannot share"),
    (lambda t: t + "  bandwidth:\n    unit: percent\n    guests:\n      interf: {budgets: [150]}\n",
     17, "generators.bandwidth", "at most 100"),
    (lambda t: t + "  bandwidth:\n    guests:\n      nobody: {budgets: [10]}\n", 18,
     "generators.bandwidth.guests.nobody", "unknown guest"),
    (lambda t: t.replace("generators:\n  engine:\n    sizes: [32KiB, 1MiB]\n"
                         "    ops: [read, write]\n", ""), 11, "guests.interf",
     "generators.engine is missing"),
    (lambda t: t + "executor: {kind: ssh}\n", 16, "executor", "needs a host"),
    (lambda t: t + "platform: nowhere.yaml\n", 16, "platform", "not found"),
    (lambda t: t + "repetitions: 0\n", 16, "repetitions", "must be at least 1"),
    (lambda t: t + "colour: red\n", 16, "colour", "unknown field"),
    (lambda t: t + "name: again\n", 16, "name", "given twice"),
    (lambda t: t.replace("    kind: engine\n", "    kind: engine\n    cpu: 1\n"), 11,
     "guests.interf", "takes no tasks or cpu"),
    (lambda t: t.replace("    cpu: 0\n", "    cpu: 0\n    aggressor: pll\n"), 4,
     "guests.linux", "belong to the engine guest"),
    (lambda t: t.replace("    kind: engine\n", "    kind: engine\n    mlp: 4\n"), 11,
     "guests.interf", "pll only"),
])
def test_errors_name_file_line_and_field(tmp_path, edit, line, field, words):
    err = error(tmp_path, edit(BASE))
    assert (err.line, err.field) == (line, field), str(err)
    assert words in err.message
    assert str(err).startswith(f"{err.source}:{line}: {field}: ")


def test_rw_needs_the_bw_engine(tmp_path):
    text = BASE.replace("    kind: engine\n", "    kind: engine\n    aggressor: pll\n") \
               .replace("[read, write]", "[read, rw]")
    err = error(tmp_path, text)
    assert err.field == "generators.engine.ops" and "aggressor: bw" in err.message
