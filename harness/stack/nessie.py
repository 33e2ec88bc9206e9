"""Project Nessie (Maven Central ``nessie-quarkus``, its runner jar): a catalog under test only.

Nessie serves the Iceberg REST API under ``/iceberg/<branch>``; its clients here use ``main``.
It runs with its RocksDB store in the run directory (its persistent store, so a kill -9 loses
nothing its store had written), on the stack's object store, where its warehouse is. Version
0.99, the last one served from Maven Central here, is reported to skip its check of a table's
first commit (``assert-ref-snapshot-id`` with no snapshot), which ``icefloe catalogs check``
puts to the test (docs/catalogs.md).

Its settings, the object store's keys among them, are in ``config/application.properties`` in
its working directory (owner-only), where Quarkus reads them: never on its command line.
"""

from __future__ import annotations

import os

from icefloe.harness.provision import versions
from icefloe.harness.provision.download import download
from icefloe.harness.stack import keys
from icefloe.harness.stack.catalog import JVM_FLAGS, Catalog
from icefloe.harness.stack.readiness import HttpOk, Readiness
from icefloe.harness.stack.service import write_properties

BRANCH = "main"


class Nessie(Catalog):
    """Nessie's server on one port of 127.0.0.1, its Iceberg REST API at ``/iceberg/main``."""

    name = "nessie"
    keeps_state_on_kill = True
    """Its RocksDB store writes a commit (with its write-ahead log) before it answers."""

    @property
    def uri(self) -> str:
        return f"http://{self.config.host}:{self.config.nessie_port}/iceberg/{BRANCH}"

    @property
    def ports(self) -> tuple[int, ...]:
        return (self.config.nessie_port, self.config.nessie_management_port)

    @property
    def warehouse(self) -> str:
        """Where its tables go unless a table names its own location."""
        return f"s3://{keys.WAREHOUSE_BUCKET}/catalogs-under-test/nessie"

    def prepare(self) -> None:
        jar = self.layout.downloads / versions.NESSIE_JAR.filename
        url = versions.NESSIE_JAR.url
        download(url, jar, sha1_url=url + ".sha1")
        (self.state_dir / "rocks").mkdir(parents=True, exist_ok=True)
        secret = "icefloe-s3"  # a Quarkus secret: the key pair, by name, from this same file
        settings = {
            "quarkus.http.host": self.config.host,
            "quarkus.http.port": self.config.nessie_port,
            "quarkus.management.host": self.config.host,
            "quarkus.management.port": self.config.nessie_management_port,
            "quarkus.otel.sdk.disabled": "true",
            "nessie.version.store.type": "ROCKSDB",
            "nessie.version.store.persist.rocks.database-path": self.state_dir / "rocks",
            "nessie.catalog.default-warehouse": "wh",
            "nessie.catalog.warehouses.wh.location": self.warehouse,
            "nessie.catalog.service.s3.default-options.endpoint": self.s3_endpoint,
            "nessie.catalog.service.s3.default-options.path-style-access": "true",
            "nessie.catalog.service.s3.default-options.region": keys.S3_REGION,
            "nessie.catalog.service.s3.default-options.request-signing-enabled": "false",
            "nessie.catalog.service.s3.default-options.access-key": (
                f"urn:nessie-secret:quarkus:{secret}"
            ),
            f"{secret}.name": self.credentials.access_key,
            f"{secret}.secret": self.credentials.secret_key.reveal(),
        }
        path = self.state_dir / "config" / "application.properties"
        write_properties(path, settings)
        os.chmod(path, 0o600)

    def command(self) -> list[str]:
        return [
            str(self.java("nessie")),
            "-Xmx512m",
            *JVM_FLAGS,
            "-jar",
            str(self.layout.downloads / versions.NESSIE_JAR.filename),
        ]

    def environment(self) -> dict[str, str]:
        return {}

    def readiness(self) -> Readiness:
        return HttpOk(f"http://{self.config.host}:{self.config.nessie_port}/api/v2/config")
