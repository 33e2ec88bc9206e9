"""Readiness checks: how the harness knows a service is up (a port, an HTTP answer, a probe).

A check is an object with `ready()` and a description; `wait_ready` polls it until a timeout and
then fails with the tail of the service's log, so a failed start explains itself.
"""

from __future__ import annotations

import socket
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from icefloe.harness.waiting import poll


class Watched(Protocol):
    """What `wait_ready` watches while it polls: a local process or a container."""

    @property
    def log_file(self) -> object: ...

    def is_running(self) -> bool: ...

    def log_tail(self, lines: int = 40) -> str: ...


class ServiceStartTimeout(RuntimeError):
    """A service did not become ready in time (or died while starting)."""


class Readiness(Protocol):
    """Anything that can say whether a service is ready."""

    def ready(self) -> bool: ...

    def describe(self) -> str: ...


@dataclass(frozen=True)
class PortOpen:
    """Ready when a TCP connection to host:port succeeds."""

    host: str
    port: int

    def ready(self) -> bool:
        try:
            with socket.create_connection((self.host, self.port), timeout=1):
                return True
        except OSError:
            return False

    def describe(self) -> str:
        return f"port {self.host}:{self.port} open"


@dataclass(frozen=True)
class HttpOk:
    """Ready when GET url answers 2xx and, if given, `accept(body)` is true."""

    url: str
    accept: Callable[[bytes], bool] | None = None

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(self.url, timeout=2) as response:
                body = response.read()
                return 200 <= response.status < 300 and (self.accept is None or self.accept(body))
        except (OSError, urllib.error.URLError, ValueError):
            return False

    def describe(self) -> str:
        return f"GET {self.url} answers 2xx"


@dataclass(frozen=True)
class Probe:
    """Ready when a client-level probe (a metadata request, a query) succeeds."""

    name: str
    check: Callable[[], bool]

    def ready(self) -> bool:
        try:
            return bool(self.check())
        except Exception:
            return False

    def describe(self) -> str:
        return self.name


def wait_ready(
    name: str, readiness: Readiness, process: Watched, timeout: float, interval: float = 0.5
) -> float:
    """Poll `readiness` until it holds; return the seconds it took.

    Raises:
        ServiceStartTimeout: after `timeout` seconds, or at once if the process died; the message
            carries the tail of the service's log.
    """
    started = time.monotonic()

    def ready() -> bool:
        if readiness.ready():
            return True
        if not process.is_running():
            raise ServiceStartTimeout(
                f"{name} exited while starting (waiting for {readiness.describe()}); "
                f"log {process.log_file}:\n{process.log_tail()}"
            )
        return False

    if not poll(ready, timeout_s=timeout, every_s=interval):
        raise ServiceStartTimeout(
            f"{name} not ready after {timeout:.0f} s (waiting for {readiness.describe()}); "
            f"log {process.log_file}:\n{process.log_tail()}"
        )
    return time.monotonic() - started
