"""Publisher: sends a run's messages to Kafka and keeps the ledger honest.

:class:`Publisher` drives a confluent-kafka producer (idempotent, ``acks=all``,
lz4 batches) over the messages of :func:`publisher.messages.generate`, pacing
them by count, rate and/or duration. Every delivery report lands in the run's
ledger. Failed deliveries are produced again up to ``max_resends`` times; a
message that still fails is written to the ledger with its error and the run
raises :class:`PublishFailed` - nothing is dropped silently.
"""

from __future__ import annotations

import collections
import datetime as dt
import functools
import itertools
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, cast

from confluent_kafka import KafkaError, KafkaException, Producer

from icefloe.publisher.ledger import LedgerWriter
from icefloe.publisher.messages import GenerationConfig, Message, generate

#: Where ledgers go unless told otherwise (ignored by git).
DEFAULT_LEDGER_DIR = Path(".run/ledgers")


class ProducerLike(Protocol):
    """The slice of ``confluent_kafka.Producer`` the publisher uses (fakes in tests)."""

    def produce(self, topic: str, value: Any = ..., key: Any = ..., **kwargs: Any) -> None: ...

    def poll(self, timeout: float = ...) -> int: ...

    def flush(self, timeout: float = ...) -> int: ...


ProducerFactory = Callable[[dict[str, Any]], ProducerLike]


@dataclass(frozen=True)
class PublisherConfig:
    """How a run is produced (what is produced lives in ``generation``).

    Attributes:
        generation: Content of the messages (seed, schema, malformations, drift...).
        ledger_dir: Directory for ledgers when no explicit path is given.
        linger_ms: Producer batching delay.
        batch_size: Producer batch size in bytes.
        batch_num_messages: Producer batch size in messages.
        compression: Producer compression codec.
        delivery_timeout_ms: How long librdkafka retries one message internally
            (``message.timeout.ms``) before reporting it failed.
        max_resends: How many times a failed message is produced again.
        flush_timeout_s: How long to wait for outstanding deliveries at the end.
        producer_overrides: Extra librdkafka settings; win over the defaults.
            Never logged or written to the ledger (they may hold secrets).
        progress: Show a progress bar; ``None`` shows it when stderr is a TTY.
    """

    generation: GenerationConfig = field(default_factory=GenerationConfig)
    ledger_dir: Path = DEFAULT_LEDGER_DIR
    linger_ms: int = 20
    batch_size: int = 1_000_000
    batch_num_messages: int = 100_000
    compression: str = "lz4"
    delivery_timeout_ms: int = 120_000
    max_resends: int = 2
    flush_timeout_s: float = 300.0
    producer_overrides: Mapping[str, Any] = field(default_factory=dict)
    progress: bool | None = None

    def __post_init__(self) -> None:
        if self.max_resends < 0:
            raise ValueError("max_resends must be >= 0")
        if self.flush_timeout_s <= 0:
            raise ValueError("flush_timeout_s must be > 0")


@dataclass(frozen=True)
class PublishResult:
    """Outcome of a run; ``valid + malformed + failed == sent``.

    Attributes:
        ledger_path: The run's ledger.
        sent: Messages handed to the producer.
        valid: Valid rows acknowledged by Kafka.
        malformed: Malformed messages acknowledged by Kafka.
        failed: Messages that finally failed to deliver.
        elapsed: Wall-clock seconds from first produce to last delivery report.
        seed: The seed used (replay with it and the same anchor).
        resends: Produce attempts beyond the first, over all messages.
        interrupted: Whether the run was stopped early (Ctrl-C).
    """

    ledger_path: Path
    sent: int
    valid: int
    malformed: int
    failed: int
    elapsed: float
    seed: int
    resends: int = 0
    interrupted: bool = False

    @property
    def rate(self) -> float:
        """Messages per second over the run."""
        return self.sent / self.elapsed if self.elapsed > 0 else 0.0


class PublishFailed(RuntimeError):
    """Some messages finally failed to deliver; the ledger names them.

    Attributes:
        result: The run's result (``failed > 0``).
    """

    def __init__(self, result: PublishResult) -> None:
        self.result = result
        super().__init__(
            f"{result.failed} of {result.sent} messages failed to deliver; see {result.ledger_path}"
        )


def _is_resendable(err: KafkaError) -> bool:
    # Permanent causes (too large, unauthorized, unknown partition) fail again
    # immediately; time-outs and transport errors may pass on another try.
    if err.fatal():
        return False
    return bool(err.retriable()) or err.code() in (
        KafkaError._MSG_TIMED_OUT,
        KafkaError._TRANSPORT,
        KafkaError.REQUEST_TIMED_OUT,
        KafkaError.NOT_ENOUGH_REPLICAS,
        KafkaError.NOT_LEADER_FOR_PARTITION,
    )


def _utc_stamp() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%fZ")


