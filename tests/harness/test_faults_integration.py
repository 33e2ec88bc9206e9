"""Fault hooks on the real stack: kill -9 each service, restart it, and nothing is lost."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.harness.sample_rows import SAMPLE_ROWS_SQL

pytestmark = [pytest.mark.integration, pytest.mark.exclusive]


def _query(stack: Any, sql: str) -> list[Any]:
    cur = stack.trino_connection().cursor()
    cur.execute(sql)
    return list(cur.fetchall())


def _read_topic(stack: Any, topic: str, expected: int) -> list[bytes]:
    consumer = stack.kafka_consumer("check")
    consumer.subscribe([topic])
    values: list[bytes] = []
    try:
        for _ in range(240):
            msg = consumer.poll(0.5)
            if msg is not None and not msg.error():
                values.append(msg.value())
            elif len(values) >= expected:
                break
    finally:
        consumer.close()
    return values


@pytest.mark.parametrize("victim", ["kafka", "minio", "catalog", "trino"])
def test_kill_nine_and_restart_keeps_tables_and_topics(
    stack: Any, victim: str, table_factory: Callable[..., str], topic_factory: Callable[..., str]
) -> None:
    from confluent_kafka import Producer

    table = table_factory()
    _query(stack, f"INSERT INTO {table} VALUES {SAMPLE_ROWS_SQL}")
    topic = topic_factory(partitions=3)
    producer = Producer({"bootstrap.servers": stack.bootstrap_servers, "acks": "all"})
    for i in range(30):
        producer.produce(topic, value=f"message-{i}".encode())
    assert producer.flush(30) == 0

    service = stack.service(victim)
    old_pid = service.process.pid
    service.kill()
    assert not service.process.is_running()
    assert not service.health()
    service.start()
    assert service.process.pid != old_pid
    assert stack.healthy()

    rows = _query(stack, f'SELECT count(*), sum("integer") FROM {table}')
    assert rows == [[3, 35]]
    values = _read_topic(stack, topic, 30)
    assert sorted(values) == sorted(f"message-{i}".encode() for i in range(30))


def test_pause_makes_a_service_unhealthy_until_resumed(stack: Any) -> None:
    stack.minio.pause()
    try:
        assert stack.minio.process.is_running()
        assert not stack.minio.health()
    finally:
        stack.minio.resume()
    assert stack.minio.health()
