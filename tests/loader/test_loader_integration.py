"""The loader on the real stack, in-process with a shared Spark session; checked through Trino."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from icefloe.harness.stack.tables import EVENT_ID_COLUMN
from icefloe.loader import keys
from icefloe.loader.config import LoaderConfig
from icefloe.loader.errors import ConcurrentLoader, PoisonMessage
from icefloe.loader.run.job import LoaderJob
from icefloe.loader.run.status import read_status
from tests.loader.conftest import reference_values, wait_until
from tests.loader.processes import loader_snapshots

pytestmark = pytest.mark.integration


@contextmanager
def running(config: LoaderConfig, spark: Any) -> Iterator[LoaderJob]:
    job = LoaderJob(config, spark, stop_timeout_s=30)
    job.start()
    try:
        yield job
    finally:
        job.stop()


def pump_until(job: LoaderJob, check: Callable[[], bool], timeout_s: float, what: str) -> None:
    """Drive the job's maintenance loop while waiting for ``check``."""

    def step() -> bool:
        job.wait(1.0)
        return check()

    wait_until(step, timeout_s, what, step_s=0)


def counts(stack: Any, table: str) -> tuple[int, int]:
    ((total, distinct),) = stack.query(f"SELECT count(*), count(DISTINCT event_id) FROM {table}")
    return total, distinct


def test_loads_valid_rows_exactly_once_and_resumes_from_the_table(
    stack: Any,
    spark: Any,
    table_factory: Any,
    topic_factory: Any,
    produce: Any,
    loader_config: Any,
    iceberg_catalog: Any,
) -> None:
    table, topic = table_factory(extra_columns=EVENT_ID_COLUMN), topic_factory(partitions=2)
    rows = reference_values(600)
    produce(topic, [v for _, v in rows[:300]], partition=0)
    produce(topic, [v for _, v in rows[300:500]], partition=1)
    _, config = loader_config(table, [topic])

    with running(config, spark) as job:
        pump_until(job, lambda: counts(stack, table)[0] >= 500, 90, "500 rows")
        # A second loader on the same table refuses to start.
        other = LoaderJob(dataclasses.replace(config, loader_id="intruder"), spark)
        with pytest.raises(ConcurrentLoader, match="test-loader"):
            other.start()
        status = read_status(config)
    assert counts(stack, table) == (500, 500)
    summaries = loader_snapshots(iceberg_catalog, table)
    assert json.loads(summaries[-1][keys.OFFSETS]) == {topic: {"0": 300, "1": 200}}
    assert {s[keys.LOADER_ID] for s in summaries} == {"test-loader"}
    assert [(p.committed, p.lag) for p in status.partitions] == [(300, 0), (200, 0)]
    assert status.freshness_s is not None and status.freshness_s < 600

    # Values survive the trip: the first row as Trino sees it.
    first = json.loads(rows[0][1])
    ((integer, string, key),) = stack.query(
        f"SELECT integer, string, nested.key FROM {table} WHERE event_id = '{rows[0][0]}'"
    )
    assert (integer, string, key) == (first["integer"], first["string"], first["nested"]["key"])

    # Restart: the checkpoint is deleted and the table's offsets decide where to resume.
    produce(topic, [v for _, v in rows[500:]], partition=1)
    with running(config, spark) as job:
        assert json.loads(job.starting_offsets or "") == {topic: {"0": 300, "1": 200}}
        pump_until(job, lambda: counts(stack, table)[0] >= 600, 90, "600 rows")
    assert counts(stack, table) == (600, 600)


MALFORMED = [b"not json", b'{"integer": "seven"}', b"[1, 2]", None]


