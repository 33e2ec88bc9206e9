"""A small exactly-once loader: Kafka JSON messages into an Iceberg table, with pyiceberg.

It needs only ``pyiceberg`` (with ``pyarrow``) and ``confluent-kafka``. Run it with a TOML file
(``README.md`` beside it lists the keys) and the object store's keys in ``AWS_ACCESS_KEY_ID``
and ``AWS_SECRET_ACCESS_KEY``::

    python loader.py --config loader.toml

Exactly once, by its own means: the table keeps the loader's position. Every append's snapshot
summary carries ``example.offsets``, JSON ``{"<topic>": {"<partition>": <next offset>}}`` for
every partition loaded so far. On start, and after any failure, the loader reads the position
of the newest snapshot on main that carries one and reads Kafka from there. Before an append it
checks that the table still holds the position the batch was planned from, and the append
fails if another commit lands in between. So whatever became of the last process (killed
mid-write, mid-commit, right after it), the table says what is loaded: nothing twice, nothing
skipped. Kafka's consumer-group offsets are never committed nor read.

Each batch (``batch_seconds`` or ``batch_messages``, whichever comes first) is converted to the
table's current columns, by name and strictly by type. A message that is not a JSON object, or
has a value that does not fit its column, goes to the dead-letter topic when there is one
(headers name its source and why); without one the loader stops, naming it, and loads nothing
of its batch.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import re
import signal
import sys
import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any, NoReturn

import pyarrow as pa
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Message, Producer
from confluent_kafka import TopicPartition as Partition
from pyiceberg import types as it
from pyiceberg.catalog import load_catalog
from pyiceberg.io.pyarrow import schema_to_pyarrow
from pyiceberg.schema import Schema
from pyiceberg.table import Table

OFFSETS_KEY = "example.offsets"
"""The snapshot summary key holding the position."""

SOURCE_TOPIC, SOURCE_PARTITION, SOURCE_OFFSET, REASON = (
    "example.source.topic", "example.source.partition", "example.source.offset", "example.reason",
)  # fmt: skip
"""A dead letter's headers."""

MAX_FAILURES = 30
"""Failed batches in a row (about five minutes with the waits between them) before giving up."""

Position = dict[str, dict[str, int]]
"""Topic -> partition (as text, as in the JSON) -> the next offset to read."""

log = logging.getLogger("example-loader")


@dataclass(frozen=True)
class Settings:
    """The TOML file's keys (credentials come from the environment only)."""

    bootstrap_servers: str
    topic: str
    table: str  # namespace.name in the catalog
    catalog_uri: str
    warehouse: str
    s3_endpoint: str
    s3_region: str = "us-east-1"
    dead_letter_topic: str = ""  # empty: stop at the first message that does not fit
    batch_seconds: float = 1.5
    batch_messages: int = 20_000
    max_message_bytes: int = 1 << 20


class Unfit(ValueError):
    """A message that cannot be a row of the table (the text says where and why)."""


class Halt(Exception):
    """A message does not fit and there is no dead-letter topic: the loader stops."""


# -- a message into a row ------------------------------------------------------------------------

_TIME = r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?"
TEXTS: dict[type, tuple[re.Pattern[str], Callable[[str], Any]]] = {  # the shape, then parse
    it.TimestamptzType: (
        re.compile(_TIME + r"(Z|[+-]\d{2}:\d{2})"),
        lambda s: datetime.fromisoformat(s).astimezone(UTC),
    ),
    it.TimestampType: (re.compile(_TIME), datetime.fromisoformat),
    it.DateType: (re.compile(r"\d{4}-\d{2}-\d{2}"), date.fromisoformat),
}
NUMBERS: dict[type, tuple[type, float]] = {  # JSON numbers taken, magnitude bound
    it.IntegerType: (int, 2**31),
    it.LongType: (int, 2**63),
    it.FloatType: (float, 3.4028234663852886e38),
    it.DoubleType: (float, sys.float_info.max),
}


