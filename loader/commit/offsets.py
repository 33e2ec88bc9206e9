"""Offsets: exactly-once bookkeeping between Kafka and Iceberg, as pure functions.

The Spark checkpoint says what to *read*; the table says what was *written*.
Each snapshot the loader commits records, in its summary (``keys.OFFSETS``),
the next offset to read for every topic-partition, atomically with the data.
After a crash between the Iceberg commit and the checkpoint, Spark replays the
batch; ``plan_batch`` drops the records the table already has, so each record
lands once.

``committed_offsets`` walks the snapshot lineage from the current snapshot back
to the root and takes the newest snapshot carrying ``keys.OFFSETS``.  Walking
parents rather than sorting by time matters: after a rollback the current
lineage, not the newest timestamp, is the truth.  Snapshots of others
(compaction ``replace``, row-level ``delete``/``overwrite``, a human's INSERT)
carry no offsets and are skipped; snapshots removed by ``expire_snapshots``
simply end the walk early.  Then ``table_committed`` takes the offsets the
publishing commit also wrote into a table property (``keys.TABLE_OFFSETS``),
which expiry does not touch; only when that is missing too (a table loaded
without fencing) is the walk's end reported as ``Committed.history_truncated``.

Who may commit (the lease and the fence) is ``loader.commit.lease`` and
``loader.commit.table``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from icefloe.loader import keys
from icefloe.loader.errors import InvalidOffsets

__all__ = [
    "BatchPlan",
    "Committed",
    "Gap",
    "OffsetRange",
    "Offsets",
    "SnapshotInfo",
    "committed_offsets",
    "decode_offsets",
    "encode_offsets",
    "kafka_ranges",
    "plan_batch",
    "summary_properties",
    "table_committed",
]

Offsets = dict[str, dict[int, int]]
"""topic -> partition -> next offset to read."""


def encode_offsets(offsets: Mapping[str, Mapping[int, int]]) -> str:
    """Serialize offsets for ``keys.OFFSETS``.

    Args:
        offsets: topic -> partition -> NEXT offset to read (last loaded + 1).

    Returns:
        Compact JSON ``{"topic": {"0": 42}}``, topics and partitions in order.

    Raises:
        InvalidOffsets: a negative partition or offset, or a non-integer.
    """
    out: dict[str, dict[str, int]] = {}
    for topic in sorted(offsets):
        partitions = offsets[topic]
        for partition, offset in partitions.items():
            if not _non_negative_int(partition) or not _non_negative_int(offset):
                raise InvalidOffsets(f"bad offset {topic}/{partition!r}: {offset!r}")
        out[topic] = {str(p): partitions[p] for p in sorted(partitions)}
    return json.dumps(out, separators=(",", ":"))


def _non_negative_int(value: object) -> bool:
    return type(value) is int and value >= 0


def decode_offsets(text: str) -> Offsets:
    """Parse a ``keys.OFFSETS`` value.

    Args:
        text: the JSON written by ``encode_offsets``.

    Returns:
        topic -> partition -> next offset to read.

    Raises:
        InvalidOffsets: not JSON of that shape.
    """
    try:
        raw = json.loads(text)
    except ValueError as exc:
        raise InvalidOffsets(f"offsets are not JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise InvalidOffsets("offsets must be a JSON object of topics")
    result: Offsets = {}
    for topic, partitions in raw.items():
        if not isinstance(partitions, dict):
            raise InvalidOffsets(f"offsets of topic {topic!r} must be an object")
        result[topic] = {}
        for partition, offset in partitions.items():
            if not (partition.isascii() and partition.isdigit()) or not _non_negative_int(offset):
                raise InvalidOffsets(f"bad offset {topic}/{partition!r}: {offset!r}")
            result[topic][int(partition)] = offset
    return result


class SnapshotInfo(NamedTuple):
    """What the offsets logic needs of a snapshot (plain data; no pyiceberg)."""

    snapshot_id: int
    parent_id: int | None
    timestamp_ms: int
    summary: Mapping[str, str]


@dataclass(frozen=True)
class Committed:
    """What the table says was loaded.

    Attributes:
        offsets: topic -> partition -> next offset to read; empty when no
            icefloe snapshot is in the lineage.
        snapshot_id: the snapshot the offsets come from, or ``None``.
        loader_id: the loader that committed it, or ``None``.
        batch_id: its Spark batch id, or ``None``.
        history_truncated: the walk ended at a snapshot whose parent is gone
            (expired) without finding offsets, and no offsets property stands in:
            "nothing committed" cannot be told apart from "history expired", so
            do not treat it as a fresh table (fall back to the Spark checkpoint,
            and warn).
        from_properties: the offsets come from the table property
            ``keys.TABLE_OFFSETS`` because expiry removed every loader snapshot.
    """

    offsets: Offsets = field(default_factory=dict)
    snapshot_id: int | None = None
    loader_id: str | None = None
    batch_id: int | None = None
    history_truncated: bool = False
    from_properties: bool = False

    @property
    def found(self) -> bool:
        """True when the table says what was loaded (a loader snapshot or the property)."""
        return self.snapshot_id is not None or self.from_properties


def committed_offsets(
    snapshots: Sequence[SnapshotInfo | tuple[int, int | None, int, Mapping[str, str]]],
) -> Committed:
    """Find the offsets committed by the newest icefloe snapshot of the current lineage.

    Args:
        snapshots: ``(snapshot_id, parent_id, timestamp_ms, summary)`` with the
            CURRENT snapshot first.  The walk follows ``parent_id`` links from
            it, so further snapshots may come in any order and snapshots of
            other branches are ignored.

    Returns:
        The ``Committed`` offsets (empty when none are found).

    Raises:
        InvalidOffsets: the newest icefloe snapshot has unreadable offsets;
            skipping it would silently load its records twice.
    """
    if not snapshots:
        return Committed()
    infos = [SnapshotInfo(*s) for s in snapshots]
    by_id = {s.snapshot_id: s for s in infos}
    seen: set[int] = set()
    current: SnapshotInfo | None = infos[0]
    while current is not None and current.snapshot_id not in seen:
        seen.add(current.snapshot_id)
        text = current.summary.get(keys.OFFSETS)
        if text is not None:
            batch = current.summary.get(keys.BATCH_ID)
            return Committed(
                offsets=decode_offsets(text),
                snapshot_id=current.snapshot_id,
                loader_id=current.summary.get(keys.LOADER_ID),
                batch_id=int(batch) if batch is not None and batch.isdigit() else None,
            )
        parent = current.parent_id
        if parent is None:
            return Committed()
        current = by_id.get(parent)
    return Committed(history_truncated=True)


def table_committed(
    snapshots: Sequence[SnapshotInfo | tuple[int, int | None, int, Mapping[str, str]]],
    properties: Mapping[str, str],
) -> Committed:
    """The table's committed offsets: from its lineage, else from its offsets property.

    The lineage is the truth while it reaches a loader snapshot (after a rollback it is
    older than the property). When expiry cut it short, the property written by the
    last publishing commit says where the table's data ends.

    Args:
        snapshots: as for ``committed_offsets``, the current snapshot first.
        properties: the table's properties.

    Raises:
        InvalidOffsets: the offsets found are unreadable.
    """
    committed = committed_offsets(snapshots)
    text = properties.get(keys.TABLE_OFFSETS)
    if not committed.history_truncated or text is None:
        return committed
    return Committed(offsets=decode_offsets(text), from_properties=True)


class OffsetRange(NamedTuple):
    """The records of one topic-partition in a micro-batch: ``start <= offset < end``."""

    topic: str
    partition: int
    start: int
    end: int


@dataclass(frozen=True)
class Gap:
    """Offsets never loaded: ``committed <= offset < batch start``.

    Normal on compacted or transactional topics (offsets are not dense);
    otherwise Kafka retention deleted records before they were loaded, or the
    checkpoint was reset.
    """

    topic: str
    partition: int
    committed: int
    start: int


@dataclass(frozen=True)
class BatchPlan:
    """What to write for a micro-batch.

    Attributes:
        keep_from: (topic, partition) -> the lowest offset to write; records
            below it are already in the table (a replayed batch).
        next_offsets: the full offsets map to record in the new snapshot.
        replayed: how many offsets of the batch are already committed.
        gaps: partitions whose batch starts beyond the committed offset.
    """

    keep_from: Mapping[tuple[str, int], int]
    next_offsets: Offsets
    replayed: int
    gaps: tuple[Gap, ...]

    @property
    def skip(self) -> bool:
        """True when nothing in the batch is new: commit no snapshot."""
        return not self.keep_from

    def keeps(self, topic: str, partition: int, offset: int) -> bool:
        """Whether the record at this position must be written."""
        start = self.keep_from.get((topic, partition))
        return start is not None and offset >= start


def kafka_ranges(
    starts: Offsets, ends: Offsets, committed: Offsets
) -> list[tuple[str, int, int, int]]:
    """``plan_batch``'s ranges for a batch known by where it starts and ends in Kafka.

    Args:
        starts: topic -> partition -> the batch's first offset, where it is a number.
        ends: topic -> partition -> the offset after the batch's last.
        committed: the table's offsets.

    Returns:
        ``(topic, partition, start, end)`` per partition; a partition whose start is not a
        number (a new one, read from its earliest) starts, for the plan, at the table's offset
        for it, else at 0.
    """
    return [
        (
            topic,
            partition,
            starts.get(topic, {}).get(partition, committed.get(topic, {}).get(partition, 0)),
            end,
        )
        for topic, parts in sorted(ends.items())
        for partition, end in sorted(parts.items())
    ]


def plan_batch(
    committed: Mapping[str, Mapping[int, int]],
    batch_ranges: Iterable[OffsetRange | tuple[str, int, int, int]],
) -> BatchPlan:
    """Plan a micro-batch against what the table already holds.

    Args:
        committed: topic -> partition -> next offset, from ``committed_offsets``.
        batch_ranges: ``(topic, partition, start, end)`` per partition in the
            batch, ``end`` exclusive (max offset seen + 1); empty ranges are
            ignored.

    Returns:
        The ``BatchPlan``: drop records below ``keep_from``; record
        ``next_offsets`` (never lower than ``committed``) in the snapshot.
    """
    next_offsets: Offsets = {t: dict(p) for t, p in committed.items()}
    keep_from: dict[tuple[str, int], int] = {}
    replayed = 0
    gaps = []
    for topic, partition, start, end in (OffsetRange(*r) for r in batch_ranges):
        if end <= start:
            continue
        done = committed.get(topic, {}).get(partition)
        if done is None:
            keep_from[(topic, partition)] = start
        elif end <= done:
            replayed += end - start
            continue
        else:
            if start > done:
                gaps.append(Gap(topic, partition, done, start))
            replayed += max(0, done - start)
            keep_from[(topic, partition)] = max(start, done)
        next_offsets.setdefault(topic, {})[partition] = end
    return BatchPlan(keep_from, next_offsets, replayed, tuple(gaps))


def summary_properties(
    me: str,
    instance: str,
    offsets: Mapping[str, Mapping[int, int]],
    batch_id: int,
    *,
    records: int | None = None,
    dead_lettered: int | None = None,
    query_id: str | None = None,
    max_timestamp_ms: int | None = None,
) -> dict[str, str]:
    """The snapshot-summary properties of one loader commit.

    Args:
        me: this loader's id.
        instance: this process's token.
        offsets: the full next-offsets map (``BatchPlan.next_offsets``).
        batch_id: the Spark micro-batch id.
        records, dead_lettered, query_id, max_timestamp_ms: optional statistics.

    Returns:
        Summary key -> value; pass each as ``keys.snapshot_property_option(key)``.
    """
    props = {
        keys.LOADER_ID: me,
        keys.OFFSETS: encode_offsets(offsets),
        keys.BATCH_ID: str(batch_id),
        keys.INSTANCE: instance,
    }
    if records is not None:
        props[keys.RECORDS] = str(records)
    if dead_lettered is not None:
        props[keys.DEAD_LETTERED] = str(dead_lettered)
    if query_id is not None:
        props[keys.QUERY_ID] = query_id
    if max_timestamp_ms is not None:
        props[keys.MAX_TIMESTAMP_MS] = str(max_timestamp_ms)
    return props
