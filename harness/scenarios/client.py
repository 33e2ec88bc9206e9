"""The recording client: every Trino query and Kafka read a run makes, recorded with its values.

Nothing in a run talks to Trino, Kafka or the catalog directly: steps, faults, the live
monitor and the final read-back all go through one :class:`RecordingClient`, which records
each statement (``sql`` events: its text, its rows) and each read (``read`` events: what came
back) into the run's history. The checkers then need nothing but the history and the ledgers,
so ``icefloe scenario check RUN_DIR`` recomputes a verdict without the services.

Reads repeated during a run are recorded as differences: an id read (``ids``) records the ids
that appeared and disappeared since the previous id read of the same table, a snapshot read
the snapshots that are new, a dead-letter read the letters past the previous one. Replaying
the events in order gives every read back (see ``harness.scenarios.checks.facts.reads``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from icefloe.harness.history import History
from icefloe.harness.observer import (
    CHECKPOINT,
    GROUP,
    NO_ID,
    SUMMARY,
    Positions,
    checkpoint_position,
    decode_positions,
    encode_positions,
    newest_held_checkpoint,
)

__all__ = ["RecordingClient", "metadata_table"]

_ERROR_CHARS = 400


def metadata_table(table: str, suffix: str) -> str:
    """``catalog.schema."name$suffix"``: one of a table's Iceberg metadata tables in Trino."""
    catalog, schema, name = table.split(".")
    return f'{catalog}.{schema}."{name}${suffix}"'


def _plain(value: Any) -> Any:
    if isinstance(value, bytes | bytearray):
        return value.hex()
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