class _Progress:
    """A rich progress bar, or nothing when not wanted."""

    def __init__(self, enabled: bool, total: int | None, label: str) -> None:
        self._bar: Any = None
        if not enabled:
            return
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        self._bar = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rate]} msg/s"),
            TimeElapsedColumn(),
            transient=True,
        )
        self._task = self._bar.add_task(label, total=total, rate="-")
        self._bar.start()

    def update(self, done: int, rate: float) -> None:
        if self._bar is not None:
            self._bar.update(self._task, completed=done, rate=f"{rate:,.0f}")

    def stop(self) -> None:
        if self._bar is not None:
            self._bar.stop()


class Publisher:
    """Publishes generated messages to one topic and writes the ledger.

    Args:
        bootstrap_servers: Kafka bootstrap servers, e.g. ``127.0.0.1:9092``.
        topic: Target topic (must exist unless the broker auto-creates topics).
        config: Production and generation settings.
        producer_factory: Builds the producer from its librdkafka config; tests
            pass fakes. Defaults to ``confluent_kafka.Producer``.
    """

    def __init__(
        self,
        bootstrap_servers: str,
        topic: str,
        config: PublisherConfig | None = None,
        *,
        producer_factory: ProducerFactory | None = None,
    ) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.topic = topic
        self.config = config or PublisherConfig()
        self._factory: ProducerFactory = producer_factory or cast(ProducerFactory, Producer)

    def producer_config(self) -> dict[str, Any]:
        """The librdkafka settings used (overrides included).

        Returns:
            A fresh dict; do not log it when overrides may hold secrets.
        """
        cfg = self.config
        # Room for the oversized malformation: one byte over the loader's limit.
        max_bytes = max(1_000_000, cfg.generation.max_message_bytes + 65_536)
        conf: dict[str, Any] = {
            "bootstrap.servers": self.bootstrap_servers,
            "client.id": "icefloe-publisher",
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": cfg.linger_ms,
            "batch.size": cfg.batch_size,
            "batch.num.messages": cfg.batch_num_messages,
            "compression.type": cfg.compression,
            "message.max.bytes": max_bytes,
            "message.timeout.ms": cfg.delivery_timeout_ms,
            "queue.buffering.max.messages": 500_000,
            "queue.buffering.max.kbytes": 512 * 1024,
            # Java clients' default, so keyed messages land where Java would put them.
            "partitioner": "murmur2_random",
        }
        conf.update(cfg.producer_overrides)
        return conf

    def publish(
        self,
        count: int | None = None,
        *,
        rate: float | None = None,
        duration: float | None = None,
        ledger_path: str | Path | None = None,
        stop: threading.Event | None = None,
    ) -> PublishResult:
        """Generate and publish a run.

        Args:
            count: Number of messages; ``None`` for no count limit.
            rate: Messages per second; ``None`` for as fast as possible.
            duration: Stop after this many seconds (with ``count`` as a cap).
            ledger_path: Ledger file; defaults to a fresh file in ``ledger_dir``.
            stop: Once set, no further message is sent (with ``count`` as a cap); what was
                sent is flushed and in the ledger.

        Returns:
            The run's result.

        Raises:
            ValueError: If no bound is given (``count``, ``duration`` or ``rate``),
                or a bound is not positive.
            PublishFailed: If any message finally failed (the ledger is complete).
        """
        if count is None and duration is None and rate is None:
            raise ValueError("give count, duration or rate")
        if count is not None and count < 0:
            raise ValueError(f"count must be >= 0, got {count}")
        generation = self.config.generation.resolved()
        messages: Iterable[Message] = generate(generation, count)
        if stop is not None:
            messages = itertools.takewhile(lambda _: not stop.is_set(), messages)
        return self.publish_messages(
            messages,
            rate=rate,
            duration=duration,
            total=count,
            ledger_path=ledger_path,
            generation=generation,
        )

    def publish_one(self, ledger_path: str | Path | None = None) -> PublishResult:
        """Publish exactly one row, like the reference kit's sample publisher.

        Args:
            ledger_path: Ledger file; defaults to a fresh file in ``ledger_dir``.

        Returns:
            The run's result.

        Raises:
            PublishFailed: If the message failed to deliver.
        """
        return self.publish(1, ledger_path=ledger_path)

    def publish_messages(
        self,
        messages: Iterable[Message],
        *,
        rate: float | None = None,
        duration: float | None = None,
        total: int | None = None,
        ledger_path: str | Path | None = None,
        generation: GenerationConfig | None = None,
    ) -> PublishResult:
        """Publish given messages (e.g. a scenario's hand-built list).

        Args:
            messages: What to send, in order; ``seq`` values must be unique.
            rate: Messages per second; ``None`` for as fast as possible.
            duration: Stop after this many seconds.
            total: Expected number of messages, for the progress bar.
            ledger_path: Ledger file; defaults to a fresh file in ``ledger_dir``.
            generation: The config that produced ``messages``, for the ledger header.

        Returns:
            The run's result.

        Raises:
            ValueError: For a non-positive rate or duration.
            PublishFailed: If any message finally failed (the ledger is complete).
        """
        if rate is not None and rate <= 0:
            raise ValueError(f"rate must be > 0, got {rate}")
        if duration is not None and duration <= 0:
            raise ValueError(f"duration must be > 0, got {duration}")
        cfg = self.config
        generation = generation or cfg.generation
        seed = generation.seed if generation.seed is not None else -1
        topic = self.topic
        path = (
            Path(ledger_path) if ledger_path else cfg.ledger_dir / f"{topic}-{_utc_stamp()}.jsonl"
        )
        writer = LedgerWriter(
            path,
            {
                "topic": topic,
                "bootstrap_servers": self.bootstrap_servers,
                "started": dt.datetime.now(dt.UTC).isoformat(),
                "rate": rate,
                "duration": duration,
                "count": total,
                "generation": generation.describe(),
            },
        )
        producer = self._factory(self.producer_config())
        pending: dict[int, tuple[Message, int]] = {}
        resend: collections.deque[tuple[Message, int]] = collections.deque()
        counts = {"valid": 0, "malformed": 0, "failed": 0, "resends": 0}
        max_resends = cfg.max_resends
        no_ts = 0  # confluent_kafka.TIMESTAMP_NOT_AVAILABLE

        def fail(message: Message, attempts: int, partition: int, error: str) -> None:
            counts["failed"] += 1
            writer.message(
                message.seq, topic, partition, None, None, message.key, message.event_id,
                message.kind, message.target, message.drift, attempts, error,
            )  # fmt: skip

        def on_delivery(seq: int, err: KafkaError | None, msg: Any) -> None:
            message, attempts = pending.pop(seq)
            if err is None:
                ts_type, ts = msg.timestamp()
                counts["valid" if message.kind is None else "malformed"] += 1
                writer.message(
                    seq, topic, msg.partition(), msg.offset(), None if ts_type == no_ts else ts,
                    message.key, message.event_id, message.kind, message.target,
                    message.drift, attempts, None,
                )  # fmt: skip
            elif attempts <= max_resends and _is_resendable(err):
                resend.append((message, attempts + 1))
            else:
                fail(message, attempts, msg.partition(), err.str())

        def send(message: Message, attempts: int) -> None:
            seq = message.seq
            pending[seq] = (message, attempts)
            callback = functools.partial(on_delivery, seq)
            # confluent-kafka takes a list or dict of headers, not a tuple.
            headers = list(message.headers) if message.headers else None
            while True:
                try:
                    producer.produce(
                        topic,
                        message.value,
                        message.key,
                        partition=message.partition,
                        on_delivery=callback,
                        headers=headers,
                    )
                    return
                except BufferError:
                    # Local queue full: serve delivery reports until room frees up.
                    producer.poll(0.05)
                except KafkaException as exc:
                    # Refused before leaving the client (e.g. too large): final.
                    pending.pop(seq, None)
                    fail(message, attempts, message.partition, exc.args[0].str())
                    return

        show = cfg.progress if cfg.progress is not None else sys.stderr.isatty()
        progress = _Progress(show, total, f"publish {topic}")
        sent = 0
        interrupted = False
        start = time.perf_counter()
        deadline = start + duration if duration is not None else None
        try:
            for message in messages:
                if resend:
                    while resend:
                        counts["resends"] += 1
                        send(*resend.popleft())
                send(message, 1)
                sent += 1
                if rate is not None:
                    # Pace by schedule, not by sleeping a fixed gap, so poll and
                    # produce costs do not accumulate as drift.
                    due = start + sent / rate
                    now = time.perf_counter()
                    while now < due:
                        producer.poll(min(due - now, 0.05))
                        now = time.perf_counter()
                    if deadline is not None and now >= deadline:
                        break
                elif not sent & 1023:
                    producer.poll(0)
                    if deadline is not None and time.perf_counter() >= deadline:
                        break
                if not sent & 16383:
                    progress.update(sent, sent / max(time.perf_counter() - start, 1e-9))
        except KeyboardInterrupt:
            interrupted = True
        finally:
            flush_deadline = time.perf_counter() + cfg.flush_timeout_s
            while pending or resend:
                while resend:
                    counts["resends"] += 1
                    send(*resend.popleft())
                left = flush_deadline - time.perf_counter()
                if left <= 0:
                    break
                producer.flush(min(left, 1.0))
            for message, attempts in list(pending.values()):
                fail(
                    message, attempts, message.partition, "no delivery report before flush timeout"
                )
            pending.clear()
            elapsed = time.perf_counter() - start
            progress.stop()
            result = PublishResult(
                ledger_path=path,
                sent=sent,
                valid=counts["valid"],
                malformed=counts["malformed"],
                failed=counts["failed"],
                elapsed=elapsed,
                seed=seed,
                resends=counts["resends"],
                interrupted=interrupted,
            )
            writer.close(
                {
                    "sent": sent,
                    "valid": result.valid,
                    "malformed": result.malformed,
                    "failed": result.failed,
                    "resends": result.resends,
                    "elapsed": round(elapsed, 6),
                    "interrupted": interrupted,
                    "finished": dt.datetime.now(dt.UTC).isoformat(),
                }
            )
        if result.failed:
            raise PublishFailed(result)
        return result
