"""The table's files and snapshots, as a run's storage reads recorded them.

``harness.scenarios.gather.storage`` reads them once at a run's end (Trino's metadata tables
and a HEAD per referenced file) and records each as a named read (:data:`READS`); these pure
functions read that plain data: main's lineage, staged snapshots main never published, files
added by two snapshots or listed twice, files the object store does not hold.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from icefloe.harness.history import Event
from icefloe.harness.scenarios.checks.facts.reads import last_read

__all__ = [
    "CONTENT",
    "PUBLISHED_WAP_ID",
    "READS",
    "SnapshotFact",
    "absent_files",
    "files_added_twice",
    "listed_twice",
    "main_lineage",
    "snapshot_facts",
    "unpublished_staged",
]

READS = ("storage_entries", "storage_files", "storage_presence", "storage_snapshots")
"""The named reads ``harness.scenarios.gather.storage.read_storage`` records."""


CONTENT = {0: "data", 1: "position_deletes", 2: "equality_deletes"}
"""Iceberg's ``content`` codes of a file entry."""


PUBLISHED_WAP_ID = "published-wap-id"
"""Summary key of a snapshot that published a staged one by cherry-pick (Iceberg's name)."""


@dataclass(frozen=True)
class SnapshotFact:
    """One snapshot of the table, as ``$snapshots`` gives it.

    Attributes:
        snapshot: Its id.
        parent: Its parent's id (``None`` for the first).
        time: When it was committed (epoch seconds).
        operation: ``append``, ``replace``, ``overwrite``, ``delete``.
        wap_id: The ``wap.id`` it was staged under, if any.
        published_wap_id: The staged ``wap.id`` it published by cherry-pick, if any.
    """

    snapshot: int
    parent: int | None
    time: float
    operation: str | None = None
    wap_id: str | None = None
    published_wap_id: str | None = None

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> SnapshotFact:
        """Build one from its recorded form (the dataclass's fields as a dict).

        Args:
            doc: A recorded snapshot.

        Returns:
            The snapshot.
        """
        parent = doc.get("parent")
        return cls(
            int(doc["snapshot"]),
            None if parent is None else int(parent),
            float(doc["time"]),
            doc.get("operation"),
            doc.get("wap_id"),
            doc.get("published_wap_id"),
        )

    def to_json(self) -> dict[str, Any]:
        """The snapshot as a JSON-ready dict."""
        return {
            "snapshot": self.snapshot,
            "parent": self.parent,
            "time": self.time,
            "operation": self.operation,
            "wap_id": self.wap_id,
            "published_wap_id": self.published_wap_id,
        }


def main_lineage(snapshots: Iterable[SnapshotFact], main: int | None) -> set[int]:
    """The ids of main's snapshot and its ancestors still in the table.

    Args:
        snapshots: Every snapshot of the table.
        main: The snapshot main points at (``None``: no main yet).

    Returns:
        The lineage (it stops at an ancestor that expiry removed).
    """
    parents = {s.snapshot: s.parent for s in snapshots}
    lineage: set[int] = set()
    current = main
    while current is not None and current in parents and current not in lineage:
        lineage.add(current)
        current = parents[current]
    return lineage


def unpublished_staged(snapshots: Sequence[SnapshotFact], main: int | None) -> list[SnapshotFact]:
    """Snapshots staged under a ``wap.id`` that main never published, oldest first.

    A staged snapshot is published when main (or an ancestor of it) is that very snapshot,
    or when a snapshot of main's lineage names its ``wap.id`` as ``published-wap-id``.

    Args:
        snapshots: Every snapshot of the table.
        main: The snapshot main points at.

    Returns:
        The unpublished staged snapshots, by commit time.
    """
    lineage = main_lineage(snapshots, main)
    published = {
        s.published_wap_id for s in snapshots if s.snapshot in lineage and s.published_wap_id
    }
    staged = [
        s
        for s in snapshots
        if s.wap_id is not None and s.snapshot not in lineage and s.wap_id not in published
    ]
    return sorted(staged, key=lambda s: (s.time, s.snapshot))


def files_added_twice(
    entries: Iterable[tuple[str, int]], leave_out: Iterable[int] = ()
) -> dict[str, list[int]]:
    """Files added by more than one snapshot.

    Args:
        entries: (file path, id of the snapshot that added it) for every ADDED manifest entry
            (the same pair may repeat: a manifest is shared by many snapshots' lists).
        leave_out: Snapshots whose additions do not count (staged, never published).

    Returns:
        Path to the sorted ids of the snapshots that added it, for paths added twice or more.
    """
    skip = set(leave_out)
    by_path: dict[str, set[int]] = defaultdict(set)
    for path, snapshot in entries:
        if snapshot not in skip:
            by_path[path].add(int(snapshot))
    return {p: sorted(ids) for p, ids in sorted(by_path.items()) if len(ids) > 1}


def listed_twice(paths: Iterable[str]) -> dict[str, int]:
    """Paths that appear more than once in a list of the current snapshot's files.

    Args:
        paths: One path per row of ``$files``.

    Returns:
        Path to how many times it is listed, for those listed twice or more.
    """
    return {p: n for p, n in sorted(Counter(paths).items()) if n > 1}


def absent_files(presence: Iterable[tuple[str, str, bool]]) -> list[tuple[str, str]]:
    """The referenced files the object store does not hold.

    Args:
        presence: (path, kind, exists) per referenced file.

    Returns:
        (path, kind) of each missing one, in the given order.
    """
    return [(path, kind) for path, kind, exists in presence if not exists]


def snapshot_facts(history: Iterable[Event]) -> tuple[list[SnapshotFact], int | None] | None:
    """Every snapshot of the table and the one main points at, as the last
    ``storage_snapshots`` read recorded them (None: never read)."""
    doc = last_read(history, "storage_snapshots")
    if doc is None:
        return None
    main = doc.get("main")
    return [SnapshotFact.from_json(s) for s in doc.get("snapshots", ())], (
        None if main is None else int(main)
    )
