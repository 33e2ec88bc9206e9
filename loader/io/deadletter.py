"""Dead-letter topic: malformed records, produced and flushed before the Iceberg commit.

Each malformed record goes to the dead-letter topic with its original key,
value, headers and timestamp, plus ``icefloe.*`` headers naming the source
topic, partition and offset, the error kind, path, expected type and reason,
and the loader id (``loader.decode.record.route_malformed``).

Ordering is the guarantee: the batch's dead letters are acknowledged by Kafka
(``flush``) before the snapshot recording the batch's offsets is committed, so
a committed offset never covers a record that is neither in the table nor in
the dead-letter topic.

Each letter is also sent once. Within a process, the sink remembers the source
coordinates of the letters Kafka acknowledged until their batch commits, so a
batch planned again (main moved, a schema change, a lost commit answer) sends
only the letters not sent yet. Across processes (a kill after the flush and
before the commit), every publishing commit records how far this loader's
letters reach in each dead-letter partition (``keys.TABLE_DEAD_LETTER_OFFSETS``),
but never past a letter whose record that commit does not cover (a batch planned
smaller after a restart leaves letters of a bigger one behind it); a new process
reads the dead-letter topic from there to its end once at start
(``DeadLetterProducer.recover``), and the letters it finds from this loader for
records the table does not hold yet count as sent. What is left: a frozen
process of the same loader that sends letters after its successor's start
(it is fenced and commits nothing, but its letters are out); those carry the
same ``icefloe.source.*`` headers, so consumers can still deduplicate on
(topic, partition, offset).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterable, Mapping
from typing import Any

from icefloe.loader import keys
from icefloe.loader.config import KafkaConfig
from icefloe.loader.decode.batch import Reject
from icefloe.loader.decode.record import route_malformed
from icefloe.loader.errors import LoaderError

__all__ = [
    "DEAD_LETTER_MAX_BYTES",
    "Coordinate",
    "DeadLetterFailed",
    "DeadLetterProducer",
    "pending_letter",
    "pending_letters",
    "positions_from_json",
    "positions_to_json",
]

log = logging.getLogger("icefloe.loader")

Coordinate = tuple[str, int, int]
"""A source record's topic, partition and offset: what a dead letter stands for."""

RECOVER_TIMEOUT_S = 30.0
"""How long the read of the dead-letter topic's tail at start may take before it gives up."""

DEAD_LETTER_MAX_BYTES = 16 * 1024 * 1024
"""The largest dead letter the producer sends. A dead letter is the rejected record plus
headers, so it can exceed the source topic's limit (an ``oversized`` record): the dead-letter
topic must accept records this large (``max.message.bytes``)."""


class DeadLetterFailed(LoaderError):
    """Kafka did not acknowledge every dead letter; the batch must not commit.

    Attributes:
        transient: the network's fault (a timeout, a lost broker): sending again may succeed;
            ``False`` for a refusal (a letter too large for the topic, no such topic).
    """

    def __init__(self, message: str, *, transient: bool = False) -> None:
        super().__init__(message)
        self.transient = transient


