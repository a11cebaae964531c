"""Ctrl-C and SIGTERM stop every command the same way: an exception that unwinds through every
finally block, so children are stopped, cgroups torn down, groups thawed and nothing is
half-stored. The CLI's entry point installs the handlers before it imports anything heavy
(`install()`), so a stop during start-up is a stop like any other, and says so in one line.

The first stop is the one that counts. A second Ctrl-C (people press it twice) that arrived
while the first unwinds would raise inside a cleanup and leave what it was undoing half done,
so stops within GRACE_S of the first are absorbed: every cleanup finishes well within it (a
process group waits 2 s at most). One after that means the first was lost, and is raised.

Python drops an exception raised while it runs an at-fork hook: `logging` registers one, and
subprocess runs the hooks whenever a child gets a `preexec_fn`, as every native tool does. A
SIGTERM that arrives while a child is being started would then be lost, and the command would
measure on to its end (one in four stops of a campaign, measured on a 2-vCPU host); Ctrl-C's
KeyboardInterrupt is dropped alike. The dropped exception is caught on its way to
`sys.unraisablehook` and raised again by `raise_if_dropped()`, which the process group calls
as soon as the new child is its own to stop.

Some work cannot see a stop for seconds: an XLA compilation or a jitted training step holds
the main thread in C, where no Python handler runs. Where such work holds nothing that needs
undoing (`nothing_to_undo()`), a watcher thread woken by the signal itself ends the process
if the main thread has not begun unwinding within PROMPT_S.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

GRACE_S = 5.0
PROMPT_S = 0.3
REDELIVER_S = 0.05
SIGNALS = (signal.SIGINT, signal.SIGTERM)
# What signal.signal() takes and returns.
Handler = Callable[[int, FrameType | None], Any] | int | signal.Handlers | None
NAMES = {signal.SIGINT: "Ctrl-C (SIGINT)", signal.SIGTERM: "SIGTERM"}


class Stop(SystemExit):
    """The exception a stopping signal raises: exit status 128 + the signal's number."""

    def __init__(self, signum: int) -> None:
        super().__init__(128 + signum)
        self.signum = signum


_dropped: list[BaseException] = []
_first: list[tuple[int, float]] = []  # the stop under way: (signal, when)
_said = threading.Lock()  # held by whoever writes the one stop line
_notes: list[str] = []


