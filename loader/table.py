"""The Iceberg table as the loader reads and commits it: schema, offsets, lease, publish.

The driver reads table metadata through pyiceberg on the same REST catalog
Spark writes through, so every micro-batch starts from a fresh view: the
current schema, the snapshot lineage (``offsets.table_committed``), the
lease (table properties) and the snapshot main points at.

Writing rows goes through Spark, which only *stages* a batch's snapshot
(Iceberg write-audit-publish: the snapshot is added to the table, main does
not move). The batch becomes visible through ``publish``: one catalog commit
that points main at the staged snapshot and renews the lease, with the
requirement that main still points at the snapshot the batch was planned
from. The catalog checks that requirement atomically at commit time, so a
loader that was frozen while another one took over (the takeover moves main,
see ``take_over``) can never publish what it planned before: fencing by the
catalog, not by a read made beforehand.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from loader import keys
from loader.config import LoaderConfig
from loader.errors import CatalogUnavailable, LoaderError, TableNotFound, first_line
from loader.offsets import (
    Committed,
    Lease,
    SnapshotInfo,
    check_lease,
    check_owner,
    lease_from_properties,
    lease_properties,
    table_committed,
)

if TYPE_CHECKING:
    from pyiceberg.schema import Schema

__all__ = ["MainMoved", "TableState", "TableView", "now_ms"]

log = logging.getLogger("icefloe.loader")

T = TypeVar("T")

CLOCK_SKEW_MS = 1000
"""Clock skew allowed between loaders: a foreign lease counts as live this much longer."""

TAKEOVER_ATTEMPTS = 5

CATALOG_RETRY_S = 2.0
"""How often a take-over waiting for the catalog tries again."""


class MainMoved(Exception):
    """The table's main branch no longer points at the snapshot a batch was planned from.

    Not an error by itself: maintenance (compaction, expiry, a retention DELETE) also moves
    main. The caller reads the table again; if the lease is someone else's it was fenced,
    otherwise it plans the batch again.
    """


def _unanswered(exc: BaseException, config: LoaderConfig) -> str | None:
    """What did not answer, when ``exc`` says a service did not; else ``None``.

    The REST catalog (down, restarting, overloaded), or the table's storage (a network error
    of the S3 client pyiceberg reads metadata with: the catalog answered, MinIO did not).
    """
    import requests
    from pyiceberg.exceptions import ServiceUnavailableError

    if isinstance(exc, (requests.ConnectionError, requests.Timeout, ServiceUnavailableError)):
        return f"the catalog at {config.catalog.uri}"
    if isinstance(exc, OSError) and "NETWORK_CONNECTION" in str(exc):
        return f"the table's storage ({config.catalog.s3_endpoint or 'S3'})"
    return None


def _root_cause(exc: BaseException) -> str:
    """The innermost cause of ``exc`` in one line (``[Errno 111] Connection refused``)."""
    seen = {id(exc)}
    while True:
        inner = exc.__cause__ or exc.__context__
        if inner is None or id(inner) in seen:
            break
        seen.add(id(inner))
        exc = inner
    return f"{type(exc).__name__}: {first_line(exc)}" if str(exc).strip() else type(exc).__name__


def now_ms() -> int:
    """The wall clock in epoch milliseconds."""
    return time.time_ns() // 1_000_000


@dataclass(frozen=True)
class TableState:
    """One consistent read of the table's metadata.

    Attributes:
        schema: the current schema.
        committed: what the newest loader snapshot of the lineage says.
        lease: the lease in the table properties, if any.
        max_timestamp_ms: newest committed Kafka timestamp, if recorded.
        snapshot_id: the snapshot main points at, or ``None`` for an empty table:
            a batch planned from this state can only be published while main
            still points there.
    """

    schema: Schema
    committed: Committed
    lease: Lease | None
    max_timestamp_ms: int | None
    snapshot_id: int | None


class TableView:
    """Reads (and leases) one Iceberg table through pyiceberg.

    Args:
        config: the loader configuration (catalog and table).
    """

    def __init__(self, config: LoaderConfig) -> None:
        self.config = config
        self._catalog: Any = None

    def catalog(self) -> Any:
        """The pyiceberg REST catalog (created once)."""
        if self._catalog is None:
            from pyiceberg.catalog import load_catalog

            cat = self.config.catalog
            props: dict[str, str] = {"type": "rest", "uri": cat.uri}
            if cat.warehouse:
                props["warehouse"] = cat.warehouse
            if cat.s3_endpoint:
                props["s3.endpoint"] = cat.s3_endpoint
            if cat.s3_access_key:
                props["s3.access-key-id"] = cat.s3_access_key
            if cat.s3_secret_key is not None:
                props["s3.secret-access-key"] = cat.s3_secret_key.reveal()
            props["s3.region"] = cat.s3_region
            self._catalog = load_catalog(self.config.table.catalog, **props)
        return self._catalog

    def load(self) -> Any:
        """The pyiceberg ``Table``, freshly loaded.

        Raises:
            TableNotFound: the catalog has no such table.
        """
        from pyiceberg.exceptions import NoSuchTableError

        t = self.config.table
        try:
            return self.catalog().load_table((t.namespace, t.name))
        except NoSuchTableError as exc:
            raise TableNotFound(
                f"{t} does not exist in the catalog at {self.config.catalog.uri}; the loader "
                "writes into a table made beforehand (CREATE TABLE in Trino or Spark)"
            ) from exc

    def state(self) -> TableState:
        """Read schema, committed offsets and leases in one table load.

        Returns:
            The ``TableState``.

        Raises:
            InvalidOffsets: the newest loader snapshot has unreadable offsets.
        """
        table = self.load()
        meta = table.metadata
        current = table.current_snapshot()
        infos = []
        if current is not None:
            others = (s for s in meta.snapshots if s.snapshot_id != current.snapshot_id)
            ordered = [current, *others]
            infos = [
                SnapshotInfo(
                    s.snapshot_id,
                    s.parent_snapshot_id,
                    s.timestamp_ms,
                    dict(s.summary.additional_properties) if s.summary else {},
                )
                for s in ordered
            ]
        committed = table_committed(infos, table.properties)
        summary: Mapping[str, str] = {}
        if committed.snapshot_id is not None:
            summary = next(i.summary for i in infos if i.snapshot_id == committed.snapshot_id)
        ts = summary.get(keys.MAX_TIMESTAMP_MS)
        return TableState(
            schema=table.schema(),
            committed=committed,
            lease=lease_from_properties(table.properties),
            max_timestamp_ms=int(ts) if ts and ts.lstrip("-").isdigit() else None,
            snapshot_id=current.snapshot_id if current is not None else None,
        )

    # -- ownership ---------------------------------------------------------

    def take_over(
        self,
        instance: str,
        ttl_ms: int,
        *,
        wait_s: float = 0.0,
        stop: threading.Event | None = None,
    ) -> None:
        """``claim`` the table, waiting up to ``wait_s`` for a catalog that does not answer.

        A loader started while the catalog or its storage restarts waits for it, as it waits
        for Kafka.

        Args:
            instance: this process's token (the lease names it).
            ttl_ms: how long the lease lasts unless renewed.
            wait_s: how long to keep trying while the catalog does not answer.
            stop: a stop request ends the wait at once.

        Raises:
            CatalogUnavailable: the catalog or its storage did not answer within ``wait_s``.
            ConcurrentLoader: another loader's lease is live.
            TableNotFound: the table does not exist.
            LoaderError: the catalog kept refusing the commit.
        """
        self._answered(lambda: self.claim(instance, ttl_ms), wait_s, stop)

    def read_state(self, *, wait_s: float = 0.0, stop: threading.Event | None = None) -> TableState:
        """``state``, waiting up to ``wait_s`` for a catalog that does not answer (the start-up
        reads it right after the take-over: a catalog paused in between is waited for too).

        Raises:
            CatalogUnavailable: the catalog or its storage did not answer within ``wait_s``.
        """
        return self._answered(self.state, wait_s, stop)

    def _answered(self, call: Callable[[], T], wait_s: float, stop: threading.Event | None) -> T:
        """``call()``, tried every ``CATALOG_RETRY_S`` for ``wait_s`` while the catalog or the
        table's storage does not answer; any other error is raised at once."""
        deadline = time.monotonic() + wait_s
        warned = False
        while True:
            try:
                return call()
            except Exception as exc:
                what = _unanswered(exc, self.config)
                if what is None:
                    raise
                reason = _root_cause(exc)
                if time.monotonic() >= deadline or (stop is not None and stop.is_set()):
                    raise CatalogUnavailable(
                        f"{what} does not answer (waited {wait_s:g} s): {reason}"
                    ) from None
                if not warned:
                    log.warning("%s does not answer yet: %s", what, reason)
                    warned = True
                time.sleep(CATALOG_RETRY_S)

    def claim(self, instance: str, ttl_ms: int) -> None:
        """Take the table for this process: lease it and move main, in one commit.

        The commit writes the lease (owner, instance, expiry), turns on staged writes
        (``keys.WAP_ENABLED``) and adds an empty snapshot that moves main, on the condition
        that main has not moved since the lease was checked. Moving main is what fences off
        an earlier process that is frozen rather than dead: whatever it planned can no longer
        be published.

        Args:
            instance: this process's token.
            ttl_ms: how long the lease lasts unless renewed.

        Raises:
            ConcurrentLoader: another loader's lease is live.
            LoaderError: the catalog kept refusing the commit.
        """
        from pyiceberg.exceptions import CommitFailedException

        me = self.config.loader_id
        for attempt in range(1, TAKEOVER_ATTEMPTS + 1):
            table = self.load()
            lease = lease_from_properties(table.properties)
            check_lease(str(self.config.table), me, now_ms(), [lease], skew_ms=CLOCK_SKEW_MS)
            props = {**lease_properties(me, instance, now_ms(), ttl_ms), keys.WAP_ENABLED: "true"}
            claim = {keys.CLAIM: me, keys.LOADER_ID: me, keys.INSTANCE: instance}
            tx = table.transaction()
            tx.set_properties(props)
            with tx.update_snapshot(snapshot_properties=claim).fast_append():
                pass  # no files: the snapshot exists to move main
            try:
                # Committed once, as built. ``Transaction.commit_transaction`` would retry a
                # refused commit on top of the table as it is now, that is on top of a rival's
                # take-over, and overwrite its live lease without reading it (pyiceberg 0.12).
                self.catalog().commit_table(table, tx._requirements, tx._updates)
                return
            except CommitFailedException as exc:
                log.info("take-over of %s raced another commit (%s); reading again", me, exc)
                time.sleep(0.2 * attempt)
        raise LoaderError(f"could not take over {self.config.table}: the table kept changing")

    def renew(self, instance: str, ttl_ms: int) -> bool:
        """Extend this process's lease, only if it still holds it.

        Args:
            instance: this process's token.
            ttl_ms: the new lease length from now; 0 releases the lease.

        Returns:
            ``False`` when the table moved between reading and writing (try again later).

        Raises:
            Fenced: the lease is someone else's now.
        """
        from pyiceberg.exceptions import CommitFailedException
        from pyiceberg.table.update import SetPropertiesUpdate

        me = self.config.loader_id
        table = self.load()
        check_owner(str(self.config.table), me, instance, lease_from_properties(table.properties))
        current = table.current_snapshot()
        lease = lease_properties(me, instance, now_ms(), ttl_ms)
        try:
            self.catalog().commit_table(
                table,
                requirements=(_main_is(current.snapshot_id if current else None),),
                updates=(SetPropertiesUpdate(updates=lease),),
            )
        except CommitFailedException:
            return False
        return True

    # -- publishing --------------------------------------------------------

    def publish(self, wap_id: str, planned: int | None, instance: str, ttl_ms: int) -> int:
        """Point main at the batch's staged snapshot, if main is still where the plan read it.

        Args:
            wap_id: the id the batch's Spark write staged its snapshot under.
            planned: the snapshot main pointed at when the batch was planned.
            instance: this process's token (the lease is renewed in the same commit).
            ttl_ms: the lease length from now.

        Returns:
            The published snapshot id.

        Raises:
            MainMoved: main moved since the plan (the catalog refused the commit, the
                snapshot was staged on top of a newer one, or expiry removed it).
        """
        from pyiceberg.exceptions import CommitFailedException, CommitStateUnknownException
        from pyiceberg.table.refs import SnapshotRefType
        from pyiceberg.table.update import SetPropertiesUpdate, SetSnapshotRefUpdate

        table = self.load()
        staged = _staged(table, wap_id)
        if staged is None:
            # Snapshot expiry removes a staged snapshot main does not reference; planning
            # again is safe (it reads what the table holds), failing would stop the loader.
            raise MainMoved(f"the snapshot staged under {wap_id!r} is gone (expired?)")
        if staged.parent_snapshot_id != planned:
            raise MainMoved(f"staged on {staged.parent_snapshot_id}, planned from {planned}")
        properties = lease_properties(self.config.loader_id, instance, now_ms(), ttl_ms)
        offsets = staged.summary.additional_properties.get(keys.OFFSETS) if staged.summary else None
        if offsets is not None:  # outlives the snapshot's expiry (see keys.TABLE_OFFSETS)
            properties[keys.TABLE_OFFSETS] = offsets
        try:
            self.catalog().commit_table(
                table,
                requirements=(_main_is(planned),),
                updates=(
                    SetSnapshotRefUpdate(  # type: ignore[call-arg]  # pydantic field aliases
                        ref_name="main", type=SnapshotRefType.BRANCH, snapshot_id=staged.snapshot_id
                    ),
                    SetPropertiesUpdate(updates=properties),
                ),
            )
        except CommitFailedException as exc:
            raise MainMoved(str(exc)) from None
        except CommitStateUnknownException:
            current = self.load().current_snapshot()
            if current is None or current.snapshot_id != staged.snapshot_id:
                raise MainMoved(
                    "the publishing commit's outcome was unknown; it did not land"
                ) from None
        return int(staged.snapshot_id)


def _main_is(snapshot_id: int | None) -> Any:
    """The commit requirement "main points at ``snapshot_id``" (``None``: main does not exist).

    The catalog checks it atomically with the commit and refuses the commit otherwise.
    """
    from pyiceberg.table.update import AssertRefSnapshotId

    return AssertRefSnapshotId(ref="main", snapshot_id=snapshot_id)  # type: ignore[call-arg]


def _staged(table: Any, wap_id: str) -> Any:
    """The snapshot staged under ``wap_id`` (newest first), or ``None``."""
    for snapshot in reversed(table.metadata.snapshots):
        summary = snapshot.summary.additional_properties if snapshot.summary else {}
        if summary.get(keys.WAP_ID) == wap_id:
            return snapshot
    return None
