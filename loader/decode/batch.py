"""Batch decoding in Python: Kafka records (as Arrow) into rows of the table and rejects.

Spark's Kafka source hands over the columns ``key``, ``value``, ``topic``,
``partition``, ``offset``, ``timestamp`` and ``headers``.  ``decode_arrow``
decodes them with one ``RecordDecoder`` per schema version (the strict parser),
inside Spark's executors through ``DataFrame.mapInArrow`` (see ``arrow_decoder``):
one Arrow record batch in, one Arrow record batch out, shaped by
``decoded_schema``: the table's columns plus ``REJECT_COLUMN``, a struct that is
null for a valid row and, for a malformed record, carries the error and
everything the dead-letter topic needs (the table's columns are then null), and
``POSITION_COLUMN``.  Only the records the JVM path (``loader.ext.fastpath.plain``) declines
come here, or every record when a schema or a transform keeps the JVM path off.
``merge_side`` turns the per-partition summary and the collected reject structs
into what the driver plans a commit with.

No Spark in here, so this is unit-tested with plain Arrow tables.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from icefloe.loader.decode.parse import arrow_schema
from icefloe.loader.decode.record import KafkaMeta, RecordDecoder
from icefloe.loader.errors import MalformedRecord

if TYPE_CHECKING:
    import pyarrow as pa
    from pyiceberg.schema import Schema

    from icefloe.loader.config import DecodeOptions

__all__ = [
    "KAFKA_COLUMNS",
    "POSITION_COLUMN",
    "REJECT_COLUMN",
    "BatchSide",
    "Reject",
    "arrow_decoder",
    "decode_arrow",
    "decoded_schema",
    "merge_side",
    "rejects_from_rows",
]

KAFKA_COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp", "headers")

REJECT_COLUMN = "_icefloe_reject"
"""The column ``decode_arrow`` adds for malformed records (null for valid rows)."""

POSITION_COLUMN = "_icefloe_position"
"""The column ``decode_arrow`` adds for every record: topic, partition, offset, timestamp_ms."""


@dataclass(frozen=True)
class Reject:
    """A malformed record with everything the dead-letter topic needs."""

    value: bytes | None
    meta: KafkaMeta
    error: MalformedRecord


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
        record's row is all nulls), followed by ``REJECT_COLUMN`` and
        ``POSITION_COLUMN``. Fixed-size binary is plain binary here: Spark
        reads no fixed-size Arrow binary from Python (the Iceberg writer
        checks the length; the parser already did).

    Raises:
        SchemaMismatch: a type the loader cannot load.
    """
    import pyarrow as pa

    table = arrow_schema(schema)
    fields = [_spark_readable(table.field(i)).with_nullable(True) for i in range(len(table))]
    return pa.schema(
        [
            *fields,
            pa.field(REJECT_COLUMN, _reject_type()),
            pa.field(POSITION_COLUMN, _position_type(), nullable=False),
        ]
    )


def _spark_readable(field: pa.Field) -> pa.Field:
    """``field`` with every fixed-size binary, at any depth, as binary."""
    import pyarrow as pa

    t = field.type
    if pa.types.is_fixed_size_binary(t):
        t = pa.binary()
    elif pa.types.is_struct(t):
        t = pa.struct([_spark_readable(t.field(i)) for i in range(t.num_fields)])
    elif pa.types.is_list(t):
        t = pa.list_(_spark_readable(t.value_field))
    elif pa.types.is_map(t):
        t = pa.map_(t.key_field, _spark_readable(t.item_field))
    return field.with_type(t)


def _position_type() -> pa.DataType:
    import pyarrow as pa

    return pa.struct(
        [
            pa.field("topic", pa.string()),
            pa.field("partition", pa.int32()),
            pa.field("offset", pa.int64()),
            pa.field("timestamp_ms", pa.int64()),
        ]
    )


