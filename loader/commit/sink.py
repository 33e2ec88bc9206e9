"""Sink: the ``foreachBatch`` commit, where exactly-once is decided.

For every micro-batch Spark hands over, the sink:

1. reads the table afresh (``TableView.state``): the current schema, the
   offsets committed by the newest loader snapshot of the lineage, the lease,
   and the snapshot main points at (the batch is *planned from* it);
2. steps down with ``Fenced`` if the lease is no longer this process's;
3. filters out, with a Spark filter, the records below the committed offsets
   (a replayed batch, a restart after a kill between the Iceberg commit and the
   checkpoint write), and decodes the rest in the executors against the current
   schema (``loader.decode.frames.DecodedBatch``): with the fast path, plain
   records in the JVM, the others with the strict Python parser; the decoded
   batch is cached, as it is read twice;
4. in the same Spark job, aggregates per partition the offset range, the record
   count and the newest Kafka timestamp, and collects only that, plus the
   malformed records (a second, small job when any record needed Python), to
   the driver, which plans the commit (``plan_batch``);
5. sends the malformed records to the dead-letter topic, waiting for Kafka's
   acknowledgement, or, without a dead-letter topic, raises ``PoisonMessage``
   for the first one, so nothing of the batch is committed;
6. writes the valid rows from the cache as ONE *staged* Iceberg snapshot
   (write-audit-publish: main does not move) whose summary carries the next
   offsets of every partition, the loader id and process, and the newest
   Kafka timestamp (``offsets.summary_properties``), even when no row is
   valid, so the offsets of dead-lettered records are committed too;
7. publishes it (``TableView.publish``): one catalog commit points main at the
   staged snapshot and renews the lease, accepted only while main still points
   at the snapshot of step 1. This is the fence: a loader frozen anywhere in
   steps 1-7 while another took the table over cannot publish.

That is the two-job way: decode-and-summarize, then the write (three jobs when
some records needed the Python parser). With the fast path on (``jvm_decode``,
``loader/ext/fastpath/``, plugged in as ``fast``) a batch of plain records takes
one job instead: its offsets are known from the query's offset log before a
record is read, so it is filtered, decoded in the JVM and written as the staged
snapshot in one pass, and published (step 7) only when no record needed the
Python parser; otherwise this batch and the ones after it go the two-job way
until a batch is all plain again. The newest Kafka timestamp is set as a table
property by the publishing commit (``keys.TABLE_MAX_TIMESTAMP_MS``), on both ways.

If main moved since step 1 (``MainMoved``), the table is read again: a lease
that is someone else's means this process was fenced (``Fenced``); otherwise
maintenance moved main and the batch is planned again from step 1. A failed
write or publish (a column dropped between reading the schema and writing, a
busy or unreachable catalog) is retried from step 1 too: re-planning against
the refreshed table is what makes a retry safe whether or not the failed
commit landed. A write that failed while the table's schema changed counts as
the table moving on (up to ``MAX_REPLANS``), not as one of ``MAX_ATTEMPTS``:
under frequent schema changes every attempt can lose that race. Staged
snapshots that were never published are removed by ``expire_snapshots`` with
their files.

The sink calls its ``hooks`` (``loader.commit.hooks``) at each point of a batch;
a test's hooks may switch off step 3's filter (``exactly_once``: every record
Spark replays is written again) or turn steps 6-7 into one plain append to main
(``fencing``), to prove the checks catch what then goes wrong.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from pyspark.sql import functions as F

from icefloe.loader import keys
from icefloe.loader.commit.hooks import Hooks
from icefloe.loader.commit.lease import check_owner
from icefloe.loader.commit.offsets import BatchPlan, Offsets, plan_batch, summary_properties
from icefloe.loader.commit.table import MainMoved, TableState, TableView, now_ms
from icefloe.loader.config import LoaderConfig
from icefloe.loader.decode.batch import KAFKA_COLUMNS, Reject
from icefloe.loader.decode.frames import DecodedBatch
from icefloe.loader.decode.parse import spark_schema
from icefloe.loader.decode.record import RecordDecoder, route_malformed
from icefloe.loader.errors import LoaderError, first_line
from icefloe.loader.io.deadletter import (
    Coordinate,
    DeadLetterFailed,
    DeadLetterProducer,
    positions_from_json,
    positions_to_json,
)
from icefloe.loader.io.metrics import LoaderMetrics
from icefloe.loader.io.retry import KAFKA, Unanswered, unanswered

if TYPE_CHECKING:
    from pyiceberg.schema import Schema
    from pyspark.sql import Column, DataFrame

    from icefloe.loader.config import DecodeOptions

__all__ = ["BatchSink", "Declined", "FastPath", "Planned"]

log = logging.getLogger("icefloe.loader")

MAX_ATTEMPTS = 4
"""Attempts at writing and publishing a batch before the loader stops on the error."""

MAX_REPLANS = 20
"""Times a batch is planned again because main moved (maintenance) before giving up."""


@dataclass(frozen=True)
class Planned:
    """One attempt at a batch, as planned: what a way through it writes from.

    Attributes:
        batch_id: Spark's micro-batch id (-1: the first slice).
        attempt: this attempt's number (it names the staged snapshot).
        state: the table as the attempt read it.
        committed: the offsets the table holds (the plan's base).
        started: when the attempt began (``time.monotonic()``), for the log.
    """

    batch_id: int
    attempt: int
    state: TableState
    committed: Offsets
    started: float


class FastPath(Protocol):
    """A faster way through a batch of plain records (``loader/ext/fastpath/``), plugged in
    when ``jvm_decode`` is on; the sink works the same without it, every record decoded in
    Python."""

    def column(self, records: DataFrame, schema: Schema, options: DecodeOptions) -> Column | None:
        """The JVM's decoding of ``records.value`` (null when not plain), or None when this
        schema or these options take the Python path only."""
        ...

    def commit(self, sink: BatchSink, kept: DataFrame, planned: Planned) -> bool:
        """Write and publish the batch in one Spark job through ``sink.write``; False when it
        goes the two-job way instead."""
        ...

    def decoded(self, batch: DecodedBatch) -> None:
        """What the two-job way found of the batch (whether the next one may try one pass)."""
        ...


class BatchSink:
    """The ``foreachBatch`` function of the loader's streaming query.

    Args:
        config: the loader configuration.
        view: the table reader.
        metrics: where to count.
        dead_letters: the dead-letter producer, or ``None`` to halt on the
            first malformed record.
        instance: this process's token, which the lease names.
        hooks: the points a test reaches in at (``loader.commit.hooks``); none by default.
        fast: the fast path, or None (every record decoded in Python, two jobs a batch).

    Attributes:
        failure: the exception that ended the query, if the sink raised one.
        commits: snapshots committed by this sink.
        in_batch: a batch is being processed (for a graceful stop).
        renewed_ms: when the last commit renewed the lease (epoch ms), or 0.
    """

    def __init__(
        self,
        config: LoaderConfig,
        view: TableView,
        metrics: LoaderMetrics,
        dead_letters: DeadLetterProducer | None,
        instance: str,
        *,
        hooks: Hooks | None = None,
        fast: FastPath | None = None,
    ) -> None:
        self.config = config
        self.instance = instance
        self.renewed_ms = 0
        self.view = view
        self.metrics = metrics
        self.dead_letters = dead_letters
        self.failure: BaseException | None = None
        self.failed_at: float | None = None  # time.monotonic() of the failure
        self.commits = 0
        self.in_batch = False
        self.batch_started: float | None = None  # time.monotonic() of the batch in progress
        self.query_id: str | None = None
        self.last_state: TableState | None = None
        self._last_offsets: Offsets | None = None
        self._lock = threading.Lock()
        self.hooks = hooks if hooks is not None else Hooks()
        self.fast = fast
        self._sent: set[Coordinate] = set()
        """Dead letters Kafka acknowledged whose batch is not committed yet: a batch planned
        again does not send them again (``recover_dead_letters`` fills it at start)."""

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        """Process one micro-batch (Spark calls this on the driver)."""
        with self._lock:
            self.in_batch = True
            started = self.batch_started = time.monotonic()
            try:
                self._process(df, batch_id)
            except BaseException as exc:
                self.failure, self.failed_at = exc, time.monotonic()
                raise
            finally:
                self.in_batch = False
                self.batch_started = None
                self.metrics.batch_seconds.observe(time.monotonic() - started)

    def recover_dead_letters(self, state: TableState) -> None:
        """Learn which dead letters an earlier process sent for records not committed yet.

        Args:
            state: the table as the start-up read it.

        Raises:
            DeadLetterFailed: the dead-letter topic could not be read.
        """
        if self.dead_letters is None or not self.hooks.exactly_once:
            return
        recorded = positions_from_json(self.dead_letters.topic, state.dead_letter_positions)
        self._sent |= self.dead_letters.recover(recorded, state.committed.offsets)

    @property
    def last_offsets(self) -> Offsets | None:
        """The next offset of every partition after this sink's last commit, or None."""
        return self._last_offsets

    def _process(self, df: DataFrame, batch_id: int) -> None:
        records = df.select(*KAFKA_COLUMNS)
        failures = moved = tries = 0
        patience = self.view.patience
        while True:
            tries += 1
            try:
                self._attempt(records, batch_id, tries)
                patience.progressed()
                return
            except MainMoved as exc:
                # Fenced (the lease is someone else's) or maintenance moved main: plan again.
                self._check_owner(self._read_state(f"reading the table again for batch {batch_id}"))
                moved += 1
                if moved >= MAX_REPLANS:
                    raise LoaderError(
                        f"batch {batch_id}: the table moved on {moved} times in a row "
                        f"while the batch was written; last: {exc}"
                    ) from None
                log.info("batch %s: the table moved on (%s); planning again", batch_id, exc)
            except (_WriteFailed, DeadLetterFailed) as exc:
                cause = exc.__cause__ or exc
                fault = unanswered(cause)
                if isinstance(exc, DeadLetterFailed):
                    if not exc.transient:
                        raise
                    fault = Unanswered(KAFKA, first_line(exc))
                if fault is not None:
                    # The network's fault, not the batch's: tried again (planned afresh, which
                    # is safe whether or not a lost commit landed) until progress_timeout.
                    patience.failed(fault, f"writing batch {batch_id}")
                    continue
                changed = self._schema_changed()  # a schema change raced the write: not its fault
                if changed is not None:
                    moved += 1
                else:
                    failures += 1
                if failures >= MAX_ATTEMPTS or moved >= MAX_REPLANS:
                    raise cause from None
                if changed is not None:
                    log.info(
                        "batch %s: the table's schema changed (%s) while the batch was written; "
                        "planning again",
                        batch_id,
                        changed,
                    )
                    continue
                log.warning(
                    "batch %s: write failed (attempt %s), planning again: %s",
                    batch_id,
                    failures,
                    first_line(cause)[:300],
                )
                # Back off: the usual cause on a small stack is a busy catalog
                # store (SQLite lock), which clears within seconds.
                time.sleep(min(4.0, 0.5 * 2 ** (failures - 1)))

    def _read_state(self, doing: str) -> TableState:
        """The table's state, read again while the catalog or its storage does not answer."""
        return self.view.patience.call(self.view.state, doing)

    def _attempt(self, records: DataFrame, batch_id: int, attempt: int) -> None:
        """Plan, decode, dead-letter, write and publish the batch once.

        Raises:
            MainMoved: main moved after the plan was made.
            _WriteFailed: the write or the publishing commit failed.
            Fenced: the lease is someone else's.
        """
        started = time.monotonic()
        state = self._read_state(f"planning batch {batch_id}")
        self.last_state = state
        self._check_owner(state)
        committed = self._committed(state)
        # Built here, on the driver, so an unloadable schema fails as
        # SchemaMismatch before any executor work (spark_schema: a type this
        # Spark cannot hold, such as time before Spark 4.1).
        RecordDecoder(state.schema, self.config.decode)
        spark_schema(state.schema)
        self.hooks.reached("planned", self.commits)
        kept = records.where(_keep_condition(committed)) if self.hooks.exactly_once else records
        fast = self.fast
        planned = Planned(batch_id, attempt, state, committed, started)
        if fast is not None and fast.commit(self, kept, planned):  # one Spark job: plain records
            return
        jvm = fast.column if fast is not None else None
        batch = DecodedBatch(kept, state.schema, self.config.decode, jvm)
        try:
            decode_started = time.monotonic()
            side = batch.summary()
            decode_s = time.monotonic() - decode_started
            if fast is not None:
                fast.decoded(batch)
            if side.count == 0:
                log.info("batch %s: every record is already committed", batch_id)
                self.forget_committed(committed)
                return
            plan = plan_batch(committed, side.ranges)
            log_gaps(plan)
            self.hooks.reached("decoded", self.commits)
            self._dead_letter(side.rejects)
            self.hooks.reached("dead_lettered", self.commits)
            rows = side.count - len(side.rejects)
            latest = newest(state.max_timestamp_ms, side.max_timestamp_ms)
            props = summary_properties(
                self.config.loader_id,
                self.instance,
                plan.next_offsets,
                batch_id,
                records=rows,
                dead_lettered=len(side.rejects),
                query_id=self.query_id,
                max_timestamp_ms=latest,
            )
            write_started = time.monotonic()
            self.write(
                batch.rows(), props, state, batch_id, attempt, lambda: newest_prop(latest),
                plan.next_offsets,
            )  # fmt: skip
        finally:
            batch.release()
        self.committed_batch(plan.next_offsets, rows)
        log.info(
            "batch %s: committed %s rows, %s dead letters "
            "(table state %.2f s, decode %.2f s, write and publish %.2f s, total %.2f s)",
            batch_id,
            rows,
            len(side.rejects),
            decode_started - started,
            decode_s,
            time.monotonic() - write_started,
            time.monotonic() - started,
        )
        self.hooks.committed(self.commits)

    def write(
        self,
        rows: DataFrame,
        props: dict[str, str],
        state: TableState,
        batch_id: int,
        attempt: int,
        audit: Callable[[], dict[str, str] | None],
        offsets: Offsets,
    ) -> None:
        """Write the batch's rows as one snapshot and make it the table's current one.

        Spark stages the snapshot (write-audit-publish), ``audit`` looks at what was written,
        and ``TableView.publish`` moves main onto it only if main has not moved since
        ``state`` was read. (With ``fencing`` switched off by a test's hooks the rows are
        appended straight to main.)

        Args:
            rows: the batch's valid rows, the table's columns.
            props: the snapshot's summary properties (``summary_properties``).
            state: the table as the batch was planned from it.
            batch_id, attempt: name the staged snapshot (its ``wap.id``).
            audit: called once the snapshot is staged; gives the table properties to set with
                the publish, or None to leave the staged snapshot unpublished (``Declined``).
            offsets: the next offset of every partition once the batch is committed.

        Raises:
            MainMoved: the publish was refused because main moved.
            Declined: ``audit`` refused the staged snapshot.
            _WriteFailed: Spark's write or the publishing commit failed otherwise.
        """
        wap_id = f"{self.instance}-{batch_id}-{attempt}" if self.hooks.fencing else None
        self.hooks.reached("write", self.commits)
        started = time.monotonic()
        try:
            self._append(rows, props, wap_id)
        except Exception as exc:
            raise _WriteFailed from exc
        if wap_id is None:
            self.metrics.commit_seconds.observe(time.monotonic() - started)
            return
        audited = audit()
        if audited is None:
            raise Declined
        self.hooks.reached("publish", self.commits)
        ttl_ms = round(self.config.lease_ttl_s * 1000)
        properties = dict(audited)
        if self.dead_letters is not None:
            properties[keys.TABLE_DEAD_LETTER_OFFSETS] = positions_to_json(
                self.dead_letters.topic, self.dead_letters.positions_for(offsets)
            )
        self.hooks.reached("commit_sent", self.commits)
        try:
            self.view.publish(wap_id, state.snapshot_id, self.instance, ttl_ms, properties)
        except (MainMoved, LoaderError):
            raise
        except Exception as exc:
            raise _WriteFailed from exc
        self.metrics.commit_seconds.observe(time.monotonic() - started)

    def committed_batch(self, next_offsets: Offsets, rows: int) -> None:
        """What a committed batch leaves behind, whichever way it was written."""
        self._last_offsets = next_offsets
        self.forget_committed(next_offsets)
        self.commits += 1
        self.renewed_ms = now_ms()
        self.metrics.rows_written.inc(rows)

    def _schema_changed(self) -> str | None:
        """``"id A -> B"`` when the table's schema is no longer the one the last attempt was
        planned with (a column added, dropped or renamed meanwhile); None when it is the same
        or the table cannot be read now.

        Raises:
            Fenced: the table's lease is someone else's.
        """
        planned = self.last_state
        if planned is None:
            return None
        try:
            now = self.view.state()
        except Exception:
            return None  # the catalog is down: the retry's back-off is what helps then
        self._check_owner(now)
        if now.schema.schema_id == planned.schema.schema_id:
            return None
        return f"id {planned.schema.schema_id} -> {now.schema.schema_id}"

    def forget_committed(self, committed: Offsets) -> None:
        """Forget the sent dead letters a commit covers: the filter keeps their records out."""
        self._sent = {
            (topic, partition, offset)
            for topic, partition, offset in self._sent
            if offset >= committed.get(topic, {}).get(partition, 0)
        }
        if self.dead_letters is not None:
            self.dead_letters.forget(committed)

    def _check_owner(self, state: TableState) -> None:
        check_owner(str(self.config.table), self.config.loader_id, self.instance, state.lease)

    def _committed(self, state: TableState) -> Offsets:
        if not self.hooks.exactly_once:
            return state.committed.offsets
        if state.committed.history_truncated and self._last_offsets is not None:
            # Snapshot expiry removed our snapshots; while this process runs it
            # is the only writer (the lease), so its own memory is the truth.
            return self._last_offsets
        return state.committed.offsets

    def _dead_letter(self, rejects: tuple[Reject, ...]) -> None:
        if not rejects:
            return
        if self.dead_letters is None:
            first = rejects[0]
            # Raises PoisonMessage naming topic, partition, offset and reason.
            route_malformed(first.value, first.meta, first.error, None)
            raise AssertionError("route_malformed returned without a topic")  # pragma: no cover
        todo = [
            r for r in rejects if (r.meta.topic, r.meta.partition, r.meta.offset) not in self._sent
        ]
        if len(todo) < len(rejects):
            log.info(
                "%s dead letters of this batch were sent before (a batch planned again, or a "
                "process before this one): not sent again",
                len(rejects) - len(todo),
            )
        if not todo:
            return
        # A loader frozen since its plan and thawed after another took the table must not
        # send letters its successor sends: the lease is read again first (one catalog read,
        # only for batches with letters). Without fencing (a test's hooks) the loader writes
        # whoever owns the table, as a loader without a lease would.
        if self.hooks.fencing:
            self._check_owner(self._read_state("checking the lease before sending dead letters"))
        try:
            self.dead_letters.send(todo, self._sent)
        finally:
            for reject in todo:
                if (reject.meta.topic, reject.meta.partition, reject.meta.offset) in self._sent:
                    self.metrics.dead_lettered.labels(reason=reject.error.kind.value).inc()

    def _append(self, rows: DataFrame, props: dict[str, str], wap_id: str | None) -> None:
        """Append ``rows`` as one snapshot carrying ``props``; staged under ``wap_id`` if given."""
        frame: Any = rows
        writer = frame.writeTo(str(self.config.table))
        for key, value in keys.APPEND_OPTIONS.items():
            writer = writer.option(key, value)
        for key, value in props.items():
            writer = writer.option(keys.snapshot_property_option(key), value)
        if wap_id is None:
            writer.append()
            return
        conf = frame.sparkSession.conf
        conf.set(keys.SPARK_WAP_ID, wap_id)
        try:
            writer.append()
        finally:
            conf.unset(keys.SPARK_WAP_ID)


class _WriteFailed(Exception):
    """The batch's write or publishing commit failed; its ``__cause__`` says why."""


class Declined(Exception):
    """A write's ``audit`` left its staged snapshot unpublished (a single pass that found
    records the JVM path declined)."""


def newest_prop(newest: int | None) -> dict[str, str]:
    """The publishing commit's table property for the newest committed Kafka timestamp."""
    return {} if newest is None else {keys.TABLE_MAX_TIMESTAMP_MS: str(newest)}


def log_gaps(plan: BatchPlan) -> None:
    """Warn of the offsets a batch's plan skips (never loaded)."""
    for gap in plan.gaps:
        log.warning(
            "offsets %s..%s of %s/%s were never loaded (Kafka retention or a non-dense topic)",
            gap.committed,
            gap.start - 1,
            gap.topic,
            gap.partition,
        )


def _keep_condition(committed: Offsets) -> Column:
    """A filter keeping the records the table does not hold yet.

    A record is kept when its partition has no committed offset or its offset is
    at or above it; everything below was committed by an earlier snapshot (a
    replayed batch, a restart after a kill between the commit and the checkpoint).

    The offsets are one map literal (topic -> partition -> offset), looked up per record.
    Spark inlines a number literal into the code it generates for a query but passes a map
    literal as a reference, so the code is the same for every batch and compiled once;
    with a literal per partition (``offset >= 1234``) every batch, whose offsets differ,
    compiled its stages anew. The condition is handed to Spark as one SQL expression: built
    from Column objects it took a round trip to the JVM per literal and per operator, about a
    twentieth of a small batch's time.
    """
    topics = [(topic, partitions) for topic, partitions in sorted(committed.items()) if partitions]
    if not topics:
        return F.lit(True)
    by_topic = ", ".join(
        f"{_sql_string(topic)}, {_int_map(partitions)}" for topic, partitions in topics
    )
    done = f"map({by_topic})[`topic`][`partition`]"
    return F.expr(f"{done} IS NULL OR `offset` >= {done}")


def _int_map(offsets: dict[int, int]) -> str:
    """A ``map<int, bigint>`` of partition -> offset, in Spark SQL."""
    pairs = ", ".join(f"{int(p)}, {int(o)}L" for p, o in sorted(offsets.items()))
    return f"map({pairs})"


def _sql_string(text: str) -> str:
    """``text`` as a Spark SQL string literal (Kafka's topic names need no escape; any would)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def newest(a: int | None, b: int | None) -> int | None:
    """The newer of two Kafka timestamps, either of which may be unknown."""
    return max((x for x in (a, b) if x is not None), default=None)
