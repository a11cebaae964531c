"""A native daemon of the mitigation stage (ic-regulate, ic-gang): started in a ProcessGroup,
ready once it prints its ready line, stopped with SIGTERM, after which it prints its
statistics and exits 0. Subclasses say which tool and how its lines become statistics."""

from __future__ import annotations

import signal
from typing import Generic, TypeVar

from ..measure.procs import NativeProcess, ProcessGroup

READY_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 30.0

S = TypeVar("S")


class NativeDaemon(Generic[S]):
    tool: str = ""

    def __init__(self, spec, process: NativeProcess, ready: dict) -> None:
        self.spec = spec
        self.process = process
        self.ready = ready

    @classmethod
    def start(cls, spec, group: ProcessGroup, ready_timeout: float = READY_TIMEOUT_S):
        process = group.add(NativeProcess.start(cls.tool, spec.argv(), name=cls.tool))
        return cls(spec, process, process.expect("ready", ready_timeout))

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def watchdog_pid(self) -> int:
        return int(self.ready["watchdog_pid"])

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> S:
        """SIGTERM: it thaws everything, prints its statistics and exits."""
        if self.process.proc.poll() is None:
            self.process.proc.send_signal(signal.SIGTERM)
        return self.wait(timeout)

    def wait(self, timeout: float = STOP_TIMEOUT_S) -> S:
        """The statistics of a daemon that ends by itself (a duration, its runners' end)."""
        return self.parse(self.process.finish(timeout))

    def parse(self, lines: list[dict]) -> S:
        raise NotImplementedError
