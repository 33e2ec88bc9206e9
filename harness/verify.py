"""A table and its dead-letter topic, checked against the publisher's ledgers.

What a user (or the demo, or a workshop check) asks after loading: is every valid message in
the table exactly once, and is every malformed message in the dead-letter topic? The
comparisons are pure functions (`compare_rows`, `compare_dead_letters`); the readers around
them fetch the event ids through Trino and the dead letters' headers from Kafka.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loader import keys
from publisher.ledger import Ledger
from publisher.producer import DEFAULT_LEDGER_DIR

__all__ = [
    "DeadLetterVerdict",
    "RowVerdict",
    "compare_dead_letters",
    "compare_rows",
    "ledger_files",
    "read_dead_letters",
    "read_ledgers",
    "table_event_ids",
]


@dataclass(frozen=True)
class RowVerdict:
    """The table's event ids against the ledger's valid messages.

    Attributes:
        rows: rows in the table.
        distinct: distinct event ids among them.
        expected: valid messages the ledgers say were delivered.
        lost: expected ids missing from the table.
        duplicated: ids present more than once.
        unexpected: ids no ledger sent.
    """

    rows: int
    distinct: int
    expected: int
    lost: tuple[str, ...]
    duplicated: tuple[str, ...]
    unexpected: tuple[str, ...]

    @property
    def exactly_once(self) -> bool:
        """Every expected id once, nothing else."""
        return not (self.lost or self.duplicated or self.unexpected)


@dataclass(frozen=True)
class DeadLetterVerdict:
    """The dead-letter topic against the ledger's malformed messages.

    Attributes:
        letters: records in the dead-letter topic (a retried batch may add duplicates).
        distinct: distinct source coordinates (topic, partition, offset) among them.
        expected: malformed messages the ledgers say were delivered.
        lost: expected coordinates missing from the topic.
        misrouted: coordinates of valid messages found in the topic.
        kinds: dead letters per error kind (the loader's ``icefloe.error.kind``).
        duplicated: (coordinates, letters) of each source dead-lettered more than once.
    """

    letters: int
    distinct: int
    expected: int
    lost: tuple[tuple[str, int, int], ...]
    misrouted: tuple[tuple[str, int, int], ...]
    kinds: Mapping[str, int]
    duplicated: tuple[tuple[tuple[str, int, int], int], ...] = ()

    @property
    def complete(self) -> bool:
        """Every malformed message dead-lettered, nothing valid among them."""
        return not (self.lost or self.misrouted)


def compare_rows(
    found: Iterable[str],
    expected: Iterable[str],
    *,
    may_be_absent: Iterable[str] = (),
    published: Iterable[str] | None = None,
) -> RowVerdict:
    """Compare the ids a table holds with the ids it should hold.

    Args:
        found: the table's event ids, one per row.
        expected: the valid ids that must be in the table.
        may_be_absent: expected ids that are allowed to be missing (e.g. deleted by retention).
        published: every valid id ever sent to the table's topics, when more than
            ``expected`` (a check of one ledger among several); an id outside it is unexpected.

    Returns:
        The verdict (ids sorted).
    """
    counts = Counter(found)
    wanted = set(expected)
    optional = set(may_be_absent)
    sent = wanted if published is None else wanted | set(published)
    return RowVerdict(
        rows=sum(counts.values()),
        distinct=len(counts),
        expected=len(wanted),
        lost=tuple(sorted(wanted - optional - counts.keys())),
        duplicated=tuple(sorted(i for i, n in counts.items() if n > 1)),
        unexpected=tuple(sorted(counts.keys() - sent)),
    )


def compare_dead_letters(
    letters: Sequence[Mapping[str, str]], ledgers: Sequence[Ledger]
) -> DeadLetterVerdict:
    """Compare dead letters (their headers) with the malformed messages of the ledgers.

    Args:
        letters: each dead letter's headers (``icefloe.source.*``, ``icefloe.error.*``).
        ledgers: what was published.

    Returns:
        The verdict (coordinates sorted).
    """

    def coordinates(headers: Mapping[str, str]) -> tuple[str, int, int]:
        return (
            headers.get(keys.DLQ_SOURCE_TOPIC, ""),
            int(headers.get(keys.DLQ_SOURCE_PARTITION, -1)),
            int(headers.get(keys.DLQ_SOURCE_OFFSET, -1)),
        )

    per_source = Counter(coordinates(h) for h in letters)
    found = set(per_source)
    malformed: set[tuple[str, int, int]] = set()
    valid: set[tuple[str, int, int]] = set()
    for ledger in ledgers:
        for entry in ledger.delivered():
            assert entry.offset is not None
            place = (entry.topic, entry.partition, entry.offset)
            (malformed if entry.status == "malformed" else valid).add(place)
    return DeadLetterVerdict(
        letters=len(letters),
        distinct=len(found),
        expected=len(malformed),
        lost=tuple(sorted(malformed - found)),
        misrouted=tuple(sorted(found & valid)),
        kinds=dict(Counter(h.get(keys.DLQ_ERROR_KIND, "?") for h in letters)),
        duplicated=tuple(sorted((c, n) for c, n in per_source.items() if n > 1)),
    )


def ledger_files(topic: str, ledger_dir: Path = DEFAULT_LEDGER_DIR) -> list[Path]:
    """The ledgers the publisher wrote for ``topic`` in ``ledger_dir`` (its default naming)."""
    return sorted(ledger_dir.glob(f"{topic}-*.jsonl"))


def read_ledgers(paths: Iterable[Path]) -> list[Ledger]:
    """Every ledger in ``paths``."""
    return [Ledger.read(p) for p in paths]


def table_event_ids(query: Any, table: str) -> list[str]:
    """Every row's ``event_id`` (``query`` runs one statement on Trino: ``Stack.query``)."""
    return [row[0] for row in query(f"SELECT event_id FROM {table}", None)]


def read_dead_letters(stack: Any, topic: str, timeout_s: float = 60.0) -> list[dict[str, str]]:
    """The headers of every record in ``topic``, read from the first offset to the end."""
    import time

    from confluent_kafka import TopicPartition

    consumer = stack.kafka_consumer("icefloe-verify")
    letters: list[dict[str, str]] = []
    try:
        metadata = consumer.list_topics(topic, timeout=30).topics.get(topic)
        if metadata is None or metadata.error is not None:
            raise LookupError(f"no topic {topic!r}")
        ends = {}
        for partition in metadata.partitions:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), 30)
            if high > low:
                ends[partition] = (low, high)
        consumer.assign([TopicPartition(topic, p, low) for p, (low, _) in ends.items()])
        done: set[int] = set()
        deadline = time.monotonic() + timeout_s
        while len(done) < len(ends) and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None or msg.error():
                continue
            letters.append({k: _text(v) for k, v in msg.headers() or []})
            if (msg.offset() or 0) + 1 >= ends[msg.partition()][1]:
                done.add(msg.partition())
    finally:
        consumer.close()
    return letters


def _text(value: str | bytes | None) -> str:
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    return value or ""
