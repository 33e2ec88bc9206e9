"""The world a run acts on: its own topic, dead-letter topic, schema and table, made and dropped.

Every run gets fresh names (``scen-<name>-<id>``, ``lake.scen_<id>.<name>``), so runs share one
stack and never share state. :class:`World` creates the topics and the table (the reference
shape plus the run's extra columns) through the recording client and drops them afterwards.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from icefloe.harness.scenarios.client import RecordingClient
from icefloe.harness.stack.keys import TRINO_CATALOG as LAKE
from icefloe.harness.stack.tables import EVENT_ID_COLUMN, create_table_sql
from icefloe.loader.io.deadletter import DEAD_LETTER_MAX_BYTES

__all__ = ["Names", "World"]


@dataclass(frozen=True)
class Names:
    """What a run calls its resources.

    Attributes:
        suffix: The run's short random id.
        schema: Its Trino schema (``scen_<id>``).
        table: ``lake.scen_<id>.<name>``.
        topic: Its source topic.
        dead_letter_topic: ``<topic>.dlq``, or None for a run without one.
    """

    suffix: str
    schema: str
    table: str
    topic: str
    dead_letter_topic: str | None

    @classmethod
    def fresh(cls, name: str, dead_letter: bool = True) -> Names:
        """New names for a scenario called ``name`` (its number prefix dropped)."""
        suffix = uuid.uuid4().hex[:8]
        short = name.split("_", 1)[-1][:24] if name[:1].isdigit() else name[:24]
        schema = f"scen_{suffix}"
        topic = f"scen-{short}-{suffix}"
        return cls(
            suffix,
            schema,
            f"{LAKE}.{schema}.{short}",
            topic,
            f"{topic}.dlq" if dead_letter else None,
        )

    def as_dict(self) -> dict[str, str]:
        return {
            "topic": self.topic,
            "dead_letter_topic": str(self.dead_letter_topic),
            "table": self.table,
        }


class World:
    """Creates and drops a run's topics and table.

    Args:
        names: The run's names.
        client: The run's recording client (its stack makes the topics).
        partitions: Partitions of the source topic.
        extra_columns: Columns beyond the reference table, as (name, Trino type).
    """

    def __init__(
        self,
        names: Names,
        client: RecordingClient,
        partitions: int = 1,
        extra_columns: Sequence[tuple[str, str]] = (),
    ) -> None:
        self.names = names
        self.client = client
        self.partitions = partitions
        self.extra_columns = tuple(extra_columns)

    @property
    def stack(self) -> Any:
        return self.client.stack

    def create(self) -> None:
        """The topics (the dead-letter one takes records over the loader's own size limit: a
        dead letter is the rejected record plus headers), the schema and the table."""
        from confluent_kafka.admin import NewTopic

        n = self.names
        topics = [NewTopic(n.topic, self.partitions, 1)]
        if n.dead_letter_topic:
            limit = {"max.message.bytes": str(DEAD_LETTER_MAX_BYTES)}
            topics.append(NewTopic(n.dead_letter_topic, 1, 1, config=limit))
        admin = self.stack.kafka_admin()  # held: a destroyed client fails its futures
        for future in admin.create_topics(topics, operation_timeout=30).values():
            future.result(timeout=30)
        history = self.client.history
        history.record(
            "info",
            "info",
            "topics",
            topic=n.topic,
            partitions=self.partitions,
            dead_letter_topic=n.dead_letter_topic,
        )
        try:
            self.client.sql("setup", f"CREATE SCHEMA {LAKE}.{n.schema}")
        except Exception as exc:
            if "ICEBERG_CATALOG_ERROR" not in str(exc):
                raise
            # The REST catalog keeps its state in SQLite; after a write collided with another
            # ("database is locked") it can refuse every later write until restarted. A run
            # that hit that has failed already; this one starts on a catalog that works.
            history.record("info", "fail", "catalog_refuses_writes", error=str(exc)[:300])
            service = self.stack.service("catalog")
            service.kill()
            service.start()
            history.record("info", "info", "catalog_restarted")
            self.client.sql("setup", f"CREATE SCHEMA IF NOT EXISTS {LAKE}.{n.schema}")
        columns = (*EVENT_ID_COLUMN, *self.extra_columns)
        self.client.sql("setup", create_table_sql(n.table, columns))
        history.record("info", "info", "setup", topic=n.topic, table=n.table)

    def drop(self) -> None:
        """Drop the table, the schema and the topics (a service left down is recorded)."""
        n = self.names
        try:
            self.client.sql("teardown", f"DROP TABLE IF EXISTS {n.table}", attempts=5)
            self.client.sql("teardown", f"DROP SCHEMA IF EXISTS {LAKE}.{n.schema}", attempts=5)
            names = [n.topic] + ([n.dead_letter_topic] if n.dead_letter_topic else [])
            admin = self.stack.kafka_admin()
            for future in admin.delete_topics(names, operation_timeout=30).values():
                future.result(timeout=30)
        except Exception as exc:  # a failed outage run may leave a service down
            self.client.history.record("info", "fail", "teardown", error=str(exc)[:300])
