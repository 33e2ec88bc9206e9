"""One pass: a batch of plain records filtered, decoded in the JVM, written and published in
one Spark job, with no cache.

The two-job way (``loader.commit.sink``) must decode a batch before it knows the batch's
offsets. A batch of plain records need not: its offsets are where it starts and ends in Kafka,
read from the query's offset log (``<checkpoint>/offsets/<batch id>``, which Spark writes
before it runs the batch: ``batch_end_offsets``) or, for the first slice, from the slice's
bounds, before a record is read. So the plan comes first (``kafka_ranges``), and one Spark job
reads, decodes in the JVM and writes the staged snapshot, counting on the way the records,
those the JVM path declined and the newest timestamp (a Spark ``Observation``). When none was
declined the snapshot is published through the sink's own ``write``, with its fence. When some
were, their rejects must be known and the batch's valid rows written before anything is
published: the staged snapshot is left unpublished (snapshot expiry removes it with its files),
and this batch and the ones after it take the two-job way until a batch is all plain again.

The plan from the offsets is the plan from the records (``tests/loader/ext/test_onepass.py``,
with Hypothesis), but for a partition whose batch ends in transaction markers (committed past
them, not read again) and a new partition read from its earliest with nothing in it (its end is
recorded). ``FastPath`` is what the job plugs into the sink (``loader.commit.sink.FastPath``)
when ``jvm_decode`` is on: this way, and the JVM decoding of the two-job way's plain records.
"""

from __future__ import annotations

import itertools
import json
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pyspark.sql import functions as F

from icefloe.loader.commit.offsets import Offsets, kafka_ranges, plan_batch, summary_properties
from icefloe.loader.commit.sink import Declined, log_gaps, newest, newest_prop
from icefloe.loader.decode.frames import PLAIN_COLUMN
from icefloe.loader.ext.fastpath.plain import (
    Ineligible,
    check_available,
    plain_call,
    plain_column,
    spec,
)
from icefloe.loader.run.jvmbridge import hadoop_configuration, jvm

if TYPE_CHECKING:
    from pyiceberg.schema import Schema
    from pyspark.sql import Column, DataFrame, SparkSession

    from icefloe.loader.commit.sink import BatchSink, Planned
    from icefloe.loader.config import DecodeOptions
    from icefloe.loader.decode.frames import DecodedBatch

__all__ = ["Counted", "FastPath", "SinglePass", "batch_end_offsets", "parse_offset_log"]

log = logging.getLogger("icefloe.loader")


