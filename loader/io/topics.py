"""Kafka metadata the loader needs on the driver: partitions and high watermarks.

Used to build the Kafka source's ``startingOffsets`` from the table's committed
offsets (Spark requires every partition of the subscription to be named), and
to compute consumer lag for metrics and ``icefloe load status``.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Mapping
from typing import Any

from icefloe.loader.config import KafkaConfig
from icefloe.loader.errors import KafkaUnavailable

__all__ = [
    "EARLIEST",
    "KAFKA_START_WAIT_S",
    "KafkaMetadata",
    "numbered_offsets",
    "starting_offsets_json",
]

log = logging.getLogger("icefloe.loader")

EARLIEST = -2
"""Spark's code for "earliest" in a ``startingOffsets`` JSON."""

KAFKA_START_WAIT_S = 60.0
"""How long a starting loader waits for Kafka to answer (a broker restarting) before it stops."""


class KafkaMetadata:
    """Partition listing and watermarks through a short-lived librdkafka consumer.

    Args:
        kafka: the loader's Kafka settings.
    """

    def __init__(self, kafka: KafkaConfig, timeout_s: float = 10.0) -> None:
        from confluent_kafka import Consumer

        self.kafka = kafka
        self.timeout_s = timeout_s
        conf: dict[str, Any] = {
            **kafka.producer_config(),
            "group.id": "icefloe-loader-metadata",
            "enable.auto.commit": False,
        }
        self._consumer = Consumer(conf)

    def partitions(self, wait_s: float = 0.0) -> dict[str, list[int]]:
        """Topic -> partitions, for the configured topics or pattern.

        Args:
            wait_s: keep asking for this long while no broker answers (a loader starting
                while Kafka restarts); 0 asks once.

        Returns:
            Only topics that exist; partitions sorted.

        Raises:
            KafkaUnavailable: no broker answered within ``timeout_s`` (or ``wait_s``).
        """
        meta = self._list_topics(wait_s)
        if self.kafka.topics:
            names = [t for t in self.kafka.topics if t in meta.topics]
        else:
            assert self.kafka.pattern is not None
            pattern = re.compile(self.kafka.pattern)
            names = sorted(t for t in meta.topics if pattern.fullmatch(t))
        return {t: sorted(meta.topics[t].partitions) for t in names}

    def _list_topics(self, wait_s: float) -> Any:
        from confluent_kafka import KafkaException

        deadline = time.monotonic() + wait_s
        while True:
            try:
                return self._consumer.list_topics(timeout=self.timeout_s)
            except KafkaException as exc:
                if time.monotonic() >= deadline:
                    raise KafkaUnavailable(
                        f"cannot read the topics of Kafka at {self.kafka.bootstrap} "
                        f"(waited {max(wait_s, self.timeout_s):.0f} s): {exc.args[0]}"
                    ) from exc
                log.warning("Kafka at %s does not answer yet: %s", self.kafka.bootstrap, exc)

    def high_watermarks(self) -> dict[tuple[str, int], int]:
        """(topic, partition) -> high watermark (the next offset to be written)."""
        return {tp: high for tp, (_low, high) in self.watermarks().items()}

    def watermarks(
        self, partitions: Mapping[str, list[int]] | None = None
    ) -> dict[tuple[str, int], tuple[int, int]]:
        """(topic, partition) -> (low, high): the oldest offset kept and the next to be written.

        Args:
            partitions: topic -> partitions to ask about; every partition of the configured
                topics when ``None``.
        """
        from confluent_kafka import TopicPartition

        out = {}
        for topic, numbers in (self.partitions() if partitions is None else partitions).items():
            for p in numbers:
                low, high = self._consumer.get_watermark_offsets(
                    TopicPartition(topic, p), timeout=self.timeout_s
                )
                out[(topic, p)] = (low, high)
        return out

    def close(self) -> None:
        """Release the consumer."""
        self._consumer.close()


def starting_offsets_json(
    partitions: Mapping[str, list[int]], committed: Mapping[str, Mapping[int, int]]
) -> dict[str, dict[str, int]]:
    """Spark ``startingOffsets`` from the table's committed offsets.

    Args:
        partitions: topic -> partitions that exist now.
        committed: topic -> partition -> next offset, from the table.

    Returns:
        ``{"topic": {"0": offset}}`` naming every partition; ``EARLIEST`` for
        partitions the table has never seen (new topics, new partitions).
    """
    return {
        topic: {str(p): committed.get(topic, {}).get(p, EARLIEST) for p in parts}
        for topic, parts in partitions.items()
    }


def numbered_offsets(starting: str) -> dict[str, dict[int, int]]:
    """The partitions of a Spark ``startingOffsets`` value that start at a number.

    Args:
        starting: ``earliest``, ``latest`` or ``{"topic": {"0": offset}}``, where an offset
            of ``EARLIEST`` (-2) or ``LATEST`` (-1) names no number.

    Returns:
        topic -> partition -> offset, for those partitions only.
    """
    try:
        doc = json.loads(starting)
    except ValueError:
        return {}
    if not isinstance(doc, dict):
        return {}
    return {
        str(topic): {int(p): int(o) for p, o in parts.items() if int(o) >= 0}
        for topic, parts in doc.items()
        if isinstance(parts, dict)
    }
