"""A SIGTERM or Ctrl-C must stop a command even when Python drops the exception it raises: inside an
at-fork hook, which subprocess runs for every child with a preexec_fn (one in four stops of a
campaign was lost that way)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from intercore.base.stopping import (PROMPT_S, Stop, raise_if_dropped, sigterm_unwinds,
                                        stop_in, stop_line)

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


HELD_IN_C = """
import hashlib, sys
from intercore.base import stopping
stopping.install()
with stopping.nothing_to_undo():
    print("ready", flush=True)
    hashlib.pbkdf2_hmac("sha256", b"x", b"y", 10**9)  # seconds in C, the GIL released
print("ran to its end", flush=True)
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_work_held_in_c_with_nothing_to_undo_stops_at_once(sig):
    """The main thread cannot see a signal while C code holds it (an XLA compilation, a
    jitted step): the watcher thread ends the process, with the one line and the status."""
    proc = subprocess.Popen([sys.executable, "-c", HELD_IN_C], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "ready\n"
    time.sleep(0.2)  # inside pbkdf2 by now
    sent = time.monotonic()
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + sig, err
    assert time.monotonic() - sent < 1.0 + PROMPT_S
    assert err == f"{stop_line(sig)}\n" and out == ""


def test_a_stop_is_found_behind_what_its_unwinding_raised():
    """An error raised by a cleanup while a stop unwinds is the stop (one line, 130/143),
    not the error (it was exit 1, 'pid N did not stop within 2.0 s (state Z)')."""
    try:
        try:
            raise Stop(signal.SIGTERM)
        finally:
            raise ValueError("a cleanup failed")
    except ValueError as exc:
        assert stop_in(exc) == signal.SIGTERM
    try:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as ki:
            raise RuntimeError("wrapped") from ki
    except RuntimeError as exc:
        assert stop_in(exc) == signal.SIGINT
    assert stop_in(ValueError("no stop here")) is None
