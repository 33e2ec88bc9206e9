"""Batch decoding: one micro-batch of Kafka records (as Arrow) into rows and rejects.

The Spark job collects each micro-batch's Kafka records to the driver as an
Arrow table (Spark's Kafka source columns: ``key``, ``value``, ``topic``,
``partition``, ``offset``, ``timestamp``, ``headers``) and hands it here with
the table's current schema.  ``decode_batch`` drops the records the table
already holds (``keep``), decodes the rest with one ``RecordDecoder``, and
returns the Arrow rows to append, the malformed records, and per partition the
offset range seen, so the caller can plan the commit.  No Spark in here, so
this is unit-tested with plain Arrow tables.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from loader.errors import MalformedRecord
from loader.offsets import OffsetRange
from loader.parse import arrow_schema
from loader.record import DecodeOptions, RecordDecoder
from loader.transforms import KafkaMeta

if TYPE_CHECKING:
    import pyarrow as pa
    from pyiceberg.schema import Schema

__all__ = ["DecodedBatch", "Reject", "decode_batch", "offset_ranges"]

KAFKA_COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp", "headers")


@dataclass(frozen=True)
class Reject:
    """A malformed record with everything the dead-letter topic needs."""

    value: bytes | None
    meta: KafkaMeta
    error: MalformedRecord


@dataclass(frozen=True)
class DecodedBatch:
    """The outcome of decoding one micro-batch.

    Attributes:
        rows: the rows to append, typed by ``arrow_schema(schema)``.
        rejects: malformed records, in (topic, partition, offset) order.
        ranges: per partition, the offsets seen (all records, kept or not).
        max_timestamp_ms: the newest Kafka timestamp among kept records, or ``None``.
        skipped: records dropped because the table already holds them.
    """

    rows: pa.Table
    rejects: tuple[Reject, ...]
    ranges: tuple[OffsetRange, ...]
    max_timestamp_ms: int | None
    skipped: int


def offset_ranges(records: pa.Table) -> tuple[OffsetRange, ...]:
    """Per topic-partition, ``[min offset, max offset + 1)`` of the records.

    Args:
        records: Kafka records with ``topic``, ``partition`` and ``offset`` columns.

    Returns:
        One ``OffsetRange`` per partition present, sorted.
    """
    if records.num_rows == 0:
        return ()
    grouped = records.group_by(["topic", "partition"]).aggregate(
        [("offset", "min"), ("offset", "max")]
    )
    out = [
        OffsetRange(t, p, lo, hi + 1)
        for t, p, lo, hi in zip(
            grouped.column("topic").to_pylist(),
            grouped.column("partition").to_pylist(),
            grouped.column("offset_min").to_pylist(),
            grouped.column("offset_max").to_pylist(),
            strict=True,
        )
    ]
    return tuple(sorted(out))


def decode_batch(
    records: pa.Table,
    schema: Schema,
    options: DecodeOptions,
    keep: Callable[[str, int, int], bool] | None = None,
) -> DecodedBatch:
    """Decode a micro-batch of Kafka records against one table schema.

    Args:
        records: the Kafka source columns (``KAFKA_COLUMNS``).
        schema: the table's current Iceberg schema.
        options: decoding options from the configuration.
        keep: ``(topic, partition, offset) -> bool``; records for which it is
            false are skipped (already committed).  ``None`` keeps everything.

    Returns:
        The ``DecodedBatch``.

    Raises:
        SchemaMismatch: the schema cannot be loaded.
    """
    import pyarrow as pa

    decoder = RecordDecoder(schema, options)
    ranges = offset_ranges(records)
    columns = {name: records.column(name).to_pylist() for name in KAFKA_COLUMNS}
    timestamps = _epoch_ms(records.column("timestamp"))
    rows: list[dict[str, Any]] = []
    rejects: list[Reject] = []
    skipped = 0
    max_ts: int | None = None
    decode = decoder.decode
    for i, (value, topic, partition, offset) in enumerate(
        zip(
            columns["value"],
            columns["topic"],
            columns["partition"],
            columns["offset"],
            strict=True,
        )
    ):
        if keep is not None and not keep(topic, partition, offset):
            skipped += 1
            continue
        ts = timestamps[i]
        headers = columns["headers"][i]
        meta = KafkaMeta(
            topic,
            partition,
            offset,
            ts,
            columns["key"][i],
            tuple((h["key"], h["value"]) for h in headers) if headers else (),
        )
        if ts is not None and (max_ts is None or ts > max_ts):
            max_ts = ts
        try:
            rows.append(decode(value, meta))
        except MalformedRecord as error:
            rejects.append(Reject(value, meta, error))
    rejects.sort(key=lambda r: (r.meta.topic, r.meta.partition, r.meta.offset))
    table = pa.Table.from_pylist(rows, schema=arrow_schema(schema))
    return DecodedBatch(table, tuple(rejects), ranges, max_ts, skipped)


def _epoch_ms(column: Any) -> list[int | None]:
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_timestamp(column.type):
        micros = pc.cast(column, pa.timestamp("us", tz=column.type.tz)).cast(pa.int64())
        return [None if v is None else v // 1000 for v in micros.to_pylist()]
    return [None if v is None else int(v) for v in column.to_pylist()]