def converter(kind: it.IcebergType, path: str) -> Callable[[Any], Any]:
    """A function from a decoded JSON value (not null) to ``kind``'s value for pyarrow.

    No coercion: ``"12"`` is no integer, ``1.5`` no long, ``1`` no boolean, ``1e999`` no
    double; a timestamptz needs its zone (``Z`` or ``+hh:mm``), a timestamp has none.

    Raises:
        Unfit: (from the function) the value does not fit, naming ``path``.
        NotImplementedError: a type this loader does not load.
    """

    def fail(v: Any, want: str) -> NoReturn:
        raise Unfit(f"{path}: expected {want}, got {json.dumps(v)[:60]}")

    if isinstance(kind, it.BooleanType):
        return lambda v: v if isinstance(v, bool) else fail(v, "true or false")
    if isinstance(kind, it.StringType):
        return lambda v: v if isinstance(v, str) else fail(v, "a string")
    if type(kind) in NUMBERS:
        taken, bound = NUMBERS[type(kind)]

        def number(v: Any) -> Any:
            if isinstance(v, bool) or not isinstance(v, int if taken is int else int | float):
                fail(v, "an integer" if taken is int else "a number")
            # An integer's range is [-2**n, 2**n - 1]; a double's, the finite values.
            if not (-bound <= v < bound if taken is int else -bound <= v <= bound):
                fail(v, f"a number in {kind}'s range")
            return v

        return number
    if type(kind) in TEXTS:
        shape, parse = TEXTS[type(kind)]

        def text(v: Any) -> Any:
            if isinstance(v, str) and shape.fullmatch(v):
                with contextlib.suppress(ValueError):  # the shape of a time, but none (month 13)
                    return parse(v)
            fail(v, f"ISO-8601 {kind} text")

        return text
    if isinstance(kind, it.ListType):
        item = nullable(kind.element_type, kind.element_required, f"{path}[]")
        return lambda v: [item(x) for x in v] if isinstance(v, list) else fail(v, "an array")
    if isinstance(kind, it.MapType) and isinstance(kind.key_type, it.StringType):
        value = nullable(kind.value_type, kind.value_required, f"{path}{{}}")
        # pyarrow takes a map as its pairs.
        return lambda v: (
            [(k, value(x)) for k, x in v.items()] if isinstance(v, dict) else fail(v, "an object")
        )
    if isinstance(kind, it.StructType):
        fields = [
            (f.name, nullable(f.field_type, f.required, f"{path}.{f.name}")) for f in kind.fields
        ]
        return lambda v: (
            {name: conv(v.get(name)) for name, conv in fields}
            if isinstance(v, dict)
            else fail(v, "an object")
        )
    raise NotImplementedError(f"column {path}: this loader does not load {kind}")


def nullable(kind: it.IcebergType, required: bool, path: str) -> Callable[[Any], Any]:
    """:func:`converter`, taking JSON null (or a missing field) as null where that is allowed."""
    convert = converter(kind, path)

    def value(v: Any) -> Any:
        if v is None and required:
            raise Unfit(f"{path}: required, got null")
        return None if v is None else convert(v)

    return value


def row_converter(schema: Schema) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A JSON object into a row of ``schema``: columns by name, other fields ignored."""
    columns = [(f.name, nullable(f.field_type, f.required, f.name)) for f in schema.fields]
    return lambda doc: {name: convert(doc.get(name)) for name, convert in columns}


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    if len(doc := dict(pairs)) != len(pairs):
        raise ValueError("the same key twice in one object")
    return doc


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def decode(raw: bytes | None, max_bytes: int) -> dict[str, Any]:
    """A message's value as a JSON object (strict UTF-8, no duplicate keys, no NaN)."""
    if raw is None or not raw.strip():
        raise Unfit("an empty message")
    if len(raw) > max_bytes:
        raise Unfit(f"{len(raw)} bytes, over the limit of {max_bytes}")
    try:
        text = raw.decode("utf-8")
        doc = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        raise Unfit(f"not JSON: {exc}"[:200]) from None
    if not isinstance(doc, dict):
        raise Unfit(f"not a JSON object: {type(doc).__name__}")
    return doc


# -- the position in the table, the dead letters beside it --------------------------------------


def committed_position(table: Table) -> Position:
    """The position of the newest snapshot on main that carries one (walking back over the
    snapshots others made, such as a compaction's); empty if none ever did.

    Raises:
        RuntimeError: the snapshots before were expired: starting over would load all again.
    """
    snapshot = table.current_snapshot()
    while snapshot is not None:
        text = snapshot.summary.get(OFFSETS_KEY) if snapshot.summary is not None else None
        if text is not None:
            doc = json.loads(text)
            return {t: {p: int(o) for p, o in parts.items()} for t, parts in doc.items()}
        if snapshot.parent_snapshot_id is None:
            return {}
        parent = table.snapshot_by_id(snapshot.parent_snapshot_id)
        if parent is None:
            raise RuntimeError(f"no {OFFSETS_KEY} before snapshot {snapshot.snapshot_id}: expired")
        snapshot = parent
    return {}


