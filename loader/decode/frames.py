"""Frames: one micro-batch as Spark DataFrames, from Kafka records to the rows the sink writes.

Records are decoded in the executors in two tiers:

1. with the fast path (``jvm_decode``, ``loader/ext/fastpath/plain.py``), the JVM:
   ``PlainDecoder`` turns each record value into a row of the table, or null when it cannot
   prove the record plain. No record leaves the JVM;
2. the records it declines go to the strict Python parser (``batch.arrow_decoder`` through
   ``mapInArrow``), which gives a row or a reject with its reason. Without the fast path, or
   when the schema or the transforms keep the JVM path off, every record goes there.

``DecodedBatch`` caches what is read twice and gives the driver, in this order:

* ``summary()``: per Kafka partition the offset range, the record count and the newest
  timestamp (one Spark job that decodes and caches the batch, aggregated in the JVM);
* the rejects, collected by ``summary()`` too, in a second job only when some records went
  to Python;
* ``rows()``: the valid rows, for the append (the write job reads them from the caches).

The fast path's other way through a batch of plain records, one Spark job with no cache
(``loader/ext/fastpath/onepass.py``), falls back to this one whenever a record needs Python.

A few declined records (at most ``DRIVER_DECODE_MAX_RECORDS`` and ``DRIVER_DECODE_MAX_BYTES``,
the usual case: the batch's malformed records) are decoded on the driver instead: collected
as Arrow and run through the same ``batch.decode_arrow``. That spares the batch a Spark job
through the Python workers, whose fixed cost (about half a second on two cores) outweighs the
decoding of a few records; the rows and rejects are the same either way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pyspark import StorageLevel
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema

from icefloe.loader.config import DecodeOptions
from icefloe.loader.decode.batch import (
    KAFKA_COLUMNS,
    POSITION_COLUMN,
    REJECT_COLUMN,
    BatchSide,
    arrow_decoder,
    decode_arrow,
    decoded_schema,
    merge_side,
)
from icefloe.loader.decode.parse import spark_schema
from icefloe.loader.decode.record import RecordDecoder
from icefloe.loader.errors import LoaderError

if TYPE_CHECKING:
    from pyiceberg.schema import Schema
    from pyspark.sql import Column, DataFrame

JvmColumn = Callable[["DataFrame", "Schema", DecodeOptions], "Column | None"]
"""The fast path's JVM decoding of a batch's records (``FastPath.column``): a struct column of
the table's columns, null for a record it declines; None for a schema it cannot decode."""

__all__ = [
    "DRIVER_DECODE_MAX_BYTES",
    "DRIVER_DECODE_MAX_RECORDS",
    "KAFKA_SCHEMA_DDL",
    "PLAIN_COLUMN",
    "RAW_COLUMN",
    "DecodedBatch",
    "JvmColumn",
    "all_nullable",
    "warm_up",
]

PLAIN_COLUMN = "_icefloe_plain"
"""The JVM path's row (a struct of the table's columns), null for a declined record."""

RAW_COLUMN = "_icefloe_raw"
"""A declined record's Kafka columns (a struct), null for a record the JVM path decoded."""


DRIVER_DECODE_MAX_RECORDS = 2_000
"""A batch's declined records are decoded on the driver when there are at most this many..."""

DRIVER_DECODE_MAX_BYTES = 16 * 1024 * 1024
"""...and their values hold at most this many bytes; more go through the Python workers."""

KAFKA_SCHEMA_DDL = (
    "key binary, value binary, topic string, partition int, offset long, "
    "timestamp timestamp, headers array<struct<key: string, value: binary>>"
)
"""The columns Spark's Kafka source gives (with ``includeHeaders``), as a DDL schema."""


