"""sd_notify(3) for a service that systemd started with Type=notify: one datagram per state
change to $NOTIFY_SOCKET. A no-op when the socket is not set (not run by systemd)."""

from __future__ import annotations

import os
import socket


def notify(state: str) -> bool:
    """Send `state` ("READY=1", "WATCHDOG=1", "STOPPING=1"); False when not under systemd."""
    address = os.environ.get("NOTIFY_SOCKET")
    if not address:
        return False
    if address.startswith("@"):  # an abstract socket
        address = "\0" + address[1:]
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
        sock.connect(address)
        sock.sendall(state.encode())
    return True


def watchdog_interval_s() -> float | None:
    """Half the watchdog timeout systemd set for this process (WATCHDOG_USEC), or None."""
    usec, pid = os.environ.get("WATCHDOG_USEC"), os.environ.get("WATCHDOG_PID")
    if not usec or (pid and int(pid) != os.getpid()):
        return None
    return int(usec) / 2e6