def _positions(records: pa.RecordBatch | pa.Table) -> pa.Array:
    """The position struct of every record, built from its Kafka columns without Python."""
    import pyarrow as pa
    import pyarrow.compute as pc

    def column(name: str) -> pa.Array:
        c = records.column(name)
        return c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c

    ts = column("timestamp")
    if pa.types.is_timestamp(ts.type):
        ts = pc.cast(ts, pa.timestamp("ms", tz=ts.type.tz), safe=False).cast(pa.int64())
    else:
        ts = ts.cast(pa.int64())
    arrays = [
        column("topic").cast(pa.string()),
        column("partition").cast(pa.int32()),
        column("offset").cast(pa.int64()),
        ts,
    ]
    return pa.StructArray.from_arrays(arrays, fields=list(_position_type()))


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
    nulls = dict.fromkeys(target.names[:-2])
    values = records.column("value").to_pylist()
    metas = _metas(records)
    out: list[dict[str, Any]] = []
    for i, value in enumerate(values):
        meta = metas(i)
        try:
            out.append(decoder.decode(value, meta))
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
    body = pa.RecordBatch.from_pylist(out, schema=pa.schema(list(target)[:-1]))
    return pa.RecordBatch.from_arrays([*body.columns, _positions(records)], schema=target)


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


@dataclass(frozen=True)
class BatchSide:
    """A decoded micro-batch as the driver sees it (from ``merge_side``).

    Attributes:
        ranges: per partition, ``(topic, partition, lowest, highest + 1)`` of the decoded
            records (what ``loader.commit.offsets.plan_batch`` takes).
        count: how many records were decoded (valid and malformed).
        max_timestamp_ms: the newest Kafka timestamp among them, or ``None``.
        rejects: the malformed records, in (topic, partition, offset) order.
    """

    ranges: tuple[tuple[str, int, int, int], ...]
    count: int
    max_timestamp_ms: int | None
    rejects: tuple[Reject, ...]


def merge_side(
    summary: Iterable[Mapping[str, Any]], rejects: Iterable[Mapping[str, Any]] = ()
) -> BatchSide:
    """Combine a batch's per-partition summary and its rejects into one ``BatchSide``.

    Args:
        summary: rows with ``topic``, ``partition``, ``lo`` and ``hi`` (lowest and
            highest offset), ``n`` (records) and ``timestamp_ms`` (newest, or None);
            several rows may name one partition.
        rejects: the collected ``REJECT_COLUMN`` values (see ``rejects_from_rows``).
    """
    spans: dict[tuple[str, int], list[int]] = {}
    count = 0
    newest: int | None = None
    for r in summary:
        key = (r["topic"], r["partition"])
        span = spans.setdefault(key, [r["lo"], r["hi"]])
        span[0], span[1] = min(span[0], r["lo"]), max(span[1], r["hi"])
        count += r["n"]
        if r["timestamp_ms"] is not None and (newest is None or r["timestamp_ms"] > newest):
            newest = r["timestamp_ms"]
    ranges = tuple(sorted((t, p, lo, hi + 1) for (t, p), (lo, hi) in spans.items()))
    return BatchSide(ranges, count, newest, rejects_from_rows(rejects))


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


def _metas(records: pa.RecordBatch | pa.Table) -> Callable[[int], KafkaMeta]:
    """``index -> KafkaMeta`` for the records; columns are converted on first use."""
    columns: dict[str, list[Any]] = {}

    def meta(i: int) -> KafkaMeta:
        if not columns:
            columns.update({n: records.column(n).to_pylist() for n in KAFKA_COLUMNS})
            columns["timestamp"] = _epoch_ms(records.column("timestamp"))
        headers = columns["headers"][i]
        return KafkaMeta(
            columns["topic"][i],
            columns["partition"][i],
            columns["offset"][i],
            columns["timestamp"][i],
            columns["key"][i],
            tuple((h["key"], h["value"]) for h in headers) if headers else (),
        )

    return meta


def _epoch_ms(column: Any) -> list[int | None]:
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_timestamp(column.type):
        micros = pc.cast(column, pa.timestamp("us", tz=column.type.tz)).cast(pa.int64())
        return [None if v is None else v // 1000 for v in micros.to_pylist()]
    return [None if v is None else int(v) for v in column.to_pylist()]
