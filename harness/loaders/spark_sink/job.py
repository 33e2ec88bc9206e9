"""Spark's own streaming sink: the few lines a Spark user writes first to load Kafka JSON into
an Iceberg table, run as a loader kind (``--loader spark-sink``, ``spark-sink-failfast``).

Kafka is read with Spark's Kafka source from the earliest offset; each message's value is
parsed with ``from_json`` and the table's own schema (``--mode`` is ``PERMISSIVE``, Spark's
default, or ``FAILFAST``), and the rows are appended with ``writeStream.format("iceberg")``
every ``trigger_s`` seconds, its progress in the checkpoint folder. Nothing is added to what
that code promises: no dead letters, no fence, no timeouts beyond the clients' defaults. What
it keeps is Spark's: the checkpoint's offsets and commit logs, and Iceberg's streaming append,
which skips a micro-batch whose epoch the table already holds for this query.

Its catalog is the stack's: a REST catalog, or a Glue-compatible one (``catalog_type =
"glue"``, the endpoint in ``catalog_uri``). Run with a TOML file (written by the kit from
``spark-sink.toml`` beside this file)::

    python job.py --config loader.toml

and the object store's keys in ``AWS_ACCESS_KEY_ID`` and ``AWS_SECRET_ACCESS_KEY``.
"""

from __future__ import annotations

import argparse
import os
import tomllib
from pathlib import Path

MODES = ("PERMISSIVE", "FAILFAST")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, type=Path)
    parser.add_argument("--mode", default="PERMISSIVE", help=f"how from_json parses: {MODES}")
    args = parser.parse_args()
    conf = tomllib.loads(args.config.read_text())
    mode = args.mode.upper()
    if mode not in MODES:
        raise SystemExit(f"mode: {mode!r}, expected one of {MODES}")
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

    from pyspark.sql import SparkSession
    from pyspark.sql.functions import col, from_json

    catalog = conf["table"].split(".", 1)[0]
    prefix = f"spark.sql.catalog.{catalog}"
    # The catalog as a Spark user names it: a REST catalog's URI, or Glue's endpoint (its
    # requests signed with the AWS keys of the environment).
    if conf.get("catalog_type", "rest") == "glue":
        where = {"type": "glue", "glue.endpoint": conf["catalog_uri"]}
    else:
        where = {"type": "rest", "uri": conf["catalog_uri"]}
    builder = SparkSession.builder
    for key, value in where.items():
        builder = builder.config(f"{prefix}.{key}", value)
    spark = (
        builder.appName(f"spark-sink-{conf['loader_id']}")
        .master(conf.get("master", "local[2]"))
        .config("spark.driver.memory", conf.get("driver_memory", "2g"))
        .config("spark.driver.extraClassPath", conf["jars"].replace(",", os.pathsep))
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.extensions",
                "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
        .config(prefix, "org.apache.iceberg.spark.SparkCatalog")
        .config(f"{prefix}.warehouse", conf["warehouse"])
        .config(f"{prefix}.io-impl", "org.apache.iceberg.aws.s3.S3FileIO")
        .config(f"{prefix}.s3.endpoint", conf["s3_endpoint"])
        .config(f"{prefix}.s3.path-style-access", "true")
        .config(f"{prefix}.client.region", conf["s3_region"])
        .getOrCreate()
    )  # fmt: skip
    spark.sparkContext.setLogLevel("WARN")

    schema = spark.table(conf["table"]).schema
    source = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", conf["bootstrap_servers"])
        .option("subscribe", conf["topic"])
        .option("startingOffsets", "earliest")
        .load()
    )
    rows = source.select(
        from_json(col("value").cast("string"), schema, {"mode": mode}).alias("row")
    ).select("row.*")
    query = (
        rows.writeStream.format("iceberg")
        .outputMode("append")
        .trigger(processingTime=f"{float(conf.get('trigger_s', 1.0))} seconds")
        .option("checkpointLocation", conf["checkpoint"])
        .toTable(conf["table"])
    )
    print(f"spark-sink: streaming started (query {query.id}, mode {mode})", flush=True)
    query.awaitTermination()


if __name__ == "__main__":
    main()