class DeadLetterProducer:
    """Produces dead letters to one topic.

    Args:
        kafka: the Kafka settings (bootstrap, security).
        topic: the dead-letter topic.
        loader_id: stamped into every dead letter.
        table: the table being loaded, stamped into every dead letter.
        flush_timeout_s: how long ``send`` waits for acknowledgements.
    """

    def __init__(
        self,
        kafka: KafkaConfig,
        topic: str,
        loader_id: str,
        *,
        table: str = "",
        flush_timeout_s: float = 60.0,
    ) -> None:
        from confluent_kafka import Producer

        self.topic = topic
        self.loader_id = loader_id
        self.table = table
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
        self._kafka = kafka
        self.positions: dict[int, int] = {}
        """The next offset after this loader's newest acknowledged letter, per partition of
        the dead-letter topic (or the topic's end when this process started)."""
        self.placed: dict[Coordinate, tuple[int, int]] = {}
        """Where each letter of a record not committed yet sits in the dead-letter topic
        (partition, offset), by its source: sent by this process or found by ``recover``."""

    def send(self, rejects: Iterable[Reject], sent: set[Coordinate] | None = None) -> int:
        """Produce the dead letters and wait until Kafka has them all.

        Args:
            rejects: the batch's malformed records.
            sent: where the source coordinates of every letter Kafka acknowledged are added,
                also when others failed (so a second try sends only those).

        Returns:
            How many dead letters were produced.

        Raises:
            DeadLetterFailed: a delivery failed or timed out.
        """
        errors: list[str] = []
        refused: list[str] = []

        def delivered(err: Any, msg: Any, source: Coordinate) -> None:
            if err is not None:
                (errors if _transient(err) else refused).append(str(err))
                return
            if sent is not None:
                sent.add(source)
            partition, offset = msg.partition(), msg.offset()
            if offset is not None and offset >= 0:
                self.positions[partition] = max(self.positions.get(partition, 0), offset + 1)
                self.placed[source] = (partition, offset)

        count = 0
        for reject in rejects:
            letter = route_malformed(
                reject.value,
                reject.meta,
                reject.error,
                self.topic,
                loader_id=self.loader_id,
                table=self.table,
            )
            source = (reject.meta.topic, reject.meta.partition, reject.meta.offset)
            kwargs: dict[str, Any] = {
                "headers": list(letter.headers),
                "on_delivery": lambda err, msg, source=source: delivered(err, msg, source),
            }
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
        if refused:
            raise DeadLetterFailed(f"dead-letter delivery refused: {refused[0]}")
        if left:
            raise DeadLetterFailed(
                f"{left} dead letters unacknowledged after {self.flush_timeout_s:g} s "
                f"(Kafka at {self._kafka.bootstrap})",
                transient=True,
            )
        if errors:
            raise DeadLetterFailed(f"dead-letter delivery failed: {errors[0]}", transient=True)
        return count

    def recover(
        self, recorded: Mapping[int, int] | None, committed: Mapping[str, Mapping[int, int]]
    ) -> set[Coordinate]:
        """The letters an earlier process of this loader sent for records not committed yet.

        Reads each partition of the dead-letter topic from where the table's last commit says
        this loader's letters reached (``recorded``; from the oldest kept letter when the table
        records nothing) to the topic's end, and sets ``positions`` to that end.

        Args:
            recorded: the positions the table holds, or ``None``.
            committed: the next offset of every source partition the table holds.

        Returns:
            The source coordinates of those letters: they count as sent.

        Raises:
            DeadLetterFailed: the dead-letter topic could not be read.
        """
        from confluent_kafka import Consumer, KafkaError, TopicPartition

        consumer = Consumer(
            {
                **self._kafka.producer_config(),
                "group.id": f"icefloe-dlq-recover-{self.loader_id}",
                "enable.auto.commit": False,
                "enable.partition.eof": True,
            }
        )
        try:
            meta = consumer.list_topics(self.topic, timeout=RECOVER_TIMEOUT_S)
            topic = meta.topics.get(self.topic)
            if topic is None or topic.error is not None:
                raise DeadLetterFailed(
                    f"dead-letter topic {self.topic!r} cannot be read: "
                    f"{topic.error if topic is not None else 'not found'}"
                )
            ends: dict[int, int] = {}
            starts: list[Any] = []
            for partition in sorted(topic.partitions):
                low, high = consumer.get_watermark_offsets(
                    TopicPartition(self.topic, partition), timeout=RECOVER_TIMEOUT_S
                )
                ends[partition] = high
                begin = max(low, (recorded or {}).get(partition, low))
                if begin < high:
                    starts.append(TopicPartition(self.topic, partition, begin))
            found = self._read(consumer, starts, ends, committed, KafkaError._PARTITION_EOF)
        except DeadLetterFailed:
            raise
        except Exception as exc:
            raise DeadLetterFailed(
                f"dead-letter topic {self.topic!r} cannot be read: {exc}"
            ) from exc
        finally:
            consumer.close()
        self.positions = ends
        if found:
            log.info(
                "%s dead letters of records not committed yet were sent before this start; "
                "they are not sent again",
                len(found),
            )
        return found

    def _read(
        self,
        consumer: Any,
        starts: list[Any],
        ends: Mapping[int, int],
        committed: Mapping[str, Mapping[int, int]],
        eof: int,
    ) -> set[Coordinate]:
        if not starts:
            return set()
        consumer.assign(starts)
        left = {tp.partition for tp in starts}
        headers: list[list[tuple[str, bytes | None]]] = []
        places: list[tuple[int, int]] = []
        deadline = time.monotonic() + RECOVER_TIMEOUT_S
        while left:
            if time.monotonic() > deadline:
                raise DeadLetterFailed(
                    f"reading the tail of dead-letter topic {self.topic!r} took over "
                    f"{RECOVER_TIMEOUT_S:g} s"
                )
            msg = consumer.poll(1.0)
            if msg is None:
                continue
            if msg.error() is not None:
                if msg.error().code() == eof:
                    left.discard(msg.partition())
                    continue
                raise DeadLetterFailed(f"dead-letter topic {self.topic!r}: {msg.error()}")
            headers.append(list(msg.headers() or []))
            places.append((msg.partition(), msg.offset()))
            if msg.offset() + 1 >= ends.get(msg.partition(), 0):
                left.discard(msg.partition())
        found: set[Coordinate] = set()
        for letter, place in zip(headers, places, strict=True):
            source = pending_letter(letter, self.loader_id, committed, table=self.table)
            if source is not None:
                found.add(source)
                self.placed[source] = place
        return found

    def positions_for(self, committed: Mapping[str, Mapping[int, int]]) -> dict[int, int]:
        """The positions a commit up to ``committed`` records: ``positions``, held back in each
        partition to the first letter whose record that commit does not cover, so the next
        process's ``recover`` reads that letter again and does not send it twice.

        Args:
            committed: the next offset of every source partition once the commit lands.
        """
        out = dict(self.positions)
        for (topic, partition, offset), (at_partition, at) in self.placed.items():
            if offset >= committed.get(topic, {}).get(partition, 0):
                out[at_partition] = min(out.get(at_partition, at), at)
        return out

    def forget(self, committed: Mapping[str, Mapping[int, int]]) -> None:
        """Forget where the letters sit whose records ``committed`` covers."""
        self.placed = {
            (topic, partition, offset): at
            for (topic, partition, offset), at in self.placed.items()
            if offset >= committed.get(topic, {}).get(partition, 0)
        }

    def close(self) -> None:
        """Flush what is left."""
        self._producer.flush(self.flush_timeout_s)


