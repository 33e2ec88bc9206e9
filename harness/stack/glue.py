"""A Glue-compatible catalog: ministack's Glue (PyPI ``ministack``), a local AWS emulator.

Optional, like Toxiproxy: started by who asks for a Glue catalog, never by ``up``. It serves
Glue's API on one port of 127.0.0.1; the tables' data and metadata files stay in MinIO, Glue
keeps only each table's pointer to its metadata file and its ``VersionId``. It checks
``UpdateTable``'s ``VersionId`` (a commit that raced another is refused), and keeps its state
in the run directory only when it stops cleanly: a kill -9 brings it back as it was at its last
clean stop (docs/catalogs.md).

Optional on a stack whose catalog is the REST server; the stack's catalog itself with
``[stack] catalog = "glue"`` (``icefloe up --catalog glue``), where Trino's ``lake`` catalog,
the loader and every check reach it instead.

It accepts any request signature; its clients sign with the stack's generated S3 keys
(``client_environment``), given in their environment where the AWS default chain of every
client (boto3, the Java SDK) reads them, never on a command line.
"""

from __future__ import annotations

from icefloe.harness.provision import pyvenv, versions
from icefloe.harness.stack import keys
from icefloe.harness.stack.config import StackConfig
from icefloe.harness.stack.credentials import S3Credentials
from icefloe.harness.stack.readiness import HttpOk, Readiness
from icefloe.harness.stack.service import LocalService
from icefloe.loader.catalogs.glue import GLUE_CATALOG_IMPL


def client_environment(credentials: S3Credentials) -> dict[str, str]:
    """The environment with which a client of the Glue service signs its requests.

    Returns:
        ``AWS_ACCESS_KEY_ID`` and ``AWS_SECRET_ACCESS_KEY``.  CONTAINS SECRETS: never log it.
    """
    return {
        "AWS_ACCESS_KEY_ID": credentials.access_key,
        "AWS_SECRET_ACCESS_KEY": credentials.secret_key.reveal(),
    }


class Glue(LocalService):
    """ministack serving Glue only, its state saved under the run directory."""

    name = "glue"
    kind = "glue"
    endpoint_key = "glue_endpoint"
    """The loader's ``[catalog]`` key that takes this catalog's address (a fault proxy's)."""
    keeps_state_on_kill = False
    """ministack saves its state only when it stops cleanly: a kill -9 rolls it back."""

    @property
    def endpoint(self) -> str:
        return f"http://{self.config.host}:{self.config.glue_port}"

    @property
    def uri(self) -> str:
        """Its address, as every catalog service names it."""
        return self.endpoint

    def loader_settings(self, address: str | None = None) -> dict[str, str]:
        """The loader's ``[catalog]`` settings that reach it (at ``address``, else its own)."""
        return {"type": self.kind, self.endpoint_key: address or self.endpoint}

    def iceberg_properties(self, address: str | None = None) -> dict[str, str]:
        """Iceberg's Java catalog properties that reach it (for the Kafka Connect sink's
        ``iceberg.catalog.*``), storage aside: no ``lock-impl``, so ``VersionId`` fences."""
        return {"catalog-impl": GLUE_CATALOG_IMPL, "glue.endpoint": address or self.endpoint}

    def client_environment(self) -> dict[str, str]:
        """The environment with which its clients sign (``client_environment``).

        CONTAINS SECRETS: never log it.
        """
        return client_environment(self.credentials)

    def pyiceberg_properties(self, address: str | None = None) -> dict[str, str]:
        """pyiceberg's catalog properties (at ``address``, else its own), storage aside.

        CONTAINS SECRETS: never log them.
        """
        return {
            "type": self.kind,
            "glue.endpoint": address or self.endpoint,
            "glue.region": keys.S3_REGION,
            "glue.access-key-id": self.credentials.access_key,
            "glue.secret-access-key": self.credentials.secret_key.reveal(),
        }

    @staticmethod
    def trino_properties(config: StackConfig, warehouse: str) -> dict[str, object]:
        """Trino's Iceberg connector properties that select it, storage aside: its requests
        are signed with the stack's S3 keys, read from Trino's environment.

        Args:
            config: The stack's configuration.
            warehouse: Where tables Trino creates go (``s3://bucket/prefix``).
        """
        return {
            keys.TRINO_ICEBERG_CATALOG_TYPE: "glue",
            keys.TRINO_GLUE_ENDPOINT: f"http://{config.host}:{config.glue_port}",
            keys.TRINO_GLUE_REGION: keys.S3_REGION,
            keys.TRINO_GLUE_ACCESS_KEY: keys.trino_env(keys.TRINO_ENV_S3_ACCESS_KEY),
            keys.TRINO_GLUE_SECRET_KEY: keys.trino_env(keys.TRINO_ENV_S3_SECRET_KEY),
            keys.TRINO_GLUE_WAREHOUSE: warehouse,
        }

    @property
    def ports(self) -> tuple[int, ...]:
        return (self.config.glue_port,)

    def prepare(self) -> None:
        pyvenv.install(self.layout.ministack_venv, f"ministack=={versions.MINISTACK}")
        (self.state_dir / "state").mkdir(parents=True, exist_ok=True)

    def command(self) -> list[str]:
        return [str(self.layout.ministack_venv / "bin" / "ministack")]

    def environment(self) -> dict[str, str]:
        return {
            "BIND_HOST": self.config.host,
            "GATEWAY_PORT": str(self.config.glue_port),
            "SERVICES": "glue",
            "PERSIST_STATE": "1",
            "STATE_DIR": str(self.state_dir / "state"),
        }

    def readiness(self) -> Readiness:
        return HttpOk(f"{self.endpoint}/_ministack/health")
