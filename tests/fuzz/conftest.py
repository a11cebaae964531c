"""The fuzz run's summary: how many cases each command group got, and how they ended.

A case counts once in every command group it runs: a group is the command its command line
names (`mitigate plan`, `measure campaign validate`, `results merge`, ...), however many words
that takes; a generated case may name its group itself (a `group` parameter). The hypothesis
properties, which drive the loaders and grammars rather than a command, are one group of
their own."""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest
import typer

from intercore.cli.main import app

PROPERTIES = "loaders and grammars (hypothesis)"
_outcomes: dict[str, Counter] = defaultdict(Counter)


def _group(argv) -> str:
    """The words of argv that name a command in the tree (an old name counts as itself)."""
    command, words = typer.main.get_command(app), []
    for word in map(str, argv):
        found = command.get_command(None, word) if hasattr(command, "commands") else None
        if found is None:
            break
        command, words = found, words + [word]
    return " ".join(words) or str(argv[0])


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
