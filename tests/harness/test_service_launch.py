"""A service launched before `up` (while MinIO builds) is waited for and set up once by `start`."""

from __future__ import annotations

import sys
from pathlib import Path

from harness.stack.config import StackConfig
from harness.stack.credentials import S3Credentials
from harness.stack.ports import free_port
from harness.stack.readiness import PortOpen, Readiness
from harness.stack.service import LocalService
from loader.secret import Secret

LISTEN = (
    "import socket, sys, time; s = socket.socket(); s.bind(('127.0.0.1', int(sys.argv[1]))); "
    "s.listen(); time.sleep(60)"
)


class _Listener(LocalService):
    """A service that listens on its port, and counts its `after_start` calls."""

    name = "listener"

    def __init__(self, config: StackConfig, port: int) -> None:
        super().__init__(config, S3Credentials("key", Secret("secret")))
        self.port = port
        self.set_up = 0

    def prepare(self) -> None:
        pass

    def command(self) -> list[str]:
        return [sys.executable, "-c", LISTEN, str(self.port)]

    def readiness(self) -> Readiness:
        return PortOpen("127.0.0.1", self.port)

    @property
    def ports(self) -> tuple[int, ...]:
        return (self.port,)

    def after_start(self) -> None:
        self.set_up += 1


def test_a_launched_service_is_waited_for_and_set_up_once_by_start(tmp_path: Path) -> None:
    port = free_port(23700)
    service = _Listener(StackConfig(run_dir=tmp_path, cache_dir=tmp_path), port)
    try:
        service.launch()
        pid = service.process.pid
        assert service.process.is_running()
        assert service.set_up == 0, "launch does not wait for the service, nor set it up"
        service.launch()
        assert service.process.pid == pid, "a running service is not launched twice"
        service.start()
        assert service.process.pid == pid, "start waits for the launched process"
        assert service.set_up == 1
        service.start()
        assert service.set_up == 1, "a service already set up is not set up again"
    finally:
        service.kill()
