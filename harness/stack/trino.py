"""Trino: a single-node coordinator-and-worker with the Iceberg catalog `lake`.

The server is run with java directly (not through Trino's launcher) so the harness tracks one
process. S3 credentials reach the catalog file through ${ENV:...} substitution, so no secret is
written to disk or shown on a command line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from icefloe.harness.provision import jdk
from icefloe.harness.stack import keys
from icefloe.harness.stack.catalog import Catalog
from icefloe.harness.stack.glue import Glue
from icefloe.harness.stack.readiness import HttpOk, Probe, Readiness
from icefloe.harness.stack.service import LocalService, write_properties

_PLUGINS = ("iceberg",)
_JVM_FLAGS = (
    "-XX:+UseG1GC",
    "-XX:G1HeapRegionSize=32M",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-XX:+ExitOnOutOfMemoryError",
    "-XX:-OmitStackTraceInFastThrow",
    "-XX:ReservedCodeCacheSize=256M",
    "-XX:PerMethodRecompilationCutoff=10000",
    "-XX:PerBytecodeRecompilationCutoff=10000",
    "-XX:+EnableDynamicAgentLoading",
    "-Djdk.attach.allowAttachSelf=true",
    "-Djdk.nio.maxCachedBufferSize=2000000",
    "-Dfile.encoding=UTF-8",
)
LOG_LEVELS: dict[str, object] = {"io.trino": "INFO"}


def _started(body: bytes) -> bool:
    info: dict[str, Any] = json.loads(body)
    return info.get("starting") is False


class Trino(LocalService):
    """Trino server from the provisioned core tarball plus the Iceberg plugin."""

    name = "trino"

    @property
    def url(self) -> str:
        return f"http://{self.config.host}:{self.config.trino_port}"

    @property
    def ports(self) -> tuple[int, ...]:
        return (self.config.trino_port,)

    @property
    def etc(self) -> Path:
        return self.state_dir / "etc"

    def config_properties(self) -> dict[str, object]:
        """config.properties (the container stack derives its settings from these methods)."""
        return {
            keys.TRINO_COORDINATOR: "true",
            keys.TRINO_INCLUDE_COORDINATOR: "true",
            keys.TRINO_HTTP_PORT: self.config.trino_port,
            keys.TRINO_DISCOVERY_URI: self.url,
            keys.TRINO_QUERY_MAX_MEMORY: "512MB",
            keys.TRINO_QUERY_MAX_MEMORY_PER_NODE: "384MB",
            "http-server.log.enabled": "false",
            "catalog.config-dir": self.etc / "catalog",
            "plugin.dir": self.state_dir / "plugin",
        }

    def catalog_properties(self) -> dict[str, object]:
        """catalog/lake.properties: the Iceberg connector on the stack's catalog (the REST
        server, or the Glue-compatible service with ``[stack] catalog = "glue"``) and MinIO."""
        c = self.config
        if c.catalog == Glue.kind:
            chosen = Glue.trino_properties(c, f"s3://{keys.WAREHOUSE_BUCKET}/")
        else:
            chosen = Catalog.trino_properties(c)
        return {keys.TRINO_CONNECTOR: "iceberg", **chosen, **self._storage_properties()}

    def glue_catalog_properties(self) -> dict[str, object]:
        """catalog/glue.properties: the Iceberg connector on the Glue-compatible service
        (``harness.stack.glue``) and MinIO, beside ``lake`` on any stack. Trino reaches the
        service only when a query asks, so the catalog is there whether or not it runs."""
        warehouse = f"s3://{keys.WAREHOUSE_BUCKET}/{keys.TRINO_GLUE_CATALOG}"
        return {
            keys.TRINO_CONNECTOR: "iceberg",
            **Glue.trino_properties(self.config, warehouse),
            **self._storage_properties(),
        }

    def _storage_properties(self) -> dict[str, object]:
        c = self.config
        return {
            keys.TRINO_ICEBERG_FILE_FORMAT: "PARQUET",
            keys.TRINO_FS_NATIVE_S3: "true",
            keys.TRINO_S3_ENDPOINT: f"http://{c.host}:{c.minio_port}",
            keys.TRINO_S3_PATH_STYLE: "true",
            keys.TRINO_S3_REGION: keys.S3_REGION,
            keys.TRINO_S3_ACCESS_KEY: keys.trino_env(keys.TRINO_ENV_S3_ACCESS_KEY),
            keys.TRINO_S3_SECRET_KEY: keys.trino_env(keys.TRINO_ENV_S3_SECRET_KEY),
        }

    def node_properties(self) -> dict[str, object]:
        """The node's identity and addresses (system properties of the server)."""
        return {
            keys.TRINO_NODE_ENVIRONMENT: "icefloe",
            keys.TRINO_NODE_ID: "icefloe-1",
            keys.TRINO_NODE_DATA_DIR: self.state_dir / "data",
            keys.TRINO_NODE_BIND_IP: self.config.host,
            keys.TRINO_NODE_INTERNAL_ADDRESS: self.config.host,
        }

    def jvm_options(self, vector: bool) -> list[str]:
        """The JVM's options: heap, flags, the class-data archive, the vector module if any."""
        # A class-data archive made on the first start and reused after it: Trino loads tens of
        # thousands of classes at start-up, and mapping them from the archive is faster.
        cds = [
            "-XX:+AutoCreateSharedArchive",
            f"-XX:SharedArchiveFile={self.state_dir / 'trino-classes.jsa'}",
        ]
        modules = ["--add-modules=jdk.incubator.vector"] if vector else []
        return ["-server", f"-Xmx{self.config.trino_heap}", *_JVM_FLAGS, *cds, *modules]

    def prepare(self) -> None:
        write_properties(self.etc / "config.properties", self.config_properties())
        write_properties(self.etc / "log.properties", LOG_LEVELS)
        write_properties(
            self.etc / "catalog" / f"{keys.TRINO_CATALOG}.properties", self.catalog_properties()
        )
        write_properties(
            self.etc / "catalog" / f"{keys.TRINO_GLUE_CATALOG}.properties",
            self.glue_catalog_properties(),
        )
        self._plugin_dir(self.layout.trino_home)
        (self.state_dir / "data").mkdir(parents=True, exist_ok=True)

    def _plugin_dir(self, home: Path) -> Path:
        """A plugin folder holding only the plugins icefloe uses.

        Trino loads every plugin it finds at start; loading only these shortens start-up.
        """
        plugins = self.state_dir / "plugin"
        plugins.mkdir(parents=True, exist_ok=True)
        for name in _PLUGINS:
            link = plugins / name
            if link.is_symlink() and link.resolve() != (home / "plugin" / name).resolve():
                link.unlink()
            if not link.exists():
                link.symlink_to(home / "plugin" / name, target_is_directory=True)
        return plugins

    def command(self) -> list[str]:
        java = self.java_jdk()
        return [
            str(java.java),
            *self.jvm_options(java.has_vector_module),
            *(f"-D{k}={v}" for k, v in self.node_properties().items()),
            f"-Dconfig={self.etc / 'config.properties'}",
            f"-Dlog.levels-file={self.etc / 'log.properties'}",
            "-cp",
            str(self.layout.trino_home / "lib" / "*"),
            "io.trino.server.TrinoServer",
        ]

    def java_jdk(self) -> jdk.Jdk:
        return jdk.choose("trino", self.layout.cache)

    def environment(self) -> dict[str, str]:
        return {
            keys.TRINO_ENV_S3_ACCESS_KEY: self.credentials.access_key,
            keys.TRINO_ENV_S3_SECRET_KEY: self.credentials.secret_key.reveal(),
        }

    def readiness(self) -> Readiness:
        return Probe(f"Trino at {self.url} scans {self._ready_table}", self._scans)

    @property
    def _ready_table(self) -> str:
        return f"{keys.TRINO_CATALOG}.{keys.TRINO_READY_TABLE}"

    def _scans(self) -> bool:
        """Ready means a table scan on `lake` runs.

        `starting=false`, `SELECT 1` and an active node in `system.runtime.nodes` all come before
        the scheduler's node map for the catalog is filled; a scan in that gap fails with
        NO_NODES_AVAILABLE. So the probe scans a one-row table it creates on first use.
        """
        if not HttpOk(f"{self.url}/v1/info", accept=_started).ready():
            return False
        import trino

        conn = trino.dbapi.connect(
            host=self.config.host, port=self.config.trino_port, user=keys.TRINO_USER
        )
        try:
            cur = conn.cursor()
            try:
                cur.execute(f"SELECT count(*) FROM {self._ready_table}")
                return bool(cur.fetchall()[0][0] >= 1)
            except trino.exceptions.TrinoUserError as e:
                if e.error_name not in ("TABLE_NOT_FOUND", "SCHEMA_NOT_FOUND"):
                    raise
            schema = self._ready_table.rsplit(".", 1)[0]
            cur.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
            cur.fetchall()
            cur.execute(f"CREATE TABLE IF NOT EXISTS {self._ready_table} AS SELECT true AS ready")
            cur.fetchall()
            return False
        finally:
            conn.close()
