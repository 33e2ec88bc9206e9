"""Spark session: the one place that knows how the loader's Spark is configured.

The session gets the Iceberg ``lake`` catalog (REST, S3FileIO on MinIO), the
Kafka source jars, loopback-only networking and small-machine defaults.

Secrets never reach a command line: pyspark starts its JVM with every builder
option as a ``--conf`` argument (visible in ``ps``), so the builder gets only
non-secret settings and the S3 secret key is set on the running session's SQL
configuration before the catalog is first used (Spark reads catalog options
from the SQL configuration lazily, when the catalog is first loaded).

Outside ``spark-submit`` the jars (``[spark] jars``) and the Java home
(``[spark] java_home``, else ``$JAVA_HOME``) come from the configuration; the
loader never looks for them itself. Under ``spark-submit`` (cluster mode) the
master, jars, memory and Java come from the submit command; the session then
only adds what the loader needs.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from icefloe.loader import catalogs, keys
from icefloe.loader.config import (
    DEFAULT_JIT,
    JVM_COLLECTORS,
    JVM_COMPILERS,
    CatalogConfig,
    LoaderConfig,
)
from icefloe.loader.errors import ConfigError
from icefloe.loader.run.jvmbridge import jvm

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from icefloe.loader.ext.classdata import ClassData

__all__ = [
    "catalog_options",
    "check_runtime",
    "quiet_query_failure",
    "session",
    "under_spark_submit",
]

CATALOG_PREFIX = "spark.sql.catalog."


def under_spark_submit() -> bool:
    """True when this Python process was launched by ``spark-submit``.

    Returns:
        Whether a JVM gateway already exists (pyspark sets ``PYSPARK_GATEWAY_PORT``
        for processes it launches).
    """
    return "PYSPARK_GATEWAY_PORT" in os.environ


def check_runtime(config: LoaderConfig) -> None:
    """Fail at once when Spark could not start: no jars and no spark-submit to bring them.

    Raises:
        ConfigError: saying what to set.
    """
    if not under_spark_submit() and not config.spark.jars:
        raise ConfigError(
            "no Spark jars: set [spark] jars (ICEFLOE_LOADER_SPARK_JARS, --spark-jars) to the "
            "Iceberg Spark runtime, iceberg-aws-bundle and spark-sql-kafka jars, or run the "
            "loader with spark-submit --jars/--packages (`icefloe load` fills them in from "
            "what `icefloe provision` fetched)"
        )


def catalog_options(config: LoaderConfig, *, secrets: bool) -> dict[str, str]:
    """Spark SQL options defining the Iceberg catalog named after the table's catalog.

    Args:
        config: the loader configuration.
        secrets: include the S3 secret key (only for the in-process SQL configuration).

    Returns:
        ``spark.sql.catalog.<name>...`` -> value.  With ``secrets`` it CONTAINS
        SECRETS: never log it.
    """
    cat = config.catalog
    base = CATALOG_PREFIX + config.table.catalog
    opts = {
        base: "org.apache.iceberg.spark.SparkCatalog",
        **{base + "." + key: value for key, value in catalogs.spark_properties(cat).items()},
        # Every micro-batch must see the table as it is now (schema, snapshots).
        base + ".cache-enabled": "false",
        base + ".io-impl": "org.apache.iceberg.aws.s3.S3FileIO",
        base + ".client.region": cat.s3_region,
        base + ".s3.path-style-access": "true" if cat.s3_path_style else "false",
        **{base + "." + key: value for key, value in java_timeouts(cat).items()},
    }
    if cat.warehouse:
        opts[base + ".warehouse"] = cat.warehouse
    if cat.s3_endpoint:
        opts[base + ".s3.endpoint"] = cat.s3_endpoint
    if cat.s3_access_key:
        opts[base + ".s3.access-key-id"] = cat.s3_access_key
    if secrets and cat.s3_secret_key is not None:
        opts[base + ".s3.secret-access-key"] = cat.s3_secret_key.reveal()
    return opts


def java_timeouts(cat: CatalogConfig) -> dict[str, str]:
    """The timeouts of the AWS clients' HTTP clients (S3FileIO's, and Glue's on that kind).

    Without them a request S3 accepted and never answered holds a Spark write for ever
    (neither client type sets a socket timeout unless told). The client type is chosen by the
    AWS bundle; both types get the same values. The REST catalog's client has its own
    (``loader.catalogs.rest``).
    """
    connect = str(round(cat.connect_timeout * 1000))
    read = str(round(cat.read_timeout * 1000))
    return {
        keys.S3_APACHE_CONNECTION_TIMEOUT_MS: connect,
        keys.S3_APACHE_SOCKET_TIMEOUT_MS: read,
        keys.S3_URLCONNECTION_CONNECTION_TIMEOUT_MS: connect,
        keys.S3_URLCONNECTION_SOCKET_TIMEOUT_MS: read,
    }


LOG4J2_PROPERTIES = Path(__file__).with_name("log4j2.properties")
"""Spark's log configuration in a JVM the loader starts: stderr, at ``[spark] log_level``."""


