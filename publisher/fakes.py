"""A stand-in for ``confluent_kafka.Producer`` that reports deliveries like a broker.

Unit tests of the publisher pass it in through ``Publisher(..., producer_factory=...)`` to run
in milliseconds; failures, a full queue and rejected values are injected, not patched.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import Any

from confluent_kafka import KafkaError, KafkaException

Failure = Callable[[int, int], KafkaError | None]


class FakeMessage:
    """What a delivery report hands to the callback."""

    def __init__(self, topic: str, partition: int, offset: int, value: Any, key: Any) -> None:
        self._topic, self._partition, self._offset = topic, partition, offset
        self._value, self._key = value, key

    def topic(self) -> str:
        return self._topic

    def partition(self) -> int:
        return self._partition

    def offset(self) -> int:
        return self._offset

    def timestamp(self) -> tuple[int, int]:
        return (1, 1_700_000_000_000 + self._offset)

    def value(self) -> Any:
        return self._value

    def key(self) -> Any:
        return self._key


class FakeProducer:
    """Queues produced records and reports them on ``poll``/``flush``.

    Args:
        conf: The librdkafka config (kept for assertions).
        partitions: Partition count of every topic.
        failure: ``failure(index_of_first_produce, attempt)`` returns an error to
            report instead of a delivery, or ``None``.
        queue_limit: Raise ``BufferError`` when this many reports are queued.
        reject: Values whose ``produce`` raises ``KafkaException`` at once.
    """

    def __init__(
        self,
        conf: dict[str, Any],
        partitions: int = 3,
        failure: Failure | None = None,
        queue_limit: int | None = None,
        reject: Callable[[Any], bool] | None = None,
    ) -> None:
        self.conf = conf
        self.partitions = partitions
        self.failure = failure
        self.queue_limit = queue_limit
        self.reject = reject
        self.queue: list[tuple[Callable[..., None], FakeMessage, KafkaError | None]] = []
        self.log: dict[tuple[str, int], list[tuple[Any, Any]]] = {}
        self.attempts: dict[Any, int] = {}
        self.first_seen: dict[Any, int] = {}
        self.buffer_errors = 0

    def produce(self, topic: str, value: Any = None, key: Any = None, **kw: Any) -> None:
        if self.queue_limit is not None and len(self.queue) >= self.queue_limit:
            self.buffer_errors += 1
            raise BufferError("queue full")
        if self.reject is not None and self.reject(value):
            raise KafkaException(KafkaError(KafkaError.MSG_SIZE_TOO_LARGE))
        partition = kw.get("partition", -1)
        if partition < 0:
            partition = zlib.crc32(key or value or b"") % self.partitions
        # Values identify messages here; tests that inject failures use unique values.
        index = self.first_seen.setdefault(value, len(self.first_seen))
        attempt = self.attempts[value] = self.attempts.get(value, 0) + 1
        err = self.failure(index, attempt) if self.failure else None
        log = self.log.setdefault((topic, partition), [])
        msg = FakeMessage(topic, partition, len(log), value, key)
        if err is None:
            log.append((key, value))
        self.queue.append((kw["on_delivery"], msg, err))

    def poll(self, timeout: float = 0) -> int:
        served, self.queue = self.queue, []
        for callback, msg, err in served:
            callback(err, msg)
        return len(served)

    def flush(self, timeout: float = 0) -> int:
        self.poll()
        return len(self.queue)
