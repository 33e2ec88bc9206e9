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

from icefloe.loader import catalogs, keys
from icefloe.loader.commit.hooks import Hooks
from icefloe.loader.commit.lease import (
    Lease,
    check_lease,
    check_owner,
    lease_from_properties,
    lease_properties,
)
from icefloe.loader.commit.offsets import Committed, SnapshotInfo, table_committed
from icefloe.loader.config import LoaderConfig
from icefloe.loader.errors import CatalogUnavailable, LoaderError, TableNotFound
from icefloe.loader.io.icebergclient import commit_transaction_once
from icefloe.loader.io.retry import CATALOG, KAFKA, STORAGE, Patience, unanswered

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


def loader_patience(config: LoaderConfig) -> Patience:
    """The retry policy of a loader: its ``progress_timeout`` and its services' addresses."""
    return Patience(
        config.progress_timeout,
        endpoints={
            CATALOG: catalogs.endpoint(config.catalog),
            STORAGE: config.catalog.s3_endpoint or "S3",
            KAFKA: config.kafka.bootstrap,
        },
    )


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
        dead_letter_positions: the table property ``keys.TABLE_DEAD_LETTER_OFFSETS``
            as written, or ``None``.
    """

    schema: Schema
    committed: Committed
    lease: Lease | None
    max_timestamp_ms: int | None
    snapshot_id: int | None
    dead_letter_positions: str | None = None


class TableView:
    """Reads (and leases) one Iceberg table through pyiceberg.

    Args:
        config: the loader configuration (catalog and table).
        patience: the retry policy (by default the loader's, ``loader_patience``).
        hooks: the test kit's switches (``loader.commit.hooks``); none by default.
    """

    def __init__(
        self, config: LoaderConfig, patience: Patience | None = None, hooks: Hooks | None = None
    ) -> None:
        self.config = config
        self._catalog: Any = None
        self.patience = patience or loader_patience(config)
        self.hooks = hooks if hooks is not None else Hooks()
        self.on_unknown_outcome: Callable[[str, bool], None] | None = None
        """Called for each commit whose answer was lost, with the commit and whether it landed."""

    def catalog(self) -> Any:
        """The pyiceberg catalog (created once), every request bounded by the timeouts."""
        if self._catalog is None:
            self._catalog = catalogs.client(self.config.table.catalog, self.config.catalog)
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
                f"{t} does not exist in the catalog at {catalogs.endpoint(self.config.catalog)}; "
                "the loader "
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
        newest = [
            int(ts)
            for ts in (
                summary.get(keys.MAX_TIMESTAMP_MS),
                table.properties.get(keys.TABLE_MAX_TIMESTAMP_MS),
            )
            if ts and ts.lstrip("-").isdigit()
        ]
        return TableState(
            schema=table.schema(),
            committed=committed,
            lease=lease_from_properties(table.properties),
            max_timestamp_ms=max(newest, default=None),
            snapshot_id=current.snapshot_id if current is not None else None,
            dead_letter_positions=table.properties.get(keys.TABLE_DEAD_LETTER_OFFSETS),
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
                fault = unanswered(exc)
                if fault is None:
                    raise
                what = self.patience.where(fault.service)
                reason = fault.reason
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
                commit_transaction_once(self.catalog(), table, tx)
                return
            except CommitFailedException as exc:
                log.info("take-over of %s raced another commit (%s); reading again", me, exc)
                time.sleep(0.2 * attempt)
            except Exception as exc:
                if unanswered(exc) is None:
                    raise
                # The answer was lost (a dropped connection, a 5xx, a timeout): the take-over
                # may have landed. Read the table before anything is tried again.
                landed = self._resolved("take-over", lambda t: _lease_instance(t) == instance, exc)
                if landed:
                    return
                raise  # did not land: ``take_over`` tries again while the catalog is failing
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

    def _resolved(self, what: str, landed: Callable[[Any], bool], exc: BaseException) -> bool:
        """Whether a commit whose answer was lost landed, read from the table.

        The read is retried while the catalog does not answer (``Patience``), so the outcome
        is known before the caller tries anything again.

        Args:
            what: the commit (``publish``, ``take-over``), for the log and the metrics.
            landed: tells from the freshly loaded table whether the commit is in it.
            exc: the error the commit raised.
        """
        if not self.hooks.resolve_lost_commits:
            log.warning(
                "%s commit of %s: the answer was lost (%s); taken as not landed without reading "
                "the table (resolve_lost_commits switched off by a test)",
                what,
                self.config.table,
                unanswered(exc),
            )
            return False
        table = self.patience.call(self.load, f"reading the outcome of a {what} commit")
        result = bool(landed(table))
        if self.on_unknown_outcome is not None:
            self.on_unknown_outcome(what, result)
        log.warning(
            "%s commit of %s: the answer was lost (%s); read back from the table: %s",
            what,
            self.config.table,
            unanswered(exc),
            "it landed" if result else "it did not land",
        )
        return result

    # -- publishing --------------------------------------------------------

    def publish(
        self,
        wap_id: str,
        planned: int | None,
        instance: str,
        ttl_ms: int,
        properties: Mapping[str, str] | None = None,
    ) -> int:
        """Point main at the batch's staged snapshot, if main is still where the plan read it.

        Args:
            wap_id: the id the batch's Spark write staged its snapshot under.
            planned: the snapshot main pointed at when the batch was planned.
            instance: this process's token (the lease is renewed in the same commit).
            ttl_ms: the lease length from now.
            properties: further table properties set by the same commit.

        Returns:
            The published snapshot id.

        Raises:
            MainMoved: main moved since the plan (the catalog refused the commit, the
                snapshot was staged on top of a newer one, or expiry removed it).
        """
        from pyiceberg.exceptions import CommitFailedException
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
        update = {
            **(properties or {}),
            **lease_properties(self.config.loader_id, instance, now_ms(), ttl_ms),
        }
        offsets = staged.summary.additional_properties.get(keys.OFFSETS) if staged.summary else None
        if offsets is not None:  # outlives the snapshot's expiry (see keys.TABLE_OFFSETS)
            update[keys.TABLE_OFFSETS] = offsets
        try:
            self.catalog().commit_table(
                table,
                requirements=(_main_is(planned),),
                updates=(
                    SetSnapshotRefUpdate(  # type: ignore[call-arg]  # pydantic field aliases
                        ref_name="main", type=SnapshotRefType.BRANCH, snapshot_id=staged.snapshot_id
                    ),
                    SetPropertiesUpdate(updates=update),
                ),
            )
        except CommitFailedException as exc:
            raise MainMoved(str(exc)) from None
        except Exception as exc:
            if unanswered(exc) is None:
                raise
            # The commit's answer was lost: read the table to learn whether main moved onto the
            # staged snapshot, before anything is tried again.
            staged_id = staged.snapshot_id
            if not self._resolved("publish", lambda t: _main_id(t) == staged_id, exc):
                raise MainMoved(
                    f"the publishing commit's answer was lost ({unanswered(exc)}); it did not land"
                ) from None
        return int(staged.snapshot_id)


def _main_id(table: Any) -> int | None:
    current = table.current_snapshot()
    return None if current is None else int(current.snapshot_id)


def _lease_instance(table: Any) -> str | None:
    lease = lease_from_properties(table.properties)
    return None if lease is None else lease.instance


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