def _log_options(level: str) -> str:
    """JVM options that give Spark's log the loader's level from the JVM's first line on.

    Without them Spark prints its default profile's notices and start-up warnings before the
    session exists and ``setLogLevel`` can quiet them.
    """
    return (
        f"-Dlog4j2.configurationFile={LOG4J2_PROPERTIES.as_uri()} "
        f"-Dicefloe.spark.log.level={level.upper()}"
    )


def _scratch_options(
    log_level: str, local_dir: str | None, java: str = "", gc: str = "g1", jit: str = DEFAULT_JIT
) -> dict[str, str]:
    """The driver JVM's options (its log level, collector and compilers, then ``java``) and
    ``[spark] local_dir`` as Spark's scratch folder and the JVM's temp folder.

    Spark's block manager, ``userFiles`` and PySpark folders go to ``spark.local.dir``; the
    JVM's own temp files (native libraries unpacked by lz4 and snappy, Spark's artifact
    folder, Iceberg's S3 upload staging) go to ``java.io.tmpdir``. A loader killed with kill -9
    removes none of them, so both point into the one folder.
    """
    chosen = (JVM_COLLECTORS[gc.lower()], JVM_COMPILERS[jit.lower()], java)
    java = " ".join(o for o in (_log_options(log_level), *chosen) if o)
    if not local_dir:
        return {"spark.driver.extraJavaOptions": java}
    return {
        "spark.driver.extraJavaOptions": f"{java} -Djava.io.tmpdir={local_dir}",
        "spark.local.dir": local_dir,
    }


def _jar_options(master: str, jars: tuple[str, ...]) -> dict[str, str]:
    """How the configured jars reach Spark: the driver's class path in local mode, else spark.jars.

    In local mode the executors live in the driver's JVM, so the jars need only be on its class
    path. Given as ``spark.jars`` instead, each start copies them all (about 170 MB) into a
    ``spark-*/userFiles-*`` folder under ``spark.local.dir``, which a killed loader (kill -9,
    out of memory) never removes. A cluster's executors fetch ``spark.jars`` from the driver.
    """
    if master.startswith("local"):
        return {"spark.driver.extraClassPath": os.pathsep.join(jars)}
    return {"spark.jars": ",".join(jars)}


def _builder_options(config: LoaderConfig, java: str = "") -> dict[str, str]:
    opts = {
        "spark.app.name": f"icefloe-loader-{config.loader_id}",
        "spark.sql.extensions": (
            "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
        ),
        "spark.sql.shuffle.partitions": str(config.spark.shuffle_partitions),
        "spark.sql.session.timeZone": "UTC",
        # The parser enforces required fields itself; Spark's check would reject
        # the nullable columns the decoder produces.
        "spark.sql.iceberg.check-nullability": "false",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.streaming.forceDeleteTempCheckpointLocation": "true",
        "spark.sql.adaptive.enabled": "false",
        "spark.python.worker.reuse": "true",
        **checkpoint_options(config.checkpoint_location),
    }
    if not under_spark_submit():
        opts.update(
            {
                "spark.master": config.spark.master,
                "spark.driver.memory": config.spark.driver_memory,
                "spark.driver.bindAddress": "127.0.0.1",
                "spark.driver.host": "127.0.0.1",
                **_jar_options(config.spark.master, config.spark.jars),
                **_scratch_options(
                    config.spark.log_level,
                    config.spark.local_dir,
                    java,
                    config.spark.gc,
                    config.spark.jit,
                ),
            }
        )
    opts.update(catalog_options(config, secrets=False))
    return opts


