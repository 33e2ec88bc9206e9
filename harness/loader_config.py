"""A loader configuration for the local stack: its endpoints, credentials and Spark runtime.

The loader learns everything from its configuration, as it would on a cluster; it never looks
into the harness. This module fills that configuration from what the harness knows: the
stack's Kafka, catalog and MinIO endpoints and credentials, and the Spark jars and Java home
`icefloe provision` put into the cache. `icefloe load`, the supervised loader process, the
tests and the benchmarks all build their configurations here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.provision import jdk
from harness.provision.layout import Layout
from harness.stack import keys
from loader.config import CatalogConfig, KafkaConfig, LoaderConfig, SparkConfig, TableId
from loader.secret import Secret


def provisioned_spark(cache: Path, spark: SparkConfig | None = None) -> SparkConfig:
    """``spark`` with the provisioned jars and Java home wherever it names none.

    The jars are the Spark extras (Iceberg runtime, AWS bundle, Kafka source) and the loader's
    own jar (its JVM decoder).

    Args:
        cache: the provisioning cache.
        spark: the settings to complete (defaults otherwise).

    Raises:
        FileNotFoundError: no Spark jars are provisioned (run `icefloe provision`).
        harness.provision.jdk.NoJdk: no Java fits Spark.
    """
    spark = spark or SparkConfig()
    jars = spark.jars
    if not jars:
        layout = Layout(cache)
        jars = tuple(sorted(str(p) for p in layout.spark_jars.glob("*.jar")))
        if not jars or not layout.loader_jar.is_file():
            raise FileNotFoundError(
                f"no Spark jars in {layout.spark_jars} or no {layout.loader_jar}: "
                "run `icefloe provision`"
            )
        jars += (str(layout.loader_jar),)
    java_home = spark.java_home or str(jdk.choose("spark", cache).home)
    return dataclasses.replace(spark, jars=jars, java_home=java_home)


def with_provisioned_spark(config: LoaderConfig, cache: Path) -> LoaderConfig:
    """``config`` completed with the provisioned Spark runtime (what `icefloe load` runs)."""
    return dataclasses.replace(config, spark=provisioned_spark(cache, config.spark))


def stack_loader_config(
    stack: Any,
    table: str,
    topics: Sequence[str],
    *,
    secret: Secret | None = None,
    kafka: Mapping[str, Any] | None = None,
    **settings: Any,
) -> LoaderConfig:
    """A loader configuration that loads ``topics`` of ``stack`` into ``table``.

    Args:
        stack: a `harness.stack.lakehouse.Stack`.
        table: ``catalog.schema.table``.
        topics: the source topics.
        secret: the S3 secret key as the configuration should carry it: a
            `Secret.from_file(...)` is written to TOML as `s3_secret_key_file`; by default the
            stack's key, which TOML leaves out (a loader process then gets it from its
            environment).
        kafka: further `[kafka]` settings (e.g. `max_offsets_per_trigger`).
        **settings: further top-level `LoaderConfig` fields (`loader_id`, `trigger_interval`,
            `checkpoint_location`, `transform`, `spark`...).

    Raises:
        loader.errors.ConfigError: a setting the loader refuses.
    """
    spark = provisioned_spark(stack.config.cache_dir, settings.pop("spark", None))
    settings.setdefault("metrics_port", 0)  # the default port may belong to another stack
    return LoaderConfig(
        table=TableId.parse(table),
        kafka=KafkaConfig(bootstrap=stack.bootstrap_servers, topics=tuple(topics), **(kafka or {})),
        catalog=CatalogConfig(
            uri=stack.catalog_uri,
            warehouse=f"s3://{keys.WAREHOUSE_BUCKET}/",
            s3_endpoint=stack.s3_endpoint,
            s3_access_key=stack.credentials.access_key,
            s3_secret_key=secret or stack.credentials.secret_key,
        ),
        spark=spark,
        **settings,
    )
