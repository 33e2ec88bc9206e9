"""The Iceberg table as the loader reads it: schema, committed offsets, lease.

The driver reads table metadata through pyiceberg on the same REST catalog
Spark writes through, so every micro-batch starts from a fresh view: the
current schema, the snapshot lineage (``offsets.committed_offsets``) and the
lease (table properties plus the newest loader snapshot).  Writing rows goes
through Spark; only the lease properties are written from here.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from loader import keys
from loader.config import LoaderConfig
from loader.offsets import (
    Committed,
    Lease,
    SnapshotInfo,
    committed_offsets,
    lease_from_properties,
    lease_from_summary,
    lease_properties,
)

if TYPE_CHECKING:
    from pyiceberg.schema import Schema

__all__ = ["TableState", "TableView", "now_ms"]


def now_ms() -> int:
    """The wall clock in epoch milliseconds."""
    return time.time_ns() // 1_000_000


@dataclass(frozen=True)
class TableState:
    """One consistent read of the table's metadata.

    Attributes:
        schema: the current schema.
        committed: what the newest loader snapshot of the lineage says.
        leases: the leases found (table properties, newest loader snapshot).
        max_timestamp_ms: newest committed Kafka timestamp, if recorded.
        snapshot_id: the current snapshot, or ``None`` for an empty table.
    """

    schema: Schema
    committed: Committed
    leases: tuple[Lease | None, ...]
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
        """The pyiceberg ``Table``, freshly loaded."""
        t = self.config.table
        return self.catalog().load_table((t.namespace, t.name))

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
        committed = committed_offsets(infos)
        summary: Mapping[str, str] = {}
        if committed.snapshot_id is not None:
            summary = next(i.summary for i in infos if i.snapshot_id == committed.snapshot_id)
        ts = summary.get(keys.MAX_TIMESTAMP_MS)
        return TableState(
            schema=table.schema(),
            committed=committed,
            leases=(lease_from_properties(table.properties), lease_from_summary(summary)),
            max_timestamp_ms=int(ts) if ts and ts.lstrip("-").isdigit() else None,
            snapshot_id=current.snapshot_id if current is not None else None,
        )

    def claim(self, ttl_ms: int) -> None:
        """Write this loader's lease into the table properties.

        Args:
            ttl_ms: how long the claim lasts; 0 releases it.
        """
        props = lease_properties(self.config.loader_id, now_ms(), ttl_ms)
        table = self.load()
        with table.transaction() as tx:
            tx.set_properties(props)

    def lease_owner(self) -> Lease | None:
        """The lease currently held in the table properties."""
        return lease_from_properties(self.load().properties)
