"""A few declined records decoded on the driver give what the Python workers give.

``DecodedBatch`` decodes the records the JVM path declines on the driver when they are few
(``frames.DRIVER_DECODE_MAX_RECORDS``) and in the Python workers otherwise. Each Hypothesis
example draws a schema and a batch of plain, re-cased, corrupted and mutated records, decodes it
both ways in the loader's session, and compares the valid rows, bit for bit, and the rejects.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, NamedTuple

import pyarrow as pa
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from pyiceberg.schema import Schema
from pyspark.sql import functions as F

from icefloe.loader.config import DecodeOptions
from icefloe.loader.decode.batch import Reject
from icefloe.loader.decode.frames import DecodedBatch, all_nullable
from icefloe.loader.ext.fastpath.onepass import FastPath
from tests.loader.ext.test_plain import (
    HEADERS,
    SETTINGS,
    batches,
    corrupted,
    options_strategy,
    same,
)
from tests.loader.strategies import Document, mutated

pytestmark = pytest.mark.integration


def _records(spark: Any, payloads: list[bytes | None]) -> Any:
    at = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    n = len(payloads)
    kafka = pa.table(
        {
            "key": pa.array([b"k"] * n, pa.binary()),
            "value": pa.array(payloads, pa.binary()),
            "topic": pa.array(["t"] * n, pa.string()),
            "partition": pa.array([i % 2 for i in range(n)], pa.int32()),
            "offset": pa.array(range(n), pa.int64()),
            "timestamp": pa.array([at] * n, pa.timestamp("us", tz="UTC")),
            "headers": pa.array([[{"key": "h", "value": b"v"}]] * n, HEADERS),
        }
    )
    return spark.createDataFrame(kafka).repartition(2)


class Decoded(NamedTuple):
    rows: list[dict[str, Any]]
    rejects: tuple[Reject, ...]
    python_workers: bool
    types: Any
    """The rows' Spark type, nullable all through (the routes differ in nullability only)."""


def _decode(records: Any, schema: Schema, options: DecodeOptions, driver_max: int) -> Decoded:
    batch = DecodedBatch(records, schema, options, FastPath().column, driver_max)
    try:
        side = batch.summary()
        frame = batch.rows()
        # Nullable all through, for Arrow: it refuses a null struct whose field is required.
        types = all_nullable(frame.schema)
        frame = frame.select(
            *(F.col(f"`{f.name}`").cast(all_nullable(f.dataType)) for f in frame.schema.fields)
        )
        rows = sorted(frame.toArrow().to_pylist(), key=repr)
        return Decoded(rows, side.rejects, batch.python_workers, types)
    finally:
        batch.release()


def _key(reject: Reject) -> tuple[Any, ...]:
    e = reject.error
    return (reject.value, reject.meta, e.kind, e.path, e.expected, e.reason)


# Each example decodes its batch twice in Spark (about 3.4 s on two cores): 20 examples keep
# the test near a minute of CI; the plain-record properties run 40 without Spark.
@settings(SETTINGS, max_examples=20)
@given(batches(plain=False), options_strategy, st.data())
def test_the_driver_and_the_python_workers_decode_declined_records_alike(
    spark: Any, batch: tuple[Schema, list[Document]], options: DecodeOptions, data: st.DataObject
) -> None:
    schema, docs = batch
    payloads: list[bytes | None] = [None, b"", b"[]", b"{"]
    for doc in docs:
        payloads += [doc.payload, corrupted(doc.payload, data)]
        if doc.sites:
            payloads.append(mutated(doc, data)[0])
    records = _records(spark, payloads)
    workers = _decode(records, schema, options, driver_max=0)
    driver = _decode(records, schema, options, driver_max=len(payloads))
    assert workers.python_workers, "driver_max=0 sends every declined record to the workers"
    assert not driver.python_workers, "a batch's few declined records are decoded on the driver"
    # One Spark type per column whatever the route (an Iceberg timestamp is timestamp_ntz).
    assert driver.types == workers.types
    assert len(driver.rows) == len(workers.rows)
    for a, b in zip(driver.rows, workers.rows, strict=True):
        same(a, b)
    assert [_key(r) for r in driver.rejects] == [_key(r) for r in workers.rejects]
    assert len(driver.rows) + len(driver.rejects) == len(payloads)
    event(f"rows {min(len(driver.rows), 5)}+, rejects {min(len(driver.rejects), 5)}+")
