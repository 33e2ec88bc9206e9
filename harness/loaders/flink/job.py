"""The reference design's Flink job, as its description reads: Kafka JSON rows of the table's
schema appended to the Iceberg table by Flink's Iceberg sink at each checkpoint, run as a
loader kind (``--loader flink``).

A Kafka source table in ``json`` format takes its columns from the Iceberg table itself (read
once at start), ``INSERT INTO`` the table runs in streaming mode, and checkpoints every
``checkpoint_interval_s`` in ``EXACTLY_ONCE`` mode go to the ``checkpoint`` folder, kept when the
job stops. A start after a stop or a kill -9 restores from the newest complete checkpoint there
(``newest_checkpoint``): without it Flink would start the job afresh. Nothing is added to what
the plain job promises: Flink's JSON format with its defaults (a value it cannot read fails the
job), no dead letters, no fence. One column type is read another way: Flink's JSON format reads
a ``TIMESTAMP_LTZ`` only with a literal ``Z`` (ISO-8601) and its ``TO_TIMESTAMP_LTZ(string,
format)`` (2.0.2) drops the offset and the microseconds, so such a column is read as a string
and turned into its instant by a Python function (``instant``), as a PyFlink user would. The
source commits its offsets to the consumer group ``loader_id`` when a checkpoint completes.

Flink restarts a failed job inside its process (its restart strategy: exponential back-off from
1 s), so a failure leaves the process alive. The job's own status says it: ``watch`` polls it
through the job's client every quarter second and prints ``flink: job restarting`` each time it
enters ``RESTARTING`` (a back-off lasts a second or more), the line ``flink.toml`` declares as its
``restart_pattern``; a job that ends ``FAILED`` ends the process with its error.

Run with PyFlink's Python (the kit provisions it: ``harness.provision.flink``) and a TOML file
(written by the kit from ``flink.toml`` beside this file)::

    python job.py --config loader.toml

the object store's keys in ``AWS_ACCESS_KEY_ID`` and ``AWS_SECRET_ACCESS_KEY`` (read by
Iceberg's S3 client, never written into the job's SQL) and Hadoop's client jars in
``HADOOP_CLASSPATH``.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

_CHECKPOINT = re.compile(r"chk-(\d+)")
RESTARTING = "flink: job restarting"
"""The line printed each time the job enters ``RESTARTING`` (``flink.toml``'s restart_pattern)."""
POLL_S = 0.25
"""How often ``watch`` reads the job's status: well inside the shortest restart back-off (1 s)."""


def newest_checkpoint(folder: Path) -> Path | None:
    """The newest complete checkpoint under ``folder`` (``<job id>/chk-<N>`` holding a
    ``_metadata`` file), or None.

    Each start of the job writes under a folder of its own job id, and checkpoint numbers go on
    from the one restored, so the highest number is the newest; a ``chk-<N>`` without
    ``_metadata`` was not completed.
    """
    found = []
    for meta in folder.glob("*/chk-*/_metadata"):
        match = _CHECKPOINT.fullmatch(meta.parent.name)
        if match:
            found.append((int(match.group(1)), meta.stat().st_mtime, meta.parent))
    return max(found)[2] if found else None


def _quote(name: str) -> str:
    return ".".join(f"`{part}`" for part in name.split("."))


ZONED = "TIMESTAMP(6) WITH LOCAL TIME ZONE"
"""How Flink names an Iceberg ``timestamptz`` column's type."""


def catalog_statement(conf: Mapping[str, object]) -> str:
    """``CREATE CATALOG`` for the table's catalog: the stack's catalog (REST, or Glue through
    ``catalog-impl``, which Iceberg's Flink ``catalog-type`` does not name) and object store."""
    catalog = str(conf["table"]).split(".", 1)[0]
    if conf.get("catalog_type", "rest") == "glue":
        where = (
            "'catalog-impl' = 'org.apache.iceberg.aws.glue.GlueCatalog',"
            f" 'glue.endpoint' = '{conf['catalog_uri']}'"
        )
    else:
        where = f"'catalog-type' = 'rest', 'uri' = '{conf['catalog_uri']}'"
    return f"""CREATE CATALOG `{catalog}` WITH (
  'type' = 'iceberg', {where},
  'warehouse' = '{conf["warehouse"]}',
  'io-impl' = 'org.apache.iceberg.aws.s3.S3FileIO',
  's3.endpoint' = '{conf["s3_endpoint"]}', 's3.path-style-access' = 'true',
  'client.region' = '{conf["s3_region"]}')"""


def statements(conf: Mapping[str, object], columns: list[tuple[str, str]]) -> tuple[str, str, str]:
    """The job's three statements: the catalog, the Kafka source table, the insert.

    Args:
        conf: the job's settings (``loader.toml``).
        columns: the table's (name, Flink SQL type), in order (``table_columns``).
    """
    table = str(conf["table"])
    fields = ",\n  ".join(
        f"`{name}` {'STRING' if kind == ZONED else kind}" for name, kind in columns
    )
    create_source = f"""CREATE TEMPORARY TABLE `kafka_source` (
  {fields}
) WITH (
  'connector' = 'kafka', 'topic' = '{conf["topic"]}',
  'properties.bootstrap.servers' = '{conf["bootstrap_servers"]}',
  'properties.group.id' = '{conf["loader_id"]}',
  'scan.startup.mode' = 'earliest-offset',
  'format' = 'json', 'json.timestamp-format.standard' = 'ISO-8601'
)"""
    selected = ", ".join(
        f"instant(`{name}`)" if kind == ZONED else f"`{name}`" for name, kind in columns
    )
    insert = f"INSERT INTO {_quote(table)} SELECT {selected} FROM `kafka_source`"
    return catalog_statement(conf), create_source, insert


def table_columns(env: Any, table: str) -> list[tuple[str, str]]:
    """The Iceberg table's columns as Flink reads them through the catalog: (name, SQL type)."""
    schema = env.from_path(table)._j_table.getResolvedSchema()
    return [
        (c.getName(), c.getDataType().getLogicalType().asSerializableString())
        for c in schema.getColumns()
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, type=Path)
    args = parser.parse_args()
    conf = tomllib.loads(args.config.read_text())

    from datetime import UTC, datetime

    from pyflink.common import Configuration
    from pyflink.table import DataTypes, EnvironmentSettings, TableEnvironment
    from pyflink.table.udf import udf

    @udf(result_type=DataTypes.TIMESTAMP_LTZ(6))  # type: ignore[misc]
    def instant(text: str | None) -> datetime | None:
        if text is None:
            return None
        return datetime.fromisoformat(text).astimezone(UTC).replace(tzinfo=None)

    checkpoints = Path(str(conf["checkpoint"]))
    checkpoints.mkdir(parents=True, exist_ok=True)
    settings = Configuration()
    settings.set_string("pipeline.name", f"flink-{conf['loader_id']}")
    settings.set_string("pipeline.jars", ";".join(Path(j).as_uri() for j in conf["jars"]))
    settings.set_string("parallelism.default", str(conf.get("parallelism", 2)))
    settings.set_string(
        "execution.checkpointing.interval",
        f"{round(float(conf['checkpoint_interval_s']) * 1000)} ms",
    )
    settings.set_string("execution.checkpointing.mode", "EXACTLY_ONCE")
    settings.set_string("execution.checkpointing.dir", checkpoints.resolve().as_uri())
    settings.set_string(
        "execution.checkpointing.externalized-checkpoint-retention", "RETAIN_ON_CANCELLATION"
    )
    settings.set_string("python.executable", sys.executable)
    settings.set_string("table.local-time-zone", "UTC")
    settings.set_string("rest.bind-address", "127.0.0.1")
    settings.set_string("rest.address", "127.0.0.1")
    restore = newest_checkpoint(checkpoints)
    if restore is not None:
        settings.set_string("execution.state-recovery.path", restore.resolve().as_uri())
    env = TableEnvironment.create(
        EnvironmentSettings.new_instance().in_streaming_mode().with_configuration(settings).build()
    )
    env.create_temporary_function("instant", instant)
    env.execute_sql(catalog_statement(conf))
    _, create_source, insert = statements(conf, table_columns(env, str(conf["table"])))
    env.execute_sql(create_source)
    result = env.execute_sql(insert)
    restored = f"restored from {restore.name}" if restore is not None else "no checkpoint yet"
    print(f"flink: job submitted ({restored})", flush=True)
    watch(result)


def watch(result: Any) -> None:
    """Wait for the job's end, printing ``RESTARTING``'s line (with the count and the state it
    left) each time the job enters that state; then ``result.wait()``, which raises the error of
    a job that failed for good."""
    client = result.get_job_client()
    previous = None
    restarts = 0
    while client is not None:
        try:
            status = client.get_job_status().result()
        except Exception:  # the job's cluster is gone: its end is result.wait()'s to report
            break
        if status.name == "RESTARTING" and previous != "RESTARTING":
            restarts += 1
            print(
                f"{RESTARTING} (restart {restarts}, from {previous}; the cause in its flink-log)",
                flush=True,
            )
        if status.is_globally_terminal_state():
            break
        previous = status.name
        time.sleep(POLL_S)
    result.wait()


if __name__ == "__main__":
    main()
