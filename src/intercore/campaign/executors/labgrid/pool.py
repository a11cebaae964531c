"""The boards a labgrid coordinator lends a campaign, each driven by the ssh executor.

The pool reserves every place the campaign names (one place, or every place carrying its
tags) through the coordinator: one reservation per place, so the coordinator's scheduler
hands them over as other users free them. An allocated place is acquired, its
NetworkService gives the address, user and port of the board's sshd, and from then on the
board is an ssh executor like any other, one run at a time. The runner spreads the slots
over the boards as they arrive (runner._Session.run_on_boards).

The boards are interchangeable: the setup hashes hold what they share (the board kind's
topology, kernel and binaries; `describe()`), never which board ran what, and a board of
another kind (another fingerprint) is turned away. Each run records its board instead
(`Board.record`: place, address, serial, model, kernel, firmware), so a resumed campaign may
finish on other boards of the same kind. `close()` releases every place and cancels every
reservation, on a clean end as on Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Mapping

from ....base.errors import InputError, NativeError
from ..base import GroupRequest, RunOutput, RunRequest
from ..ssh import SshExecutor, SshTarget
from .coordinator import Coordinator, address

POLL_S = 1.0


@dataclass
class Board:
    """An acquired place and the ssh executor that reaches its board."""

    place: str
    token: str
    executor: SshExecutor
    record: dict[str, Any]  # what every run on it stores as its board


@dataclass
class LabgridPool:
    coordinator: str | None
    place: str | None
    tags: Mapping[str, str]
    wait_s: float
    ssh: Mapping[str, Any]
    owner: str                                        # the campaign, in the lab's identity
    name: str = "labgrid"
    boards: list[Board] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    _coord: Coordinator | None = None
    _waiting: dict[str, None] = field(default_factory=dict)  # reservation tokens, in order
    _kind: dict[str, Any] | None = None                       # the first board's describe()

    @classmethod
    def from_settings(cls, lab: Mapping[str, Any], ssh: Mapping[str, Any], *,
                      owner: str) -> LabgridPool:
        return cls(lab.get("coordinator"), lab.get("place"), dict(lab.get("tags") or {}),
                   float(lab.get("wait") or 600.0), dict(ssh), owner)

    @property
    def label(self) -> str:
        """The board kind as the campaign selects it: `place=NAME` or its tags."""
        if self.place is not None:
            return f"place={self.place}"
        return ",".join(f"{k}={v}" for k, v in sorted(self.tags.items()))

    # -- reservations and boards --

    def _start(self) -> None:
        if self._coord is not None:
            return
        coord = Coordinator(address(self.coordinator), self.owner)
        self._coord = coord
        tokens, places = coord.left_behind()
        for token in tokens:
            coord.cancel(token)
        for place in places:
            coord.release(place)
            self.warnings.append(f"labgrid: took over place {place}, left acquired by an "
                                 "earlier run of this campaign")
        for p in coord.matching(self.place, self.tags):
            self._waiting[coord.reserve({"name": p.name} if self.place else dict(self.tags))] \
                = None
        deadline = time.monotonic() + self.wait_s
        while not self.poll():
            if not self._waiting:
                raise NativeError(f"labgrid: no board of {self.label} could be used: "
                                  + "; ".join(self.warnings))
            if time.monotonic() > deadline:
                raise NativeError(f"labgrid: no place of {self.label} became free within "
                                  f"{self.wait_s:.0f} s (see `labgrid-client who`)")
            time.sleep(POLL_S)

    def poll(self) -> list[Board]:
        """Acquire the places allocated since the last call; the boards that joined."""
        assert self._coord is not None
        joined = []
        for token in list(self._waiting):
            res = self._coord.poll(token)
            if res.state == "waiting":
                continue
            del self._waiting[token]
            if res.state != "allocated" or res.place is None:
                self.warnings.append(f"labgrid: reservation {token} is {res.state}")
                self._cancel(token)
                continue
            board = self._board(res.place, token)
            if board is not None:
                self.boards.append(board)
                joined.append(board)
        return joined

    def _board(self, place: str, token: str) -> Board | None:
        """The acquired place as a board, or None (and its place given back) when it cannot
        serve: no usable NetworkService, no ssh, or a board of another kind."""
        assert self._coord is not None
        try:
            self._coord.acquire(place)
        except NativeError as exc:
            self.warnings.append(f"labgrid: place {place} could not be acquired: {exc}")
            self._cancel(token)
            return None
        executor = None
        try:
            service = self._coord.network_service(place)
            target = {**self.ssh, "host": str(service["address"])}
            if service.get("username") and not self.ssh.get("user"):
                target["user"] = service["username"]
            if service.get("port") and not self.ssh.get("port"):
                target["port"] = int(service["port"])
            executor = SshExecutor(SshTarget.from_mapping(target))
            described = executor.describe()
            if self._kind is None:
                self._kind = described
            elif described["fingerprint"] != self._kind["fingerprint"]:
                raise InputError(f"its board is not of the kind the first one was "
                                 f"({described['cpu_model']}, {described['ncpus']} CPUs, "
                                 f"kernel {described['kernel']})")
            record = {"place": place, "address": target["host"], "port": target.get("port"),
                      **executor.identity()}
        except (InputError, NativeError) as exc:
            self.warnings.append(f"labgrid: place {place} left out: {exc}")
            if executor is not None:
                executor.close()
            self._give_back(place, token)
            return None
        return Board(place, token, executor, record)

    def _cancel(self, token: str) -> None:
        assert self._coord is not None
        try:
            self._coord.cancel(token)
        except NativeError:
            pass  # already gone: expired and removed by the coordinator

    def _give_back(self, place: str, token: str) -> None:
        assert self._coord is not None
        try:
            self._coord.release(place)
        finally:
            self._cancel(token)

    def retire(self, board: Board, reason: str) -> None:
        """A board that failed mid-campaign: closed and given back; the others go on."""
        self.warnings.append(f"labgrid: place {board.place} retired: {reason}")
        self.boards.remove(board)
        board.executor.close()
        self._give_back(board.place, board.token)

    @property
    def waiting(self) -> bool:
        """Whether reservations are still waiting for a place."""
        return bool(self._waiting)

    # -- the Executor protocol (planning happens on the first board) --

    def _first(self) -> Board:
        self._start()
        return self.boards[0]

    def describe(self) -> dict[str, Any]:
        """The board kind: the first board's identity, under the pool's name. Every board
        that joins later must match its fingerprint."""
        self._first()
        assert self._kind is not None
        return {**self._kind, "executor": self.name, "hostname": f"labgrid {self.label}"}

    def plan(self, request: RunRequest) -> Any:
        return self._first().executor.plan(request)

    def run(self, request: RunRequest, *, on_start: Any = None) -> RunOutput:
        return self._first().executor.run(request, on_start=on_start)

    def run_group(self, group: GroupRequest, *, on_start: Any = None) -> dict[str, RunOutput]:
        return self._first().executor.run_group(group, on_start=on_start)

    def close(self) -> None:
        """Close every board, release every place, cancel every reservation."""
        if self._coord is None:
            return
        try:
            for board in list(self.boards):
                board.executor.close()
                self._give_back(board.place, board.token)
            for token in list(self._waiting):
                self._cancel(token)
        finally:
            self.boards.clear()
            self._waiting.clear()
            self._coord.close()
            self._coord = None
