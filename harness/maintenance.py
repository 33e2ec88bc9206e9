"""Table maintenance as the reference design runs it: SQL through Trino, measured before and after.

One function per operation (compaction, snapshot expiry, orphan-file removal, a retention
DELETE), each taking a ``query`` callable (``Stack.query``: one statement, optional session
properties, every row back) and a table ``catalog.schema.table``, and returning what it ran and
the table's footprint (data files, delete files, snapshots, bytes, rows) before and after.
``icefloe maintain`` and the scenario engine's maintenance faults both call these, so the
statements are written once. Every operation is safe while the loader writes: the loader
publishes a batch only if main has not moved since it planned it, and plans again otherwise.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from icefloe.harness.stack.keys import TRINO_CATALOG
from icefloe.harness.stack.tables import quote

__all__ = [
    "Footprint",
    "MaintenanceResult",
    "Query",
    "expire_snapshots",
    "footprint",
    "optimize",
    "remove_orphan_files",
    "retention_cutoff",
    "retention_delete",
    "timestamp_literal",
]

Query = Callable[[str, Mapping[str, str] | None], list[Any]]
"""Run one statement on Trino with optional session properties; return every row."""

EXPIRE_MIN_RETENTION = "expire_snapshots_min_retention"
ORPHANS_MIN_RETENTION = "remove_orphan_files_min_retention"
"""Catalog session properties: the lowest threshold Trino accepts (7 d unless lowered)."""


@dataclass(frozen=True)
class Footprint:
    """What a table holds as of its current snapshot.

    Attributes:
        data_files: data files of the current snapshot.
        delete_files: delete files (position or equality) of the current snapshot.
        bytes: total size of those files.
        snapshots: snapshots kept in the table's metadata.
        rows: rows a query sees (deletes applied).
    """

    data_files: int
    delete_files: int
    bytes: int
    snapshots: int
    rows: int


@dataclass(frozen=True)
class MaintenanceResult:
    """One maintenance operation on one table.

    Attributes:
        operation: ``optimize``, ``expire_snapshots``, ``remove_orphan_files`` or ``retention``.
        table: ``catalog.schema.table``.
        statement: the SQL that ran.
        before: the footprint before it.
        after: the footprint after it.
        seconds: how long the statement took.
    """

    operation: str
    table: str
    statement: str
    before: Footprint
    after: Footprint
    seconds: float


def _metadata_table(table: str, suffix: str) -> str:
    catalog, schema, name = table.split(".")
    return f"{quote(catalog)}.{quote(schema)}.{quote(name + '$' + suffix)}"


def _qualified(table: str) -> str:
    return ".".join(quote(part) for part in table.split("."))


def footprint(query: Query, table: str) -> Footprint:
    """Files, bytes, snapshots and rows of ``table`` now.

    Args:
        query: runs one statement on Trino.
        table: ``catalog.schema.table``.

    Returns:
        The footprint.
    """
    ((data, deletes, size),) = query(
        "SELECT count_if(content = 0), count_if(content <> 0), "
        f"coalesce(sum(file_size_in_bytes), 0) FROM {_metadata_table(table, 'files')}",
        None,
    )
    ((snapshots,),) = query(f"SELECT count(*) FROM {_metadata_table(table, 'snapshots')}", None)
    ((rows,),) = query(f"SELECT count(*) FROM {_qualified(table)}", None)
    return Footprint(int(data), int(deletes), int(size), int(snapshots), int(rows))


CONFLICTS = (
    "ICEBERG_COMMIT_ERROR",
    # The REST catalog's answer (HTTP 400, not 409) when a commit that adds a snapshot loses a
    # race with another one, e.g. the loader's staged batch (apache/iceberg#15001; fixed in
    # the catalog server by apache/iceberg#15126, after the 1.10.1 server the kit runs).
    "Cannot add snapshot with sequence number",
)
"""What in a Trino error says the statement's commit lost a race with another writer."""
CONFLICT_ATTEMPTS = 5
"""Tries of a statement whose commit loses races; the statement changed nothing when it did."""
CONFLICT_BACKOFF_S = 1.0
"""Seconds before the second try; doubled before each next one."""


def is_conflict(error: BaseException) -> bool:
    """Whether ``error`` is a commit that lost a race (the statement can simply run again)."""
    text = str(error)
    return any(marker in text for marker in CONFLICTS)


def _run(
    query: Query,
    operation: str,
    table: str,
    statement: str,
    session: Mapping[str, str] | None = None,
) -> MaintenanceResult:
    """Run ``statement``, again when its commit loses a race with a concurrent commit.

    A loader commits every trigger, so a maintenance commit racing it is the normal case, and
    a lost race leaves the table as it was: each operation here can run again as it is.
    """
    before = footprint(query, table)
    began = time.monotonic()
    for attempt in range(1, CONFLICT_ATTEMPTS + 1):
        try:
            query(statement, session)
            break
        except Exception as exc:
            if attempt == CONFLICT_ATTEMPTS or not is_conflict(exc):
                raise
            time.sleep(CONFLICT_BACKOFF_S * 2 ** (attempt - 1))
    took = time.monotonic() - began
    return MaintenanceResult(operation, table, statement, before, footprint(query, table), took)


