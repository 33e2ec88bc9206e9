"""Which local ports are free: a service starts only on ports nothing else holds.

A port another program listens on (a second stack, a container stack, anything) would make a
service fail to bind, and worse, its readiness check would be answered by the other program.
`await_free` is the check a service makes before it starts; `free_port` finds a spare port for
a loader's metrics endpoint.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from icefloe.harness.waiting import poll

# A service killed a moment ago may hold its listening socket until the kernel has torn the
# process down; a start waits this long for its ports before it gives up.
RELEASE_WAIT_S = 10.0


class PortTaken(RuntimeError):
    """A port a service needs is held by another process."""


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    """Whether nothing listens on ``host:port``.

    The probe binds the way servers do (SO_REUSEADDR), so connections of an earlier process
    still in TIME_WAIT do not count as taken; a listener does.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


_PUBLISHED = re.compile(r"(?:\[?([0-9a-fA-F.:]*?)\]?:)?(\d+)(?:-(\d+))?->")
"""One published range in a container engine's ``Ports`` column: ``127.0.0.1:9000-9001->...``."""


def published_by_containers(ports: Sequence[int], host: str = "127.0.0.1") -> dict[int, str]:
    """Which of ``ports`` a running container publishes on ``host``, by the container's name.

    A published port need not be a listener on the host: rootful podman forwards it in the
    kernel's NAT table, so :func:`port_is_free` binds it, yet every connection to it goes to
    the container (to nothing, if the container's network is gone). Asked of each container
    engine on the ``PATH``; none installed, or none answering in 10 s, is nothing published.
    """
    found: dict[int, str] = {}
    wanted = set(ports)
    for engine in ("podman", "docker"):
        if shutil.which(engine) is None:
            continue
        try:
            listing = subprocess.run(
                [engine, "ps", "--format", "{{.Names}}\t{{.Ports}}"],
                capture_output=True,
                text=True,
                timeout=10,
                check=True,
            ).stdout
        except (OSError, subprocess.SubprocessError):
            continue
        for line in listing.splitlines():
            name, _, published = line.partition("\t")
            for ip, first, last in _PUBLISHED.findall(published):
                if ip not in ("", "0.0.0.0", "::", host):
                    continue
                for port in range(int(first), int(last or first) + 1):
                    if port in wanted:
                        found.setdefault(port, name.strip())
    return found


CLAIM_S = 120.0
"""How long a port :func:`free_port` handed out stays claimed: time for its program to bind it."""
CLAIMS = Path(tempfile.gettempdir()) / f"icefloe-ports-{os.getuid()}"
"""Where the claims are kept, one empty file per port, shared by every process of the user."""


def _claim(port: int) -> bool:
    """Claim ``port`` for :data:`CLAIM_S`, unless another process (or this one) has just done so:
    two callers asking at once (two tests starting a Kafka Connect worker each) get two ports,
    where the free port alone would give both the same one before either binds it."""
    CLAIMS.mkdir(parents=True, exist_ok=True)
    path = CLAIMS / str(port)
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        return True
    except FileExistsError:
        try:
            if time.time() - path.stat().st_mtime < CLAIM_S:
                return False
            path.unlink()
        except FileNotFoundError:
            pass
        return _claim(port)


def free_port(first: int, host: str = "127.0.0.1") -> int:
    """The first port from ``first`` on that nothing listens on and no other caller claimed in
    the last :data:`CLAIM_S`."""
    port = first
    while not (port_is_free(port, host) and _claim(port)):
        port += 1
    return port


def await_free(
    service: str, ports: Sequence[int], host: str, hint: str, wait: float | None = None
) -> None:
    """Return once every one of ``ports`` is free on ``host``, waiting `RELEASE_WAIT_S` at most.

    Raises:
        PortTaken: a port is still held after ``wait`` seconds; the message names the port,
            the service and ``hint`` (how to give the service another port).
    """
    taken = poll(
        lambda: [p for p in ports if not port_is_free(p, host)],
        lambda taken: not taken,
        timeout_s=RELEASE_WAIT_S if wait is None else wait,
        every_s=0.2,
    )
    if taken:
        listed = ", ".join(f"{host}:{p}" for p in taken)
        raise PortTaken(
            f"{service} cannot start: {listed} is already in use by another process "
            f"(another icefloe stack, a container stack, or another program). Stop it, "
            f"or give this stack other ports: {hint}"
        )