def _transient(err: Any) -> bool:
    """Whether a delivery error is the network's (worth sending again), not a refusal."""
    from confluent_kafka import KafkaError

    network = {
        KafkaError._MSG_TIMED_OUT,
        KafkaError._TIMED_OUT,
        KafkaError._TRANSPORT,
        KafkaError._ALL_BROKERS_DOWN,
    }
    try:
        return bool(err.retriable()) or err.code() in network
    except AttributeError:
        return False


def pending_letters(
    letters: Iterable[Iterable[tuple[str, bytes | None]]],
    loader_id: str,
    committed: Mapping[str, Mapping[int, int]],
    *,
    table: str = "",
) -> set[Coordinate]:
    """The source coordinates of letters sent for records the table does not hold yet.

    A letter counts when it names ``table`` (any loader of the table sent it: a predecessor
    with another loader id too), or, for a letter without a table (an older loader's), when
    ``loader_id`` sent it.

    Args:
        letters: each letter's headers, as Kafka returns them.
        loader_id: this loader.
        committed: the next offset of every source partition the table holds.
        table: the table this loader loads.

    Returns:
        The coordinates at or above the committed offset of their partition.
    """
    found = (pending_letter(h, loader_id, committed, table=table) for h in letters)
    return {source for source in found if source is not None}


def pending_letter(
    headers: Iterable[tuple[str, bytes | None]],
    loader_id: str,
    committed: Mapping[str, Mapping[int, int]],
    *,
    table: str = "",
) -> Coordinate | None:
    """The source of one letter, if it is pending (:func:`pending_letters`); else None."""
    stamp: dict[str, str] = {}
    for key, value in headers:  # the loader's stamp comes last: it wins over a source's
        if value is not None:
            stamp[key] = value.decode("utf-8", "replace")
    sent_for = stamp.get(keys.DLQ_TABLE)
    ours = sent_for == table if sent_for and table else stamp.get(keys.DLQ_LOADER_ID) == loader_id
    if not ours:
        return None
    try:
        topic = stamp[keys.DLQ_SOURCE_TOPIC]
        partition = int(stamp[keys.DLQ_SOURCE_PARTITION])
        offset = int(stamp[keys.DLQ_SOURCE_OFFSET])
    except (KeyError, ValueError):
        return None
    if offset < committed.get(topic, {}).get(partition, 0):
        return None
    return (topic, partition, offset)


def positions_to_json(topic: str, positions: Mapping[int, int]) -> str:
    """``{"topic": {"0": 12}}``: how far a loader's letters reach, as a table property."""
    return json.dumps({topic: {str(p): n for p, n in sorted(positions.items())}}, sort_keys=True)


def positions_from_json(topic: str, text: str | None) -> dict[int, int] | None:
    """The positions a table property records for ``topic``; ``None`` when it records none."""
    if not text:
        return None
    try:
        doc = json.loads(text)
        entry = doc.get(topic) if isinstance(doc, dict) else None
        if not isinstance(entry, dict):
            return None
        return {int(p): int(n) for p, n in entry.items()}
    except (ValueError, TypeError, AttributeError):
        return None
