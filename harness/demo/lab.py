"""The walkthrough's hands: one topic, its dead-letter topic, one table and its loaders.

Small functions over the pieces the harness has today (the stack, the supervised loader
process, the publisher, the maintenance operations, the ledger checks), so the walkthrough in
`harness.demo.story` reads as a story, and moving it onto the scenario engine's public API
(publish, start/stop/kill the loader, sql, reads) changes this module only.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from icefloe.harness import maintenance, verify
from icefloe.harness.history import History
from icefloe.harness.loaders.background import scrape_metrics
from icefloe.harness.loaders.base import TestHooks
from icefloe.harness.loaders.icefloe import icefloe_config
from icefloe.harness.loaders.process import LoaderProcess
from icefloe.harness.stack.ports import free_port
from icefloe.harness.stack.tables import EVENT_ID_COLUMN, create_table_sql
from icefloe.loader.io.deadletter import DEAD_LETTER_MAX_BYTES
from icefloe.publisher import topics
from icefloe.publisher.ledger import Ledger
from icefloe.publisher.producer import PublishResult

DEMO_TRIGGER_S = 2.0
"""The demo's batches, shorter than the loader's default (5 s): an audience watches rows arrive
and a loader restart, so a batch should land before attention drifts."""
DEMO_LEASE_TTL_S = 10.0
"""The demo's lease, shorter than the loader's (a minute at these batches): the zombie's
successor takes the table over while the audience waits."""


@dataclass
class Lab:
    """A topic, its dead-letter topic and a table on the running stack, and the loaders on them.

    Attributes:
        stack: the running stack.
        work: where ledgers, loader state and logs go.
        table: ``catalog.schema.table``.
        topic: the source topic.
        partitions: its partition count.
    """

    stack: Any
    work: Path
    table: str
    topic: str
    partitions: int = 3
    ledgers: list[Path] = field(default_factory=list)
    loaders: list[LoaderProcess] = field(default_factory=list)
    _pool: ThreadPoolExecutor = field(default_factory=lambda: ThreadPoolExecutor(max_workers=2))

    @property
    def dead_letter_topic(self) -> str:
        return f"{self.topic}.dlq"

    # -- SQL --------------------------------------------------------------------------------

    def query(self, statement: str) -> list[Any]:
        """Every row of one statement, run on Trino."""
        return list(self.stack.query(statement))

    def scalar(self, statement: str) -> Any:
        """The single value a statement returns."""
        return self.query(statement)[0][0]

    def count(self, where: str = "") -> int:
        """Rows in the table (matching ``where``)."""
        return int(self.scalar(f"SELECT count(*) FROM {self.table} {where}"))

    # -- set-up -----------------------------------------------------------------------------

    def setup_statements(self) -> list[str]:
        """The SQL that makes the table (its schema first, an older one dropped)."""
        schema = self.table.rsplit(".", 1)[0]
        return [
            f"CREATE SCHEMA IF NOT EXISTS {schema}",
            f"DROP TABLE IF EXISTS {self.table}",
            create_table_sql(self.table, EVENT_ID_COLUMN),
        ]

    def reset(self) -> None:
        """Fresh topics (the source and its dead-letter topic) and a fresh table."""
        bootstrap = self.stack.bootstrap_servers
        for name in (self.topic, self.dead_letter_topic):
            topics.delete_topic(bootstrap, name)
        topics.create_topic(bootstrap, self.topic, self.partitions)
        topics.create_topic(
            bootstrap, self.dead_letter_topic, 1, max_message_bytes=DEAD_LETTER_MAX_BYTES
        )
        for statement in self.setup_statements():
            self.query(statement)

    # -- loaders ----------------------------------------------------------------------------

    def loader(self, loader_id: str, hooks: TestHooks | None = None) -> LoaderProcess:
        """A loader on the table (not started): the loader's defaults but for 2 s batches, a
        10 s lease and metrics served; ``hooks`` make its first start freeze itself."""
        config = icefloe_config(
            self.stack,
            self.table,
            (self.topic,),
            {
                "trigger_interval": DEMO_TRIGGER_S,
                "lease_ttl": DEMO_LEASE_TTL_S,
                "metrics_port": free_port(19400),
            },
            loader_id=loader_id,
            dead_letter_topic=self.dead_letter_topic,
            origin="the demo's settings",
        )
        process = LoaderProcess(
            config,
            self.stack,
            self.work / f"loader-{loader_id}-{len(self.loaders)}",
            History(self.work / "history.jsonl"),
            hooks=hooks,
        )
        self.loaders.append(process)
        return process

    def metrics_port(self, loader: LoaderProcess) -> int:
        return loader.settings.metrics_port

    def loader_config_text(self, loader: LoaderProcess) -> str:
        """The loader's configuration file, without the long jar list."""
        text = loader.config_file.read_text() if loader.config_file.exists() else ""
        return "\n".join(
            line for line in text.splitlines() if not line.startswith(("jars", "java_home"))
        )

    def close(self) -> None:
        """Stop every loader still running, and the publishing thread."""
        for process in self.loaders:
            process.close()
        self._pool.shutdown(wait=True)

    # -- publishing -------------------------------------------------------------------------

    def publish(
        self,
        count: int,
        seed: int,
        *,
        rate: float | None = None,
        window_days: float = 3.0,
        malformed_fraction: float = 0.0,
        extra_fields: Mapping[str, str] | None = None,
    ) -> PublishResult:
        """Publish ``count`` reference rows with event times up to now, with a ledger.

        Args:
            count: messages.
            seed: the generator's seed (the run can be replayed).
            rate: messages per second (None: as fast as possible).
            window_days: event times spread this far back from now.
            malformed_fraction: share of malformed messages, of every kind.
            extra_fields: name -> generator of fields added to every row (e.g. ``const:"eu"``).
        """
        from icefloe.publisher.clock import ClockConfig
        from icefloe.publisher.drift import DriftConfig, ExtraFieldSpec
        from icefloe.publisher.messages import GenerationConfig
        from icefloe.publisher.producer import Publisher, PublisherConfig

        specs = tuple(ExtraFieldSpec.parse(f"{k}={v}") for k, v in (extra_fields or {}).items())
        generation = GenerationConfig(
            seed=seed,
            clock=ClockConfig(anchor=dt.datetime.now(dt.UTC), window_days=window_days),
            malformed_fraction=malformed_fraction,
            drift=DriftConfig(extra_field_specs=specs),
        )
        ledger = self.work / f"{self.topic}-{seed}.jsonl"
        config = PublisherConfig(generation=generation, ledger_dir=self.work, progress=False)
        publisher = Publisher(self.stack.bootstrap_servers, self.topic, config)
        result = publisher.publish(count, rate=rate, ledger_path=ledger)
        self.ledgers.append(ledger)
        return result

    def publish_later(self, count: int, seed: int, **options: Any) -> Future[PublishResult]:
        """`publish` in a background thread (a stream that goes on while something happens)."""
        return self._pool.submit(self.publish, count, seed, **options)

    # -- reading back -----------------------------------------------------------------------

    def read_ledgers(self) -> list[Ledger]:
        return verify.read_ledgers(self.ledgers)

    def valid_ids(self) -> set[str]:
        """Every valid event id published so far."""
        return set().union(*(ledger.valid_event_ids() for ledger in self.read_ledgers()))

    def rows_verdict(self, may_be_absent: set[str] | None = None) -> verify.RowVerdict:
        """The table against every ledger so far."""
        found = verify.table_event_ids(self.stack.query, self.table)
        return verify.compare_rows(found, self.valid_ids(), may_be_absent=may_be_absent or ())

    def dead_letters(self) -> tuple[list[dict[str, str]], verify.DeadLetterVerdict]:
        """The dead letters' headers, and how they compare with the ledgers."""
        letters = verify.read_dead_letters(self.stack, self.dead_letter_topic)
        return letters, verify.compare_dead_letters(letters, self.read_ledgers())

    def lease_expires(self) -> float:
        """When the table's loader lease runs out (epoch seconds; 0 when there is none)."""
        from icefloe.loader.commit.lease import lease_from_properties

        name = self.table.split(".", 1)[1]
        lease = lease_from_properties(self.stack.pyiceberg_catalog().load_table(name).properties)
        return lease.expires_ms / 1000 if lease is not None else 0.0

    # -- maintenance ------------------------------------------------------------------------

    def maintain(
        self, operation: Callable[..., maintenance.MaintenanceResult], **options: Any
    ) -> maintenance.MaintenanceResult:
        """Run one `harness.maintenance` operation on the table."""
        return operation(self.stack.query, self.table, **options)

    # -- metrics ----------------------------------------------------------------------------

    def metrics(self, loader: LoaderProcess) -> list[tuple[str, dict[str, str], float]]:
        """The loader's Prometheus samples: (name, labels, value), ``icefloe_`` ones only."""
        return scrape_metrics(self.metrics_port(loader))


def record(path: Path | None, name: str, data: Any) -> None:
    """Write ``data`` as ``<path>/<name>.json`` when recording is asked for."""
    if path is None:
        return
    path.mkdir(parents=True, exist_ok=True)
    (path / f"{name}.json").write_text(json.dumps(data, indent=1, default=str) + "\n")