class RecordingClient:
    """Trino, Kafka and the catalog for one run, every call recorded in ``history``.

    Args:
        stack: The running stack (``query``, ``kafka_consumer``, ``kafka_admin``,
            ``pyiceberg_catalog``).
        history: Where every statement and read goes.
    """

    def __init__(self, stack: Any, history: History) -> None:
        self.stack = stack
        self.history = history
        self._ids: dict[str, set[str]] = {}
        self._snapshots: dict[str, set[int]] = {}
        self._letters: dict[str, int] = {}
        self._positions: dict[str, Positions | None] = {}
        self._admin: Any = None
        self._lock = threading.Lock()

    # -- Trino ---------------------------------------------------------------

    def sql(
        self,
        name: str,
        statement: str,
        *,
        session: Mapping[str, str] | None = None,
        attempts: int = 1,
        pause_s: float = 2.0,
        record_rows: bool = True,
        **data: Any,
    ) -> list[Any]:
        """Run one statement on Trino, recorded as ``sql`` events with its rows.

        Args:
            name: What the statement is for (``alter``, ``optimize``, ``delete``...).
            statement: The SQL.
            session: Trino session properties for this statement.
            attempts: Tries before giving up (a restarting Trino refuses connections).
            pause_s: Pause between tries.
            record_rows: Record the rows (else only their count).
            **data: Extra facts recorded with the successful statement.

        Returns:
            Every row.

        Raises:
            Exception: The last failure, once ``attempts`` are used up.
        """
        for attempt in range(1, attempts + 1):
            self.history.record("sql", "invoke", name, statement=statement, attempt=attempt)
            try:
                rows = [list(r) for r in self.stack.query(statement, session)]
            except Exception as exc:
                self.history.record(
                    "sql", "fail", name, statement=statement, error=str(exc)[:_ERROR_CHARS]
                )
                if attempt == attempts:
                    raise
                time.sleep(pause_s)
                continue
            values = _plain(rows) if record_rows else None
            self.history.record(
                "sql", "ok", name, statement=statement, rows=len(rows), values=values, **data
            )
            return rows
        raise AssertionError("unreachable")

    def query_fn(self, name: str, attempts: int = 1, **data: Any) -> Callable[..., list[Any]]:
        """A ``(statement, session) -> rows`` callable that records under ``name``, with
        ``data`` on each statement (what ``harness.maintenance`` takes)."""

        def query(statement: str, session: Mapping[str, str] | None = None) -> list[Any]:
            return self.sql(name, statement, session=session, attempts=attempts, **data)

        return query

    def _read(self, name: str, statement: str, attempts: int) -> list[Any]:
        for attempt in range(1, attempts + 1):
            try:
                return [list(r) for r in self.stack.query(statement)]
            except Exception as exc:
                self.history.record("read", "fail", name, error=str(exc)[:_ERROR_CHARS])
                if attempt == attempts:
                    raise
                time.sleep(2.0)
        raise AssertionError("unreachable")

    def ids(self, table: str, *, attempts: int = 30) -> set[str]:
        """The distinct event ids the table holds now (recorded as added/removed ids)."""
        statement = f"SELECT DISTINCT event_id FROM {table}"
        now = {_id(r[0]) for r in self._read("ids", statement, attempts)}
        with self._lock:
            before = self._ids.get(table, set())
            self._ids[table] = now
        self.history.record(
            "read",
            "ok",
            "ids",
            table=table,
            total=len(now),
            added=sorted(now - before),
            removed=sorted(before - now),
        )
        return now

    def table_counts(self, table: str, *, attempts: int = 30) -> dict[str, int]:
        """How many rows carry each event id (the final read-back), recorded in full."""
        statement = f"SELECT event_id, count(*) FROM {table} GROUP BY event_id"
        counts = {_id(eid): int(n) for eid, n in self._read("table", statement, attempts)}
        self.history.record(
            "read",
            "ok",
            "table",
            table=table,
            distinct=len(counts),
            rows=sum(counts.values()),
            values=sorted(counts.items()),
        )
        return counts

    def duplicates(self, table: str, *, attempts: int = 3) -> dict[str, int]:
        """Event ids held more than once, recorded (empty while all is well)."""
        statement = f"SELECT event_id, count(*) FROM {table} GROUP BY event_id HAVING count(*) > 1"
        found = {_id(eid): int(n) for eid, n in self._read("duplicates", statement, attempts)}
        self.history.record("read", "ok", "duplicates", table=table, values=sorted(found.items()))
        return found

    def columns(self, table: str, *, attempts: int = 30) -> list[str]:
        """The table's column names, recorded."""
        catalog, schema, name = table.split(".")
        statement = (
            f"SELECT column_name FROM {catalog}.information_schema.columns "
            f"WHERE table_schema = '{schema}' AND table_name = '{name}' ORDER BY ordinal_position"
        )
        names = [str(r[0]) for r in self._read("columns", statement, attempts)]
        self.history.record("read", "ok", "columns", table=table, values=names)
        return names

    def commits(self, table: str, *, attempts: int = 3) -> list[dict[str, Any]]:
        """Snapshots committed since the previous commit read, recorded with their summaries
        (kept in the history even after ``expire_snapshots`` removed them from the table),
        and the snapshot main points at now.

        Each snapshot is its id, commit time, operation, parent, added records and its whole
        summary: what a loader kind's observer (``harness.observer``) reads its commits,
        position, process and staging from, whichever loader wrote it.
        """
        statement = (
            "SELECT snapshot_id, to_unixtime(committed_at), operation, "
            "element_at(summary, 'added-records'), parent_id, summary "
            f"FROM {metadata_table(table, 'snapshots')}"
        )
        rows = self._read("commits", statement, attempts)
        refs = self._read(
            "commits",
            f"SELECT snapshot_id FROM {metadata_table(table, 'refs')} WHERE name = 'main'",
            attempts,
        )
        with self._lock:
            known = self._snapshots.setdefault(table, set())
            new = [r for r in rows if int(r[0]) not in known]
            known.update(int(r[0]) for r in new)
        found = [
            {
                "snapshot": int(s),
                "time": float(t),
                "operation": op,
                "records": int(n) if n is not None else None,
                "parent": int(parent) if parent is not None else None,
                "summary": {str(k): str(v) for k, v in dict(summary or {}).items()},
            }
            for s, t, op, n, parent, summary in sorted(new, key=lambda r: r[1])
        ]
        main = int(refs[0][0]) if refs else None
        self.history.record(
            "read", "ok", "commits", table=table, total=len(rows), main=main, values=found
        )
        return found

    def positions(self, table: str, observer: Any, *, final: bool = False) -> Positions | None:
        """The loader's committed position now, as its observer says where it is: the offsets
        in its newest commit on main (``summary``), its consumer group's (``group``) or its
        Spark checkpoint's newest committed batch's (``checkpoint``).

        Recorded (``read``/``positions``: its source, what holds it, the offsets) when it
        changed since the previous read of the table, and always when ``final``.

        Args:
            table: The run's table.
            observer: The loader kind's ``harness.observer.Observer``.
            final: The read at the end of a run.

        Returns:
            Topic -> partition -> next offset, or None when the observer declares no position
            or it could not be read (a failed read is recorded).
        """
        try:
            if observer.position == GROUP:
                values, held_by = (
                    self._group_position(observer.consumer_group),
                    {"group": observer.consumer_group},
                )
            elif observer.position == SUMMARY:
                values, held_by = self._summary_position(table, observer.position_key)
            elif observer.position == CHECKPOINT:
                batch, values = checkpoint_position(Path(observer.checkpoint_dir))
                held_by = {"checkpoint": observer.checkpoint_dir, "batch": batch}
            else:
                return None
            if observer.held_checkpoints:
                held_by["held_checkpoint"] = newest_held_checkpoint(Path(observer.held_checkpoints))
        except Exception as exc:
            self.history.record("read", "fail", "positions", table=table, error=str(exc)[:400])
            return None
        with self._lock:
            changed = self._positions.get(table) != values
            self._positions[table] = values
        if changed or final:
            self.history.record(
                "read", "ok", "positions", table=table, source=observer.position,
                final=final, values=encode_positions(values), **held_by,
            )  # fmt: skip
        return values

    def _group_position(self, group: str) -> Positions:
        from confluent_kafka import ConsumerGroupTopicPartitions

        with self._lock:  # one admin client for the run's reads, not one per read
            if self._admin is None:
                self._admin = self.stack.kafka_admin()
            admin = self._admin
        futures = admin.list_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group)], request_timeout=30
        )
        result = futures[group].result(timeout=30)
        out: Positions = {}
        for tp in result.topic_partitions:
            if tp.offset >= 0:
                out.setdefault(tp.topic, {})[tp.partition] = tp.offset
        return out

    def _summary_position(self, table: str, key: str) -> tuple[Positions, dict[str, Any]]:
        rows = self._read(
            "positions",
            "SELECT snapshot_id, parent_id, element_at(summary, "
            f"'{key}') FROM {metadata_table(table, 'snapshots')}",
            3,
        )
        refs = self._read(
            "positions",
            f"SELECT snapshot_id FROM {metadata_table(table, 'refs')} WHERE name = 'main'",
            3,
        )
        parents = {int(s): (None if p is None else int(p)) for s, p, _ in rows}
        held = {int(s): v for s, _, v in rows if v is not None}
        current = int(refs[0][0]) if refs else None
        seen: set[int] = set()
        while current is not None and current not in seen:
            seen.add(current)
            if current in held:
                return decode_positions(held[current]) or {}, {"snapshot": current}
            current = parents.get(current)
        return {}, {"snapshot": None}

    def visible(self, name: str, table: str, *, attempts: int = 30) -> list[str]:
        """A named read of the ids visible now, recorded in full (e.g. before a DELETE)."""
        ids = sorted(self.ids(table, attempts=attempts))
        self.history.record("read", "ok", name, table=table, visible=len(ids), values=ids)
        return ids

    def record_read(self, name: str, values: Any, **data: Any) -> None:
        """Record a value read by other means (e.g. a step's aggregate) as a named read."""
        self.history.record("read", "ok", name, values=_plain(values), **data)

    # -- Kafka -----------------------------------------------------------------

    def dead_letters(self, topic: str, *, timeout_s: float = 60.0) -> list[dict[str, Any]]:
        """Dead letters past the previous read of ``topic``, up to its end now, recorded.

        Each letter is its partition and offset in the dead-letter topic and its headers
        (decoded as UTF-8), as the loader wrote them: its observer reads them
        (``harness.observer.Observer.letter``); payloads are not recorded.
        """
        from confluent_kafka import TopicPartition

        with self._lock:
            start = self._letters.get(topic, 0)
        consumer = self.stack.kafka_consumer("icefloe-scenario")
        letters: list[dict[str, Any]] = []
        position, high = start, start
        try:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=timeout_s)
            position = max(start, low)
            if high > position:
                consumer.assign([TopicPartition(topic, 0, position)])
                deadline = time.monotonic() + timeout_s
                while position < high and time.monotonic() < deadline:
                    msg = consumer.poll(1.0)
                    if msg is None or msg.error():
                        continue
                    position = int(msg.offset() or 0) + 1
                    letters.append(
                        {
                            "partition": int(msg.partition() or 0),
                            "offset": position - 1,
                            "headers": _decode_headers(msg.headers()),
                        }
                    )
        except Exception as exc:
            self.history.record("read", "fail", "dead_letters", topic=topic, error=str(exc)[:400])
            raise
        finally:
            consumer.close()
        with self._lock:
            self._letters[topic] = position
        self.history.record(
            "read", "ok", "dead_letters", topic=topic, start=start, end=high, values=letters
        )
        return letters

    # -- the catalog -------------------------------------------------------------

    def iceberg_table(self, table: str) -> Any:
        """The table as pyiceberg loads it from the catalog (``catalog.schema.table``)."""
        return self.stack.pyiceberg_catalog().load_table(table.split(".", 1)[1])

    def lineage(self, table: str) -> set[int] | None:
        """Snapshot ids of the table's main lineage, or None when the catalog cannot answer.

        A snapshot the loader staged but never published is in the table's metadata but not
        in main: it did not land.
        """
        try:
            loaded = self.iceberg_table(table)
        except Exception as exc:
            self.history.record("read", "fail", "lineage", table=table, error=str(exc)[:400])
            return None
        by_id = {s.snapshot_id: s for s in loaded.snapshots()}
        lineage: set[int] = set()
        current = loaded.current_snapshot()
        while current is not None and current.snapshot_id not in lineage:
            lineage.add(current.snapshot_id)
            parent = current.parent_snapshot_id
            current = by_id.get(parent) if parent is not None else None
        self.history.record("read", "ok", "lineage", table=table, values=sorted(lineage))
        return lineage

    def lease(self, table: str) -> Any:
        """The table's loader lease (``loader.commit.lease.Lease``), or None without one or when
        the catalog cannot answer."""
        from icefloe.loader.commit.lease import lease_from_properties

        try:
            lease = lease_from_properties(self.iceberg_table(table).properties)
        except Exception as exc:
            self.history.record("read", "fail", "lease", table=table, error=str(exc)[:400])
            return None
        expires = lease.expires_ms if lease is not None else None
        owner = lease.owner if lease is not None else None
        self.history.record("read", "ok", "lease", table=table, owner=owner, expires_ms=expires)
        return lease

    def lease_expires_ms(self, table: str) -> int | None:
        """When the table's loader lease runs out (epoch ms), or None without one."""
        lease = self.lease(table)
        return lease.expires_ms if lease is not None else None

    def lease_owner(self, table: str) -> str | None:
        """The loader id the table's lease names, or None without one."""
        lease = self.lease(table)
        return lease.owner if lease is not None else None

    def location(self, table: str) -> str | None:
        """The table's location (``s3://bucket/path``), or None when the catalog cannot answer."""
        try:
            return str(self.iceberg_table(table).location())
        except Exception:
            return None


def _decode_headers(raw: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in raw or []:
        text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value or "")
        out[str(key)] = text
    return out


def _id(value: Any) -> str:
    """An ``event_id`` as read: its text, or :data:`~harness.observer.NO_ID` for a null."""
    return NO_ID if value is None else str(value)
