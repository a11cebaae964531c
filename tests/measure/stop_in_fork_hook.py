"""Child program for test_stopping.py: a SIGTERM or SIGINT (argv[2]) that lands inside an
at-fork hook, where Python drops the exception it raises, as a process group starts a child."""

import os
import sys

from intercore.base.procs import NativeProcess, ProcessGroup
from intercore.base.stopping import sigterm_unwinds

armed = [True]


def land_signal_in_hook() -> None:
    if armed:
        armed.clear()
        os.kill(os.getpid(), int(sys.argv[2]))
        for _ in range(10_000):  # the handler runs at one of these bytecode boundaries
            pass


os.register_at_fork(after_in_parent=land_signal_in_hook)
with sigterm_unwinds(), ProcessGroup() as group:
    # preexec_fn (every native tool has one) makes subprocess run the at-fork hooks
    group.add(NativeProcess.start("/bin/sleep", [sys.argv[1]], name="sleeper"))
    print("survived the stop", flush=True)
