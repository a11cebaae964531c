"""A native daemon of the mitigation stage (ic-monitor, ic-regulate, ic-gang): started in a
ProcessGroup, ready once it prints its ready line (which names its watchdog), stopped with
SIGTERM, after which it thaws everything, prints its statistics and exits 0. Subclasses say
which tool and how its lines become statistics."""

from __future__ import annotations

import signal
from typing import Generic, TypeVar

from ..base.procs import ProcessGroup, ReadyTool

READY_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 30.0

S = TypeVar("S")


class NativeDaemon(ReadyTool, Generic[S]):
    tool: str = ""

    @classmethod
    def label(cls, spec) -> str:
        """The name its errors go by."""
        return cls.tool

    @classmethod
    def start(cls, spec, group: ProcessGroup, ready_timeout: float = READY_TIMEOUT_S,
              session: bool = False):
        """Start the daemon (owned by `group`; in a session of its own with `session`, as a
        command of its own would be) and return once it is ready: its groups thawed, its
        watchdog armed."""
        return cls._launch(spec, group, cls.tool, spec.argv(), name=cls.label(spec),
                           ready_timeout=ready_timeout, session=session)

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