class FastPath:
    """The fast path of one loader process (``loader.commit.sink.FastPath``).

    Attributes:
        spark: the loader's session, which reads the offset log (set by the job).
        checkpoint: the streaming query's checkpoint, whose offset log says where each batch
            ends (set by the job).
        starting: where the query's first batch starts, of the partitions where that is a
            number (set by the job).
        slice_bounds: where the first slice (a bounded read, not a micro-batch) starts and
            ends, while it is committed (``loader.ext.firstslice``).
        clean: the last batch's records were all plain: try the next one in a single pass.
    """

    def __init__(self) -> None:
        self.spark: SparkSession | None = None
        self.checkpoint: str | None = None
        self.starting: Offsets = {}
        self.slice_bounds: tuple[Offsets, Offsets] | None = None
        self.clean = True

    @staticmethod
    def check_available(spark: SparkSession) -> None:
        """Fail at once when the loader's jar is not on Spark's class path (``ConfigError``)."""
        check_available(spark)

    @staticmethod
    def decodes(schema: Schema, options: DecodeOptions) -> bool:
        """Whether the JVM path decodes this schema with these options (no transforms, a JVM
        reader for every type)."""
        try:
            spec(schema, options)
        except Ineligible:
            return False
        return True

    def column(self, records: DataFrame, schema: Schema, options: DecodeOptions) -> Column | None:
        """The JVM's decoding of ``records.value`` for the two-job way; None: Python only."""
        try:
            return plain_column(records, schema, options)
        except Ineligible:
            return None

    def decoded(self, batch: DecodedBatch) -> None:
        """After the two-job way decoded a batch: were all its records plain?"""
        # A batch the JVM path could not decode at all (its schema) tries again: the check is
        # cheap, and the schema may have changed.
        self.clean = not batch.jvm or batch.declined == 0

    def commit(self, sink: BatchSink, kept: DataFrame, planned: Planned) -> bool:
        """Decode, write and publish a batch of plain records in one Spark job, through
        ``sink.write``.

        The snapshot's offsets are where the batch ends in Kafka (the query's offset log, or
        the first slice's bounds), known before a record is read; records, declined records
        and the newest timestamp are counted while the rows are written. A batch in which the
        JVM path declined a record is not published: its staged snapshot is left for expiry,
        and the batch, with the ones after it until a batch is all plain again, goes the
        two-job way (``DecodedBatch``), where its rejects are known before anything is
        published.

        Returns:
            True when the batch was committed (or held nothing new); False when it goes the
            two-job way.

        Raises:
            MainMoved, Fenced: as ``BatchSink.write``, and its failed write.
        """
        cfg, batch_id, state, committed = (
            sink.config,
            planned.batch_id,
            planned.state,
            planned.committed,
        )
        if not (self.clean and sink.hooks.exactly_once and sink.hooks.fencing):
            return False
        known = self.slice_bounds if batch_id < 0 else self._batch_bounds(batch_id)
        if known is None:
            return False
        plan = plan_batch(committed, kafka_ranges(*known, committed))
        if plan.next_offsets == {t: dict(p) for t, p in committed.items()}:
            log.info("batch %s: every record is already committed", batch_id)
            sink.forget_committed(committed)
            return True
        log_gaps(plan)
        try:
            single = SinglePass(kept, state.schema, cfg.decode)
        except Ineligible:
            return False
        props = summary_properties(
            cfg.loader_id, sink.instance, plan.next_offsets, batch_id, query_id=sink.query_id
        )
        counted: list[Counted] = []

        def audit() -> dict[str, str] | None:
            got = single.counted()
            if got.declined:
                return None
            counted.append(got)
            sink.hooks.reached("decoded", sink.commits)
            sink.hooks.reached("dead_lettered", sink.commits)
            return newest_prop(newest(state.max_timestamp_ms, got.max_timestamp_ms))

        write_started = time.monotonic()
        try:
            sink.write(
                single.rows, props, state, batch_id, planned.attempt, audit, plan.next_offsets
            )
        except Declined:
            self.clean = False
            log.info(
                "batch %s: some records are not plain JSON of the table's types; "
                "writing the batch again with its rejects sorted out",
                batch_id,
            )
            return False
        rows = counted[0].records
        sink.committed_batch(plan.next_offsets, rows)
        log.info(
            "batch %s: committed %s rows, 0 dead letters in one pass "
            "(table state %.2f s, decode, write and publish %.2f s, total %.2f s)",
            batch_id,
            rows,
            write_started - planned.started,
            time.monotonic() - write_started,
            time.monotonic() - planned.started,
        )
        sink.hooks.committed(sink.commits)
        return True

    def _batch_bounds(self, batch_id: int) -> tuple[Offsets, Offsets] | None:
        """Where micro-batch ``batch_id`` starts and ends (None: unknown), from the query's
        offset log: each batch starts where the one before it ended."""
        spark = self.spark
        if spark is None or self.checkpoint is None:
            return None
        ends = batch_end_offsets(spark, self.checkpoint, batch_id)
        if ends is None:
            return None
        if batch_id == 0:
            return self.starting, ends
        starts = batch_end_offsets(spark, self.checkpoint, batch_id - 1)
        return None if starts is None else (starts, ends)


_SINGLE_PASS_NAMES = itertools.count()