def _threshold(retention: dt.timedelta) -> str:
    """A Trino duration literal for ``retention`` (whole seconds)."""
    return f"{max(0, int(retention.total_seconds()))}s"


def _catalog(table: str) -> str:
    return table.split(".", 1)[0] or TRINO_CATALOG


def optimize(
    query: Query, table: str, *, file_size_threshold: str | None = None
) -> MaintenanceResult:
    """Compact small data files: ``ALTER TABLE ... EXECUTE optimize``.

    Args:
        query: runs one statement on Trino.
        table: ``catalog.schema.table``.
        file_size_threshold: only files below this size (Trino data size, e.g. ``128MB``).

    Returns:
        The statement and the footprint before and after.
    """
    args = f"(file_size_threshold => '{file_size_threshold}')" if file_size_threshold else ""
    return _run(query, "optimize", table, f"ALTER TABLE {_qualified(table)} EXECUTE optimize{args}")


def expire_snapshots(query: Query, table: str, *, retention: dt.timedelta) -> MaintenanceResult:
    """Remove snapshots older than ``retention`` (and files only they reference).

    Args:
        query: runs one statement on Trino.
        table: ``catalog.schema.table``.
        retention: keep snapshots younger than this.

    Returns:
        The statement and the footprint before and after.
    """
    return _procedure(query, table, "expire_snapshots", EXPIRE_MIN_RETENTION, retention)


def remove_orphan_files(query: Query, table: str, *, retention: dt.timedelta) -> MaintenanceResult:
    """Delete unreferenced files in the table's location older than ``retention``.

    Data files a fenced or killed loader wrote and never published end here (see the loader's
    docs). Keep ``retention`` longer than a batch takes to write and publish: a younger file may
    belong to a batch in flight.

    Args:
        query: runs one statement on Trino.
        table: ``catalog.schema.table``.
        retention: leave files younger than this.

    Returns:
        The statement and the footprint before and after.
    """
    return _procedure(query, table, "remove_orphan_files", ORPHANS_MIN_RETENTION, retention)


def _procedure(
    query: Query, table: str, procedure: str, minimum: str, retention: dt.timedelta
) -> MaintenanceResult:
    """``ALTER TABLE ... EXECUTE <procedure>(retention_threshold => ...)``.

    Trino refuses thresholds below its catalog's minimum (7 d by default); the minimum is
    lowered for this statement's session only, so the catalog file needs no change.
    """
    threshold = _threshold(retention)
    statement = (
        f"ALTER TABLE {_qualified(table)} EXECUTE {procedure}(retention_threshold => '{threshold}')"
    )
    session = {f"{_catalog(table)}.{minimum}": threshold}
    return _run(query, procedure, table, statement, session)


def retention_cutoff(
    older_than: dt.timedelta, *, now: dt.datetime | None = None, day_boundary: bool = False
) -> dt.datetime:
    """The moment before which rows go: ``now - older_than`` (at midnight UTC of that day when
    ``day_boundary``, so whole ``day(timestamp)`` partitions go)."""
    cutoff = ((now or dt.datetime.now(dt.UTC)) - older_than).astimezone(dt.UTC)
    if day_boundary:
        cutoff = dt.datetime(cutoff.year, cutoff.month, cutoff.day, tzinfo=dt.UTC)
    return cutoff


def timestamp_literal(moment: dt.datetime) -> str:
    """A Trino ``TIMESTAMP '...'`` literal (with time zone) for an aware time."""
    return f"TIMESTAMP '{moment.astimezone(dt.UTC).strftime('%Y-%m-%d %H:%M:%S.%f UTC')}'"


def retention_delete(
    query: Query,
    table: str,
    *,
    older_than: dt.timedelta | None = None,
    column: str = "timestamp",
    now: dt.datetime | None = None,
    whole_days: bool = False,
    cutoff: dt.datetime | None = None,
) -> MaintenanceResult:
    """Delete rows whose ``column`` is older than ``now - older_than`` (the retention DELETE).

    Args:
        query: runs one statement on Trino.
        table: ``catalog.schema.table``.
        older_than: how much history to keep.
        column: a timestamp-with-time-zone column (the reference table's ``timestamp``).
        now: the reference moment (default: the current time, UTC).
        whole_days: round the cutoff down to midnight UTC. On a table partitioned by
            ``day(column)`` whole partitions then go, as a metadata-only delete that writes
            no delete files; up to one day more than ``older_than`` is kept.
        cutoff: the moment itself, instead of ``older_than`` (see :func:`retention_cutoff`).

    Returns:
        The statement and the footprint before and after.

    Raises:
        ValueError: neither ``older_than`` nor ``cutoff`` given.
    """
    if cutoff is None:
        if older_than is None:
            raise ValueError("give older_than or cutoff")
        cutoff = retention_cutoff(older_than, now=now, day_boundary=whole_days)
    statement = (
        f"DELETE FROM {_qualified(table)} WHERE {quote(column)} < {timestamp_literal(cutoff)}"
    )
    return _run(query, "retention", table, statement)