def warm_up(spark: Any, schema: Schema, options: DecodeOptions) -> None:
    """Start the Python workers before the first batch, for a start whose every record goes
    to them.

    With the JVM path off, or a schema or transforms it cannot decode, every record goes to
    the Python parser, and starting its workers (one per core: Spark reuses them) with two
    made-up records, an empty object and a malformed one in every default partition, makes
    the first batch 3-10 s cheaper at about the cost of the warm-up itself.

    When the JVM path decodes the schema the job does not call this: a warm-up of the
    decoder, the Python workers and the driver's decoding cost 8-13 s before "starting" and
    left the first batch as dear as without it (measured, ``docs/benchmarks.md``), since what
    makes the first batch dear is the JIT's compiling the batch's own code.

    Args:
        spark: the loader's session.
        schema: the table's current schema.
        options: decoding options.
    """
    import datetime as dt

    when = dt.datetime(2000, 1, 1, tzinfo=dt.UTC)
    n = max(2, spark.sparkContext.defaultParallelism)
    rows: list[tuple[Any, ...]] = [
        (None, b"{}" if i % 2 == 0 else b"{", "warm-up", i, 0, when, []) for i in range(n)
    ]
    records = spark.createDataFrame(rows, KAFKA_SCHEMA_DDL).repartition(n)
    try:
        batch = DecodedBatch(records, schema, options, driver_max=0)
    except LoaderError:
        return  # a schema the loader cannot load: the first batch stops with the reason
    try:
        batch.summary()
        batch.rows().count()
    finally:
        batch.release()


def _position() -> Column:
    return F.struct(
        F.col("topic").cast("string").alias("topic"),
        F.col("partition").cast("int").alias("partition"),
        F.col("offset").cast("long").alias("offset"),
        F.unix_millis(F.col("timestamp")).alias("timestamp_ms"),
    ).alias(POSITION_COLUMN)


