"""The fuzz run's summary: how many cases each command group got, and how they ended.

A case counts once in every command group it runs: a group is the first word of its command
line, or the first two for the commands that gather sub-commands (`results merge`, `campaign
validate`, ...); a generated case may name its group itself (a `group` parameter). The
hypothesis properties, which drive the loaders and grammars rather than a command, are one
group of their own."""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest

PROPERTIES = "loaders and grammars (hypothesis)"
# Commands whose group is their first two words; the rest are grouped by their first word.
_TWO_WORDS = {"results", "campaign", "cgroups", "model", "service", "experiment"}
_outcomes: dict[str, Counter] = defaultdict(Counter)


def _group(argv) -> str:
    argv = [str(a) for a in argv]
    if argv[0] in _TWO_WORDS and len(argv) > 1 and not argv[1].startswith("-"):
        return f"{argv[0]} {argv[1]}"
    return argv[0]


def _groups(item: pytest.Item) -> set[str]:
    params = item.callspec.params if hasattr(item, "callspec") else {}
    if "group" in params:
        return {params["group"]}
    lines = [params[k] for k in ("command", "argv") if k in params]
    lines += list(params.get("commands", ()))
    if lines:
        return {_group(line) for line in lines}
    return {PROPERTIES if item.module.__name__.endswith("properties") else item.originalname}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    report = (yield).get_result()
    if report.when == "call" or (report.when == "setup" and not report.passed):
        for group in _groups(item):
            _outcomes[group][report.outcome] += 1


def pytest_terminal_summary(terminalreporter):
    if not _outcomes:
        return
    write = terminalreporter.write_line
    terminalreporter.section("bad-input cases per command group")
    total: Counter = Counter()
    for group in sorted(_outcomes):
        counts = _outcomes[group]
        total.update(counts)
        write(f"{group:<36} {sum(counts.values()):>5}  " + ", ".join(
            f"{n} {outcome}" for outcome, n in sorted(counts.items())))
    write(f"{'all groups (a case in several counts in each)':<36} {sum(total.values()):>5}")
