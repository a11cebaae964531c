"""Fixtures for tests on the real cgroup filesystem, and the guarantee that they leave nothing:
after the session no `intercore-test-*` cgroup made during it remains in any hierarchy, and
none is frozen.

Test roots are named `intercore-test-<pid>x<session>-<n>` (fixture `test_root`), <pid> being
the pytest process; tests elsewhere that create cgroups should take that fixture too. Other
sessions may run on the same machine at the same time, so the check waits for roots that are
not this session's to go away before calling them leftovers, and it only ever removes this
session's own. A session killed before its teardown (kill -9, a CI job cancelled) leaves
roots behind that would hold the host's RT budget and fail every later realtime apply: a new
session first removes the roots whose pytest process is gone.
"""

from __future__ import annotations

import itertools
import os
import re
import secrets
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from intercore.host.cgroups import read_cgroups
from intercore.host.topology import read_topology
from intercore.mitigate.cgroupfs import Cgroups

from _kit import build_example, need

TEST_PREFIX = "intercore-test-"
SESSION_PREFIX = f"{TEST_PREFIX}{os.getpid()}x{secrets.token_hex(3)}-"
_SESSION_NAME = re.compile(rf"^{TEST_PREFIX}(\d+)x[0-9a-f]+-\d+$")
# The pytest process a test root's name gives: a session root's, or tests/_flipping.py's.
_PID_IN_NAME = re.compile(rf"^{TEST_PREFIX}(?:(\d+)x|flip-(\d+)-)")
_numbers = itertools.count(1)
OTHER_SESSIONS_GRACE_S = 15.0


def _usable(cg: Cgroups) -> str | None:
    """Why real cgroup tests cannot run here, or None."""
    if os.geteuid() != 0:
        return "needs root to create cgroups"
    if cg.layout.for_role("freeze") is None:
        return f"no cgroup freezer on this host (mode {cg.layout.mode})"
    if not all(os.access(h.mount, os.W_OK) for h in cg.layout.hierarchies):
        return "the cgroup hierarchies are read-only here (a container?)"
    return None


def _frozen(path: Path) -> bool:
    for name, value in (("cgroup.freeze", "1"), ("freezer.state", "FROZEN")):
        try:
            if (path / name).read_text().strip() == value:
                return True
        except OSError:
            continue
    return False


def _tree(roots: list[Path]) -> list[Path]:
    return [p for root in roots for p in [root, *root.rglob("*")] if p.is_dir()]


def _session_gone(name: str) -> bool:
    """Whether the pytest session that named this root no longer runs (names it did not
    make, such as an older scheme's, are never judged)."""
    match = _SESSION_NAME.match(name)
    if match is None:
        return False
    try:
        os.kill(int(match.group(1)), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def _made_here_or_unclaimed(name: str) -> bool:
    match = _PID_IN_NAME.match(name)
    return match is None or int(match.group(1) or match.group(2)) == os.getpid()


def remove_roots_of_dead_sessions(cg: Cgroups) -> list[str]:
    """Remove the test roots whose session died before its teardown; their names."""
    names = dict.fromkeys(p.name for p in cg.roots_named(TEST_PREFIX) if _session_gone(p.name))
    for name in names:
        applied = cg.discover(name)
        if applied is not None:
            cg.remove(applied)
    return list(names)


@pytest.fixture(scope="session", autouse=True)
def no_test_cgroup_left_behind():
    cg = Cgroups()
    if os.geteuid() == 0:
        remove_roots_of_dead_sessions(cg)
    before = set(cg.roots_named(TEST_PREFIX))
    yield

    def new_roots() -> list[Path]:
        """Roots made during the session, less those another live session's name claims
        (that session checks its own)."""
        return [p for p in cg.roots_named(TEST_PREFIX)
                if p not in before and _made_here_or_unclaimed(p.name)]

    deadline = time.monotonic() + OTHER_SESSIONS_GRACE_S
    while any(not p.name.startswith(SESSION_PREFIX) for p in new_roots()) and \
            time.monotonic() < deadline:
        time.sleep(0.2)
    left = _tree(new_roots())
    frozen = [p for p in left if _frozen(p)]
    for name in dict.fromkeys(p.name for p in new_roots() if p.name.startswith(SESSION_PREFIX)):
        applied = cg.discover(name)
        if applied is not None:  # clean the host even though the session fails
            try:
                cg.remove(applied)
            except Exception as exc:  # noqa: BLE001 - reported below, whatever went wrong
                print(f"could not remove {name}: {exc}", file=sys.stderr)
    assert not frozen, f"test cgroups left frozen: {frozen}"
    assert not left, (f"test cgroups left behind: {left} (this session's names start with "
                      f"{SESSION_PREFIX}; others may belong to a session still running)")


@pytest.fixture
def real_cgroups() -> Cgroups:
    cg = Cgroups()
    reason = _usable(cg)
    if reason:
        pytest.skip(reason)
    return cg


@pytest.fixture
def dead_sessions_cleanup():
    """The cleanup a session runs first, for the test that checks it."""
    return remove_roots_of_dead_sessions


@pytest.fixture
def test_root() -> str:
    return f"{SESSION_PREFIX}{next(_numbers)}"


@pytest.fixture(scope="module")
def example(tmp_path_factory) -> Path:
    """The example's programs built as a user builds them, for a task set of the user's own:
    its control_task as the critical task, beside which the monitor needs a second CPU."""
    need("gcc")
    if len(read_topology().online_cpus) < 2:
        pytest.skip("needs two online CPUs: the program's and the monitor's")
    return build_example("gcc", tmp_path_factory.mktemp("example"))


@pytest.fixture(scope="module")
def module_root() -> str:
    """test_root for a module-scoped fixture (one run that several tests read)."""
    return f"{SESSION_PREFIX}{next(_numbers)}"


@dataclass(frozen=True)
class Groups:
    critical: Path
    best_effort: Path


def _remove(group: Path) -> None:
    """Thaw, kill what is left, wait until empty, remove."""
    if not group.is_dir():
        return
    (group / "cgroup.freeze").write_text("0")
    (group / "cgroup.kill").write_text("1")
    deadline = time.monotonic() + 10
    while "populated 1" in (group / "cgroup.events").read_text():
        if time.monotonic() > deadline:
            raise AssertionError(f"{group} did not empty")
        time.sleep(0.01)
    group.rmdir()


@pytest.fixture
def groups(test_root):
    """A critical and a best-effort v2 group under a test root, removed afterwards."""
    info = read_cgroups()
    if os.geteuid() != 0:
        pytest.skip("needs root to create cgroups")
    if info.freezer != "v2" or info.v2_mount is None:
        pytest.skip(f"needs the cgroup v2 freezer (this host: {info.freezer})")
    root = Path(info.v2_mount) / test_root
    root.mkdir()
    made = Groups(root / "critical", root / "best-effort")
    try:
        made.critical.mkdir()
        made.best_effort.mkdir()
        yield made
    finally:
        for group in (made.critical, made.best_effort):
            _remove(group)
        root.rmdir()