def test_malformed_records_go_to_the_dead_letter_topic_with_headers(
    stack: Any,
    spark: Any,
    table_factory: Any,
    topic_factory: Any,
    produce: Any,
    loader_config: Any,
) -> None:
    table, topic, dlq = (
        table_factory(extra_columns=EVENT_ID_COLUMN),
        topic_factory(),
        topic_factory(),
    )
    rows = reference_values(50, seed=2)
    produce(
        topic,
        [v for _, v in rows[:20]] + MALFORMED + [v for _, v in rows[20:]],
        headers=[("origin", b"test")],
    )
    _, config = loader_config(table, [topic], dead_letter_topic=dlq)
    with running(config, spark) as job:
        pump_until(job, lambda: counts(stack, table)[0] >= 50, 90, "50 rows")
        sample = job.metrics.registry.get_sample_value
        assert sample("icefloe_loader_dead_lettered_total", {"reason": "invalid_json"}) == 1
        assert sample("icefloe_loader_rows_written_total") == 50
    assert counts(stack, table) == (50, 50)

    letters = consume(stack, dlq, len(MALFORMED))
    assert [m.value() for m in letters] == MALFORMED
    for i, message in enumerate(letters):
        headers = dict(message.headers())
        assert headers["origin"] == b"test"
        assert headers[keys.DLQ_SOURCE_TOPIC] == topic.encode()
        assert headers[keys.DLQ_SOURCE_PARTITION] == b"0"
        assert headers[keys.DLQ_SOURCE_OFFSET] == str(20 + i).encode()
        assert headers[keys.DLQ_LOADER_ID] == b"test-loader"
        assert message.key() == f"k{20 + i}".encode()
    kinds = [dict(m.headers())[keys.DLQ_ERROR_KIND] for m in letters]
    assert kinds == [b"invalid_json", b"type_mismatch", b"not_an_object", b"empty_payload"]
    assert dict(letters[1].headers())[keys.DLQ_ERROR_PATH] == b"integer"


def test_without_dead_letter_topic_the_first_malformed_record_halts_the_loader(
    stack: Any,
    spark: Any,
    table_factory: Any,
    topic_factory: Any,
    produce: Any,
    loader_config: Any,
) -> None:
    table, topic, dlq = (
        table_factory(extra_columns=EVENT_ID_COLUMN),
        topic_factory(),
        topic_factory(),
    )
    rows = reference_values(30, seed=3)
    produce(topic, [v for _, v in rows[:10]] + [b'{"integer": 1.5}'] + [v for _, v in rows[10:]])
    _, config = loader_config(table, [topic])
    job = LoaderJob(config, spark)
    job.start()
    try:
        with pytest.raises(PoisonMessage) as caught:
            job.wait(90)
    finally:
        job.stop()
    message = str(caught.value)
    assert f"topic {topic!r} partition 0 offset 10" in message
    assert "integer" in message
    assert counts(stack, table) == (0, 0)  # nothing of the batch is committed

    # Configure a dead-letter topic and restart: nothing is lost.
    _, with_dlq = loader_config(table, [topic], dead_letter_topic=dlq)
    with running(with_dlq, spark) as job:
        pump_until(job, lambda: counts(stack, table)[0] >= 30, 90, "30 rows")
    assert counts(stack, table) == (30, 30)
    assert len(consume(stack, dlq, 1)) == 1


def test_columns_added_and_dropped_in_trino_apply_without_restart(
    stack: Any,
    spark: Any,
    table_factory: Any,
    topic_factory: Any,
    produce: Any,
    loader_config: Any,
) -> None:
    table, topic = table_factory(extra_columns=EVENT_ID_COLUMN), topic_factory()
    _, config = loader_config(table, [topic])

    def row(i: int, **extra: Any) -> bytes:
        return json.dumps({"event_id": f"e{i}", "integer": i, **extra}).encode()

    with running(config, spark) as job:
        produce(topic, [row(i, colour="red") for i in range(5)])
        pump_until(job, lambda: counts(stack, table)[0] >= 5, 90, "5 rows")
        stack.query(f"ALTER TABLE {table} ADD COLUMN colour VARCHAR")
        produce(topic, [row(i, colour="blue") for i in range(5, 10)])
        pump_until(job, lambda: counts(stack, table)[0] >= 10, 60, "10 rows")
        stack.query(f"ALTER TABLE {table} DROP COLUMN string")
        produce(topic, [row(i, colour="green", string="gone") for i in range(10, 15)])
        pump_until(job, lambda: counts(stack, table)[0] >= 15, 60, "15 rows")
    colours = stack.query(f"SELECT colour, count(*) FROM {table} GROUP BY colour ORDER BY 1")
    assert colours == [["blue", 5], ["green", 5], [None, 5]]
    assert counts(stack, table) == (15, 15)


