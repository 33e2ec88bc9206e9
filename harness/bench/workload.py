"""What every part of a bench run shares: reference rows, topics, tables, publishing, visibility.

The rows are the publisher's reference rows (`publisher.messages`), with event times within a
window before now. A run gets one Trino schema of its own (`BenchSchema`), dropped at the end.
"""

from __future__ import annotations

import datetime as dt
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from icefloe.harness.stack.tables import EVENT_ID_COLUMN, create_table_sql

SEED = 11
# Polling Trino faster than this only loads the machine the figures are measured on.
POLL_S = 0.5


def reference_values(count: int, window_days: float, seed: int = SEED) -> list[bytes]:
    """``count`` reference rows as JSON bytes, event times within ``window_days`` before now."""
    from icefloe.publisher.clock import ClockConfig
    from icefloe.publisher.messages import GenerationConfig, generate

    clock = ClockConfig(anchor=dt.datetime.now(dt.UTC), window_days=window_days)
    config = GenerationConfig(seed=seed, clock=clock)
    return [m.value for m in generate(config, count) if m.value is not None]


def create_topic(stack: Any, partitions: int, prefix: str = "bench") -> str:
    """A new topic with a unique name."""
    from confluent_kafka.admin import NewTopic

    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    admin = stack.kafka_admin()
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(30)
    return name


def producer(stack: Any, linger_ms: int = 50) -> Any:
    """A confluent-kafka producer on the stack's broker (lz4, batched by ``linger_ms``)."""
    from confluent_kafka import Producer

    return Producer(
        {
            "bootstrap.servers": stack.bootstrap_servers,
            "linger.ms": linger_ms,
            "compression.type": "lz4",
        }
    )


def publish_alternating(stack: Any, topic: str, values: Sequence[bytes]) -> None:
    """Publish ``values`` to partitions 0 and 1 of ``topic`` in turn, and wait for all."""
    out = producer(stack)
    for i, value in enumerate(values):
        while True:
            try:
                out.produce(topic, value, partition=i % 2)
                break
            except BufferError:
                out.poll(0.1)
    out.flush(120)


@dataclass(frozen=True)
class BenchSchema:
    """A Trino schema of the ``lake`` catalog for one run's tables."""

    stack: Any
    name: str

    @classmethod
    def create(cls, stack: Any) -> BenchSchema:
        name = f"bench_{uuid.uuid4().hex[:6]}"
        stack.query(f"CREATE SCHEMA lake.{name}")
        return cls(stack, name)

    def table(self, prefix: str) -> str:
        """A new reference table (with ``event_id``), partitioned by day: its full name."""
        table = f"lake.{self.name}.{prefix}_{uuid.uuid4().hex[:6]}"
        self.stack.query(create_table_sql(table, EVENT_ID_COLUMN))
        return table

    def drop(self) -> None:
        """Drop every table of the schema, then the schema."""
        for (name,) in self.stack.query(f"SHOW TABLES FROM lake.{self.name}"):
            self.stack.query(f"DROP TABLE lake.{self.name}.{name}")
        self.stack.query(f"DROP SCHEMA lake.{self.name}")


def visible(stack: Any, table: str) -> int:
    """Rows of ``table`` visible in Trino now."""
    ((count,),) = stack.query(f"SELECT count(*) FROM {table}")
    return int(count)


def metadata_table(table: str, kind: str) -> str:
    """Trino's name for a metadata table of ``table`` (``lake.schema.name``): ``kind`` is
    ``files``, ``history``, ``snapshots``..."""
    schema, name = table.split(".", 1)[1].split(".")
    return f'lake.{schema}."{name}${kind}"'


def data_files(stack: Any, table: str) -> int:
    """Data files of ``table``'s current snapshot (its ``$files`` metadata table)."""
    ((count,),) = stack.query(f"SELECT count(*) FROM {metadata_table(table, 'files')}")
    return int(count)


@dataclass(frozen=True)
class Visibility:
    """When a backlog became visible in Trino, in seconds from the writer's start.

    Attributes:
        first_seconds: the first poll that saw any row.
        first_rows: how many rows that poll saw.
        all_seconds: the first poll that saw every row.
    """

    first_seconds: float
    first_rows: int
    all_seconds: float


def watch_until_visible(
    stack: Any,
    table: str,
    rows: int,
    started: float,
    timeout_s: float,
    alive: Callable[[], str | None] = lambda: None,
) -> Visibility:
    """Poll Trino until ``rows`` rows of ``table`` are visible.

    Args:
        stack: the stack.
        table: the table.
        rows: how many rows make the backlog.
        started: ``time.monotonic()`` when the writer started.
        timeout_s: give up after this long from ``started``.
        alive: None while the writer runs, else why it stopped (then this gives up at once).

    Raises:
        RuntimeError: the writer stopped, or the rows were not visible in time.
    """
    first: tuple[float, int] | None = None
    while True:
        count = visible(stack, table)
        now = time.monotonic() - started
        if count and first is None:
            first = (now, count)
        if count >= rows:
            assert first is not None
            return Visibility(first[0], first[1], now)
        stopped = alive()
        if stopped:
            raise RuntimeError(f"{count:,} of {rows:,} rows visible when it stopped: {stopped}")
        if now > timeout_s:
            raise RuntimeError(f"{count:,} of {rows:,} rows visible after {timeout_s:.0f} s")
        time.sleep(POLL_S)
