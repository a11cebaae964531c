"""The resume rule of `intercore assess` (assess/steps.py), on steps whose work is counted:
a step runs when it has no artefact or its inputs changed, is skipped (its work not called)
when they did not, and a step stopped part way leaves no artefact and no temporary file."""

from __future__ import annotations

import json

import pytest

from intercore.assess.steps import FORMAT, Runner, Step, path_of


def _step(calls: list[str], inputs: dict, value: int = 1, name: str = "count") -> Step:
    def work() -> dict:
        calls.append(name)
        return {"value": value}
    return Step(name, "counting", inputs, work)


def test_a_step_runs_once_and_is_skipped_while_its_inputs_are_unchanged(tmp_path):
    calls: list[str] = []
    lines: list[str] = []
    first = Runner(tmp_path, 1, lines.append)(_step(calls, {"file": "a" * 64}))
    again = Runner(tmp_path, 1, lines.append)(_step(calls, {"file": "a" * 64}, value=2))
    assert calls == ["count"]
    assert again == first and again["result"] == {"value": 1}
    assert lines[0] == "[1/1] count: counting"
    assert lines[1].startswith("[1/1] count: skipped, inputs unchanged since ")
    assert json.loads(path_of(tmp_path, "count").read_text())["format"] == FORMAT


@pytest.mark.parametrize("edit", [
    lambda doc: doc.update(inputs={"file": "b" * 64}),    # made from other inputs
    lambda doc: doc.update(format="intercore.assess-step/0"),
    lambda doc: doc.pop("result"),
])
def test_an_artefact_from_other_inputs_or_unreadable_is_made_again(tmp_path, edit):
    calls: list[str] = []
    Runner(tmp_path, 1, lambda _: None)(_step(calls, {"file": "a" * 64}))
    path = path_of(tmp_path, "count")
    doc = json.loads(path.read_text())
    edit(doc)
    path.write_text(json.dumps(doc))
    redone = Runner(tmp_path, 1, lambda _: None)(_step(calls, {"file": "a" * 64}, value=2))
    assert calls == ["count", "count"] and redone["result"] == {"value": 2}


def test_a_torn_artefact_is_made_again(tmp_path):
    calls: list[str] = []
    path_of(tmp_path, "count").write_text('{"format": "intercore.assess-step/1", "inp')
    Runner(tmp_path, 1, lambda _: None)(_step(calls, {}))
    assert calls == ["count"]


def test_a_step_stopped_part_way_leaves_nothing(tmp_path):
    def stopped() -> dict:
        raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        Runner(tmp_path, 1, lambda _: None)(Step("count", "counting", {}, stopped))
    assert list(tmp_path.iterdir()) == []


def test_steps_are_numbered_in_order(tmp_path):
    calls: list[str] = []
    lines: list[str] = []
    run = Runner(tmp_path, 2, lines.append)
    run(_step(calls, {}, name="a"))
    run(_step(calls, {}, name="b"))
    assert [line.split(":")[0] for line in lines] == ["[1/2] a", "[2/2] b"]