class DeadLetters:
    """The dead-letter topic, each source message sent there once, across restarts too.

    A batch's letters are flushed before its append, so a crash or a failed append between the
    two would send them again: each plan reads the topic back first, and a letter whose source
    the table's position has not passed yet counts as sent.
    """

    def __init__(self, settings: Settings, position: dict[str, int]) -> None:
        self.topic, self.source = settings.dead_letter_topic, settings.topic
        # A letter carries the whole message, which may be over the table's limit.
        self.producer = Producer(
            {"bootstrap.servers": settings.bootstrap_servers, "message.max.bytes": 16 << 20}
        )
        self.failed: list[str] = []
        self.sent: set[tuple[int, int]] = set()
        reader = Consumer({"bootstrap.servers": settings.bootstrap_servers, "group.id": "unused"})
        try:
            self._read_back(reader, position)
        finally:
            reader.close()

    def _read_back(self, reader: Consumer, position: dict[str, int]) -> None:
        ends = {}
        for p in reader.list_topics(self.topic, timeout=10).topics[self.topic].partitions:
            low, high = reader.get_watermark_offsets(Partition(self.topic, p), timeout=10)
            if high > low:
                ends[p] = high
        reader.assign([Partition(self.topic, p, OFFSET_BEGINNING) for p in ends])
        deadline = time.monotonic() + 120
        while ends:
            if time.monotonic() > deadline:
                raise RuntimeError(f"could not read {self.topic} back in 120 s")
            if (msg := reader.poll(1.0)) is None:
                continue
            if msg.error():
                raise KafkaException(msg.error())
            headers: dict[str, Any] = dict(msg.headers() or [])
            if headers.get(SOURCE_TOPIC) == self.source.encode():
                p, o = int(headers[SOURCE_PARTITION]), int(headers[SOURCE_OFFSET])
                if o >= position.get(str(p), 0):
                    self.sent.add((p, o))
            if (msg.offset() or 0) + 1 >= ends.get(msg.partition() or 0, 0):
                ends.pop(msg.partition() or 0, None)

    def send(self, msg: Message, reason: str) -> None:
        source = (msg.partition() or 0, msg.offset() or 0)
        if source not in self.sent:
            headers: dict[str, str | bytes | None] = {SOURCE_TOPIC: msg.topic()}
            headers |= {SOURCE_PARTITION: str(source[0]), SOURCE_OFFSET: str(source[1])}
            headers[REASON] = reason
            self.producer.produce(
                self.topic, msg.value(), msg.key(), headers=headers, on_delivery=self._delivered
            )
            self.sent.add(source)

    def _delivered(self, error: Any, msg: Message) -> None:
        if error is not None:
            self.failed.append(str(error))

    def flush(self) -> None:
        """Wait for every letter; raise if one was not written (the batch must not commit)."""
        if self.producer.flush(30) or self.failed:
            raise RuntimeError(f"dead letters not written: {self.failed[:3] or 'timed out'}")


# -- the loader ----------------------------------------------------------------------------------