class DecodedBatch:
    """One micro-batch's records, decoded; see the module docstring.

    Args:
        records: the Kafka source columns (``KAFKA_COLUMNS``) of the records to load.
        schema: the table's current Iceberg schema.
        options: decoding options.
        jvm: the fast path's JVM decoding of plain records; None decodes every record in
            Python.
        driver_max: decode up to this many declined records on the driver (0: never).
    """

    def __init__(
        self,
        records: DataFrame,
        schema: Schema,
        options: DecodeOptions,
        jvm: JvmColumn | None = None,
        driver_max: int = DRIVER_DECODE_MAX_RECORDS,
    ) -> None:
        self.schema = schema
        self.options = options
        self.columns = [f.name for f in schema.fields]
        self.driver_max = driver_max
        self.declined = 0
        """Records that went to the Python parser (known after ``summary()``)."""
        self._cached: list[DataFrame] = []
        self._python: DataFrame | None = None
        self._plain: DataFrame | None = None
        self._driver_rows: DataFrame | None = None
        column = jvm(records, schema, options) if jvm is not None else None
        if column is None:
            self._python = self._cache(self._decode_in_python(records))
        else:
            # Two projections, so the UDF runs once per record: Spark does not merge
            # projections that would evaluate an expensive expression twice.
            decoded = records.select(*KAFKA_COLUMNS, column.alias(PLAIN_COLUMN))
            declined = F.col(PLAIN_COLUMN).isNull()
            self._plain = self._cache(
                decoded.select(
                    _position(),
                    PLAIN_COLUMN,
                    F.when(declined, F.struct(*KAFKA_COLUMNS)).alias(RAW_COLUMN),
                )
            )

    @property
    def jvm(self) -> bool:
        """Whether the JVM path decodes this batch's plain records."""
        return self._plain is not None

    @property
    def python_workers(self) -> bool:
        """Whether records went to the Python workers (known after ``summary()``)."""
        return self._python is not None

    def summary(self) -> BatchSide:
        """Decode the batch (cached) and bring back its offset ranges, counts and rejects."""
        staged = self._plain if self._plain is not None else self._python
        assert staged is not None
        to_python = RAW_COLUMN if self._plain is not None else REJECT_COLUMN
        raw_bytes = (
            F.octet_length(F.col(RAW_COLUMN).getField("value"))
            if self._plain is not None
            else F.lit(0)
        )
        pos = F.col(POSITION_COLUMN)
        rows = (
            staged.groupBy(
                pos.getField("topic").alias("topic"), pos.getField("partition").alias("partition")
            )
            .agg(
                F.min(pos.getField("offset")).alias("lo"),
                F.max(pos.getField("offset")).alias("hi"),
                F.count(F.lit(1)).alias("n"),
                F.max(pos.getField("timestamp_ms")).alias("timestamp_ms"),
                F.count(to_python).alias("python"),
                F.coalesce(F.sum(raw_bytes), F.lit(0)).alias("python_bytes"),
            )
            .collect()
        )
        summary = [r.asDict() for r in rows]
        declined = self.declined = sum(r["python"] for r in summary)
        rejects: list[dict[str, Any]] = []
        if declined:
            declined_bytes = sum(r["python_bytes"] for r in summary)
            rejects = self._rejects(declined, declined_bytes)
        return merge_side(summary, rejects)

    def rows(self) -> DataFrame:
        """The valid rows, the table's columns in schema order."""
        parts: list[DataFrame] = []
        if self._plain is not None:
            plain = self._plain.where(F.col(PLAIN_COLUMN).isNotNull())
            parts.append(plain.select(f"{PLAIN_COLUMN}.*"))
        if self._python is not None:
            valid = self._python.where(F.col(REJECT_COLUMN).isNull())
            parts.append(valid.select(*(F.col(f"`{c}`") for c in self.columns)))
        if self._driver_rows is not None:
            parts.append(self._driver_rows)
        frame = parts[0]
        for part in parts[1:]:
            frame = frame.unionByName(part)
        return frame

    def release(self) -> None:
        """Drop the cached frames."""
        for frame in self._cached:
            frame.unpersist()
        self._cached.clear()

    # -- internals ---------------------------------------------------------

    def _cache(self, frame: DataFrame) -> DataFrame:
        frame.persist(StorageLevel.MEMORY_AND_DISK)
        self._cached.append(frame)
        return frame

    def _decode_in_python(self, records: DataFrame) -> DataFrame:
        return records.select(*KAFKA_COLUMNS).mapInArrow(
            arrow_decoder(self.schema, self.options),
            # An Iceberg timestamp is Spark's timestamp_ntz, as on the JVM path and the driver.
            from_arrow_schema(decoded_schema(self.schema), prefer_timestamp_ntz=True),
        )

    def _rejects(self, declined: int, declined_bytes: int) -> list[dict[str, Any]]:
        """The malformed records; the declined ones are decoded in Python first.

        Args:
            declined: how many records the JVM path declined.
            declined_bytes: the bytes of their values.
        """
        if self._python is None:
            assert self._plain is not None
            raw = self._plain.where(F.col(RAW_COLUMN).isNotNull()).select(f"{RAW_COLUMN}.*")
            if declined <= self.driver_max and declined_bytes <= DRIVER_DECODE_MAX_BYTES:
                return self._decode_on_driver(raw)
            self._python = self._cache(self._decode_in_python(raw))
        found = self._python.where(F.col(REJECT_COLUMN).isNotNull()).select(REJECT_COLUMN)
        return [r[REJECT_COLUMN].asDict(recursive=True) for r in found.collect()]

    def _decode_on_driver(self, raw: DataFrame) -> list[dict[str, Any]]:
        """Decode the declined records here; keep their valid rows for ``rows()``.

        Returns:
            The rejects, as ``_rejects`` gives them.
        """
        import pyarrow as pa
        import pyarrow.compute as pc

        decoded = decode_arrow(raw.toArrow(), RecordDecoder(self.schema, self.options))
        valid = pc.is_null(decoded.column(REJECT_COLUMN))
        rejects = decoded.filter(pc.invert(valid)).column(REJECT_COLUMN).to_pylist()
        rows = pa.Table.from_batches([decoded.filter(valid)]).select(self.columns)
        if rows.num_rows:
            # The JVM path's types (timestamp as timestamp_ntz), nullable all through: Arrow
            # cannot cast a null struct with a required field, so the rows go through Python.
            types = all_nullable(spark_schema(self.schema))
            assert isinstance(types, T.StructType)
            table = pa.Table.from_pylist(rows.to_pylist(), schema=to_arrow_schema(types))
            self._driver_rows = raw.sparkSession.createDataFrame(table, schema=types)
        return rejects


def all_nullable(t: T.DataType) -> T.DataType:
    """``t`` with every field, element and map value nullable."""
    if isinstance(t, T.StructType):
        return T.StructType([T.StructField(f.name, all_nullable(f.dataType)) for f in t.fields])
    if isinstance(t, T.ArrayType):
        return T.ArrayType(all_nullable(t.elementType))
    if isinstance(t, T.MapType):
        return T.MapType(t.keyType, all_nullable(t.valueType))
    return t
