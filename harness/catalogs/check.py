"""Run the catalog checks on one catalog kind: start it from empty state, drive the stages, judge.

A run starts the kind's service with no state of its own (beside the stack, on its object
store), optionally behind a catalog proxy that breaks it (``BREAKS``), plays the race, the
stale writer and the kill -9 (:mod:`harness.catalogs.drive`), judges them
(:mod:`harness.catalogs.verdicts`) and stops the service.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from icefloe.harness.catalogs import drive, kinds, verdicts
from icefloe.harness.scenarios.checks.verdict import CheckResult, summarize
from icefloe.harness.scenarios.faults.commits import CatalogHttpParams
from icefloe.harness.stack import keys
from icefloe.harness.stack.catalogproxy import CatalogProxy

BREAKS: dict[str, CatalogHttpParams] = {
    # A catalog that acknowledges a commit it drops: a proxy answers three commits in ten as
    # applied and forwards none of them.
    "ack_unapplied": CatalogHttpParams(
        mode="ack_unapplied", times=None, probability=0.3, on="commit"
    ),
}
"""Breaks of a catalog, each a rule of the catalog proxy put in front of it."""


@dataclass(frozen=True)
class Sizes:
    """How much each stage does.

    Attributes:
        tables: Tables the race runs on (each table's first round is its first commit).
        writers: Writers racing each round.
        rounds: Rounds per table.
        stale: Stale commits (the first on the table's first commit).
        kill9: Commits acknowledged before the kill -9.
    """

    tables: int = 3
    writers: int = 4
    rounds: int = 4
    stale: int = 3
    kill9: int = 3


@dataclass
class CatalogRun:
    """One catalog kind's checks.

    Attributes:
        kind: The catalog kind.
        checks: The verdicts, in the table's order.
        broken: The break it ran under (empty: none).
        seconds: How long the run took.
        restart_s: How long the catalog took to come back after the kill -9.
        fired: How many commits the break's proxy fired on.
    """

    kind: str
    checks: list[CheckResult] = field(default_factory=list)
    broken: str = ""
    seconds: float = 0.0
    restart_s: float | None = None
    fired: int = 0

    @property
    def verdict(self) -> str:
        return summarize(self.checks)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "verdict": self.verdict,
            "break": self.broken,
            "seconds": round(self.seconds, 1),
            "restart_s": None if self.restart_s is None else round(self.restart_s, 1),
            "fired": self.fired,
            "checks": [c.to_json() for c in self.checks],
        }


def _glue_client(service: Any, address: str | None) -> Callable[[], Any]:
    """Makes boto3 Glue clients on ``service`` that try each request once."""

    def make() -> Any:
        import boto3
        from botocore.config import Config

        return boto3.client(
            "glue",
            endpoint_url=address or service.endpoint,
            region_name=keys.S3_REGION,
            aws_access_key_id=service.credentials.access_key,
            aws_secret_access_key=service.credentials.secret_key.reveal(),
            config=Config(retries={"max_attempts": 1, "mode": "standard"}),
        )

    return make


def target(stack: Any, kind: str, service: Any, address: str | None = None) -> drive.Target:
    """How writers reach ``service`` (at ``address``, a proxy's, else its own).

    Every client tries each request once (a Glue client's boto3 would send a commit whose
    answer was lost again, and the copy be refused): an acknowledgement, or a refusal, is then
    the catalog's answer to the one request.
    """
    protocol = kinds.KINDS[kind].protocol
    properties = stack.pyiceberg_properties(service, address)
    glue = _glue_client(service, address) if protocol == "glue" else None

    def client() -> Any:
        if glue is None:
            from pyiceberg.catalog import load_catalog

            return load_catalog(keys.TRINO_CATALOG, **properties)
        from pyiceberg.catalog.glue import GlueCatalog

        return GlueCatalog(keys.TRINO_CATALOG, client=glue(), **properties)

    return drive.Target(
        kind=kind,
        protocol=protocol,
        client=client,
        location=f"s3://{keys.WAREHOUSE_BUCKET}/{kinds.STATE_DIR}/{kind}",
        glue=glue,
    )


def run(stack: Any, kind: str, sizes: Sizes | None = None, broken: str = "") -> CatalogRun:
    """Start ``kind`` from empty state, run every check on it, stop it.

    Args:
        stack: The running stack (its object store and keys).
        kind: A catalog kind (``kinds.KINDS``).
        sizes: How much each stage does.
        broken: A break (``BREAKS``) to run it under.

    Raises:
        ValueError: an unknown kind or break.
    """
    if broken and broken not in BREAKS:
        raise ValueError(f"no catalog break {broken!r}; one of {', '.join(BREAKS)}")
    sizes = sizes or Sizes()
    service = kinds.service(kind, stack.config, stack.credentials)
    about = kinds.KINDS[kind]
    result = CatalogRun(kind, broken=broken)
    began = time.monotonic()
    if service.process.is_running():
        service.stop()
    shutil.rmtree(service.state_dir, ignore_errors=True)
    service.start()
    proxy = None
    try:
        address = None
        if broken:
            upstream = urlsplit(service.uri)
            proxy = CatalogProxy(
                f"{upstream.scheme}://{upstream.netloc}", catalog=about.protocol, seed=len(kind)
            ).start()
            proxy.add(BREAKS[broken].rule("break", about.protocol))
            address = proxy.url + upstream.path  # Nessie's API is under /iceberg/main
        where = target(stack, kind, service, address)
        raced, raced_lineage = drive.race(where, sizes.tables, sizes.writers, sizes.rounds)
        stale, stale_lineage = drive.stale(where, sizes.stale)
        killed, before, after, result.restart_s = drive.kill9(where, service, sizes.kill9)
        result.checks = [
            verdicts.acknowledged_kept(
                [*raced, *stale, *killed], {**raced_lineage, **stale_lineage, **before}
            ),
            verdicts.one_winner_per_base(raced),
            verdicts.stale_writer_refused(stale),
            verdicts.kept_across_kill9(
                killed, before, after, about.durability, service.keeps_state_on_kill
            ),
        ]
        drive.drop_namespace(where)
    finally:
        if proxy is not None:
            result.fired = len(proxy.fired)
            proxy.stop()
        service.stop()
    result.seconds = time.monotonic() - began
    return result
