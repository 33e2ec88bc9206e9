"""The engine's own cost: Spark reads the topic, the loader's JVM decoder decodes, Iceberg appends.

A bound on the loader measured on the same backlog: everything the loader's engine must do,
and none of the loader's guarantees. It starts Spark as the loader does
(`loader.run.spark.session` with the loader's configuration for the stack: its jars, Java, JIT
and class-data archive), reads the topic with the loader's Kafka source options
(``KafkaConfig.spark_options``: the same ``maxOffsetsPerTrigger``) as a stream triggered
``availableNow``, decodes every record with the loader's JVM decoder
(`loader.ext.fastpath.plain.plain_column`) and appends the rows to the table with Iceberg's
writer as the loader hands them over (`loader.keys.APPEND_OPTIONS`: no shuffle, each
task's rows sorted by partition). There is no validation split and no dead letter (a
record the decoder declines would be appended as a row of nulls; the bench's backlogs have
none), no lease or fencing, no offsets in the snapshot summary, no first slice, no metrics:
what the loader takes longer than this is what its guarantees cost.

`run_engine` starts it as a subprocess (so its start-up counts as the loader's does) and times
it from the process start to every row visible in Trino;
``python -m icefloe.harness.bench.engine`` is that subprocess.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from icefloe.harness.bench.figures import BOUND, ENGINE, Throughput
from icefloe.harness.bench.workload import data_files, watch_until_visible

TIMEOUT_S = 3600


def load(config_file: Path, checkpoint: Path) -> None:
    """Load the topic of ``config_file``'s loader configuration into its table; then return.

    Args:
        config_file: a loader configuration (TOML) for the stack, its table and its topic.
        checkpoint: the stream's checkpoint folder (new, empty).
    """
    from icefloe.loader.config import load_config
    from icefloe.loader.ext.classdata import ClassData
    from icefloe.loader.ext.fastpath.plain import plain_column
    from icefloe.loader.keys import APPEND_OPTIONS
    from icefloe.loader.run.spark import session

    config = load_config(config_file, env={})
    class_data = ClassData.plan(config.spark.class_data)
    spark = session(config, class_data=class_data)
    _say("Spark session up")
    table = str(config.table)
    schema = _iceberg_schema(config)
    try:
        options = config.kafka.spark_options()
        options["startingOffsets"] = "earliest"
        source: Any = spark.readStream.format("kafka")
        for key, value in options.items():
            source = source.option(key, value)

        def append(records: Any, _batch_id: int) -> None:
            # No filter on the decoded row: Spark pushes a filter below the projection and
            # would run the decoder twice per record (once to filter, once to project).
            row = plain_column(records, schema, config.decode).alias("row")
            rows = records.select(row).select("row.*")
            writer = rows.writeTo(table)
            for key, value in APPEND_OPTIONS.items():
                writer = writer.option(key, value)
            writer.append()
            _say(f"batch {_batch_id} appended")

        query = (
            source.load()
            .writeStream.queryName(f"bench-engine-{uuid.uuid4().hex[:6]}")
            .foreachBatch(append)
            .trigger(availableNow=True)
            .option("checkpointLocation", str(checkpoint))
            .start()
        )
        query.awaitTermination()
    finally:
        class_data.finish(spark, keep=False)
        spark.stop()


_BEGAN = time.monotonic()


def _say(what: str) -> None:
    """A line of the run's log, with the seconds since the process started to run Python."""
    print(f"{time.monotonic() - _BEGAN:6.1f} s  {what}", flush=True)


def _iceberg_schema(config: Any) -> Any:
    """The table's current schema (pyiceberg), through the loader's catalog settings."""
    from icefloe.loader import catalogs

    catalog = catalogs.client(config.table.catalog, config.catalog)
    return catalog.load_table(f"{config.table.namespace}.{config.table.name}").schema()


def run_engine(
    stack: Any, folder: Path, table: str, topic: str, rows: int, per_trigger: int
) -> Throughput:
    """The engine's own cost on a backlog of ``rows`` rows of ``topic``, into ``table``.

    Raises:
        RuntimeError: it exited before every row was visible, or took over an hour.
    """
    from icefloe.harness.loaders.config import secret_key_file, stack_loader_config
    from icefloe.loader.secret import Secret

    # Absolute: the engine runs in its folder, and a relative --out would be read from there.
    folder = folder.resolve()
    folder.mkdir(parents=True, exist_ok=True)
    config = stack_loader_config(
        stack,
        table,
        [topic],
        secret=Secret.from_file(secret_key_file(stack)),
        kafka={"max_offsets_per_trigger": per_trigger},
        loader_id=f"bench-engine-{uuid.uuid4().hex[:6]}",
    )
    config_file = folder / "engine.toml"
    config_file.write_text(config.to_toml())
    argv = [sys.executable, "-m", "icefloe.harness.bench.engine", "--config", str(config_file)]
    argv += ["--checkpoint", str(folder / "checkpoint")]
    log = folder / "engine.log"
    with log.open("ab") as out:
        started = time.monotonic()
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, cwd=folder)
        try:

            def alive() -> str | None:
                code = proc.poll()
                if code not in (None, 0):
                    return f"the engine run exited with {code}; see {log}"
                return None

            seen = watch_until_visible(stack, table, rows, started, TIMEOUT_S, alive)
            proc.wait(120)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(30)
    return Throughput(
        ENGINE,
        "bound: the engine (Spark + JVM decoder + Iceberg append)",
        BOUND,
        rows,
        seen.all_seconds,
        seen.first_seconds,
        seen.first_rows,
        detail=(
            f"availableNow, {per_trigger:,} per batch, no validation split, dead letters, "
            "fencing or offsets; no shuffle"
        ),
        files=data_files(stack, table),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", type=Path, required=True)
    parser.add_argument("--checkpoint", type=Path, required=True)
    args = parser.parse_args()
    load(args.config, args.checkpoint)


if __name__ == "__main__":
    main()
