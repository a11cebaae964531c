"""Static schedules (issue 23 item 1): with more tasks than CPUs the cost model partitions
the graph over the CPUs and each partition is one thread firing its calls in program order,
with channels only between partitions; `--schedule threads` keeps a thread per task."""

from __future__ import annotations

import re

import pytest

from _compilekit import compiled
from intercore.compile import emit_c, partition, pipeline
from intercore.base.errors import InputError

CHAIN = """
    blk src(int i);
    blk a(const blk x);
    blk b(const blk x);
    blk c(const blk x);
    blk d(const blk x);
    stateful void sink(int i, const blk x);
    int main() {
      for (int i = 0; i < 50; i++) { sink(i, d(c(b(a(src(i)))))); }
      return 0;
    }"""
PROGRAM_ORDER = ["src", "a", "b", "c", "d", "sink"]


def labels(c, task) -> list[str]:
    return [c.graph.nodes[n].label for n in partition.order(c.graph, task.process)]


@pytest.mark.parametrize("cpus", [1, 2, 3])
def test_static_partitions_fit_the_cpus_and_fire_in_program_order(tmp_path, cpus) -> None:
    c = compiled(tmp_path, CHAIN, cpus=cpus, no_fuse=True, schedule="static")
    tasks = c.variants[0].tasks
    assert c.schedule == "static" and len(tasks) == cpus
    orders = [labels(c, t) for t in tasks]
    assert sorted(sum(orders, [])) == sorted(PROGRAM_ORDER)  # every call in one partition
    for o in orders:  # each fires its calls as the program orders them
        assert o == sorted(o, key=PROGRAM_ORDER.index)
    # a chain cut into `cpus` pieces: one channel per cut, none inside a partition
    assert c.variants[0].nchannels == cpus - 1
    assert all(ch.src is not ch.dst for ch in c.variants[0].channels)


@pytest.mark.parametrize("cpus, heavy, parts", [
    (2, None, [["src", "a", "b"], ["c", "d", "sink"]]),
    (3, None, [["src", "a"], ["b", "c"], ["d", "sink"]]),
    (2, "a", [["src", "a"], ["b", "c", "d", "sink"]]),
    (3, "a", [["src"], ["a"], ["b", "c", "d", "sink"]]),
    (2, "d", [["src", "a", "b", "c"], ["d", "sink"]])])
def test_partitions_balance_the_weights(tmp_path, cpus, heavy, parts) -> None:
    """The cost model cuts the chain where the partitions weigh the most alike (one call
    weighing 4 where the others weigh 1), not where merging one pair at a time ends."""
    body = CHAIN if heavy is None else CHAIN.replace(f"blk {heavy}(", f"@weight(4) blk {heavy}(")
    c = compiled(tmp_path, body, cpus=cpus, no_fuse=True, schedule="static")
    assert [labels(c, t) for t in c.variants[0].tasks] == parts


def test_generated_partition_uses_no_channel_inside_it(tmp_path) -> None:
    c = compiled(tmp_path, CHAIN, cpus=2, no_fuse=True, schedule="static")
    code = emit_c.generate(c.graph, c.variants, 0)
    first = re.findall(r"static void v0_t\d+\(ic_chan_t \*\*ch\) \{(.*?)\n\}", code, re.S)
    assert len(first) == 2
    assert sum(t.count("ic_chan_push(") for t in first) == 1
    assert sum(t.count("ic_chan_pull(") for t in first) == 1
    threads = compiled(tmp_path, CHAIN, cpus=2, no_fuse=True, schedule="threads")
    assert threads.variants[0].nchannels == 5


def test_default_is_static_only_when_tasks_outnumber_cpus(tmp_path) -> None:
    many = compiled(tmp_path, CHAIN, cpus=2, no_fuse=True)
    assert many.schedule == "static"
    assert many.schedule_why.startswith("6 tasks > 2 CPU(s); estimate ")
    assert len(many.variants[0].tasks) == 2
    few = compiled(tmp_path, CHAIN, cpus=2, max_tasks=2)
    assert (few.schedule, few.schedule_why) == ("threads", "2 task(s) <= 2 CPU(s)")
    kept = compiled(tmp_path, CHAIN, cpus=2, no_fuse=True, schedule="threads")
    assert len(kept.variants[0].tasks) == 6 and kept.schedule_why == "--schedule threads"


def test_static_keeps_the_fallbacks_down_to_sequential(tmp_path) -> None:
    c = compiled(tmp_path, CHAIN, cpus=3, no_fuse=True, schedule="static")
    assert [len(v.tasks) for v in c.variants] == [3, 2, 1]


def test_unknown_schedule_is_refused_before_any_work(tmp_path) -> None:
    with pytest.raises(InputError) as exc:
        compiled(tmp_path, CHAIN, schedule="sometimes")
    assert exc.value.field == "--schedule"
    with pytest.raises(InputError):
        pipeline.Options(schedule="sometimes").check()


def test_a_split_no_cpu_can_balance_stays_a_thread_per_task(tmp_path) -> None:
    """Three tasks on two CPUs, one of them (c) as heavy as the rest together: any static
    split puts c with something, and its heavier half decides the time, where three threads
    the OS balances run in about half the total. The cost model estimates both and keeps the
    threads (the signal pipeline, whose fir is 42 % of its work, ran 240 ms split and 143 ms
    as three threads); the split is still there when asked for."""
    body = CHAIN.replace("blk c(", "@weight(6) blk c(")
    c = compiled(tmp_path, body, cpus=2, max_tasks=3)
    assert len(c.processes) == 3
    assert c.schedule == "threads" and len(c.variants[0].tasks) == 3
    assert "a thread per task is estimated faster" in c.schedule_why
    threads, split = (float(x) for x in re.findall(r"\(([\d.e+]+)\)", c.schedule_why))
    assert threads < split
    asked = compiled(tmp_path, body, cpus=2, max_tasks=3, schedule="static")
    assert asked.schedule == "static" and len(asked.variants[0].tasks) == 2