@dataclass(frozen=True)
class Counted:
    """What a single pass counted while it wrote.

    Attributes:
        records: records read (after the exactly-once filter).
        declined: records the JVM path could not prove plain (their batch is written again).
        max_timestamp_ms: the newest Kafka timestamp, or None when no record was read.
    """

    records: int
    declined: int
    max_timestamp_ms: int | None


class SinglePass:
    """A batch of plain records decoded and written in one Spark job (see the module docstring):
    its rows, and what their write counted.

    Args:
        records: the Kafka source columns of the records to load.
        schema: the table's current Iceberg schema.
        options: decoding options.

    Raises:
        Ineligible: this schema or these options take the Python path.
    """

    def __init__(self, records: DataFrame, schema: Schema, options: DecodeOptions) -> None:
        from pyspark.sql import Observation

        call = plain_call(records, schema, options)
        # explode(array(...)) evaluates the decoder once per record: with a plain projection
        # Spark's optimizer copies it into the filter below and decodes every record twice.
        # The query is written in SQL: each Column built in Python costs round trips to the JVM.
        decoded = records.selectExpr(f"explode(array({call})) AS {PLAIN_COLUMN}", "timestamp")
        self._observation = Observation(f"icefloe_batch_{next(_SINGLE_PASS_NAMES)}")
        observed = decoded.observe(
            self._observation,
            F.expr("count(1) AS records"),
            F.expr(f"count_if({PLAIN_COLUMN} IS NULL) AS declined"),
            F.expr("max(unix_millis(`timestamp`)) AS max_timestamp_ms"),
        )
        self.rows: DataFrame = observed.where(f"{PLAIN_COLUMN} IS NOT NULL").selectExpr(
            f"{PLAIN_COLUMN}.*"
        )
        """The valid rows, the table's columns in schema order (write them once)."""

    def counted(self) -> Counted:
        """What the write of ``rows`` counted; call only after that write succeeded."""
        got = self._observation.get
        newest = got.get("max_timestamp_ms")
        return Counted(
            int(got["records"]), int(got["declined"]), None if newest is None else int(newest)
        )


def parse_offset_log(text: str) -> dict[str, dict[int, int]] | None:
    """The Kafka offsets in one file of a streaming query's offset log, or None.

    Spark writes ``<checkpoint>/offsets/<batch id>`` before it runs the batch: a version line
    (``v1``), the batch's metadata, then one line per source holding where the batch ends in
    that source, for Kafka ``{"topic": {"0": 42, ...}}``. The loader's query has one source.

    Returns:
        topic -> partition -> the offset the batch ends before; None for any other form.
    """
    lines = text.strip().splitlines()
    if len(lines) != 3 or lines[0].strip() != "v1":
        return None
    try:
        doc = json.loads(lines[2])
        return {
            str(topic): {int(p): int(o) for p, o in parts.items()} for topic, parts in doc.items()
        }
    except (ValueError, TypeError, AttributeError):
        return None


def batch_end_offsets(
    spark: SparkSession, checkpoint: str, batch_id: int
) -> dict[str, dict[int, int]] | None:
    """Where micro-batch ``batch_id`` of the query checkpointed at ``checkpoint`` ends.

    Read from the query's offset log (``parse_offset_log``) through Hadoop's file systems, so
    a checkpoint on S3 or HDFS reads as a local one does.

    Returns:
        topic -> partition -> the offset after the batch's last; None when the file cannot be
        read or is not in the expected form (the caller then learns the offsets from the
        records).
    """
    conf = hadoop_configuration(spark)
    try:
        path = jvm(spark).org.apache.hadoop.fs.Path(f"{checkpoint.rstrip('/')}/offsets/{batch_id}")
        stream = path.getFileSystem(conf).open(path)
        try:
            data = bytes(stream.readAllBytes())
        finally:
            stream.close()
    except Exception:
        return None
    return parse_offset_log(data.decode("utf-8", errors="replace"))