@pytest.mark.parametrize(
    "layout",
    [
        "partitioning = ARRAY['month(timestamp)', 'bucket(event_id, 3)'], "
        "sorted_by = ARRAY['integer']",
        "partitioning = ARRAY[]",
    ],
    ids=["spec-changed-and-sorted", "unpartitioned"],
)
def test_a_table_laid_out_anew_while_loading_takes_every_row_once(
    stack: Any,
    spark: Any,
    table_factory: Any,
    topic_factory: Any,
    produce: Any,
    loader_config: Any,
    layout: str,
) -> None:
    """Each task sorts its rows by the table's partition before Iceberg writes them, one file
    at a time (``keys.APPEND_OPTIONS``): the layout the table has when a batch is written is
    the one its rows are sorted for, whatever its owner changed in between."""
    table, topic = table_factory(extra_columns=EVENT_ID_COLUMN), topic_factory(partitions=2)
    rows = reference_values(400, seed=7)  # event times over 30 days: many day partitions
    _, config = loader_config(table, [topic])

    with running(config, spark) as job:
        produce(topic, [v for _, v in rows[:100]], partition=0)
        produce(topic, [v for _, v in rows[100:200]], partition=1)
        pump_until(job, lambda: counts(stack, table)[0] >= 200, 90, "200 rows")
        stack.query(f"ALTER TABLE {table} SET PROPERTIES {layout}")
        produce(topic, [v for _, v in rows[200:300]], partition=0)
        produce(topic, [v for _, v in rows[300:]], partition=1)
        pump_until(job, lambda: counts(stack, table)[0] >= 400, 90, "400 rows")
    assert counts(stack, table) == (400, 400)
    sent = sorted(json.loads(v)["integer"] for _, v in rows)
    landed = sorted(r[0] for r in stack.query(f"SELECT integer FROM {table}"))
    assert landed == sent
    schema, name = table.rsplit(".", 1)
    specs = stack.query(f'SELECT count(DISTINCT spec_id) FROM {schema}."{name}$files"')
    assert specs == [[2]], "the second batch was written for the new layout"


def consume(stack: Any, topic: str, count: int, timeout_s: float = 30) -> list[Any]:
    """Read ``count`` messages from the start of ``topic``."""
    import time

    consumer = stack.kafka_consumer("test")
    consumer.subscribe([topic])
    out: list[Any] = []
    deadline = time.monotonic() + timeout_s
    try:
        while len(out) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                out.append(message)
        # Anything beyond the expected count is a duplicate worth failing on.
        extra = consumer.poll(2.0)
        if extra is not None and extra.error() is None:
            out.append(extra)
    finally:
        consumer.close()
    return out


@pytest.mark.parametrize("jvm_decode", [True, False], ids=["jvm-path", "python-workers"])
def test_a_timestamp_without_zone_loads_as_written_on_either_route(
    stack: Any,
    spark: Any,
    table_factory: Any,
    topic_factory: Any,
    produce: Any,
    loader_config: Any,
    jvm_decode: bool,
) -> None:
    """An Iceberg ``timestamp`` column (no zone) keeps the wall-clock time it was sent with,
    whether the JVM path or the Python workers decode it."""
    table = table_factory(extra_columns=(*EVENT_ID_COLUMN, ("local_ts", "timestamp(6)")))
    topic = topic_factory(partitions=1)
    stamps = ["2024-02-29T23:59:59.123456", "1999-12-31T00:00:00", None]
    values = []
    for (_, value), stamp in zip(reference_values(len(stamps), seed=7), stamps, strict=True):
        row = json.loads(value)
        row["local_ts"] = stamp
        values.append(json.dumps(row).encode())
    produce(topic, values, partition=0)
    _, config = loader_config(table, [topic], jvm_decode=jvm_decode)
    with running(config, spark) as job:
        pump_until(job, lambda: counts(stack, table)[0] >= len(values), 90, "the rows")
    got = {v for (v,) in stack.query(f"SELECT CAST(local_ts AS varchar) FROM {table}")}
    assert got == {"2024-02-29 23:59:59.123456", "1999-12-31 00:00:00.000000", None}
