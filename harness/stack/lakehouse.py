"""The local lakehouse: Kafka, MinIO, an Iceberg catalog and Trino, as one unit.

The catalog is the Iceberg REST server, or the Glue-compatible service with ``[stack] catalog =
"glue"``: either plays the stack's ``catalog`` role (``stack.catalog``, ``stack.service(
"catalog")``), which Trino's ``lake``, the loaders, the checks and the faults on the catalog use.
`up` starts what is not running, all four at once (none needs another to start: the catalog
reaches MinIO and Trino reaches the catalog only when a query asks), and waits until every one
is ready; `down` stops them, Trino first. Typed accessors give clients their endpoints.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from icefloe.harness.console import say
from icefloe.harness.stack import keys
from icefloe.harness.stack.catalog import Catalog
from icefloe.harness.stack.config import CATALOG_RECORD, StackConfig
from icefloe.harness.stack.config import load as load_config
from icefloe.harness.stack.credentials import S3Credentials, load_or_create
from icefloe.harness.stack.glue import Glue
from icefloe.harness.stack.kafka import Kafka
from icefloe.harness.stack.minio import Minio
from icefloe.harness.stack.ports import PortTaken, published_by_containers
from icefloe.harness.stack.service import LocalService, ServiceStatus
from icefloe.harness.stack.toxiproxy import Toxiproxy
from icefloe.harness.stack.trino import Trino


class Stack:
    """The four services of one run directory, by role: kafka, minio, catalog, trino."""

    # Services started together in each wave; a wave waits for the one before it. Trino is the
    # slowest to start, so it starts first rather than last.
    start_waves: tuple[tuple[str, ...], ...] = (("trino", "kafka", "minio", "catalog"),)

    def __init__(self, config: StackConfig | None = None) -> None:
        self.config = config or load_config()
        self.credentials: S3Credentials = load_or_create(self.config.run_dir)
        self.kafka = Kafka(self.config, self.credentials)
        self.minio = Minio(self.config, self.credentials)
        glue = Glue(self.config, self.credentials)
        self.catalog: Catalog | Glue = (
            glue if self.config.catalog == Glue.kind else Catalog(self.config, self.credentials)
        )
        self.trino = Trino(self.config, self.credentials)
        # Optional: started only by who injects faults on the wire, never by `up`.
        self.toxiproxy = Toxiproxy(self.config, self.credentials)
        # Optional beside the REST catalog: a Glue-compatible one, started by who asks for it.
        self.glue: Glue | None = None if self.catalog is glue else glue

    @property
    def services(self) -> dict[str, LocalService]:
        """The services ``up`` starts, by role."""
        return {
            "kafka": self.kafka,
            "minio": self.minio,
            "catalog": self.catalog,
            "trino": self.trino,
        }

    def optional_services(self) -> dict[str, LocalService]:
        """Services that run only when asked for (Toxiproxy, Glue beside the REST catalog),
        where this backend has them: the containers backend has none."""
        optional = (getattr(self, "toxiproxy", None), getattr(self, "glue", None))
        return {s.name: s for s in optional if s is not None}

    def service(self, name: str) -> LocalService:
        """A service by its role (``catalog``) or its own name (``glue``)."""
        own = {s.name: s for s in self.services.values()}
        known = {**own, **self.services, **self.optional_services()}
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
        """Start every service that is not running; return seconds until all are ready.

        The stack's catalog is recorded in the run directory (``config.CATALOG_RECORD``); a
        running Trino whose ``lake`` is on another catalog is restarted on this one (and a
        running Toxiproxy, whose catalog proxy leads to the other, stopped).
        """
        started = time.monotonic()
        before = self.running_catalog()
        if before != self.config.catalog and self.trino.process.is_running():
            say(f"restarting trino: its lake catalog moves from {before} to {self.config.catalog}")
            self.trino.stop()
            toxiproxy = self.optional_services().get("toxiproxy")  # none in containers
            if toxiproxy is not None and toxiproxy.process.is_running():
                toxiproxy.stop()
        self.refuse_foreign_containers()
        self.config.run_dir.mkdir(parents=True, exist_ok=True)
        (self.config.run_dir / CATALOG_RECORD).write_text(self.config.catalog + "\n")
        with ThreadPoolExecutor(max_workers=4) as pool:
            for wave in self.start_waves:
                todo = [self.service(n) for n in wave]
                for service, took in zip(todo, pool.map(lambda s: s.start(), todo), strict=True):
                    say(f"[green]ready[/] {service.name} ({took:.1f} s)")
        total = time.monotonic() - started
        say(f"stack up in {total:.1f} s (run directory {self.config.run_dir})")
        return total

    own_containers: str | None = None
    """The prefix of this stack's own containers' names (the container backend's project)."""

    def refuse_foreign_containers(self) -> None:
        """Raise PortTaken if a container other than this stack's own publishes a port of a
        service that is not running: a container stack left up (another run directory's, or
        one whose run was cut short) would take every connection meant for that service.
        """
        idle = [s for s in self.services.values() if not s.process.is_running()]
        ports = [p for s in idle for p in s.ports]
        if not ports:  # everything runs: nothing to start, no engine to ask
            return
        held = {
            port: name
            for port, name in published_by_containers(ports, self.config.host).items()
            if not (self.own_containers and name.startswith(self.own_containers))
        }
        if held:
            listed = ", ".join(f"{self.config.host}:{p} ({n})" for p, n in sorted(held.items()))
            raise PortTaken(
                f"a container publishes a port this stack needs: {listed}. Stop that container "
                "stack (`icefloe down --backend containers` with its run directory, or remove "
                "the containers), or give this stack other ports: "
                + self.config.port_settings(tuple(held))
            )

    def down(self) -> None:
        """Stop every service: Toxiproxy if it runs, Trino, the catalog, then Kafka and MinIO."""
        names = (*self.optional_services(), "trino", "catalog", "kafka", "minio")
        for name in names:
            service = self.service(name)
            if service.process.is_running():
                service.stop()
                say(f"stopped {service.name}")
        if not isinstance(self.catalog, Catalog):  # the REST catalog of an earlier choice
            left = Catalog(self.config, self.credentials)
            if left.process.is_running():
                left.stop()
                say(f"stopped {left.name}")
        (self.config.run_dir / CATALOG_RECORD).unlink(missing_ok=True)

    def status(self) -> list[ServiceStatus]:
        optional = [s for s in self.optional_services().values() if s.process.is_running()]
        return [s.status() for s in [*self.services.values(), *optional]]

    def running_catalog(self) -> str:
        """The catalog the stack in this run directory was brought up with (``rest`` when
        nothing is recorded)."""
        record = self.config.run_dir / CATALOG_RECORD
        return record.read_text().strip() if record.is_file() else Catalog.kind

    def healthy(self) -> bool:
        """Every service answers, and Trino's ``lake`` is on this stack's catalog."""
        if self.running_catalog() != self.config.catalog:
            return False
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

    def pyiceberg_properties(
        self, catalog: Catalog | Glue | None = None, address: str | None = None
    ) -> dict[str, str]:
        """pyiceberg's properties for the stack's catalog (or ``catalog``, a catalog under test
        on this stack's object store), at ``address`` (a fault proxy's) or its own, and the
        object store.  CONTAINS SECRETS: never log them."""
        return {
            **(catalog or self.catalog).pyiceberg_properties(address),
            keys.PYICEBERG_S3_ENDPOINT: self.s3_endpoint,
            keys.PYICEBERG_S3_ACCESS_KEY: self.credentials.access_key,
            keys.PYICEBERG_S3_SECRET_KEY: self.credentials.secret_key.reveal(),
            keys.PYICEBERG_S3_REGION: keys.S3_REGION,
        }

    def pyiceberg_catalog(self) -> Any:
        """A pyiceberg catalog on the same catalog and object store Trino's ``lake`` uses."""
        from pyiceberg.catalog import load_catalog

        return load_catalog(keys.TRINO_CATALOG, **self.pyiceberg_properties())

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
