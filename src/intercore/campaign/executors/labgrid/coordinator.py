"""The labgrid coordinator, as the campaign needs it: places, reservations, acquire, release.

labgrid's own client session (labgrid.remote.client.ClientSession) keeps the places and
resources in sync over gRPC; the calls that change them go to its coordinator stub with
labgrid's protobuf messages, so nothing here parses `labgrid-client` output. Every call runs
on this object's event loop, from the thread that created it (the runner's).

The session's identity (`host/user` in `labgrid-client who`) carries the campaign:
`user+intercore.CAMPAIGN`. A run killed with SIGKILL cannot release its places; the next run
of the same campaign, holding the store's campaign lock, knows them by that identity, takes
them over and cancels the reservations it left.
"""

from __future__ import annotations

import asyncio
import getpass
import os
from dataclasses import dataclass
from typing import Any, Mapping

from ....base.errors import HostUnsupported, InputError, NativeError

DEFAULT_PORT = 20408
NETWORK_SERVICE = "NetworkService"


def _labgrid() -> Any:
    # gRPC's fork handlers run in every child this process forks (the ssh clients, with a
    # preexec_fn), where its pollers fail on descriptors the child does not own; the
    # children exec at once and need none of gRPC, so the handlers are turned off.
    os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")
    try:
        from labgrid.remote import client, common
        from labgrid.remote.generated import labgrid_coordinator_pb2 as pb
    except ImportError as exc:
        raise HostUnsupported("the labgrid executor needs labgrid on this host: "
                              "pip install 'intercore[lab]'") from exc
    return client, common, pb


@dataclass(frozen=True)
class Place:
    name: str
    tags: Mapping[str, str]
    acquired: str | None  # "host/user" of the holder
    reservation: str | None


@dataclass(frozen=True)
class Reservation:
    token: str
    state: str              # waiting | allocated | acquired | expired | invalid
    place: str | None       # the place allocated to it


class Coordinator:
    """One client session with a labgrid coordinator at `address` (HOST[:PORT])."""

    def __init__(self, address: str, campaign: str) -> None:
        client, self._common, self._pb = _labgrid()
        session: Any = client.ClientSession  # labgrid is untyped, and imported only here
        user = f"{os.environ.get('LG_USERNAME') or getpass.getuser()}+intercore.{campaign}"

        class _Session(session):
            def getuser(self) -> str:
                return user

        self.address = address if ":" in address else f"{address}:{DEFAULT_PORT}"
        # grpc.aio binds its channel to the event loop current when the channel is made.
        self._loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self._loop)
        self._session = _Session(self.address, self._loop)
        try:
            self._call(self._session.start())
        except client.Error as exc:
            self._loop.close()
            raise NativeError(f"labgrid coordinator {self.address}: {exc}") from None
        self.identity = f"{self._session.gethostname()}/{user}"

    def _call(self, coroutine: Any) -> Any:
        import grpc

        try:
            return self._loop.run_until_complete(coroutine)
        except grpc.aio.AioRpcError as exc:
            raise NativeError(f"labgrid coordinator {self.address}: {exc.details()}") from None

    def _sync(self) -> None:
        self._call(self._session.sync_with_coordinator())

    def places(self) -> list[Place]:
        self._sync()
        return [Place(name, dict(p.tags), p.acquired, p.reservation)
                for name, p in sorted(self._session.places.items())]

    def matching(self, place: str | None, tags: Mapping[str, str]) -> list[Place]:
        """The place named, or every place whose tags include `tags`; InputError if none."""
        known = self.places()
        found = [p for p in known if (p.name == place if place is not None
                                      else all(p.tags.get(k) == v for k, v in tags.items()))]
        if not found:
            what = f"place {place!r}" if place is not None else \
                "a place tagged " + ", ".join(f"{k}={v}" for k, v in tags.items())
            names = ", ".join(f"{p.name} ({', '.join(f'{k}={v}' for k, v in p.tags.items())})"
                              for p in known) or "none"
            raise InputError(f"labgrid coordinator {self.address} has no {what} (places: "
                             f"{names})", field="executor")
        return found

    def reserve(self, filters: Mapping[str, str]) -> str:
        """A reservation for one place with these tags (`name` selects a place by name)."""
        pb = self._pb
        response = self._call(self._session.stub.CreateReservation(pb.CreateReservationRequest(
            filters={"main": pb.Reservation.Filter(filter=dict(filters))}, prio=0)))
        return response.reservation.token

    def poll(self, token: str) -> Reservation:
        """The reservation's state; polling also keeps a waiting reservation from expiring."""
        response = self._call(self._session.stub.PollReservation(
            self._pb.PollReservationRequest(token=token)))
        res = self._common.Reservation.from_pb2(response.reservation)
        allocated = res.allocations.get("main") or [None]
        return Reservation(token, res.state.name, allocated[0])

    def cancel(self, token: str) -> None:
        self._call(self._session.stub.CancelReservation(
            self._pb.CancelReservationRequest(token=token)))

    def acquire(self, place: str) -> None:
        self._call(self._session.stub.AcquirePlace(self._pb.AcquirePlaceRequest(placename=place)))
        self._sync()

    def release(self, place: str) -> None:
        self._call(self._session.stub.ReleasePlace(self._pb.ReleasePlaceRequest(placename=place)))

    def left_behind(self) -> tuple[list[str], list[str]]:
        """(reservation tokens, places) that this identity holds: a killed run's."""
        response = self._call(self._session.stub.GetReservations(
            self._pb.GetReservationsRequest()))
        tokens = [r.token for r in response.reservations if r.owner == self.identity]
        return tokens, [p.name for p in self.places() if p.acquired == self.identity]

    def network_service(self, place: str) -> dict[str, Any]:
        """The address, username and port of the acquired place's NetworkService."""
        self._sync()
        resources = self._session.get_target_resources(self._session.get_place(place))
        found = [r for (_, cls), r in resources.items() if cls == NETWORK_SERVICE]
        if len(found) != 1:
            raise InputError(f"labgrid place {place} has {len(found)} NetworkService resources; "
                             "the labgrid executor reaches a board through exactly one",
                             field="executor")
        if not found[0].avail:
            raise NativeError(f"labgrid place {place}: its NetworkService is not available "
                              "(is its exporter running?)")
        return dict(found[0].args)

    def close(self) -> None:
        try:
            self._call(self._session.stop())
            self._call(self._session.close())
        finally:
            self._loop.close()
            asyncio.set_event_loop(None)


def address(configured: str | None) -> str:
    """The coordinator to use: the campaign's, else $LG_COORDINATOR."""
    found = configured or os.environ.get("LG_COORDINATOR")
    if not found:
        raise InputError("no labgrid coordinator: set `coordinator: HOST:PORT` in the "
                         "campaign's executor section or LG_COORDINATOR", field="executor")
    return found
