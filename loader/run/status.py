"""Status: what the table and Kafka say about a loader, without Spark.

``icefloe load status --config FILE`` prints, per topic-partition, the next
offset committed in the table, the Kafka high watermark and the lag between
them, plus the freshness of the table (now minus the newest committed
record's Kafka timestamp), the lease and the snapshot the offsets come from.
"""

from __future__ import annotations

from dataclasses import dataclass

from icefloe.loader.commit.lease import Lease
from icefloe.loader.commit.table import TableView, now_ms
from icefloe.loader.config import LoaderConfig
from icefloe.loader.io.topics import KafkaMetadata

__all__ = ["PartitionStatus", "Status", "format_status", "read_status"]


@dataclass(frozen=True)
class PartitionStatus:
    """One topic-partition: committed next offset, high watermark and lag."""

    topic: str
    partition: int
    committed: int | None
    high_watermark: int | None
    lag: int | None


@dataclass(frozen=True)
class Status:
    """A loader's status as read from the table and Kafka."""

    table: str
    snapshot_id: int | None
    loader_id: str | None
    partitions: tuple[PartitionStatus, ...]
    freshness_s: float | None
    leases: tuple[Lease, ...]
    history_truncated: bool


def read_status(config: LoaderConfig) -> Status:
    """Read committed offsets, watermarks, lag and freshness.

    Args:
        config: the loader configuration.

    Returns:
        The ``Status``.
    """
    state = TableView(config).state()
    kafka = KafkaMetadata(config.kafka)
    try:
        highs = kafka.high_watermarks()
    finally:
        kafka.close()
    committed = state.committed.offsets
    keys = set(highs) | {(t, p) for t, parts in committed.items() for p in parts}
    partitions = []
    for topic, partition in sorted(keys):
        done = committed.get(topic, {}).get(partition)
        high = highs.get((topic, partition))
        lag = None if high is None else max(0, high - (done or 0))
        partitions.append(PartitionStatus(topic, partition, done, high, lag))
    freshness = None
    if state.max_timestamp_ms is not None:
        freshness = max(0.0, (now_ms() - state.max_timestamp_ms) / 1000)
    return Status(
        table=str(config.table),
        snapshot_id=state.committed.snapshot_id,
        loader_id=state.committed.loader_id,
        partitions=tuple(partitions),
        freshness_s=freshness,
        leases=(state.lease,) if state.lease is not None else (),
        history_truncated=state.committed.history_truncated,
    )


def format_status(status: Status) -> str:
    """Render a ``Status`` as plain text lines.

    Args:
        status: from ``read_status``.

    Returns:
        Text for a terminal.
    """
    lines = [f"table      {status.table}"]
    lines.append(
        f"committed  snapshot {status.snapshot_id} by loader {status.loader_id}"
        if status.snapshot_id is not None
        else "committed  nothing yet" + (" (history expired)" if status.history_truncated else "")
    )
    fresh = "n/a" if status.freshness_s is None else f"{status.freshness_s:.1f} s"
    lines.append(f"freshness  {fresh}")
    now = now_ms()
    for lease in status.leases:
        left = (lease.expires_ms - now) / 1000
        state = f"expires in {left:.0f} s" if left > 0 else "expired"
        process = f", process {lease.instance}" if lease.instance else ""
        lines.append(f"lease      {lease.owner} ({state}{process})")
    lines.append("")
    lines.append(f"{'topic':<32} {'partition':>9} {'committed':>12} {'high':>12} {'lag':>10}")
    for p in status.partitions:
        lines.append(
            f"{p.topic:<32} {p.partition:>9} {_num(p.committed):>12} "
            f"{_num(p.high_watermark):>12} {_num(p.lag):>10}"
        )
    return "\n".join(lines)


def _num(value: int | None) -> str:
    return "-" if value is None else str(value)
