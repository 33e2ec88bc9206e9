"""The local lakehouse end to end: Trino DDL and DML on the REST catalog, read back through Trino
and pyiceberg, Parquet files in MinIO, a Kafka round trip, loopback-only listeners."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Callable
from typing import Any

import psutil
import pytest

from icefloe.harness.stack.tables import REFERENCE_COLUMNS
from tests.harness.sample_rows import SAMPLE_ROWS_SQL

pytestmark = pytest.mark.integration


def _query(trino: Any, sql: str) -> list[Any]:
    cur = trino.cursor()
    cur.execute(sql)
    return list(cur.fetchall())


def test_reference_table_through_trino_pyiceberg_and_minio(
    stack: Any, trino: Any, table_factory: Callable[..., str], iceberg_catalog: Any
) -> None:
    table = table_factory()
    _, schema, name = table.split(".")

    described = _query(trino, f"DESCRIBE {table}")
    assert [(r[0], r[1]) for r in described] == [(n, t.lower()) for n, t in REFERENCE_COLUMNS]
    create = _query(trino, f"SHOW CREATE TABLE {table}")[0][0]
    assert "format = 'PARQUET'" in create
    assert "partitioning = ARRAY['day(timestamp)']" in create

    assert _query(trino, f"INSERT INTO {table} VALUES {SAMPLE_ROWS_SQL}") == [[3]]
    rows = _query(trino, f'SELECT "integer", nested, "timestamp" FROM {table} ORDER BY "timestamp"')
    assert [r[0] for r in rows] == [42, -7, None]
    assert rows[0][2] == dt.datetime(2022, 7, 26, 7, 41, 48, 46773, tzinfo=dt.UTC)

    # The same rows through pyiceberg, straight from the catalog and the Parquet files.
    arrow = iceberg_catalog.load_table(f"{schema}.{name}").scan().to_arrow()
    assert sorted(v for v in arrow.column("integer").to_pylist() if v is not None) == [-7, 42]
    assert arrow.num_rows == 3
    by_int = {r["integer"]: r for r in arrow.to_pylist()}
    assert by_int[42]["nested"] == {"key": "k1", "value": 7}
    assert by_int[42]["string_map"] == [("colour", "blue")]
    assert by_int[-7]["integers"] == [9223372036854775807]

    # The data files the catalog lists exist in MinIO as Parquet.
    files = [r[0] for r in _query(trino, f'SELECT file_path FROM lake.{schema}."{name}$files"')]
    assert len(files) == 3  # one per day partition
    s3 = stack.minio.filesystem()
    for path in files:
        assert path.startswith("s3://warehouse/") and path.endswith(".parquet")
        info = s3.get_file_info(path.removeprefix("s3://"))
        assert info.size > 0
        with s3.open_input_file(path.removeprefix("s3://")) as f:
            assert f.read(4) == b"PAR1"


def test_kafka_round_trip(stack: Any, topic_factory: Callable[..., str]) -> None:
    from confluent_kafka import Consumer, Producer

    topic = topic_factory(partitions=2)
    producer = Producer({"bootstrap.servers": stack.bootstrap_servers, "acks": "all"})
    sent = {f"key-{i}": f'{{"n": {i}}}' for i in range(50)}
    for key, value in sent.items():
        producer.produce(topic, key=key, value=value)
    assert producer.flush(30) == 0

    consumer = Consumer(
        {
            "bootstrap.servers": stack.bootstrap_servers,
            "group.id": f"roundtrip-{uuid.uuid4().hex}",
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([topic])
    got: dict[str, str] = {}
    try:
        for _ in range(200):
            msg = consumer.poll(0.5)
            if msg is None or msg.error():
                if len(got) == len(sent):
                    break
                continue
            got[msg.key().decode()] = msg.value().decode()
    finally:
        consumer.close()
    assert got == sent


def running_services(stack: Any) -> list[Any]:
    """The stack's services and the optional ones running now (Toxiproxy, Glue)."""
    optional = [s for s in stack.optional_services().values() if s.process.is_running()]
    return [*stack.services.values(), *optional]


def test_every_service_listens_on_loopback_only(stack: Any) -> None:
    if getattr(stack, "backend", "local") != "local":
        pytest.skip("containers listen inside their own network; see tests/containers")
    for service in running_services(stack):
        proc = psutil.Process(service.process.pid)
        listening = [
            c.laddr
            for p in [proc, *proc.children(recursive=True)]
            for c in p.net_connections(kind="inet")
            if c.status == psutil.CONN_LISTEN
        ]
        assert listening, f"{service.name} listens on nothing"
        for address in listening:
            assert address.ip in ("127.0.0.1", "::1", "::ffff:127.0.0.1"), (service.name, address)
        assert set(service.ports) <= {a.port for a in listening}


def test_status_reports_every_service(stack: Any) -> None:
    statuses = {s.name: s for s in stack.status()}
    # The four, and an optional service only while it runs (a test or a doc may start one).
    assert set(statuses) == {s.name for s in running_services(stack)}
    assert {"kafka", "minio", "catalog", "trino"} <= set(statuses)
    for s in statuses.values():
        assert s.healthy and s.pid and s.rss_bytes > 0


def test_no_secret_on_any_command_line(stack: Any) -> None:
    secret = stack.credentials.secret_key.reveal()
    for service in running_services(stack):
        cmdline = " ".join(psutil.Process(service.process.pid).cmdline())
        assert secret not in cmdline, service.name
