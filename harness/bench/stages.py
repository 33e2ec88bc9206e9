"""Two stages of every Kafka-to-Iceberg loader, measured alone on the backlog's messages.

- raw consume, a bound: confluent-kafka reads the topic from its first offset with no parsing.
  No loader reads the topic faster than one consumer does with nothing else to do.
- parse to Parquet, a baseline: the loader's strict Python decoder
  (`loader.decode.batch.decode_arrow`, one `loader.decode.record.RecordDecoder`) turns the messages
  into Arrow rows of the table's schema, and pyarrow writes them to one local Parquet file: no
  Kafka, no catalog, one core. The loader decodes most records in the JVM and on both cores, so it
  runs faster than this: a baseline (what a single-core Python loader could reach at best), not a
  bound.

The other bound, the engine's own cost, is `harness.bench.engine`.
"""

from __future__ import annotations

import datetime as dt
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from icefloe.harness.bench.figures import BASELINE, BOUND, PARSE_TO_PARQUET, RAW_CONSUME, Throughput

CHUNK = 50_000  # messages per decoded Arrow batch (about a task's share of a loader batch)


def raw_consume(stack: Any, topic: str, rows: int, partitions: int) -> Throughput:
    """Read ``rows`` messages of ``topic`` from offset 0 with no parsing, and time it."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": stack.bootstrap_servers,
            "group.id": f"bench-raw-{uuid.uuid4().hex[:6]}",
            "enable.auto.commit": False,
            "fetch.max.bytes": 64 * 1024 * 1024,
            "max.partition.fetch.bytes": 16 * 1024 * 1024,
        }
    )
    seen = 0
    started = time.monotonic()
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        while seen < rows:
            for message in consumer.consume(num_messages=10_000, timeout=1.0):
                if message.error() is None:
                    seen += 1
            if time.monotonic() - started > 600:
                raise RuntimeError(f"raw consume read {seen:,} of {rows:,} in 600 s")
        seconds = time.monotonic() - started
    finally:
        consumer.close()
    return Throughput(
        RAW_CONSUME,
        "bound: raw consume (confluent-kafka)",
        BOUND,
        seen,
        seconds,
        detail=f"{partitions} partitions, one consumer, no parsing",
    )


def kafka_records(values: Sequence[bytes], topic: str = "bench") -> Any:
    """``values`` as the Arrow table of Kafka source columns the loader's decoder reads."""
    import pyarrow as pa

    n = len(values)
    headers = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
    now = dt.datetime.now(dt.UTC)
    return pa.table(
        {
            "key": pa.nulls(n, pa.binary()),
            "value": pa.array(values, pa.binary()),
            "topic": pa.array([topic] * n, pa.string()),
            "partition": pa.array([0] * n, pa.int32()),
            "offset": pa.array(range(n), pa.int64()),
            "timestamp": pa.array([now] * n, pa.timestamp("us", tz="UTC")),
            "headers": pa.nulls(n, headers),
        }
    )


def parse_to_parquet(values: Sequence[bytes], folder: Path | None = None) -> Throughput:
    """Decode ``values`` with the loader's strict decoder and write them to Parquet; time it.

    The Arrow input columns are built before the clock starts (a Kafka source hands them over
    so); the clock covers decoding, dropping the loader's bookkeeping columns and writing.
    """
    import pyarrow.parquet as pq

    from icefloe.loader.config import DecodeOptions
    from icefloe.loader.decode.batch import REJECT_COLUMN, decode_arrow
    from icefloe.loader.decode.record import RecordDecoder
    from icefloe.publisher.rows import reference_schema

    decoder = RecordDecoder(reference_schema(), DecodeOptions())
    chunks = [kafka_records(values[i : i + CHUNK]) for i in range(0, len(values), CHUNK)]
    rows = rejects = 0
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        path = Path(tmp) / "rows.parquet"
        writer: Any = None
        started = time.monotonic()
        for chunk in chunks:
            decoded = decode_arrow(chunk, decoder)
            rejects += decoded.num_rows - decoded.column(REJECT_COLUMN).null_count
            body = decoded.select(decoded.schema.names[:-2])  # no reject, no position
            if writer is None:
                writer = pq.ParquetWriter(path, body.schema, compression="zstd")
            writer.write_batch(body)
            rows += body.num_rows
        if writer is not None:
            writer.close()
        seconds = time.monotonic() - started
    if rejects:
        raise RuntimeError(f"{rejects} reference rows were rejected by the strict decoder")
    return Throughput(
        PARSE_TO_PARQUET,
        "baseline: parse to Parquet (Python strict decoder, one core)",
        BASELINE,
        rows,
        seconds,
        detail="icefloe.loader.decode.batch.decode_arrow + pyarrow.parquet, no Kafka, no catalog",
        files=1,
    )
