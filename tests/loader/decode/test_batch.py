"""Batch decoding, starting offsets, lag, status text and CLI flags: no services needed.

Decoding is tested through what the executors run for records in Python, ``decode_arrow``,
then ``merge_side`` (the offset ranges, counts and rejects the driver plans the commit with)
over per-partition summaries like those Spark aggregates (``frames.DecodedBatch.summary``).
Skipping what the table already holds is a Spark filter in the sink; the integration tests
(a restart, a kill after a commit) exercise it.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json

import pyarrow as pa
from pyiceberg import types as it
from pyiceberg.schema import Schema

from icefloe.loader.cli import configure_parser
from icefloe.loader.commit.lease import Lease
from icefloe.loader.commit.offsets import OffsetRange
from icefloe.loader.config import DecodeOptions, flag_values
from icefloe.loader.decode.batch import (
    POSITION_COLUMN,
    REJECT_COLUMN,
    BatchSide,
    arrow_decoder,
    decode_arrow,
    decoded_schema,
    merge_side,
    rejects_from_rows,
)
from icefloe.loader.decode.record import RecordDecoder
from icefloe.loader.io.topics import EARLIEST, starting_offsets_json
from icefloe.loader.run.job import lag
from icefloe.loader.run.status import PartitionStatus, Status, format_status

SCHEMA = Schema(
    it.NestedField(1, "id", it.LongType(), required=False),
    it.NestedField(2, "name", it.StringType(), required=False),
)
HEADERS = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))


def records(rows: list[tuple[str, int, int, bytes | None]]) -> pa.Table:
    """Kafka source columns as Spark hands them over: (topic, partition, offset, value)."""
    base = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    return pa.table(
        {
            "key": pa.array([b"k"] * len(rows), pa.binary()),
            "value": pa.array([r[3] for r in rows], pa.binary()),
            "topic": pa.array([r[0] for r in rows], pa.string()),
            "partition": pa.array([r[1] for r in rows], pa.int32()),
            "offset": pa.array([r[2] for r in rows], pa.int64()),
            "timestamp": pa.array(
                [base + dt.timedelta(seconds=r[2]) for r in rows], pa.timestamp("us", tz="UTC")
            ),
            "headers": pa.array([[{"key": "h", "value": b"v"}]] * len(rows), HEADERS),
        }
    )


def row(i: int) -> bytes:
    return json.dumps({"id": i, "name": f"n{i}"}).encode()


def summarize(decoded: list[pa.RecordBatch]) -> list[dict[str, object]]:
    """Per-partition summary rows of one task's decoded batches, as Spark aggregates them."""
    out: dict[tuple[str, int], dict[str, object]] = {}
    for batch in decoded:
        for p in batch.column(POSITION_COLUMN).to_pylist():
            r = out.setdefault(
                (p["topic"], p["partition"]),
                {"topic": p["topic"], "partition": p["partition"], "lo": p["offset"], "n": 0},
            )
            r["lo"] = min(r["lo"], p["offset"])  # type: ignore[type-var]
            r["hi"] = max(r.get("hi", p["offset"]), p["offset"])  # type: ignore[type-var]
            r["n"] += 1  # type: ignore[operator]
            r["timestamp_ms"] = max(r.get("timestamp_ms", p["timestamp_ms"]), p["timestamp_ms"])  # type: ignore[type-var]
    return list(out.values())


def rejects_of(decoded: list[pa.RecordBatch]) -> list[dict[str, object]]:
    return [r for b in decoded for r in b.column(REJECT_COLUMN).to_pylist() if r is not None]


def decode(batch: pa.Table) -> tuple[list[dict[str, object]], BatchSide]:
    """Decode a batch as the sink does: the valid rows it appends and the side it plans with."""
    decoded = decode_arrow(batch, RecordDecoder(SCHEMA, DecodeOptions()))
    rows = [
        {k: v for k, v in r.items() if k not in (REJECT_COLUMN, POSITION_COLUMN)}
        for r in decoded.to_pylist()
        if r[REJECT_COLUMN] is None
    ]
    return rows, merge_side(summarize([decoded]), rejects_of([decoded]))


def test_decoding_splits_rows_and_rejects_and_reports_ranges() -> None:
    batch = records([("t", 0, 5, row(5)), ("t", 0, 6, b"{bad"), ("t", 1, 9, row(9))])
    rows, side = decode(batch)
    assert rows == [{"id": 5, "name": "n5"}, {"id": 9, "name": "n9"}]
    assert [(r.meta.offset, r.error.kind.value) for r in side.rejects] == [(6, "invalid_json")]
    assert side.rejects[0].meta.headers == (("h", b"v"),)
    assert side.ranges == (OffsetRange("t", 0, 5, 7), OffsetRange("t", 1, 9, 10))
    epoch = int(dt.datetime(2024, 1, 1, tzinfo=dt.UTC).timestamp() * 1000)
    assert side.max_timestamp_ms == epoch + 9000


def test_empty_batch() -> None:
    rows, side = decode(records([]))
    assert rows == []
    assert (side.ranges, side.count) == ((), 0)


