"""Maintenance while the loader loads: the operations of ``harness.maintenance`` as faults.

Each runs the same SQL ``icefloe maintain`` runs, through the run's recording client, retried
when a commit conflicts or Trino is restarting. A retention DELETE also records what it removed
(``retention_removed``: the ids older than the cutoff as of the snapshot before the DELETE and
no longer there as of the DELETE's own snapshot), so a checker can tell a row retention took
from one that was lost. These faults are over once done: healing records that.
"""

from __future__ import annotations

import datetime as dt
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from icefloe.harness import maintenance
from icefloe.harness.observer import TRINO_QUERY_KEY
from icefloe.harness.scenarios.client import metadata_table
from icefloe.harness.scenarios.faults import Over, fault_kind
from icefloe.harness.scenarios.traffic import anchor_moment
from icefloe.harness.waiting import poll

__all__ = ["ExpireParams", "OptimizeParams", "OrphansParams", "RetentionParams"]


def _footprints(result: maintenance.MaintenanceResult) -> dict[str, Any]:
    return {
        "seconds": round(result.seconds, 2),
        "before": dict(vars(result.before)),
        "after": dict(vars(result.after)),
    }


class _Maintenance(Over):
    """A maintenance fault: its parameters, and one operation retried when a commit conflicts
    or Trino is restarting."""

    lane = "maintenance"
    name = ""

    def __init__(self, params: Any, rng: random.Random) -> None:
        self.params = params

    def _retried(self, run: Any, work: Any) -> maintenance.MaintenanceResult:
        """Run ``work()`` up to ``params.attempts`` times; record each failed try."""
        attempts = self.params.attempts
        for attempt in range(1, attempts + 1):
            try:
                return work()  # type: ignore[no-any-return]
            except Exception as exc:
                run.history.record(
                    "fault", "info", f"{self.name}.retry", attempt=attempt, error=str(exc)[:300]
                )
                if attempt == attempts:
                    raise
                time.sleep(2.0)
        raise AssertionError("unreachable")


@dataclass(frozen=True)
class OptimizeParams:
    """Parameters of ``optimize``: compact only files below a size (Trino data size)."""

    file_size_threshold: str | None = None
    attempts: int = 3


@fault_kind("optimize", "maintenance", OptimizeParams)
class Optimize(_Maintenance):
    """``ALTER TABLE ... EXECUTE optimize`` while the loader writes."""

    kind = name = "optimize"

    def inject(self, run: Any) -> Mapping[str, Any]:
        query = run.client.query_fn("optimize")
        table, threshold = run.names.table, self.params.file_size_threshold
        result = self._retried(
            run, lambda: maintenance.optimize(query, table, file_size_threshold=threshold)
        )
        return _footprints(result)


@dataclass(frozen=True)
class ExpireParams:
    """Parameters of ``expire_snapshots``.

    Attributes:
        retention_s: Keep snapshots younger than this.
        min_snapshots: First wait until the table has this many snapshots.
        timeout_s: How long to wait for them.
        attempts: Tries.
    """

    retention_s: float = 0.0
    min_snapshots: int = 1
    timeout_s: float = 240.0
    attempts: int = 3


@fault_kind("expire_snapshots", "maintenance", ExpireParams)
class ExpireSnapshots(_Maintenance):
    """``expire_snapshots`` while the loader writes (Trino's minimum retention lowered for the
    statement's session only); records the snapshot count before and after (``snapshots``)."""

    kind = name = "expire_snapshots"

    def inject(self, run: Any) -> Mapping[str, Any]:
        p, client, table = self.params, run.client, run.names.table
        count = f"SELECT count(*) FROM {metadata_table(table, 'snapshots')}"
        poll(
            lambda: client.sql("snapshot_count", count, attempts=30)[0][0],
            lambda before: before >= p.min_snapshots,
            timeout_s=p.timeout_s,
            every_s=1.0,
        )
        query = client.query_fn("expire_snapshots")
        retention = dt.timedelta(seconds=p.retention_s)
        result = self._retried(
            run, lambda: maintenance.expire_snapshots(query, table, retention=retention)
        )
        run.history.record(
            "read", "ok", "snapshots", before=result.before.snapshots, after=result.after.snapshots
        )
        return _footprints(result)


@dataclass(frozen=True)
class OrphansParams:
    """Parameters of ``remove_orphan_files``: leave files younger than ``retention_s`` (keep it
    longer than a batch takes to write and publish)."""

    retention_s: float = 600.0
    attempts: int = 3


