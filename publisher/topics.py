"""Kafka topics: create, list, describe and delete them, and check one exists before publishing.

The local broker does not create topics on first use (auto-creation is off, as on most managed
clusters), so a publish to a topic nobody created fails every message with "Unknown topic or
partition". These functions are what `icefloe topic ...` and `icefloe publish --create-topic`
run; they talk to the broker through confluent-kafka's AdminClient.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "MAX_MESSAGE_BYTES",
    "RETENTION_MS",
    "Record",
    "TopicInfo",
    "TopicMissing",
    "add_partitions",
    "create_topic",
    "delete_topic",
    "describe_topic",
    "list_topics",
    "parse_duration_ms",
    "parse_size",
    "partition_count",
    "read_records",
    "require_topic",
]

RETENTION_MS = "retention.ms"
MAX_MESSAGE_BYTES = "max.message.bytes"
"""Topic configuration keys (Kafka's names)."""

_TIMEOUT_S = 30.0


class TopicMissing(LookupError):
    """The topic does not exist; the message says how to create it."""


@dataclass(frozen=True)
class TopicInfo:
    """What the broker says about one topic.

    Attributes:
        name: The topic.
        partitions: Number of partitions.
        messages: Per partition, high watermark minus low watermark (messages kept).
        retention_ms: ``retention.ms`` (-1: kept forever).
        max_message_bytes: ``max.message.bytes``: the largest record batch the topic takes.
    """

    name: str
    partitions: int
    messages: tuple[int, ...]
    retention_ms: int
    max_message_bytes: int


_SIZE = re.compile(r"\s*([0-9]+)\s*(b|kib|mib|gib|kb|mb|gb)?\s*", re.IGNORECASE)
_SIZE_UNITS = {
    None: 1,
    "b": 1,
    "kb": 1000,
    "mb": 1000**2,
    "gb": 1000**3,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
}
_DURATION = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*(ms|s|m|h|d)?\s*", re.IGNORECASE)
_DURATION_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, None: 1000}


def parse_size(text: str) -> int:
    """Bytes from ``16MiB``, ``1MB``, ``1048576``.

    Raises:
        ValueError: not a size.
    """
    match = _SIZE.fullmatch(text)
    if not match:
        raise ValueError(f"not a size like 16MiB or 1048576: {text!r}")
    return int(match[1]) * _SIZE_UNITS[match[2].lower() if match[2] else None]


def parse_duration_ms(text: str) -> int:
    """Milliseconds from ``7d``, ``12h``, ``30m``, ``90s``, ``500ms`` (a bare number: seconds);
    ``forever`` or ``-1`` is -1 (Kafka's "keep forever").

    Raises:
        ValueError: not a duration.
    """
    if text.strip().lower() in ("forever", "-1"):
        return -1
    match = _DURATION.fullmatch(text)
    if not match:
        raise ValueError(f"not a duration like 7d, 12h, 30m or 90s: {text!r}")
    return round(float(match[1]) * _DURATION_MS[match[2].lower() if match[2] else None])


def _admin(bootstrap: str) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": bootstrap})


def list_topics(bootstrap: str, *, internal: bool = False) -> list[str]:
    """The broker's topics, sorted; Kafka's own (``__consumer_offsets``...) only if asked."""
    names = _admin(bootstrap).list_topics(timeout=_TIMEOUT_S).topics
    return sorted(n for n in names if internal or not n.startswith("__"))


def partition_count(bootstrap: str, topic: str) -> int | None:
    """How many partitions ``topic`` has, or None if it does not exist."""
    metadata = _admin(bootstrap).list_topics(timeout=_TIMEOUT_S).topics.get(topic)
    if metadata is None or metadata.error is not None:
        return None
    return len(metadata.partitions)


def require_topic(bootstrap: str, topic: str) -> int:
    """The partition count of ``topic``.

    Raises:
        TopicMissing: it does not exist (the message gives the command that creates it).
    """
    count = partition_count(bootstrap, topic)
    if count is None:
        raise TopicMissing(
            f"topic {topic!r} does not exist on {bootstrap} (the broker does not create topics "
            f"on first use): create it with `icefloe topic create {topic} --partitions 3`, or "
            "publish with `--create-topic 3`"
        )
    return count


def create_topic(
    bootstrap: str,
    topic: str,
    partitions: int = 1,
    *,
    retention_ms: int | None = None,
    max_message_bytes: int | None = None,
    extra: Mapping[str, str] | None = None,
) -> None:
    """Create ``topic`` (replication factor 1: the local broker is one node).

    Args:
        bootstrap: Kafka bootstrap servers.
        topic: The name.
        partitions: How many partitions.
        retention_ms: How long records are kept (-1: forever); None keeps the broker's default.
        max_message_bytes: The largest record batch the topic takes; None keeps the default.
        extra: Further topic settings (Kafka's names).

    Raises:
        ValueError: a non-positive partition count.
        confluent_kafka.KafkaException: the broker refused (e.g. the topic exists).
    """
    from confluent_kafka.admin import NewTopic

    if partitions < 1:
        raise ValueError(f"a topic needs at least one partition, not {partitions}")
    config = dict(extra or {})
    if retention_ms is not None:
        config[RETENTION_MS] = str(retention_ms)
    if max_message_bytes is not None:
        config[MAX_MESSAGE_BYTES] = str(max_message_bytes)
    admin = _admin(bootstrap)
    futures = admin.create_topics(
        [NewTopic(topic, partitions, 1, config=config)], operation_timeout=_TIMEOUT_S
    )
    futures[topic].result(timeout=_TIMEOUT_S)
    _await(lambda: partition_count(bootstrap, topic) == partitions, f"topic {topic} to appear")