def test_decode_arrow_marks_rejects_in_their_own_column() -> None:
    batch = records([("t", 0, 5, row(5)), ("t", 0, 6, b"{bad"), ("t", 1, 9, None)])
    out = decode_arrow(batch.to_batches()[0], RecordDecoder(SCHEMA, DecodeOptions()))
    assert out.schema == decoded_schema(SCHEMA)
    got = out.to_pylist()
    epoch = int(dt.datetime(2024, 1, 1, tzinfo=dt.UTC).timestamp() * 1000)
    position = {"topic": "t", "partition": 0, "offset": 5, "timestamp_ms": epoch + 5000}
    assert got[0] == {"id": 5, "name": "n5", REJECT_COLUMN: None, POSITION_COLUMN: position}
    assert [r[POSITION_COLUMN]["offset"] for r in got] == [5, 6, 9]
    assert got[1]["id"] is None and got[1]["name"] is None
    rejects = rejects_from_rows(r[REJECT_COLUMN] for r in got if r[REJECT_COLUMN] is not None)
    assert [(r.meta.partition, r.meta.offset, r.error.kind.value) for r in rejects] == [
        (0, 6, "invalid_json"),
        (1, 9, "empty_payload"),
    ]
    first = rejects[0]
    assert (first.value, first.meta.key, first.meta.headers) == (b"{bad", b"k", (("h", b"v"),))
    assert first.meta.timestamp_ms == epoch + 6000


def test_a_reject_naming_a_map_key_with_a_lone_surrogate_reaches_arrow() -> None:
    schema = Schema(
        it.NestedField(
            1, "m", it.MapType(2, it.StringType(), 3, it.BooleanType(), value_required=False)
        )
    )
    batch = records([("t", 0, 1, b'{"m": {"\\ud800x": true}}')])
    out = decode_arrow(batch, RecordDecoder(schema, DecodeOptions())).to_pylist()
    reject = out[0][REJECT_COLUMN]
    assert (reject["kind"], reject["path"]) == ("invalid_utf8", 'm["\\ud800x"]')


def test_merge_side_gives_ranges_counts_and_rejects_across_tasks() -> None:
    decoder = RecordDecoder(SCHEMA, DecodeOptions())
    # Two tasks: partition 0 split over two Arrow batches, partition 1 in another task.
    task_a = [
        decode_arrow(records([("t", 0, 5, row(5)), ("t", 0, 6, b"{bad")]).to_batches()[0], decoder),
        decode_arrow(records([("t", 0, 7, row(7))]).to_batches()[0], decoder),
    ]
    task_b = [
        decode_arrow(records([("t", 1, 9, None), ("u", 0, 2, row(2))]).to_batches()[0], decoder)
    ]
    summary = [r for task in (task_a[:1], task_a[1:], task_b) for r in summarize(task)]
    side = merge_side(summary, rejects_of(task_b) + rejects_of(task_a))
    assert side.ranges == (
        OffsetRange("t", 0, 5, 8),
        OffsetRange("t", 1, 9, 10),
        OffsetRange("u", 0, 2, 3),
    )
    assert side.count == 5
    epoch = int(dt.datetime(2024, 1, 1, tzinfo=dt.UTC).timestamp() * 1000)
    assert side.max_timestamp_ms == epoch + 9000
    assert [(r.meta.topic, r.meta.partition, r.meta.offset) for r in side.rejects] == [
        ("t", 0, 6),
        ("t", 1, 9),
    ]


def test_merge_side_of_nothing_is_empty() -> None:
    side = merge_side([])
    assert (side.ranges, side.count, side.max_timestamp_ms, side.rejects) == ((), 0, None, ())


def test_arrow_decoder_decodes_every_batch_it_is_given() -> None:
    batches = records([("t", 0, o, row(o)) for o in range(3)]).to_batches(max_chunksize=2)
    run = arrow_decoder(SCHEMA, DecodeOptions())
    out = [r["id"] for b in run(iter(batches)) for r in b.to_pylist()]
    assert out == [0, 1, 2]


def test_starting_offsets_name_every_partition() -> None:
    got = starting_offsets_json({"a": [0, 1, 2], "b": [0]}, {"a": {0: 10, 2: 5}, "gone": {0: 1}})
    assert got == {"a": {"0": 10, "1": EARLIEST, "2": 5}, "b": {"0": EARLIEST}}


def test_lag_is_high_watermark_minus_committed() -> None:
    highs = {("a", 0): 100, ("a", 1): 7, ("b", 0): 3}
    assert lag(highs, {"a": {0: 90, 1: 9}}) == {("a", 0): 10, ("a", 1): 0, ("b", 0): 3}


def test_status_text() -> None:
    status = Status(
        table="lake.s.t",
        snapshot_id=42,
        loader_id="l1",
        partitions=(PartitionStatus("topic", 0, 10, 15, 5),),
        freshness_s=1.25,
        leases=(Lease("l1", 0),),
        history_truncated=False,
    )
    text = format_status(status)
    assert "snapshot 42 by loader l1" in text
    assert "freshness  1.2 s" in text or "freshness  1.3 s" in text
    assert "l1 (expired)" in text
    assert text.splitlines()[-1].split() == ["topic", "0", "10", "15", "5"]


def test_cli_flags_become_config_settings() -> None:
    parser = configure_parser(argparse.ArgumentParser())
    args = parser.parse_args(["status", "--config", "x.toml", "--kafka-bootstrap", "h:1"])
    assert args.action == "status"
    assert args.config == "x.toml"
    assert flag_values(args) == {"kafka.bootstrap": "h:1"}
    assert parser.parse_args([]).action == "run"
