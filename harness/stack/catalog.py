"""The Iceberg REST catalog: JDBC metadata in a SQLite file, table data in MinIO via S3FileIO.

The stack's default catalog kind (``[stack] catalog = "rest"``). Like every catalog service
(``harness.stack.glue`` is the other), it says how each client reaches it: the loader's
``[catalog]`` settings, pyiceberg's properties, Trino's catalog properties, the environment its
clients need, and what it promises across a kill -9.
"""

from __future__ import annotations

import os

from icefloe.harness.stack import keys
from icefloe.harness.stack.config import StackConfig
from icefloe.harness.stack.readiness import HttpOk, Readiness
from icefloe.harness.stack.service import LocalService

JVM_FLAGS = ("-XX:+UseSerialGC", "-Djava.awt.headless=true")


class Catalog(LocalService):
    """Iceberg's REST catalog server, started through icefloe's loopback-only launcher."""

    name = "catalog"
    kind = "rest"
    endpoint_key = "uri"
    """The loader's ``[catalog]`` key that takes this catalog's address (a fault proxy's)."""
    keeps_state_on_kill = True
    """A commit it acknowledged survives a kill -9 (SQLite's write-ahead log is on disk)."""

    @property
    def uri(self) -> str:
        return f"http://{self.config.host}:{self.config.catalog_port}"

    def loader_settings(self, address: str | None = None) -> dict[str, str]:
        """The loader's ``[catalog]`` settings that reach it (at ``address``, else its own)."""
        return {"type": self.kind, self.endpoint_key: address or self.uri}

    def iceberg_properties(self, address: str | None = None) -> dict[str, str]:
        """Iceberg's Java catalog properties that reach it (for the Kafka Connect sink's
        ``iceberg.catalog.*``), storage aside."""
        return {"type": self.kind, "uri": address or self.uri}

    def client_environment(self) -> dict[str, str]:
        """The environment its clients need: nothing (it asks no credentials)."""
        return {}

    def pyiceberg_properties(self, address: str | None = None) -> dict[str, str]:
        """pyiceberg's catalog properties (at ``address``, else its own), storage aside."""
        return {"type": self.kind, keys.PYICEBERG_URI: address or self.uri}

    @staticmethod
    def trino_properties(config: StackConfig) -> dict[str, object]:
        """Trino's Iceberg connector properties that select it, storage aside."""
        return {
            keys.TRINO_ICEBERG_CATALOG_TYPE: "rest",
            keys.TRINO_ICEBERG_REST_URI: f"http://{config.host}:{config.catalog_port}",
        }

    @property
    def ports(self) -> tuple[int, ...]:
        return (self.config.catalog_port,)

    @property
    def s3_endpoint(self) -> str:
        return f"http://{self.config.host}:{self.config.minio_port}"

    def prepare(self) -> None:
        self.state_dir.mkdir(parents=True, exist_ok=True)

    def command(self) -> list[str]:
        classpath = os.pathsep.join(
            [str(self.layout.catalog_classes), str(self.layout.catalog_jar)]
        )
        heap = self.config.catalog_heap
        return [
            str(self.java("catalog")),
            f"-Xmx{heap}",
            *JVM_FLAGS,
            "-cp",
            classpath,
            "org.apache.iceberg.rest.IcefloeRestServer",
        ]

    def environment(self) -> dict[str, str]:
        return {
            keys.CATALOG_IMPL: "org.apache.iceberg.jdbc.JdbcCatalog",
            # SQLite takes one writer at a time. Without a busy timeout, concurrent commits
            # (the loader and Trino at once) fail at once with SQLITE_BUSY; one pooled
            # connection serialises the catalog's own writes, WAL lets reads run beside them.
            keys.CATALOG_URI: (
                f"jdbc:sqlite:{self.state_dir / 'catalog.db'}?busy_timeout=30000&journal_mode=WAL"
            ),
            keys.CATALOG_CLIENTS: "1",
            keys.CATALOG_JDBC_USER: "icefloe",
            keys.CATALOG_JDBC_PASSWORD: "icefloe",
            keys.CATALOG_WAREHOUSE: f"s3://{keys.WAREHOUSE_BUCKET}/",
            keys.CATALOG_IO_IMPL: "org.apache.iceberg.aws.s3.S3FileIO",
            keys.CATALOG_S3_ENDPOINT: self.s3_endpoint,
            keys.CATALOG_S3_PATH_STYLE: "true",
            keys.CATALOG_S3_ACCESS_KEY: self.credentials.access_key,
            keys.CATALOG_S3_SECRET_KEY: self.credentials.secret_key.reveal(),
            keys.CATALOG_CLIENT_REGION: keys.S3_REGION,
            keys.CATALOG_REST_HOST: self.config.host,
            keys.CATALOG_REST_PORT: str(self.config.catalog_port),
            "AWS_REGION": keys.S3_REGION,
        }

    def readiness(self) -> Readiness:
        return HttpOk(f"{self.uri}/v1/config")