@fault_kind("remove_orphan_files", "maintenance", OrphansParams)
class RemoveOrphanFiles(_Maintenance):
    """``remove_orphan_files`` while the loader writes."""

    kind = name = "remove_orphan_files"

    def inject(self, run: Any) -> Mapping[str, Any]:
        query = run.client.query_fn("remove_orphan_files")
        table, retention = run.names.table, dt.timedelta(seconds=self.params.retention_s)
        result = self._retried(
            run, lambda: maintenance.remove_orphan_files(query, table, retention=retention)
        )
        return _footprints(result)


@dataclass(frozen=True)
class RetentionParams:
    """Parameters of ``retention_delete``.

    Attributes:
        older_than_days: Rows older than the workload's anchor minus this go.
        day_boundary: Round the cutoff down to midnight UTC (whole day partitions go).
        attempts: Tries (a DELETE conflicts with a commit of old rows in flight).
    """

    older_than_days: float = 7.0
    day_boundary: bool = True
    attempts: int = 5


RECORD_WAIT_S = 180.0
"""How long a retention DELETE waits for Trino to say what the DELETE removed."""


@fault_kind("retention_delete", "maintenance", RetentionParams)
class RetentionDelete(_Maintenance):
    """``DELETE ... WHERE timestamp < cutoff`` while the loader writes; records the ids visible
    before (``before_delete``) and those the DELETE removed (``retention_removed``)."""

    kind = name = "retention_delete"

    def inject(self, run: Any) -> Mapping[str, Any]:
        p, client, table = self.params, run.client, run.names.table
        cutoff = maintenance.retention_cutoff(
            dt.timedelta(days=p.older_than_days),
            now=anchor_moment(run.workload.anchor),
            day_boundary=p.day_boundary,
        )
        micros = int(cutoff.timestamp() * 1_000_000)
        client.visible("before_delete", table)
        query = client.query_fn("delete", cutoff_micros=micros)
        started = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=1)
        try:
            result = self._retried(
                run, lambda: maintenance.retention_delete(query, table, cutoff=cutoff)
            )
        except Exception:
            # Its commit may have landed though the client lost Trino (killed at the commit,
            # still restarting through every retry): record what it removed all the same, or
            # a checker counts those rows lost.
            self._record_removed(client, table, cutoff, started, RECORD_WAIT_S)
            raise
        removed = self._record_removed(client, table, cutoff, started, RECORD_WAIT_S)
        return {**_footprints(result), "cutoff_micros": micros, "removed": len(removed)}

    def _record_removed(
        self, client: Any, table: str, cutoff: dt.datetime, started: dt.datetime, wait_s: float
    ) -> set[str]:
        """Record ``retention_removed``, waiting up to ``wait_s`` for Trino to answer."""
        micros = int(cutoff.timestamp() * 1_000_000)
        removed = poll(
            lambda: self._removed(client, table, cutoff, started),
            lambda _: True,
            timeout_s=wait_s,
            every_s=2.0,
            retry=Exception,
        )
        client.record_read("retention_removed", sorted(removed), cutoff_micros=micros)
        return removed

    @staticmethod
    def _removed(client: Any, table: str, cutoff: dt.datetime, started: dt.datetime) -> set[str]:
        # Every DELETE this fault committed: a try whose commit landed while its client lost
        # Trino is followed by another try, which commits a second one. Only Trino's own
        # snapshots: another writer's rewrite (a loader that writes no icefloe key) removing
        # rows is not retention's doing.
        rows = client.sql(
            "retention_snapshot",
            f"SELECT snapshot_id, parent_id FROM {metadata_table(table, 'snapshots')} "
            "WHERE operation IN ('delete', 'overwrite') "
            f"AND element_at(summary, '{TRINO_QUERY_KEY}') IS NOT NULL "
            f"AND committed_at >= {maintenance.timestamp_literal(started)} "
            "ORDER BY committed_at",
            attempts=10,
        )
        old = f'"timestamp" < {maintenance.timestamp_literal(cutoff)}'

        def ids(version: int) -> set[str]:
            statement = f"SELECT event_id FROM {table} FOR VERSION AS OF {version} WHERE {old}"
            return {str(r[0]) for r in client.sql("retention_read", statement, attempts=10)}

        removed: set[str] = set()
        for snapshot, parent in rows:
            if parent is not None:
                removed |= ids(parent) - ids(snapshot)
        return removed
