"""The containers backend for real: loopback-only ports, service names between containers,
kill -9 and pause of a container, idempotent image builds."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.containers]


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


def test_containers_reach_each_other_by_service_name(stack: Any) -> None:
    trino = stack.trino.process.container()
    # Kafka's listener for containers, MinIO and the catalog, from inside the Trino container.
    checks = {
        "kafka": "bash -c '</dev/tcp/kafka/19092'",
        "minio": "curl -fsS -o /dev/null http://minio:9000/minio/health/ready",
        "catalog": "curl -fsS -o /dev/null http://catalog:8181/v1/config",
    }
    for name, command in checks.items():
        code, output = trino.exec_run(["bash", "-c", command])
        assert code == 0, (name, output)


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
    from harness.containers.images import ImageBuilder
    from harness.layout import Layout

    assert ImageBuilder(stack.engine, Layout(stack.config.cache_dir)).build_all() == 0