class Loader:
    """Batches from Kafka into the table, its position kept in the table."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.catalog = load_catalog(
            "example",
            type="rest",
            uri=settings.catalog_uri,
            warehouse=settings.warehouse,
            **{
                "s3.endpoint": settings.s3_endpoint,
                "s3.region": settings.s3_region,
                "s3.access-key-id": os.environ["AWS_ACCESS_KEY_ID"],
                "s3.secret-access-key": os.environ["AWS_SECRET_ACCESS_KEY"],
            },
        )
        self.stopping = False
        self.consumer: Consumer | None = None
        self.assigned: set[int] = set()
        self.position: Position = {}
        self.letters: DeadLetters | None = None

    def load_table(self) -> Table:
        table = self.catalog.load_table(self.settings.table)
        # A conflict must fail, not be rebuilt on the new head: the position this append carries
        # was planned from the old one. pyiceberg takes its commit retries from the table's
        # properties, so this process's copy says none; the table (and its other writers, such
        # as a compaction) keeps its own.
        properties = {**table.metadata.properties, "commit.retry.num-retries": "0"}
        table.metadata = table.metadata.model_copy(update={"properties": properties})
        return table

    def ours(self) -> dict[str, int]:
        return self.position.get(self.settings.topic, {})

    def plan(self) -> None:
        """Take the position from the table and read Kafka from there with a new consumer, so
        nothing fetched before reaches the next batch."""
        self.position = committed_position(self.load_table())
        if self.settings.dead_letter_topic:
            self.letters = DeadLetters(self.settings, self.ours())
        if self.consumer is not None:
            self.consumer.close()
        self.consumer = Consumer(
            {
                "bootstrap.servers": self.settings.bootstrap_servers,
                "group.id": f"example-loader-{self.settings.table}",  # required; never committed
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
            }
        )
        self.assigned = set()

    def discover(self, consumer: Consumer) -> None:
        """Read the topic's partitions not read yet (it may grow while loading)."""
        topic = self.settings.topic
        found = consumer.list_topics(topic, timeout=10).topics[topic]
        if found.error is not None:
            raise KafkaException(found.error)
        if new := sorted(set(found.partitions) - self.assigned):
            start = [Partition(topic, p, self.ours().get(str(p), OFFSET_BEGINNING)) for p in new]
            consumer.incremental_assign(start)
            self.assigned.update(new)
            at = {p.partition: "the start" if p.offset < 0 else p.offset for p in start}
            log.info("reading %s", ", ".join(f"{topic}/{p} from {o}" for p, o in at.items()))

    def poll(self, consumer: Consumer) -> list[Message]:
        batch: list[Message] = []
        deadline = time.monotonic() + self.settings.batch_seconds
        while not self.stopping and len(batch) < self.settings.batch_messages:
            if (left := deadline - time.monotonic()) <= 0:
                break
            for msg in consumer.consume(self.settings.batch_messages - len(batch), left):
                if (error := msg.error()) is None:
                    batch.append(msg)
                elif error.fatal():
                    raise KafkaException(error)
                else:
                    log.warning("kafka: %s", error)
        return batch

    def commit(self, batch: list[Message]) -> None:
        """Append ``batch`` with the position after it, or raise (the next plan sees whether
        the append landed)."""
        # Loaded after the poll: a column added before these messages were sent is in it.
        table = self.load_table()
        if committed_position(table) != self.position:
            raise RuntimeError("the table's position is not the one this batch was planned from")
        to_row, topic = row_converter(table.schema()), self.settings.topic
        rows, letters = [], 0
        position = {t: dict(parts) for t, parts in self.position.items()}
        for msg in batch:
            try:
                rows.append(to_row(decode(msg.value(), self.settings.max_message_bytes)))
            except Unfit as exc:
                where = f"topic {msg.topic()} partition {msg.partition()} offset {msg.offset()}"
                if self.letters is None:
                    raise Halt(f"stopped at {where}: {exc}") from None
                self.letters.send(msg, str(exc))
                letters += 1
            position.setdefault(topic, {})[str(msg.partition())] = (msg.offset() or 0) + 1
        if self.letters is not None:
            self.letters.flush()
        # Without rows the append still commits: it moves the position past dead letters.
        data = pa.Table.from_pylist(rows, schema=schema_to_pyarrow(table.schema()))
        table.append(data, snapshot_properties={OFFSETS_KEY: json.dumps(position, sort_keys=True)})
        self.position = position
        snapshot = table.current_snapshot()
        log.info(
            "committed %d rows, %d dead letters, snapshot %s, next offsets %s",
            len(rows), letters, snapshot.snapshot_id if snapshot else "?", position[topic],
        )  # fmt: skip

    def run(self) -> None:
        self.plan()
        log.info("loader started: %s into %s", self.settings.topic, self.settings.table)
        failures, planned = 0, True
        while not self.stopping:
            try:
                if not planned:
                    self.plan()
                    planned = True
                assert self.consumer is not None
                self.discover(self.consumer)
                if batch := self.poll(self.consumer):
                    self.commit(batch)
                failures = 0
            except (Halt, NotImplementedError):
                raise
            except Exception as exc:
                # Whether the append landed or not, the table knows: plan again from it before
                # the next batch (the consumer has read past this one).
                planned, failures = False, failures + 1
                if failures >= MAX_FAILURES:
                    raise
                log.warning("batch failed (%s: %s); planning again", type(exc).__name__, exc)
                time.sleep(min(failures, 10))
        if self.consumer is not None:
            self.consumer.close()
        log.info("stopped")


def main(argv: list[str] | None = None) -> int:
    """Load until SIGTERM or SIGINT (0), or stop at a message that does not fit (2)."""
    parser = argparse.ArgumentParser(description="Kafka JSON messages into an Iceberg table.")
    parser.add_argument("--config", required=True, help="the loader's TOML file")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, stream=sys.stdout, format="%(asctime)s %(levelname)s %(message)s"
    )
    with open(args.config, "rb") as f:
        loader = Loader(Settings(**tomllib.load(f)))

    def stop(signum: int, frame: Any) -> None:
        loader.stopping = True  # the batch under way is appended first

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        loader.run()
    except Halt as exc:
        log.error("%s", exc)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
