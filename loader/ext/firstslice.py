"""First slice: a backlog waiting at start is committed first in a small slice.

On by default (``kafka.first_slice_records``, 5,000); ``0`` turns it off, and then this module
is not imported.

A loader that starts on a backlog runs its first batch on a cold JVM: the code of the Kafka
read, the decoder and the Parquet writer runs slowly until Java has compiled it, so the first
batch of ``max_offsets_per_trigger`` records costs 1.3-2x the next one, and none of its rows
are visible until it is done. The loader therefore reads a first slice of at most
``kafka.first_slice_records`` records with a bounded Kafka read (``endingOffsets``, so only
the slice is fetched) and hands it to the same sink as every batch: the same plan, decode,
dead letters, staged write and fenced publish. The slice's rows are visible seconds sooner,
the JVM warms up on the batch's own code, and the stream starts at the offsets the slice
committed.

A slice is as safe as any batch: its commit carries the next offset of every partition it
read, atomically with its rows. A loader killed after the slice's commit starts from those
offsets; one killed before it starts from the same place as before.

The slice is taken only where the start is certain: partitions the table has offsets for, and
partitions it has never seen when ``starting_offsets`` is ``earliest`` (from their oldest
record kept). A committed offset outside what Kafka keeps (retention removed records, or the
topic was made again) leaves the whole start to the stream, which reports it as before.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from icefloe.loader.io.topics import KAFKA_START_WAIT_S

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from icefloe.loader.commit.offsets import Offsets
    from icefloe.loader.commit.sink import BatchSink
    from icefloe.loader.config import LoaderConfig
    from icefloe.loader.ext.fastpath.onepass import FastPath
    from icefloe.loader.io.topics import KafkaMetadata

__all__ = ["FIRST_SLICE_BATCH_ID", "Slice", "commit_first_slice", "plan_slice"]

log = logging.getLogger("icefloe.loader")

FIRST_SLICE_BATCH_ID = -1
"""The batch id a backlog's first slice is committed under (the stream's batches count from 0)."""


@dataclass(frozen=True)
class Slice:
    """A bounded read: ``[start, end)`` of each partition in it.

    Attributes:
        start: topic -> partition -> first offset to read.
        end: topic -> partition -> offset after the last one to read.
        backlog: records waiting in every partition (high watermark minus start).
    """

    start: dict[str, dict[int, int]]
    end: dict[str, dict[int, int]]
    backlog: int

    @property
    def records(self) -> int:
        """Offsets in the slice (records, but for transaction markers and compacted gaps)."""
        return sum(
            end - self.start[topic][p]
            for topic, parts in self.end.items()
            for p, end in parts.items()
        )

    def spark_options(self, stream_options: Mapping[str, str]) -> dict[str, str]:
        """Options of Spark's Kafka batch read of the slice.

        Args:
            stream_options: the streaming query's options (``KafkaConfig.spark_options``):
                their client settings are kept; the subscription, the starting offsets and the
                per-trigger limit are replaced by the slice's partitions and bounds.
        """
        dropped = {"subscribe", "subscribePattern", "startingOffsets", "maxOffsetsPerTrigger"}
        options = {k: v for k, v in stream_options.items() if k not in dropped}
        options["assign"] = json.dumps({t: sorted(parts) for t, parts in self.end.items()})
        options["startingOffsets"] = _json(self.start)
        options["endingOffsets"] = _json(self.end)
        return options


def _json(offsets: Mapping[str, Mapping[int, int]]) -> str:
    return json.dumps({t: {str(p): o for p, o in sorted(ps.items())} for t, ps in offsets.items()})


def plan_slice(
    watermarks: Mapping[tuple[str, int], tuple[int, int]],
    committed: Mapping[str, Mapping[int, int]],
    limit: int,
    *,
    from_earliest: bool,
) -> Slice | None:
    """The first slice to commit, or None when the backlog is no bigger than ``limit``.

    Args:
        watermarks: (topic, partition) -> (low, high) of every partition to be loaded.
        committed: topic -> partition -> next offset, from the table.
        limit: the most records in the slice.
        from_earliest: partitions without a committed offset start at their oldest record;
            when False (``starting_offsets`` is ``latest`` or names offsets) such a partition
            means no slice.

    Returns:
        Each partition's share of ``limit`` in proportion to its backlog; None when the start
        of a partition is not certain (see the module's text) or nothing would be read.
    """
    starts: dict[tuple[str, int], int] = {}
    for (topic, p), (low, high) in watermarks.items():
        start = committed.get(topic, {}).get(p)
        if start is None:
            if not from_earliest:
                return None
            start = low
        if not low <= start <= high:
            return None
        starts[(topic, p)] = start
    backlog = sum(watermarks[tp][1] - start for tp, start in starts.items())
    if limit <= 0 or backlog <= limit:
        return None
    start_map: dict[str, dict[int, int]] = {}
    end_map: dict[str, dict[int, int]] = {}
    for (topic, p), start in sorted(starts.items()):
        share = (watermarks[(topic, p)][1] - start) * limit // backlog
        if share > 0:
            start_map.setdefault(topic, {})[p] = start
            end_map.setdefault(topic, {})[p] = start + share
    if not end_map:
        return None
    return Slice(start_map, end_map, backlog)


def commit_first_slice(
    spark: SparkSession,
    config: LoaderConfig,
    commit: Callable[[DataFrame, int], None],
    sink: BatchSink,
    kafka: KafkaMetadata,
    options: Mapping[str, str],
    committed: Offsets,
    *,
    from_table: bool,
    stop: threading.Event,
    fast: FastPath | None,
) -> Offsets | None:
    """Commit the first slice of a backlog waiting at start, through the job's batch function.

    Args:
        spark: the loader's session.
        config: the loader configuration.
        commit: the job's ``foreachBatch`` function (the sink, its failures reported as the
            query's).
        sink: the sink ``commit`` hands the slice to (what it committed).
        kafka: the loader's Kafka metadata client.
        options: the stream's Kafka source options (``KafkaConfig.spark_options``).
        committed: the offsets the table holds.
        from_table: the table holds offsets (else they are ``kafka.starting_offsets``'s).
        stop: set when a stop was requested: no slice is taken then.
        fast: the fast path, told the slice's bounds (a slice of plain records is one pass).

    Returns:
        The offsets the stream starts at: the table's after the slice, or ``committed``
        when no slice was taken; None when the table holds none and no slice was taken
        (the stream then starts at ``kafka.starting_offsets``).
    """
    unsliced = committed if from_table else None
    limit = config.kafka.first_slice_records
    per_trigger = config.kafka.max_offsets_per_trigger
    if limit == 0 or (per_trigger is not None and limit >= per_trigger) or stop.is_set():
        return unsliced
    partitions = kafka.partitions(wait_s=KAFKA_START_WAIT_S)
    # Partitions a table with offsets has never seen start at their earliest, as the
    # stream's do (``starting_offsets_json``).
    earliest = from_table or config.kafka.starting_offsets == "earliest"
    plan = plan_slice(kafka.watermarks(partitions), committed, limit, from_earliest=earliest)
    if plan is None:
        return unsliced
    log.info(
        "%s: %s records wait; committing the first %s before the stream starts",
        config.table,
        plan.backlog,
        plan.records,
    )
    reader = spark.read.format("kafka")
    for key, value in plan.spark_options(options).items():
        reader = reader.option(key, value)
    if fast is not None:
        fast.slice_bounds = (plan.start, plan.end)
    try:
        commit(reader.load(), FIRST_SLICE_BATCH_ID)
    finally:
        if fast is not None:
            fast.slice_bounds = None
    return sink.last_offsets if sink.last_offsets is not None else unsliced
