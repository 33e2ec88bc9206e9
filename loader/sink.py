"""Sink: the ``foreachBatch`` commit, where exactly-once is decided.

For every micro-batch Spark hands over, the sink:

1. collects the batch's Kafka records to the driver as Arrow;
2. reads the table afresh (``TableView.state``): the current schema, the
   offsets committed by the newest loader snapshot of the lineage, the leases;
3. stops with ``ConcurrentLoader`` if another loader's lease is live;
4. drops records below the committed offsets (a replayed batch, a restart
   after a kill between the Iceberg commit and the checkpoint write) and
   decodes the rest against the current schema (``batch.decode_batch``);
5. sends malformed records to the dead-letter topic and waits for Kafka's
   acknowledgement, or, without a dead-letter topic, raises ``PoisonMessage``
   for the first one, so nothing of the batch is committed;
6. appends the rows as ONE Iceberg snapshot whose summary carries the next
   offsets of every partition, the loader id, the lease and the newest Kafka
   timestamp (``offsets.summary_properties``), even when no row is valid, so
   the offsets of dead-lettered records are committed too.

A failed append (a conflict with a concurrent compaction, a column dropped
between reading the schema and writing, an unknown commit state) is retried
from step 2: re-planning against the refreshed table is what makes the retry
safe whether or not the failed commit landed.

With ``exactly_once = false`` steps 2's offsets and 4's filter are skipped:
every record Spark replays is written again (used to prove the checks work).
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from loader import keys
from loader.batch import KAFKA_COLUMNS, DecodedBatch, decode_batch
from loader.config import LoaderConfig
from loader.deadletter import DeadLetterProducer
from loader.metrics import LoaderMetrics
from loader.offsets import Offsets, check_lease, plan_batch, summary_properties
from loader.record import route_malformed
from loader.table import TableState, TableView, now_ms

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["KILL_AFTER_COMMIT_ENV", "BatchSink"]

log = logging.getLogger("icefloe.loader")

MAX_ATTEMPTS = 4

KILL_AFTER_COMMIT_ENV = "ICEFLOE_TEST_KILL_AFTER_COMMIT"
"""Fault hook for tests: ``N`` makes the loader SIGKILL itself right after its
N-th Iceberg commit, before Spark writes the checkpoint's commit log: the
worst moment for exactly-once."""


class BatchSink:
    """The ``foreachBatch`` function of the loader's streaming query.

    Args:
        config: the loader configuration.
        spark: the session the query runs in.
        view: the table reader.
        metrics: where to count.
        dead_letters: the dead-letter producer, or ``None`` to halt on the
            first malformed record.

    Attributes:
        failure: the exception that ended the query, if the sink raised one.
        commits: snapshots committed by this sink.
        in_batch: a batch is being processed (for a graceful stop).
    """

    def __init__(
        self,
        config: LoaderConfig,
        spark: SparkSession,
        view: TableView,
        metrics: LoaderMetrics,
        dead_letters: DeadLetterProducer | None,
    ) -> None:
        self.config = config
        self.spark = spark
        self.view = view
        self.metrics = metrics
        self.dead_letters = dead_letters
        self.failure: BaseException | None = None
        self.commits = 0
        self.in_batch = False
        self.query_id: str | None = None
        self.last_state: TableState | None = None
        self._last_offsets: Offsets | None = None
        self._lock = threading.Lock()
        kill = os.environ.get(KILL_AFTER_COMMIT_ENV, "")
        self._kill_after = int(kill) if kill.isdigit() else None

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        """Process one micro-batch (Spark calls this on the driver)."""
        with self._lock:
            self.in_batch = True
            started = time.monotonic()
            try:
                self._process(df, batch_id)
            except BaseException as exc:
                self.failure = exc
                raise
            finally:
                self.in_batch = False
                self.metrics.batch_seconds.observe(time.monotonic() - started)

    def _process(self, df: DataFrame, batch_id: int) -> None:
        started = time.monotonic()
        records = df.select(*KAFKA_COLUMNS).toArrow()
        if records.num_rows == 0:
            return
        collected = time.monotonic()
        for attempt in range(1, MAX_ATTEMPTS + 1):
            state = self.view.state()
            self.last_state = state
            check_lease(
                str(self.config.table),
                self.config.loader_id,
                now_ms(),
                state.leases,
                skew_ms=1000,
            )
            committed = self._committed(state)
            keep = _keep_from(committed) if self.config.exactly_once else None
            decode_started = time.monotonic()
            decoded = decode_batch(records, state.schema, self.config.decode, keep)
            decode_s = time.monotonic() - decode_started
            plan = plan_batch(committed, decoded.ranges)
            for gap in plan.gaps:
                log.warning(
                    "offsets %s..%s of %s/%s were never loaded (Kafka retention or a "
                    "non-dense topic)",
                    gap.committed,
                    gap.start - 1,
                    gap.topic,
                    gap.partition,
                )
            if self.config.exactly_once and plan.skip:
                log.info("batch %s: all %s records already committed", batch_id, decoded.skipped)
                return
            self._dead_letter(decoded)
            props = summary_properties(
                self.config.loader_id,
                now_ms(),
                round(self.config.lease_ttl_s * 1000),
                plan.next_offsets,
                batch_id,
                records=decoded.rows.num_rows,
                dead_lettered=len(decoded.rejects),
                query_id=self.query_id,
                max_timestamp_ms=_newest(state.max_timestamp_ms, decoded.max_timestamp_ms),
            )
            try:
                self._append(decoded, props)
            except Exception as exc:  # any failed append: re-plan against the table
                if attempt == MAX_ATTEMPTS:
                    raise
                log.warning(
                    "batch %s: append failed (attempt %s), re-planning: %s",
                    batch_id,
                    attempt,
                    _first_line(exc),
                )
                time.sleep(0.2 * attempt)
                continue
            self._last_offsets = plan.next_offsets
            self.commits += 1
            self.metrics.rows_written.inc(decoded.rows.num_rows)
            log.info(
                "batch %s: committed %s rows, %s dead letters, %s replayed "
                "(collect %.2f s, decode %.2f s, total %.2f s)",
                batch_id,
                decoded.rows.num_rows,
                len(decoded.rejects),
                decoded.skipped,
                collected - started,
                decode_s,
                time.monotonic() - started,
            )
            if self._kill_after is not None and self.commits >= self._kill_after:
                os.kill(os.getpid(), signal.SIGKILL)
            return

    def _committed(self, state: TableState) -> Offsets:
        if not self.config.exactly_once:
            return state.committed.offsets
        if state.committed.history_truncated and self._last_offsets is not None:
            # Snapshot expiry removed our snapshots; while this process runs it
            # is the only writer (the lease), so its own memory is the truth.
            return self._last_offsets
        return state.committed.offsets

    def _dead_letter(self, decoded: DecodedBatch) -> None:
        if not decoded.rejects:
            return
        if self.dead_letters is None:
            first = decoded.rejects[0]
            # Raises PoisonMessage naming topic, partition, offset and reason.
            route_malformed(first.value, first.meta, first.error, None)
            raise AssertionError("route_malformed returned without a topic")  # pragma: no cover
        self.dead_letters.send(decoded.rejects)
        for reject in decoded.rejects:
            self.metrics.dead_lettered.labels(reason=reject.error.kind.value).inc()

    def _append(self, decoded: DecodedBatch, props: dict[str, str]) -> None:
        frame: Any = self.spark.createDataFrame(decoded.rows)
        # Rows arrive in Kafka order, not partition order: write with one open
        # file per table partition instead of shuffling and sorting them first.
        writer = (
            frame.writeTo(str(self.config.table))
            .option("distribution-mode", "none")
            .option("fanout-enabled", "true")
        )
        for key, value in props.items():
            writer = writer.option(keys.snapshot_property_option(key), value)
        started = time.monotonic()
        writer.append()
        self.metrics.commit_seconds.observe(time.monotonic() - started)


def _keep_from(committed: Offsets) -> Callable[[str, int, int], bool]:
    def keep(topic: str, partition: int, offset: int) -> bool:
        return offset >= committed.get(topic, {}).get(partition, -1)

    return keep


def _newest(a: int | None, b: int | None) -> int | None:
    return max((x for x in (a, b) if x is not None), default=None)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__
