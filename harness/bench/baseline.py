"""The baseline: what a user would write by hand with confluent-kafka and pyiceberg.

One process subscribes to the topic, parses each message with ``json.loads`` (timestamps with
``datetime.fromisoformat``), and every ``--every`` seconds appends what it holds to the Iceberg
table through pyiceberg (the stack's REST catalog and MinIO), then commits its Kafka offsets.
It is a baseline, not a loader: it is not exactly-once (a crash between the append and the
offset commit loads rows twice), it checks no types (``from_pylist`` coerces what it can), it has
no dead-letter topic, no lease, no schema evolution.

`run_baseline` starts it as a subprocess (so its start-up counts as the loader's does, and the
bench's Trino polling does not share its interpreter);
``python -m icefloe.harness.bench.baseline`` is that subprocess.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from icefloe.harness.bench.figures import BASELINE, Throughput
from icefloe.harness.bench.workload import data_files, watch_until_visible


def load(stack: Any, table_name: str, topic: str, rows: int, every_s: float) -> None:
    """Consume ``rows`` messages of ``topic``; append them to ``table_name`` every ``every_s``."""
    import pyarrow as pa
    from confluent_kafka import Consumer
    from pyiceberg.io.pyarrow import schema_to_pyarrow

    _, namespace, name = table_name.split(".")
    table = stack.pyiceberg_catalog().load_table((namespace, name))
    schema = schema_to_pyarrow(table.schema())
    consumer = Consumer(
        {
            "bootstrap.servers": stack.bootstrap_servers,
            "group.id": f"bench-baseline-{uuid.uuid4().hex[:6]}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    pending: list[dict[str, Any]] = []
    loaded = 0
    last = time.monotonic()
    try:
        while loaded < rows:
            for message in consumer.consume(num_messages=10_000, timeout=0.5):
                if message.error() is not None:
                    raise RuntimeError(f"consume: {message.error()}")
                row = json.loads(message.value() or b"null")
                row["timestamp"] = dt.datetime.fromisoformat(row["timestamp"])
                pending.append(row)
            due = time.monotonic() - last >= every_s or loaded + len(pending) >= rows
            if pending and due:
                table.append(pa.Table.from_pylist(pending, schema=schema))
                consumer.commit(asynchronous=False)
                loaded += len(pending)
                pending = []
                last = time.monotonic()
    finally:
        consumer.close()


def run_baseline(
    stack: Any, table: str, topic: str, rows: int, every_s: float, log: Path
) -> Throughput:
    """Run the baseline on a backlog of ``rows`` rows; time it from its process start.

    Raises:
        RuntimeError: it exited before every row was visible, or took over an hour.
    """
    argv = [
        sys.executable,
        "-m",
        "icefloe.harness.bench.baseline",
        "--table",
        table,
        "--topic",
        topic,
    ]
    argv += ["--rows", str(rows), "--every", str(every_s)]
    with log.open("ab") as out:
        started = time.monotonic()
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
        try:

            def alive() -> str | None:
                code = proc.poll()
                if code not in (None, 0):
                    return f"the baseline exited with {code}; see {log}"
                return None

            seen = watch_until_visible(stack, table, rows, started, 3600, alive)
            proc.wait(60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(30)
    return Throughput(
        BASELINE,
        f"baseline: confluent-kafka + pyiceberg, every {every_s:g} s",
        BASELINE,
        rows,
        seen.all_seconds,
        seen.first_seconds,
        seen.first_rows,
        detail="one process, json.loads, append + offset commit; not exactly-once",
        files=data_files(stack, table),
    )


def main() -> None:
    from icefloe.harness.stack.lakehouse import Stack

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--table", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--rows", type=int, required=True)
    parser.add_argument("--every", type=float, default=5.0)
    args = parser.parse_args()
    load(Stack(), args.table, args.topic, args.rows, args.every)


if __name__ == "__main__":
    main()
