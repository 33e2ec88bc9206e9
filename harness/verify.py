"""A table and its dead-letter topic, checked against the publisher's ledgers.

What a user (or the demo, or a workshop check) asks after loading: is every valid message in
the table exactly once, and is every malformed message in the dead-letter topic once? The
comparisons are the scenario checks' own (``harness.scenarios.checks.compare``: one verdict per
property); the readers here fetch the event ids through Trino and the dead letters' headers
from Kafka.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from icefloe.harness.observer import ICEFLOE, Observer
from icefloe.harness.scenarios.checks import compare
from icefloe.harness.scenarios.checks.compare import DeadLetterVerdict, RowVerdict, compare_rows
from icefloe.publisher.ledger import Ledger
from icefloe.publisher.producer import DEFAULT_LEDGER_DIR

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


def compare_dead_letters(
    letters: Sequence[Mapping[str, str]], ledgers: Sequence[Ledger], observer: Observer = ICEFLOE
) -> DeadLetterVerdict:
    """Compare dead letters (their headers) with the messages of ``ledgers``, per source
    message (:func:`harness.scenarios.checks.compare.compare_dead_letters`: each source once).

    Args:
        letters: Each dead letter's headers.
        ledgers: What was published.
        observer: How the loader that sent them names their source and reason (icefloe's
            loader's headers by default; ``harness.observer``).

    Returns:
        The verdict.
    """
    entries = [e for ledger in ledgers for e in ledger.entries]
    return compare.compare_dead_letters(letters, entries, observer=observer)


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
