"""What every service of the stack is: a managed process with config, readiness and controls.

Each service module (kafka, minio, catalog, trino) subclasses `LocalService`: it writes its own
configuration files, names its command and environment, and says how readiness is checked. The
control verbs (start, stop, kill, pause, resume, restart) are the hooks fault scenarios use.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Self

from icefloe.harness.provision import jdk
from icefloe.harness.provision.layout import Layout
from icefloe.harness.stack.config import StackConfig
from icefloe.harness.stack.credentials import S3Credentials
from icefloe.harness.stack.ports import await_free
from icefloe.harness.stack.process import ManagedProcess
from icefloe.harness.stack.readiness import Readiness, wait_ready


@dataclass(frozen=True)
class ServiceStatus:
    """One line of `icefloe status`."""

    name: str
    pid: int | None
    ports: tuple[int, ...]
    healthy: bool
    paused: bool
    rss_bytes: int


class LocalService(ABC):
    """A service run as a local process from the provisioned cache."""

    name: str = ""

    def __init__(self, config: StackConfig, credentials: S3Credentials) -> None:
        self.config = config
        self.credentials = credentials
        self.layout = Layout(config.cache_dir)
        self.state_dir = config.run_dir / self.name
        self.process = ManagedProcess(self.name, self.state_dir)

    # What each service defines.
    @abstractmethod
    def prepare(self) -> None:
        """Write configuration files and initialise storage (idempotent)."""

    @abstractmethod
    def command(self) -> list[str]:
        """The argv that starts the service (no secrets in it)."""

    def environment(self) -> dict[str, str]:
        """Extra environment for the process (secrets go here)."""
        return {}

    @abstractmethod
    def readiness(self) -> Readiness:
        """How to tell the service is ready to serve."""

    @property
    @abstractmethod
    def ports(self) -> tuple[int, ...]:
        """The ports the service listens on."""

    def after_start(self) -> None:  # noqa: B027 - optional hook, most services need nothing
        """Work once the service is ready (e.g. create a bucket)."""

    # Shared behaviour.
    def java(self, service: str) -> Path:
        return jdk.choose(service, self.layout.cache).java

    def start(self) -> float:
        """Start unless running, then wait for readiness; returns seconds to ready.

        Raises:
            PortTaken: another process holds one of the service's ports (it would answer the
                readiness check in the service's stead).
            ServiceStartTimeout: the service did not become ready, or died starting.
        """
        if self.process.is_running():
            self.process.resume()
            return wait_ready(self.name, self.readiness(), self.process, self.config.start_timeout)
        await_free(self.name, self.ports, self.config.host, self.config.port_settings(self.ports))
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.prepare()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CATALOG_", "MINIO_"))}
        env.update(self.environment())
        self.process.start(self.command(), env, cwd=self.state_dir)
        took = wait_ready(self.name, self.readiness(), self.process, self.config.start_timeout)
        self.after_start()
        return took

    def stop(self) -> None:
        """Graceful stop, forced after the configured timeout."""
        self.process.stop(self.config.stop_timeout)

    def kill(self) -> None:
        """kill -9."""
        self.process.kill()

    def pause(self) -> None:
        """SIGSTOP."""
        self.process.pause()

    def resume(self) -> None:
        """SIGCONT."""
        self.process.resume()

    def restart(self) -> float:
        """Stop (or reap after a kill) and start again; returns seconds to ready."""
        self.stop()
        return self.start()

    def health(self) -> bool:
        return (
            self.process.is_running() and not self.process.is_paused() and self.readiness().ready()
        )

    def status(self) -> ServiceStatus:
        return ServiceStatus(
            name=self.name,
            pid=self.process.pid,
            ports=self.ports,
            healthy=self.health(),
            paused=self.process.is_paused(),
            rss_bytes=self.process.rss_bytes(),
        )

    def logs(self, lines: int = 100) -> str:
        return self.process.log_tail(lines)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()


def console_log4j2(loggers: dict[str, tuple[str, str]]) -> str:
    """A Java service's ``log4j2.properties``: everything at info on the console, but ``loggers``.

    Args:
        loggers: a short id -> (logger name, its level).
    """
    lines = [
        "status = warn",
        "appender.console.type = Console",
        "appender.console.name = STDOUT",
        "appender.console.layout.type = PatternLayout",
        "appender.console.layout.pattern = [%d] %p %m (%c)%n",
        "rootLogger.level = info",
        "rootLogger.appenderRef.stdout.ref = STDOUT",
    ]
    for key, (name, level) in loggers.items():
        lines += [f"logger.{key}.name = {name}", f"logger.{key}.level = {level}"]
    return "\n".join(lines) + "\n"


def write_properties(path: Path, props: dict[str, object]) -> None:
    """Write a Java .properties file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
