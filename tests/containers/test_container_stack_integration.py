"""The containers backend for real: loopback-only ports, service names between containers,
kill -9 and pause of a container, idempotent image builds."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

# It kills and pauses the stack's containers.
pytestmark = [pytest.mark.integration, pytest.mark.containers, pytest.mark.exclusive]


def _query(trino: Any, sql: str) -> list[Any]:
    cur = trino.cursor()
    cur.execute(sql)
    return list(cur.fetchall())


def test_ports_are_published_on_loopback_only(stack: Any) -> None:
    for service in stack.services.values():
        container = service.process.container()
        bindings = container.attrs["HostConfig"]["PortBindings"]
        assert bindings, service.name
        for published in bindings.values():
            for binding in published or []:  # an EXPOSEd port left unpublished is None
                assert binding["HostIp"] == "127.0.0.1", (service.name, binding)


# A Kafka Metadata request (v4, all topics), written byte by byte: length 16, api key 3,
# version 4, correlation id 7, client id "x", topics null, no auto-creation.
_METADATA_REQUEST = r"\x00\x00\x00\x10\x00\x03\x00\x04\x00\x00\x00\x07\x00\x01x\xff\xff\xff\xff\x00"


def test_containers_reach_each_other_by_service_name(stack: Any) -> None:
    trino = stack.trino.process.container()
    # MinIO and the catalog, from inside the Trino container.
    checks = {
        "minio": "curl -fsS -o /dev/null http://minio:9000/minio/health/ready",
        "catalog": "curl -fsS -o /dev/null http://catalog:8181/v1/config",
    }
    for name, command in checks.items():
        code, output = trino.exec_run(["bash", "-c", command])
        assert code == 0, (name, output)


def test_kafka_advertises_its_service_name_to_other_containers(stack: Any) -> None:
    """Inside the network the broker's metadata names kafka:19092 (the host gets 127.0.0.1)."""
    trino = stack.trino.process.container()
    command = (
        "exec 3<>/dev/tcp/kafka/19092; "
        f"printf '{_METADATA_REQUEST}' >&3; "
        "timeout 10 head -c 64 <&3 | od -An -tx1 | tr -d ' \n'"
    )
    code, output = trino.exec_run(["bash", "-c", command])
    assert code == 0, output
    # broker: node id 1, host "kafka" (length 5), port 19092 (0x4a94)
    assert "00000001" + "0005" + b"kafka".hex() + "00004a94" in output.decode()
    assert stack.bootstrap_servers == f"127.0.0.1:{stack.config.kafka_port}"


def test_kill_9_of_the_catalog_keeps_its_tables(
    stack: Any, trino: Any, table_factory: Callable[..., str]
) -> None:
    table = table_factory()
    catalog = stack.service("catalog")
    pid = catalog.process.pid
    catalog.kill()
    assert not catalog.health()
    catalog.start()
    assert catalog.process.pid != pid
    assert _query(trino, f"SELECT count(*) FROM {table}") == [[0]]


def test_pause_freezes_a_container(stack: Any) -> None:
    minio = stack.service("minio")
    minio.pause()
    try:
        assert minio.process.is_paused()
        assert not minio.health()
    finally:
        minio.resume()
    assert minio.health()


def test_a_second_image_build_does_nothing(stack: Any) -> None:
    from icefloe.harness.containers.images import ImageBuilder
    from icefloe.harness.provision.layout import Layout

    assert ImageBuilder(stack.engine, Layout(stack.config.cache_dir)).build_all() == 0