LOCAL_CHECKPOINT_MANAGER = (
    "org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager"
)
"""How the query writes a checkpoint on the local file system: through Hadoop's ``FileSystem``.

Spark's default for it goes through Hadoop's ``FileContext``, whose rename asks for the link
status of both paths; without Hadoop's native library (which no registry serves) each ask runs
``readlink`` in a child process. Measured with Java Flight Recorder on a loader at 1,000 msg/s and
1 s batches (docs/benchmarks.md, run 13): about 11 child processes a micro-batch, for the offset
log Spark writes before the batch and the commit log after it (36-38 ms each). This one renames
with Java's own call: about 3.5 a batch, the ``chmod`` of each new file. On a local disk both
check that the file does not exist and then rename onto it; neither is more atomic than the
other there. Checkpoints elsewhere (HDFS, S3) keep Spark's default."""


def checkpoint_options(location: str | None) -> dict[str, str]:
    """Spark SQL options for a checkpoint at ``location`` (None: the local default)."""
    scheme = urlsplit(location).scheme if location else ""
    if scheme in ("", "file"):
        return {keys.SPARK_CHECKPOINT_MANAGER: LOCAL_CHECKPOINT_MANAGER}
    return {}


def session(
    config: LoaderConfig,
    extra: Mapping[str, str] | None = None,
    class_data: ClassData | None = None,
) -> SparkSession:
    """Create (or reuse) the Spark session for ``config``.

    Args:
        config: the loader configuration.
        extra: further non-secret builder options (tests, benchmarks).
        class_data: what the driver JVM does with ``[spark] class_data`` (planned by the
            caller, who finishes it when the run ends); None: no archive.

    Returns:
        A session whose catalog ``config.table.catalog`` is the Iceberg REST catalog.

    Raises:
        ConfigError: not under spark-submit and no jars configured.
    """
    check_runtime(config)
    if not under_spark_submit():
        if config.spark.java_home:
            os.environ["JAVA_HOME"] = config.spark.java_home
        if config.spark.local_dir:  # the JVM's temp folder must exist before it starts
            Path(config.spark.local_dir).mkdir(parents=True, exist_ok=True)
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        # Executors run the loader's Python: the same interpreter as the driver.
        os.environ.setdefault("PYSPARK_PYTHON", _python())
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", _python())
    from pyspark.sql import SparkSession

    builder: Any = SparkSession.builder
    java = class_data.java_options() if class_data is not None else ""
    for key, value in {**_builder_options(config, java), **(extra or {})}.items():
        builder = builder.config(key, value)
    spark: SparkSession = builder.getOrCreate()
    spark.sparkContext.setLogLevel(config.spark.log_level.upper())
    for key, value in catalog_options(config, secrets=True).items():
        spark.conf.set(key, value)
    return spark


STREAMING_LOGGER = "org.apache.spark.sql.execution.streaming"
"""The JVM logger under which Spark reports a streaming query that terminated with an error."""


def quiet_query_failure(spark: SparkSession) -> None:
    """Silence Spark's report of the query failure the loader is about to cause on purpose.

    A domain error (``Fenced``, ``PoisonMessage``...) ends the query by raising out of
    ``foreachBatch``; the loader then prints one line naming it. Spark would log the same
    error again as pages of Java and Python stack traces.

    Args:
        spark: the loader's session.
    """
    log4j = jvm(spark).org.apache.logging.log4j
    log4j.core.config.Configurator.setLevel(STREAMING_LOGGER, log4j.Level.OFF)


def _python() -> str:
    import sys

    return sys.executable