def delete_topic(bootstrap: str, topic: str) -> bool:
    """Delete ``topic`` and wait until the broker no longer lists it.

    Returns:
        False if there was no such topic.
    """
    if partition_count(bootstrap, topic) is None:
        return False
    admin = _admin(bootstrap)
    futures = admin.delete_topics([topic], operation_timeout=_TIMEOUT_S)
    futures[topic].result(timeout=_TIMEOUT_S)
    _await(lambda: partition_count(bootstrap, topic) is None, f"topic {topic} to go")
    return True


def describe_topic(bootstrap: str, topic: str) -> TopicInfo:
    """Partitions, messages kept per partition, retention and size limit of ``topic``.

    Raises:
        TopicMissing: no such topic.
    """
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.admin import ConfigResource

    partitions = require_topic(bootstrap, topic)
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    admin = _admin(bootstrap)  # kept referenced until the future resolves
    configs = admin.describe_configs([resource])[resource].result(timeout=_TIMEOUT_S)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "icefloe-describe"})
    try:
        messages = []
        for partition in range(partitions):
            low, high = consumer.get_watermark_offsets(
                TopicPartition(topic, partition), timeout=_TIMEOUT_S
            )
            messages.append(high - low)
    finally:
        consumer.close()
    return TopicInfo(
        name=topic,
        partitions=partitions,
        messages=tuple(messages),
        retention_ms=int(configs[RETENTION_MS].value),
        max_message_bytes=int(configs[MAX_MESSAGE_BYTES].value),
    )


def add_partitions(bootstrap: str, topic: str, total: int) -> None:
    """Grow ``topic`` to ``total`` partitions (Kafka never removes partitions).

    Raises:
        TopicMissing: no such topic.
        ValueError: ``total`` is not more than it has.
    """
    from confluent_kafka.admin import NewPartitions

    current = require_topic(bootstrap, topic)
    if total <= current:
        raise ValueError(f"topic {topic!r} has {current} partitions; give more than that")
    admin = _admin(bootstrap)
    futures = admin.create_partitions([NewPartitions(topic, total)], operation_timeout=_TIMEOUT_S)
    futures[topic].result(timeout=_TIMEOUT_S)
    _await(lambda: partition_count(bootstrap, topic) == total, f"{topic} to have {total}")


@dataclass(frozen=True)
class Record:
    """One record as read back: where it is, its headers and (the start of) its value."""

    partition: int
    offset: int
    key: bytes | None
    headers: tuple[tuple[str, str], ...]
    value: bytes | None


def read_records(
    bootstrap: str, topic: str, limit: int = 10, partition: int | None = None
) -> list[Record]:
    """The first ``limit`` records of ``topic`` (of one partition, if given), oldest first.

    Raises:
        TopicMissing: no such topic.
    """
    from confluent_kafka import Consumer, TopicPartition

    partitions = require_topic(bootstrap, topic)
    wanted = [partition] if partition is not None else list(range(partitions))
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "icefloe-read"})
    records: list[Record] = []
    try:
        ends = {}
        for p in wanted:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), _TIMEOUT_S)
            if high > low:
                ends[p] = (low, min(high, low + limit))
        consumer.assign([TopicPartition(topic, p, low) for p, (low, _) in ends.items()])
        done: set[int] = set()
        deadline = time.monotonic() + _TIMEOUT_S
        while len(done) < len(ends) and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None or msg.error():
                continue
            p, offset = int(msg.partition() or 0), int(msg.offset() or 0)
            if p in done:
                continue
            headers = tuple(
                (str(k), v.decode(errors="replace") if isinstance(v, bytes) else str(v))
                for k, v in list(msg.headers() or [])
            )
            key, value = msg.key(), msg.value()
            records.append(
                Record(
                    p,
                    offset,
                    key.encode() if isinstance(key, str) else key,
                    headers,
                    value.encode() if isinstance(value, str) else value,
                )
            )
            if offset + 1 >= ends[p][1]:
                done.add(p)
    finally:
        consumer.close()
    records.sort(key=lambda r: (r.offset, r.partition))
    return records[:limit]


def _await(condition: Any, what: str, timeout_s: float = _TIMEOUT_S) -> None:
    # Topic creation and deletion complete asynchronously in the broker.
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {timeout_s:.0f} s for {what}")
        time.sleep(0.2)
