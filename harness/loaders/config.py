"""A loader configuration for the local stack: its endpoints, credentials and Spark runtime.

The loader learns everything from its configuration, as it would on a cluster; it never looks
into the harness. This module fills that configuration from what the harness knows: the
stack's Kafka, catalog and MinIO endpoints and credentials, and the Spark jars and Java home
`icefloe provision` put into the cache. `icefloe load`, the supervised loader process, the
tests and the benchmarks all build their configurations here.

`StackDefaults` offers the same endpoints and credentials as the lowest layer of a
configuration a user gives (file, environment, flags), so `icefloe load --table T
--kafka-topics K` runs on the local stack with no file: whatever the user sets wins.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from icefloe.harness.provision import jdk
from icefloe.harness.provision.layout import Layout
from icefloe.harness.stack import keys
from icefloe.loader.config import CatalogConfig, KafkaConfig, LoaderConfig, SparkConfig, TableId
from icefloe.loader.secret import Secret


def provisioned_spark(cache: Path, spark: SparkConfig | None = None) -> SparkConfig:
    """``spark`` with the provisioned jars, Java home and class-data archive wherever it names
    none.

    The jars are the Spark extras (Iceberg runtime, AWS bundle, Kafka source) and the loader's
    own jar (its JVM decoder). The class-data archive (``loader.ext.classdata``) is the cache's one
    for this Java and these jars.

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
    java_home = spark.java_home or str(jdk.spark_java_home(cache))
    class_data = spark.class_data or str(Layout(cache).loader_class_data(java_home, jars))
    return dataclasses.replace(spark, jars=jars, java_home=java_home, class_data=class_data)


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
    catalog: Mapping[str, Any] | None = None,
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
        catalog: `[catalog]` settings that replace the stack's (e.g. `uri` of a fault proxy in
            front of the catalog, `read_timeout`).
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
            **{
                **stack.catalog.loader_settings(),
                "warehouse": f"s3://{keys.WAREHOUSE_BUCKET}/",
                "s3_endpoint": stack.s3_endpoint,
                "s3_access_key": stack.credentials.access_key,
                "s3_secret_key": secret or stack.credentials.secret_key,
                **(catalog or {}),
            }
        ),
        spark=spark,
        **settings,
    )


def secret_key_file(stack: Any) -> Path:
    """A file (mode 0600, in the run directory) holding the stack's S3 secret key."""
    path = Path(stack.config.run_dir) / "s3-secret-key"
    secret = stack.credentials.secret_key.reveal()
    if not path.exists() or path.read_text() != secret:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(secret)
    return path


KAFKA_BOOTSTRAP = "kafka.bootstrap"
CATALOG_URI = "catalog.uri"
METRICS_PORT = "metrics_port"
"""Loader setting keys the stack offers defaults for (the model's dotted names)."""
CATALOG_ADDRESSES = frozenset({"catalog.type", CATALOG_URI, "catalog.glue_endpoint"})
"""Settings that name a catalog: a configuration with any of them names its own."""


@dataclass(frozen=True)
class StackDefaults:
    """The local stack's endpoints and credentials, for settings a configuration leaves unset.

    The broker's address when no ``kafka.bootstrap`` is set; the catalog's (its ``type`` and
    address), the object store's and its generated credentials when no ``catalog.type``,
    ``catalog.uri`` nor ``catalog.glue_endpoint`` is set (a configuration naming another
    catalog gets nothing of this stack's store); the stack's loader metrics
    port when no ``metrics_port`` is set. The S3 secret is offered as the file that holds it
    (``s3_secret_key_file``), so a configuration written back (``icefloe load config``)
    names the file, never the secret. Implements ``loader.settings.Defaults``.

    Attributes:
        stack: a `harness.stack.lakehouse.Stack` (or the containers backend's).
    """

    stack: Any
    origin: str = "the local stack"

    def values(self, configured: frozenset[str]) -> dict[str, Any]:
        """Dotted key -> value for the keys the stack can fill that ``configured`` lacks."""
        stack = self.stack
        out: dict[str, Any] = {}
        if KAFKA_BOOTSTRAP not in configured:
            out[KAFKA_BOOTSTRAP] = stack.bootstrap_servers
        if not configured & CATALOG_ADDRESSES:
            settings = stack.catalog.loader_settings()
            # The loader runs in this process: its clients sign with this environment (the
            # AWS default chain), unless it names credentials of its own already.
            for name, value in stack.catalog.client_environment().items():
                os.environ.setdefault(name, value)
            out.update(
                {
                    **{f"catalog.{key}": value for key, value in settings.items()},
                    "catalog.warehouse": f"s3://{keys.WAREHOUSE_BUCKET}/",
                    "catalog.s3_endpoint": stack.s3_endpoint,
                    "catalog.s3_access_key": stack.credentials.access_key,
                    "catalog.s3_secret_key_file": str(secret_key_file(stack)),
                }
            )
        if METRICS_PORT not in configured:
            out[METRICS_PORT] = stack.config.loader_metrics_port
        return {key: value for key, value in out.items() if key not in configured}
