"""The local lakehouse: Kafka, MinIO, the Iceberg REST catalog and Trino, as one unit.

`up` starts what is not running, all four at once (none needs another to start: the catalog
reaches MinIO and Trino reaches the catalog only when a query asks), and waits until every one
is ready; `down` stops them, Trino first. Typed accessors give clients their endpoints.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from harness.console import say
from harness.stack import keys
from harness.stack.catalog import Catalog
from harness.stack.config import StackConfig
from harness.stack.config import load as load_config
from harness.stack.credentials import S3Credentials, load_or_create
from harness.stack.glue import Glue
from harness.stack.kafka import Kafka
from harness.stack.minio import Minio
from harness.stack.service import LocalService, ServiceStatus
from harness.stack.toxiproxy import Toxiproxy
from harness.stack.trino import Trino


class Stack:
    """The four services of one run directory."""

    # Services started together in each wave; a wave waits for the one before it. Trino is the
    # slowest to start, so it starts first rather than last.
    start_waves: tuple[tuple[str, ...], ...] = (("trino", "kafka", "minio", "catalog"),)

    def __init__(self, config: StackConfig | None = None) -> None:
        self.config = config or load_config()
        self.credentials: S3Credentials = load_or_create(self.config.run_dir)
        self.kafka = Kafka(self.config, self.credentials)
        self.minio = Minio(self.config, self.credentials)
        self.catalog = Catalog(self.config, self.credentials)
        self.trino = Trino(self.config, self.credentials)
        # Optional: started only by who injects faults on the wire, never by `up`.
        self.toxiproxy = Toxiproxy(self.config, self.credentials)
        # Optional: a Glue-compatible catalog, started only by who asks for one.
        self.glue = Glue(self.config, self.credentials)

    @property
    def services(self) -> dict[str, LocalService]:
        return {s.name: s for s in (self.kafka, self.minio, self.catalog, self.trino)}

    def optional_services(self) -> dict[str, LocalService]:
        """Services that run only when asked for (Toxiproxy, Glue), where this backend has them:
        the containers backend has none."""
        optional = (getattr(self, "toxiproxy", None), getattr(self, "glue", None))
        return {s.name: s for s in optional if s is not None}

    def service(self, name: str) -> LocalService:
        known = {**self.services, **self.optional_services()}
        try:
            return known[name]
        except KeyError:
            raise ValueError(f"no service {name!r}; one of {sorted(known)}") from None

    # Endpoints.
    @property
    def bootstrap_servers(self) -> str:
        return self.kafka.bootstrap_servers

    @property
    def s3_endpoint(self) -> str:
        return self.minio.s3_endpoint

    @property
    def catalog_uri(self) -> str:
        return self.catalog.uri

    @property
    def trino_url(self) -> str:
        return self.trino.url

    # Lifecycle.
    def up(self) -> float:
        """Start every service that is not running; return seconds until all are ready."""
        started = time.monotonic()
        with ThreadPoolExecutor(max_workers=4) as pool:
            for wave in self.start_waves:
                todo = [self.service(n) for n in wave]
                for service, took in zip(todo, pool.map(lambda s: s.start(), todo), strict=True):
                    say(f"[green]ready[/] {service.name} ({took:.1f} s)")
        total = time.monotonic() - started
        say(f"stack up in {total:.1f} s (run directory {self.config.run_dir})")
        return total

    def down(self) -> None:
        """Stop every service: Toxiproxy if it runs, Trino, the catalog, then Kafka and MinIO."""
        names = (*self.optional_services(), "trino", "catalog", "kafka", "minio")
        for wave in ((n,) for n in names):
            for name in wave:
                service = self.service(name)
                if service.process.is_running():
                    service.stop()
                    say(f"stopped {name}")

    def status(self) -> list[ServiceStatus]:
        optional = [s for s in self.optional_services().values() if s.process.is_running()]
        return [s.status() for s in [*self.services.values(), *optional]]

    def healthy(self) -> bool:
        return all(s.health() for s in self.services.values())

    # Clients.
    def trino_connection(
        self, schema: str | None = None, session: Mapping[str, str] | None = None
    ) -> Any:
        """A DB-API connection to Trino's `lake` catalog, with optional session properties."""
        import trino

        return trino.dbapi.connect(
            host=self.config.host,
            port=self.config.trino_port,
            user=keys.TRINO_USER,
            catalog=keys.TRINO_CATALOG,
            schema=schema,
            session_properties=dict(session or {}),
        )

    def query(self, statement: str, session: Mapping[str, str] | None = None) -> list[Any]:
        """Run one statement on Trino and return every row (a connection of its own)."""
        conn = self.trino_connection(session=session)
        try:
            cur = conn.cursor()
            cur.execute(statement)
            return list(cur.fetchall())
        finally:
            conn.close()

    def pyiceberg_catalog(self) -> Any:
        """A pyiceberg REST catalog on the same catalog and object store Trino uses."""
        from pyiceberg.catalog import load_catalog

        return load_catalog(
            keys.TRINO_CATALOG,
            **{
                "type": "rest",
                keys.PYICEBERG_URI: self.catalog_uri,
                keys.PYICEBERG_S3_ENDPOINT: self.s3_endpoint,
                keys.PYICEBERG_S3_ACCESS_KEY: self.credentials.access_key,
                keys.PYICEBERG_S3_SECRET_KEY: self.credentials.secret_key.reveal(),
                keys.PYICEBERG_S3_REGION: keys.S3_REGION,
            },
        )

    def kafka_admin(self) -> Any:
        """A confluent-kafka AdminClient on the broker."""
        from confluent_kafka.admin import AdminClient

        return AdminClient({"bootstrap.servers": self.bootstrap_servers})

    def kafka_consumer(self, group_prefix: str = "icefloe") -> Any:
        """A confluent-kafka Consumer of a fresh group that reads from the earliest offset."""
        import uuid

        from confluent_kafka import Consumer

        return Consumer(
            {
                "bootstrap.servers": self.bootstrap_servers,
                "group.id": f"{group_prefix}-{uuid.uuid4().hex}",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
            }
        )
