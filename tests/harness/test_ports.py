"""A service starts only on ports nothing else holds, and says which port and how to move it."""

from __future__ import annotations

import os
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from icefloe.harness.stack.config import StackConfig
from icefloe.harness.stack.credentials import S3Credentials
from icefloe.harness.stack.ports import (
    PortTaken,
    await_free,
    free_port,
    port_is_free,
    published_by_containers,
)
from icefloe.harness.stack.readiness import PortOpen, Readiness
from icefloe.harness.stack.service import LocalService
from icefloe.loader.secret import Secret


@pytest.fixture
def listener() -> Iterator[int]:
    """A port another program listens on."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        yield int(held.getsockname()[1])


def test_a_listened_port_is_taken_and_a_released_one_free(listener: int) -> None:
    assert not port_is_free(listener)
    assert free_port(listener) > listener
    with socket.socket() as once:
        once.bind(("127.0.0.1", 0))
        once.listen()
        port = int(once.getsockname()[1])
    assert port_is_free(port)


def test_an_ipv6_loopback_is_probed_as_ipv6() -> None:
    if not socket.has_ipv6:
        pytest.skip("no IPv6 on this machine")
    with socket.socket(socket.AF_INET6) as held:
        try:
            held.bind(("::1", 0))
        except OSError:
            pytest.skip("no IPv6 loopback on this machine")
        held.listen()
        port = int(held.getsockname()[1])
        assert not port_is_free(port, "::1")
    assert port_is_free(port, "::1")


def test_a_port_left_in_time_wait_is_free() -> None:
    # The side that closes first keeps the connection in TIME_WAIT, as a killed server does.
    with socket.socket() as server:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = int(server.getsockname()[1])
        client = socket.create_connection(("127.0.0.1", port))
        accepted, _ = server.accept()
        accepted.close()
        client.close()
    assert port_is_free(port)


def test_await_free_names_the_port_and_the_setting(listener: int) -> None:
    with pytest.raises(PortTaken, match=rf"trino cannot start: 127.0.0.1:{listener} .*MY_PORT"):
        await_free("trino", (listener,), "127.0.0.1", "MY_PORT", wait=0.3)


class _Sleeper(LocalService):
    """A service whose readiness another program on its port would answer."""

    name = "sleeper"

    def __init__(self, config: StackConfig, port: int) -> None:
        super().__init__(config, S3Credentials("key", Secret("secret")))
        self.port = port

    def prepare(self) -> None:
        pass

    def command(self) -> list[str]:
        return [sys.executable, "-c", "import time; time.sleep(60)"]

    def readiness(self) -> Readiness:
        return PortOpen("127.0.0.1", self.port)

    @property
    def ports(self) -> tuple[int, ...]:
        return (self.port,)


def test_a_service_does_not_start_on_a_port_another_program_holds(
    listener: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("icefloe.harness.stack.ports.RELEASE_WAIT_S", 0.3)
    config = StackConfig(trino_port=listener, run_dir=tmp_path, cache_dir=tmp_path)
    service = _Sleeper(config, listener)
    with pytest.raises(PortTaken, match="ICEFLOE_STACK_TRINO_PORT"):
        service.start()
    assert not service.process.is_running()  # nothing was started to be answered for


def test_two_callers_at_once_get_two_ports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from icefloe.harness.stack import ports

    monkeypatch.setattr(ports, "CLAIMS", tmp_path / "claims")
    first = ports.free_port(41000)
    # Nothing listens on the first yet (its program has not bound it): still not handed out again.
    assert ports.port_is_free(first)
    second = ports.free_port(41000)
    assert second != first
    # A claim older than CLAIM_S is given up: its program never bound the port.
    old = time.time() - ports.CLAIM_S - 1
    os.utime(ports.CLAIMS / str(first), (old, old))
    assert ports.free_port(41000) == first


@pytest.fixture
def engine_listing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A container engine on the PATH whose ``ps`` prints the file this fixture yields."""
    listing = tmp_path / "ps.txt"
    listing.write_text("")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "podman"
    script.write_text(f"#!/bin/sh\ncat {listing}\n")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin")
    yield listing


def test_a_port_a_container_publishes_is_named_with_the_container(engine_listing: Path) -> None:
    engine_listing.write_text(
        "icefloe-1a_minio_1\t127.0.0.1:9000-9001->9000-9001/tcp\n"
        "other\t0.0.0.0:8080->80/tcp, :::8080->80/tcp\n"
        "elsewhere\t10.0.0.5:9092->9092/tcp\n"
        "quiet\t\n"
    )
    found = published_by_containers([8080, 9001, 9092, 8181])
    assert found == {9001: "icefloe-1a_minio_1", 8080: "other"}


def test_a_stack_refuses_to_start_where_a_foreign_container_publishes_its_port(
    engine_listing: Path, tmp_path: Path
) -> None:
    from icefloe.harness.stack.lakehouse import Stack

    config = StackConfig(run_dir=tmp_path / "run", cache_dir=tmp_path / "cache")
    stack = Stack(config)
    engine_listing.write_text(f"icefloe-1a_trino_1\t127.0.0.1:{config.trino_port}->8080/tcp\n")
    with pytest.raises(PortTaken, match=rf"{config.trino_port} \(icefloe-1a_trino_1\)"):
        stack.refuse_foreign_containers()
    stack.own_containers = "icefloe-1a_"  # its own containers are no obstacle
    stack.refuse_foreign_containers()
    engine_listing.write_text("")
    Stack(config).refuse_foreign_containers()
