"""A SIGTERM or Ctrl-C must stop a command even when Python drops the exception it raises: inside an
at-fork hook, which subprocess runs for every child with a preexec_fn (one in four stops of a
campaign was lost that way)."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from intercore.measure.stopping import Stop, raise_if_dropped, sigterm_unwinds

CHILD = Path(__file__).with_name("stop_in_fork_hook.py")


def sleepers(arg: str) -> list[int]:
    found, cmdline = [], f"/bin/sleep\0{arg}\0".encode()
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and (proc / "cmdline").read_bytes() == cmdline:
                found.append(int(proc.name))
        except OSError:
            continue
    return found


@pytest.mark.parametrize("sig,status", [(signal.SIGTERM, 128 + signal.SIGTERM),
                                        (signal.SIGINT, -signal.SIGINT)],
                         ids=["SIGTERM", "SIGINT"])
def test_a_stop_dropped_in_a_fork_hook_is_raised_once_the_child_is_in_the_group(sig, status):
    arg = f"987.{sig}"  # names this test's sleeper among the host's processes
    done = subprocess.run([sys.executable, str(CHILD), arg, str(int(sig))], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == status, done.stdout + done.stderr
    assert "survived" not in done.stdout
    assert "Exception ignored" not in done.stderr  # the drop is handled, not reported
    assert sleepers(arg) == []  # the group stopped the child that was starting


def test_nothing_is_raised_without_a_dropped_stop_and_the_hooks_are_restored():
    hook, handler = sys.unraisablehook, signal.getsignal(signal.SIGTERM)
    with sigterm_unwinds():
        raise_if_dropped()
        assert signal.getsignal(signal.SIGTERM) is not handler
    assert (sys.unraisablehook, signal.getsignal(signal.SIGTERM)) == (hook, handler)


def test_other_unraisable_exceptions_still_reach_the_previous_hook(monkeypatch):
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", seen.append)
    with sigterm_unwinds():
        sys.unraisablehook(type("U", (), {"exc_value": ValueError("x")})())
        raise_if_dropped()
    assert [type(u.exc_value) for u in seen] == [ValueError]


def test_stop_exits_with_128_plus_the_signal():
    assert Stop(signal.SIGTERM).code == 143
