"""Which freeze windows a monitor takes from a plan (guard.windows_from_plan): the plan's
regions where the watched task publishes them, whole jobs (which freeze more) wherever it
cannot honour them, and a note whenever it protects otherwise than the plan says. The
notification blocks are written here byte by byte after docs/native-contract.md."""

from __future__ import annotations

import struct

from intercore.mitigate.freezer import notify_block as nb
from intercore.mitigate.freezer.guard import windows_from_plan
from intercore.mitigate.plan import algorithm1
from intercore.mitigate.plan.region_matrix import build

from test_region_matrix import _heatmap, _job, _taskset


def _plan(*regions: str):
    heat = _heatmap(*((r, 1.2, 2.0, None) for r in regions))
    return algorithm1.plan(_taskset(), build(_taskset(), _job(1.8),
                                             heatmaps={"ctl": ("h.json", heat)}), 1.5)


def _block(tmp_path, *names: str):
    data = bytearray(nb.SIZE)
    data[:4] = nb.MAGIC
    struct.pack_into("<I", data, 4, nb.VERSION)
    struct.pack_into("<I", data, 16, nb.STATE_INIT + 1)
    struct.pack_into("<I", data, nb.NREGIONS_AT, len(names))
    for i, name in enumerate(names):
        at = nb.NAMES_AT + i * nb.NAME_LEN
        data[at:at + len(name)] = name.encode()
    path = tmp_path / "ctl.notify"
    path.write_bytes(bytes(data))
    return path


def test_the_plans_windows_are_taken_where_the_task_publishes_them(tmp_path):
    plan = _plan("filter", "lut")
    assert plan.freeze_windows() == ("filter", "lut")
    assert windows_from_plan(plan, _block(tmp_path, "filter", "lut", "io")) == \
        (("filter", "lut"), "freeze windows from the plan: filter, lut")
    # A name the task does not publish is another critical task's; its monitor takes it.
    assert windows_from_plan(plan, _block(tmp_path, "filter")) == \
        (("filter",), "freeze windows from the plan: filter (lut: another task's)")


def test_whole_jobs_wherever_the_windows_cannot_be_honoured(tmp_path):
    plan = _plan("filter")
    windows, note = windows_from_plan(plan, None)
    assert windows == () and "needs the critical task's --notify block" in note
    windows, note = windows_from_plan(plan, _block(tmp_path))
    assert windows == () and "has no region markers" in note
    windows, note = windows_from_plan(plan, _block(tmp_path, "io"))
    assert windows == () and "none of the plan's window regions (filter)" in note


def test_a_plan_without_windows_protects_whole_jobs_without_a_word(tmp_path):
    plan = algorithm1.plan(_taskset(), _job(1.8), 1.5)
    assert plan.freeze_windows() == ()
    assert windows_from_plan(plan, _block(tmp_path, "filter")) == ((), None)


def test_one_protect_group_without_windows_makes_every_freeze_whole():
    plan = _plan("filter")
    ctl = plan.group("ctl")
    whole = ctl.model_copy(update={"name": "other", "tasks": ("other",), "windows": ()})
    mixed = plan.model_copy(update={"groups": (*plan.groups, whole)})
    assert whole.monitor == "protect" and mixed.freeze_windows() == ()