def stop_in(exc: BaseException | None) -> int | None:
    """The signal of the stop that `exc` ended, if it is one or was raised while one unwound
    (an error from a cleanup, or from a child the same Ctrl-C killed)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, KeyboardInterrupt):
            return signal.SIGINT
        if isinstance(exc, Stop):
            return exc.signum
        exc = exc.__cause__ or exc.__context__
    return None


def _raise(signum: int, frame) -> None:  # noqa: ARG001 - signal handler signature
    now = time.monotonic()
    if _first and now - _first[0][1] < GRACE_S:
        return
    _first[:] = [(signum, now)]
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise Stop(signum)


def _handle(signums=SIGNALS) -> dict[int, Handler]:
    """Route `signums` to `_raise`; one that was ignored when we started stays ignored (a
    shell starts background jobs with SIGINT ignored, so that Ctrl-C is not theirs)."""
    previous: dict[int, Handler] = {}
    for signum in signums:
        before = signal.getsignal(signum)
        if before is not signal.SIG_IGN:
            previous[signum] = signal.signal(signum, _raise)
    return previous


def install() -> None:
    """Ctrl-C and SIGTERM stop the process from now on, a dropped stop included; the CLI
    calls this first of all."""
    _handle()
    sys.unraisablehook = _keeping_dropped(sys.unraisablehook)


def _keeping_dropped(hook):
    def keep_dropped(unraisable) -> None:
        if not isinstance(unraisable.exc_value, (Stop, KeyboardInterrupt)):
            hook(unraisable)
            return
        signum = stop_in(unraisable.exc_value)
        _dropped[:] = [unraisable.exc_value]
        # A drop outside a process group's start (a finalizer, a fork no group watches) has
        # nobody to raise it: the signal is delivered again once the fork or finalizer is over.
        timer = threading.Timer(REDELIVER_S, _redeliver, (unraisable.exc_value, signum))
        timer.daemon = True
        timer.start()
    return keep_dropped


def _redeliver(exc: BaseException, signum: int) -> None:
    if _dropped and _dropped[0] is exc:
        _dropped.clear()
        _first.clear()
        main = threading.main_thread().ident
        assert main is not None  # the main thread runs: it started us
        signal.pthread_kill(main, signum)


def raise_if_dropped() -> None:
    """Raise the stop that Python dropped, if one was."""
    if _dropped:
        raise _dropped.pop()


def note(text: str) -> None:
    """What the stop line should add, such as how to resume what was stopped."""
    _notes[:] = [text]


def stop_line(signum: int) -> str:
    sig = signal.Signals(signum)
    return f"stopped by {NAMES.get(sig, sig.name)}" + \
        "".join(f"; {text}" for text in _notes)


def say_stopped(signum: int) -> None:
    """The one line a stopped command ends with (once, whoever gets here first)."""
    if _said.acquire(blocking=False):
        os.write(2, f"{stop_line(signum)}\n".encode())


_own_exit_handlers: list = []


def at_exit(fn) -> None:
    """Run `fn` when the process ends, normally (atexit) or by a stop (exit_now, which runs
    intercore's own handlers and only them)."""
    _own_exit_handlers.append(fn)
    atexit.register(fn)


def exit_now(signum: int) -> None:
    """End a stopped process with one line and the stop's status, once what it held is
    undone: intercore's own exit handlers run (they remove what the native tools left in
    /dev/shm), but not other libraries' (JAX's clear its backends, and crash with SIGSEGV
    when the watcher thread runs them while the main thread is inside an XLA computation),
    nor the interpreter's teardown, which frees every object one by one (over a second for a
    loaded dataset on a busy host) and can crash in JAX's threads too."""
    for s in SIGNALS:
        if threading.current_thread() is threading.main_thread():
            signal.signal(s, signal.SIG_IGN)  # nothing may interrupt the exit now
    try:
        while _own_exit_handlers:
            fn = _own_exit_handlers.pop()
            atexit.unregister(fn)
            fn()
        sys.stdout.flush()
    except BaseException:  # noqa: BLE001 - the stop is what happened; exit with it
        pass
    say_stopped(signum)
    os._exit(128 + signum)


@contextmanager
def sigterm_unwinds() -> Iterator[None]:
    """Within the block, SIGTERM raises `Stop` (a SystemExit, status 143) and Ctrl-C raises
    KeyboardInterrupt, and a stop that Python dropped is kept for `raise_if_dropped()`."""
    hook = sys.unraisablehook
    previous = _handle()
    sys.unraisablehook = _keeping_dropped(hook)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        sys.unraisablehook = hook
        _dropped.clear()


@contextmanager
def nothing_to_undo() -> Iterator[None]:
    """Within the block the process holds nothing a stop must undo (a model trained in
    memory, nothing written yet), so a stop ends it at once, from the main thread as soon as
    the stop reaches it, or from a watcher thread when the main thread is held in C code."""
    import socket  # here: the entry point imports this module before anything else

    reader, writer = socket.socketpair()
    writer.setblocking(False)
    try:
        previous_fd = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    except ValueError:  # not the main thread: only the main-thread path below applies
        previous_fd = None

    def watch() -> None:
        while data := reader.recv(16):  # the signal numbers; empty once the block ends
            signums = [s for s in data if s in SIGNALS]
            if signums:
                time.sleep(PROMPT_S)  # the main thread's own path exits sooner when it can
                exit_now(signums[0])

    watcher = threading.Thread(target=watch, name="intercore-stop", daemon=True)
    if previous_fd is not None:
        watcher.start()
    try:
        yield
    except (KeyboardInterrupt, Stop) as exc:
        exit_now(signal.SIGINT if isinstance(exc, KeyboardInterrupt) else exc.signum)
    finally:
        if previous_fd is not None:
            signal.set_wakeup_fd(previous_fd)
        writer.close()
        if watcher.is_alive():
            watcher.join()
        reader.close()
