"""Loader throughput and freshness on the running stack: rows/s and publish-to-visible latency.

Prints numbers; asserts nothing about timing.  Needs the stack (``icefloe up``)
in the same environment (``ICEFLOE_RUN_DIR``, ``ICEFLOE_STACK_*``).  Examples::

    python benchmarks/bench_loader.py                        # both parts
    python benchmarks/bench_loader.py --rows 200000 --skip-latency
    python benchmarks/bench_loader.py --skip-throughput --rate 1000 --seconds 30
    python benchmarks/bench_loader.py --window-days 365    # event times spread over a year

Event times: near-real-time events are recent, so by default the rows' event
times fall within ``--window-days 1`` before now (a micro-batch touches one or
two ``day(timestamp)`` partitions of the reference table).  A wide window makes
every batch write one small file per day it touches.

1. Decoding alone: ``loader.decode.batch.decode_arrow`` (what executors run) on
   reference rows, one core.
2. Sustained load: ``--rows`` reference rows pre-published to a 2-partition
   topic, loaded with a 1 s trigger and ``--per-trigger`` records per batch;
   rows/s counts from the end of the first (warm-up) batch to the last commit.
3. Freshness: ``--rate`` msg/s for ``--seconds`` into one partition with a
   1 s trigger; each message carries its sequence number in ``integer`` and
   Trino is polled for ``max(integer)``; latency = first poll seeing a message
   minus its publish time (includes Trino's query time, ~0.1-0.3 s).
"""

from __future__ import annotations

import argparse
import json
import logging
import threading
import time
import uuid
from typing import Any

from icefloe.harness.bench.freshness import latencies, publish_numbered, watch_sequence
from icefloe.harness.bench.stages import kafka_records
from icefloe.harness.bench.workload import create_topic, publish_alternating, reference_values
from icefloe.harness.loaders.config import stack_loader_config
from icefloe.harness.scenarios.checks.facts.numbers import percentile
from icefloe.harness.stack.lakehouse import Stack
from icefloe.harness.stack.tables import create_table_sql
from icefloe.loader.config import DecodeOptions, LoaderConfig
from icefloe.loader.decode.batch import decode_arrow
from icefloe.loader.decode.record import RecordDecoder
from icefloe.loader.run.job import LoaderJob


def _config(stack: Stack, table: str, topic: str, **settings: Any) -> LoaderConfig:
    return stack_loader_config(stack, table, [topic], loader_id="bench", **settings)


def bench_decode(values: list[bytes]) -> float:
    """Rows/s of ``decode_arrow`` alone on one core."""
    from icefloe.publisher.rows import reference_schema

    records = kafka_records(values, "t")
    decoder = RecordDecoder(reference_schema(), DecodeOptions())
    start = time.perf_counter()
    decode_arrow(records, decoder)
    return len(values) / (time.perf_counter() - start)


def bench_throughput(
    stack: Stack, spark: Any, schema: str, values: list[bytes], per_trigger: int
) -> tuple[float, int, int]:
    """Sustained rows/s after warm-up, rows loaded, batches."""

    table = f"lake.{schema}.tput_{uuid.uuid4().hex[:6]}"
    stack.query(create_table_sql(table))
    topic = create_topic(stack, 2)
    publish_alternating(stack, topic, values)
    config = _config(
        stack, table, topic, trigger_interval=1.0, kafka={"max_offsets_per_trigger": per_trigger}
    )
    job = LoaderJob(config, spark)
    marks: list[tuple[float, int]] = []
    job.start()
    try:
        while not marks or marks[-1][1] < len(values):
            job.wait(0.2)
            total = int(job.metrics.registry.get_sample_value("icefloe_loader_rows_written_total"))
            if total != (marks[-1][1] if marks else 0):
                marks.append((time.perf_counter(), total))
    finally:
        job.stop()
    (t0, r0), (t1, r1) = marks[0], marks[-1]
    return (r1 - r0) / (t1 - t0), r1, len(marks)


def bench_latency(
    stack: Stack, spark: Any, schema: str, rate: int, seconds: int, window: float
) -> list[float]:
    """Publish-to-visible-in-Trino latencies (seconds) at ``rate`` msg/s."""
    from confluent_kafka import Producer

    table = f"lake.{schema}.lat_{uuid.uuid4().hex[:6]}"
    stack.query(create_table_sql(table))
    topic = create_topic(stack, 1)
    config = _config(stack, table, topic, trigger_interval=1.0)
    job = LoaderJob(config, spark)
    job.start()
    # Warm up the query (Python workers, JIT) before measuring.
    producer = Producer({"bootstrap.servers": stack.bootstrap_servers, "linger.ms": 0})
    body = json.loads(reference_values(1, window)[0])
    body["integer"] = -1
    producer.produce(topic, json.dumps(body).encode())
    producer.flush(10)
    while not stack.query(f"SELECT count(*) FROM {table}")[0][0]:
        job.wait(0.5)

    sent: list[float] = []
    total = rate * seconds
    thread = threading.Thread(
        target=publish_numbered, args=(producer, topic, body, rate, total, sent), daemon=True
    )
    thread.start()
    waiter = threading.Thread(target=lambda: job.wait(seconds + 60), daemon=True)
    waiter.start()
    seen_at = watch_sequence(stack, table, total, time.monotonic() + seconds + 60)
    job.request_stop()
    waiter.join(60)
    job.stop()
    return latencies(sent, seen_at)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=150_000)
    parser.add_argument("--per-trigger", type=int, default=50_000)
    parser.add_argument("--rate", type=int, default=1000)
    parser.add_argument("--seconds", type=int, default=30)
    parser.add_argument(
        "--window-days", type=float, default=1.0, help="event times span this many days to now"
    )
    parser.add_argument("--skip-throughput", action="store_true")
    parser.add_argument("--skip-latency", action="store_true")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("icefloe.loader").setLevel(logging.INFO)

    stack = Stack()
    values = reference_values(
        min(args.rows, 50_000) if args.skip_throughput else args.rows, args.window_days
    )
    print(f"event times within {args.window_days:g} days before now")
    print(f"decode_arrow alone: {bench_decode(values[:50_000]):,.0f} rows/s (one core)")

    from icefloe.loader.run.spark import session

    schema = f"bench_{uuid.uuid4().hex[:6]}"
    stack.query(f"CREATE SCHEMA lake.{schema}")
    spark = session(_config(stack, f"lake.{schema}.x", "x"))
    try:
        if not args.skip_throughput:
            rate, rows, batches = bench_throughput(stack, spark, schema, values, args.per_trigger)
            print(
                f"sustained load: {rate:,.0f} rows/s ({rows:,} rows in {batches} commits, "
                f"{args.per_trigger:,} per trigger, local[2])"
            )
        if not args.skip_latency:
            lat = sorted(
                bench_latency(stack, spark, schema, args.rate, args.seconds, args.window_days)
            )
            p50 = percentile(lat, 50)
            p99 = percentile(lat, 99)
            print(
                f"publish-to-visible in Trino at {args.rate} msg/s, 1 s trigger: "
                f"p50 {p50:.2f} s, p99 {p99:.2f} s, max {lat[-1]:.2f} s ({len(lat)} messages)"
            )
    finally:
        spark.stop()
        for (name,) in stack.query(f"SHOW TABLES FROM lake.{schema}"):
            stack.query(f"DROP TABLE lake.{schema}.{name}")
        stack.query(f"DROP SCHEMA lake.{schema}")


if __name__ == "__main__":
    main()
