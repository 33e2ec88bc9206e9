"""Where a loader batch's time goes: each phase as a Spark batch read of one Kafka topic.

Needs the stack up (``icefloe up``). Publishes ``--rows`` reference rows to a new
2-partition topic, then times, ``--repeat`` times each:

* reading the topic (``count()``) with the Kafka client's defaults and with
  ``loader.keys.KAFKA_CONSUMER_TUNING``;
* decoding and summarizing as the sink's first job does (``frames.DecodedBatch``), with
  the JVM path for plain records and with every record through the Python parser;
* the same, then appending the cached rows to an Iceberg table (the sink's second job).

Usage: ``python benchmarks/bench_loader_phases.py [--rows 50000] [--repeat 3]``
"""

from __future__ import annotations

import argparse
import time
import uuid
from collections.abc import Callable
from typing import Any

from bench_loader import _config, _topic, _values, publish_alternating

from icefloe.harness.stack.lakehouse import Stack
from icefloe.harness.stack.tables import create_table_sql
from icefloe.loader import keys
from icefloe.loader.config import DecodeOptions
from icefloe.loader.decode.batch import KAFKA_COLUMNS
from icefloe.loader.decode.frames import DecodedBatch
from icefloe.loader.ext.fastpath.onepass import FastPath


def _timed(label: str, run: Callable[[], Any], repeat: int) -> None:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    print(f"{label:48s} " + "  ".join(f"{t:5.2f} s" for t in times), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    from icefloe.loader.run.spark import session

    stack = Stack()
    schema_name = f"phases_{uuid.uuid4().hex[:6]}"
    table = f"lake.{schema_name}.t"
    stack.query(f"CREATE SCHEMA lake.{schema_name}")
    stack.query(create_table_sql(table))
    topic = _topic(stack, 2)
    publish_alternating(stack, topic, _values(args.rows, 1.0))
    print(f"{args.rows:,} reference rows in 2 partitions; seconds per run:")

    spark = session(_config(stack, table, topic))
    table_schema = stack.pyiceberg_catalog().load_table(f"{schema_name}.t").schema()

    def kafka(tuned: bool = True) -> Any:
        reader = (
            spark.read.format("kafka")
            .option("kafka.bootstrap.servers", stack.bootstrap_servers)
            .option("subscribe", topic)
            .option("includeHeaders", "true")
            .option("startingOffsets", "earliest")
            .option("endingOffsets", "latest")
        )
        for key, value in (keys.KAFKA_CONSUMER_TUNING if tuned else {}).items():
            reader = reader.option(key, value)
        return reader.load().select(*KAFKA_COLUMNS)

    def summary(jvm: bool, append: bool = False) -> None:
        batch = DecodedBatch(
            kafka(), table_schema, DecodeOptions(), FastPath().column if jvm else None
        )
        try:
            batch.summary()
            if append:
                started = time.perf_counter()
                (
                    batch.rows()
                    .writeTo(table)
                    .option("distribution-mode", "none")
                    .option("fanout-enabled", "true")
                    .append()
                )
                print(f"{'  of which the append':48s} {time.perf_counter() - started:5.2f} s")
        finally:
            batch.release()

    _timed("read Kafka, client defaults", lambda: kafka(tuned=False).count(), args.repeat)
    _timed("read Kafka, tuned", lambda: kafka().count(), args.repeat)
    _timed("decode+summarize, JVM path (the sink's 1st job)", lambda: summary(True), args.repeat)
    _timed("decode+summarize, Python parser only", lambda: summary(False), args.repeat)
    _timed("decode+summarize+append, JVM path", lambda: summary(True, True), args.repeat)
    spark.stop()
    stack.query(f"DROP TABLE {table}")
    stack.query(f"DROP SCHEMA lake.{schema_name}")


if __name__ == "__main__":
    main()
