"""Batch decoding: Kafka records (as Arrow) into rows of the table and rejects.

Spark's Kafka source hands over the columns ``key``, ``value``, ``topic``,
``partition``, ``offset``, ``timestamp`` and ``headers``.  Two entry points
decode them with one ``RecordDecoder`` per schema version:

* ``decode_arrow`` (what the loader runs, inside Spark's executors through
  ``DataFrame.mapInArrow``, see ``arrow_decoder``): one Arrow record batch in,
  one Arrow record batch out, shaped by ``decoded_schema``: the table's
  columns plus ``REJECT_COLUMN``, a struct that is null for a valid row and,
  for a malformed record, carries the error and everything the dead-letter
  topic needs (the table's columns are then null).  ``rejects_from_rows``
  turns the collected reject structs back into ``Reject`` objects.
* ``decode_batch``: a whole batch on one process, returning rows, rejects and
  offset ranges; used by the benchmark's decode-only measurement and tests.

No Spark in here, so this is unit-tested with plain Arrow tables.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
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

__all__ = [
    "KAFKA_COLUMNS",
    "REJECT_COLUMN",
    "DecodedBatch",
    "Reject",
    "arrow_decoder",
    "decode_arrow",
    "decode_batch",
    "decoded_schema",
    "offset_ranges",
    "rejects_from_rows",
]

KAFKA_COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp", "headers")

REJECT_COLUMN = "_icefloe_reject"
"""The column ``decode_arrow`` adds for malformed records (null for valid rows)."""


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


def _reject_type() -> pa.DataType:
    import pyarrow as pa

    header = pa.struct([("key", pa.string()), ("value", pa.binary())])
    return pa.struct(
        [
            ("kind", pa.string()),
            ("path", pa.string()),
            ("expected", pa.string()),
            ("reason", pa.string()),
            ("topic", pa.string()),
            ("partition", pa.int32()),
            ("offset", pa.int64()),
            ("timestamp_ms", pa.int64()),
            ("key", pa.binary()),
            ("value", pa.binary()),
            ("headers", pa.list_(header)),
        ]
    )


def decoded_schema(schema: Schema) -> pa.Schema:
    """The Arrow schema ``decode_arrow`` emits for table schema ``schema``.

    Args:
        schema: the table's current Iceberg schema.

    Returns:
        The table's columns, all nullable at the top level (a malformed
        record's row is all nulls), followed by ``REJECT_COLUMN``.

    Raises:
        SchemaMismatch: a type the loader cannot load.
    """
    import pyarrow as pa

    table = arrow_schema(schema)
    fields = [table.field(i).with_nullable(True) for i in range(len(table))]
    return pa.schema([*fields, pa.field(REJECT_COLUMN, _reject_type())])


def decode_arrow(records: pa.RecordBatch | pa.Table, decoder: RecordDecoder) -> pa.RecordBatch:
    """Decode Kafka records into rows of ``decoder.schema`` plus the reject column.

    Args:
        records: the Kafka source columns (``KAFKA_COLUMNS``); records the table
            already holds must have been filtered out before.
        decoder: the decoder for the batch's schema version.

    Returns:
        One output row per input record, in input order, typed by
        ``decoded_schema(decoder.schema)``.
    """
    import pyarrow as pa

    target = decoded_schema(decoder.schema)
    nulls = dict.fromkeys(target.names[:-1])
    out: list[dict[str, Any]] = []
    decode = decoder.decode
    for value, meta in _records(records):
        try:
            row = decode(value, meta)
        except MalformedRecord as error:
            reject = {
                **error.as_dict(),
                "topic": meta.topic,
                "partition": meta.partition,
                "offset": meta.offset,
                "timestamp_ms": meta.timestamp_ms,
                "key": meta.key,
                "value": value,
                "headers": [{"key": k, "value": v} for k, v in meta.headers],
            }
            out.append({**nulls, REJECT_COLUMN: reject})
        else:
            out.append(row)
    return pa.RecordBatch.from_pylist(out, schema=target)


def arrow_decoder(
    schema: Schema, options: DecodeOptions
) -> Callable[[Iterable[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The function to hand to ``DataFrame.mapInArrow`` for one schema version.

    Spark pickles it to its Python workers, so ``loader`` must be importable
    there (an installed package, ``--py-files``, or the worker's PYTHONPATH).

    Args:
        schema: the table's current Iceberg schema (validated on the driver
            by building a ``RecordDecoder`` before the job starts).
        options: decoding options from the configuration.

    Returns:
        ``batches -> decoded batches``, see ``decode_arrow``.
    """

    def run(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        decoder = RecordDecoder(schema, options)
        for batch in batches:
            yield decode_arrow(batch, decoder)

    return run


def rejects_from_rows(rows: Iterable[Mapping[str, Any]]) -> tuple[Reject, ...]:
    """``Reject`` objects from collected ``REJECT_COLUMN`` values.

    Args:
        rows: the reject structs as mappings (``Row.asDict(recursive=True)``
            or ``to_pylist``).

    Returns:
        The rejects, in (topic, partition, offset) order.
    """
    out = []
    for r in rows:
        headers = tuple((h["key"], _bytes(h["value"])) for h in r["headers"] or ())
        meta = KafkaMeta(
            r["topic"], r["partition"], r["offset"], r["timestamp_ms"], _bytes(r["key"]), headers
        )
        error = MalformedRecord(r["kind"], r["path"], r["expected"], r["reason"])
        out.append(Reject(_bytes(r["value"]), meta, error))
    out.sort(key=lambda x: (x.meta.topic, x.meta.partition, x.meta.offset))
    return tuple(out)


def _bytes(value: Any) -> bytes | None:
    # Spark's Row hands binary back as bytearray; the dead-letter producer and
    # equality in tests want bytes.
    return None if value is None else bytes(value)


def _records(records: pa.RecordBatch | pa.Table) -> Iterator[tuple[bytes | None, KafkaMeta]]:
    columns = {name: records.column(name).to_pylist() for name in KAFKA_COLUMNS}
    timestamps = _epoch_ms(records.column("timestamp"))
    for i, (value, topic, partition, offset) in enumerate(
        zip(
            columns["value"],
            columns["topic"],
            columns["partition"],
            columns["offset"],
            strict=True,
        )
    ):
        headers = columns["headers"][i]
        meta = KafkaMeta(
            topic,
            partition,
            offset,
            timestamps[i],
            columns["key"][i],
            tuple((h["key"], h["value"]) for h in headers) if headers else (),
        )
        yield value, meta


def _epoch_ms(column: Any) -> list[int | None]:
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_timestamp(column.type):
        micros = pc.cast(column, pa.timestamp("us", tz=column.type.tz)).cast(pa.int64())
        return [None if v is None else v // 1000 for v in micros.to_pylist()]
    return [None if v is None else int(v) for v in column.to_pylist()]
