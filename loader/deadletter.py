"""Dead-letter topic: malformed records, produced and flushed before the Iceberg commit.

Each malformed record goes to the dead-letter topic with its original key,
value, headers and timestamp, plus ``icefloe.*`` headers naming the source
topic, partition and offset, the error kind, path, expected type and reason,
and the loader id (``loader.record.route_malformed``).

Ordering is the guarantee: the batch's dead letters are acknowledged by Kafka
(``flush``) before the snapshot recording the batch's offsets is committed, so
a committed offset never covers a record that is neither in the table nor in
the dead-letter topic.  The price: a crash after the flush and before the
commit replays the batch, and its dead letters are produced again.  Such
duplicates carry the same ``icefloe.source.*`` headers, so consumers of the
dead-letter topic deduplicate on (topic, partition, offset).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from loader.batch import Reject
from loader.config import KafkaConfig
from loader.errors import LoaderError
from loader.record import route_malformed

__all__ = ["DEAD_LETTER_MAX_BYTES", "DeadLetterFailed", "DeadLetterProducer"]

DEAD_LETTER_MAX_BYTES = 16 * 1024 * 1024
"""The largest dead letter the producer sends. A dead letter is the rejected record plus
headers, so it can exceed the source topic's limit (an ``oversized`` record): the dead-letter
topic must accept records this large (``max.message.bytes``)."""


class DeadLetterFailed(LoaderError):
    """Kafka did not acknowledge every dead letter; the batch must not commit."""


class DeadLetterProducer:
    """Produces dead letters to one topic.

    Args:
        kafka: the Kafka settings (bootstrap, security).
        topic: the dead-letter topic.
        loader_id: stamped into every dead letter.
        flush_timeout_s: how long ``send`` waits for acknowledgements.
    """

    def __init__(
        self, kafka: KafkaConfig, topic: str, loader_id: str, *, flush_timeout_s: float = 60.0
    ) -> None:
        from confluent_kafka import Producer

        self.topic = topic
        self.loader_id = loader_id
        self.flush_timeout_s = flush_timeout_s
        conf: dict[str, Any] = {
            **kafka.producer_config(),
            "client.id": f"icefloe-dlq-{loader_id}",
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 5,
            # An oversized record (over max_record_bytes) must still fit the dead-letter topic's
            # limit (broker default 1 MiB): compression brings repetitive payloads under it.
            "compression.type": "lz4",
            "message.max.bytes": DEAD_LETTER_MAX_BYTES,
        }
        self._producer = Producer(conf)

    def send(self, rejects: Iterable[Reject]) -> int:
        """Produce the dead letters and wait until Kafka has them all.

        Args:
            rejects: the batch's malformed records.

        Returns:
            How many dead letters were produced.

        Raises:
            DeadLetterFailed: a delivery failed or timed out.
        """
        errors: list[str] = []

        def delivered(err: Any, _msg: Any) -> None:
            if err is not None:
                errors.append(str(err))

        count = 0
        for reject in rejects:
            letter = route_malformed(
                reject.value, reject.meta, reject.error, self.topic, loader_id=self.loader_id
            )
            kwargs: dict[str, Any] = {"headers": list(letter.headers), "on_delivery": delivered}
            if reject.meta.timestamp_ms is not None and reject.meta.timestamp_ms >= 0:
                kwargs["timestamp"] = reject.meta.timestamp_ms
            while True:
                try:
                    self._producer.produce(letter.topic, letter.value, letter.key, **kwargs)
                    break
                except BufferError:
                    self._producer.poll(0.1)
            count += 1
        left = self._producer.flush(self.flush_timeout_s)
        if left:
            raise DeadLetterFailed(f"{left} dead letters unacknowledged after flush")
        if errors:
            raise DeadLetterFailed(f"dead-letter delivery failed: {errors[0]}")
        return count

    def close(self) -> None:
        """Flush what is left."""
        self._producer.flush(self.flush_timeout_s)
