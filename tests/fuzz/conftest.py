"""The fuzz run's report: how many cases each command group had, and how they ended."""

from __future__ import annotations

from collections import Counter

# Commands whose group is their first two words; the rest are grouped by their first word.
_TWO_WORDS = {"results", "campaign", "cgroups", "model", "service", "experiment"}
_tally: Counter = Counter()
_failed: Counter = Counter()


def _group(argv) -> str:
    argv = [str(a) for a in argv]
    if argv[0] in _TWO_WORDS and len(argv) > 1 and not argv[1].startswith("-"):
        return f"{argv[0]} {argv[1]}"
    return argv[0]


def _groups(item) -> list[str]:
    params = getattr(getattr(item, "callspec", None), "params", {})
    if "group" in params:
        return [params["group"]]
    for key in ("command", "argv"):
        if key in params:
            return [_group(params[key])]
    if "commands" in params:
        return [_group(c) for c in params["commands"]]
    if item.originalname == "test_plan_readers_refuse_each_edited_plan":
        return [_group(c) for c in item.module.PLAN_COMMANDS]
    return []  # the properties (hypothesis) and the coverage checks


def pytest_collection_modifyitems(items):
    for item in items:
        item.user_properties.append(("fuzz_groups", _groups(item)))


def pytest_runtest_logreport(report):
    if report.when != "call":
        return
    for group in dict(report.user_properties).get("fuzz_groups", ()):
        _tally[group] += 1
        if report.failed:
            _failed[group] += 1


def pytest_terminal_summary(terminalreporter):
    if not _tally:
        return
    terminalreporter.section("fuzz cases per command group")
    for group, n in sorted(_tally.items()):
        bad = f", {_failed[group]} failed" if _failed[group] else ""
        terminalreporter.write_line(f"{group:<22} {n:>5}{bad}")
    terminalreporter.write_line(f"{'all':<22} {sum(_tally.values()):>5}")
