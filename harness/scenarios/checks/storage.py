"""Storage-level checks: the files and snapshots a table's metadata names, against each other
and against the object store.

``exactly_once`` compares rows with the ledger; these look one level down, where a writer's
recovery goes wrong first (apache/iceberg#16282: one data file registered by two snapshots):

- ``no_file_added_twice``: no data or delete file is added by two snapshots of the table
  (Trino's ``$all_entries``, entries of status ADDED), and no path is listed twice among the
  current snapshot's files (``$files``). Entries of a snapshot outside main's lineage (a
  staged one) are left out: a staged snapshot that was cherry-picked adds its files again.
- ``files_exist``: every data and delete file, manifest and the manifest list the current
  snapshot references exists in the object store (a HEAD each).
- ``staged_snapshots_bounded``: snapshots staged by write-audit-publish (summary ``wap.id``)
  that main never published, neither as an ancestor nor by ``published-wap-id``, stay within
  a bound; the oldest ones are named.

Gathering is :func:`read_storage`: SQL on Trino through the run's recording client and a HEAD
per referenced file in MinIO (pyarrow's S3 file system, as the stack makes it), each result
recorded as a named read (``storage_entries``, ``storage_files``, ``storage_presence``,
``storage_snapshots``). The verdicts are pure functions of that plain data, so a saved
history gives the same verdict again. :func:`entries_from_manifests` reads the same entries
through pyiceberg, for a Trino without ``$all_entries`` (it arrived in Trino 466) or one that
cannot read a table's entries (Trino 476 fails on a data file with no sort order id, which
pyiceberg writes: trinodb/trino#29211); :func:`read_storage` falls back to it.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from icefloe.harness.history import History, select
from icefloe.harness.observer import WAP_ID_KEY, observer_of
from icefloe.harness.scenarios.checks.checkers import (
    NOT_APPLICABLE,
    UNKNOWN,
    CheckResult,
    Found,
    Observed,
    checker,
)
from icefloe.harness.scenarios.client import RecordingClient, metadata_table
from icefloe.publisher.ledger import LedgerEntry

__all__ = [
    "CHECKS",
    "READS",
    "SnapshotFact",
    "absent_files",
    "entries_from_manifests",
    "files_added_twice",
    "listed_twice",
    "main_lineage",
    "read_storage",
    "unpublished_staged",
]

CHECKS = ("no_file_added_twice", "files_exist", "staged_snapshots_bounded")
"""The checkers of this module: a scenario naming one gets :func:`read_storage` at the end."""

READS = ("storage_entries", "storage_files", "storage_presence", "storage_snapshots")
"""The named reads :func:`read_storage` records."""

CONTENT = {0: "data", 1: "position_deletes", 2: "equality_deletes"}
"""Iceberg's ``content`` codes of a file entry."""

PUBLISHED_WAP_ID = "published-wap-id"
"""Summary key of a snapshot that published a staged one by cherry-pick (Iceberg's name)."""

DEFAULT_MAX_STAGED = 10
_ADDED = 1  # manifest entry status: 0 existing, 1 added, 2 deleted


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


# -- verdicts over plain data -------------------------------------------------------------


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


# -- checkers ----------------------------------------------------------------------------------


def _last(history: History, name: str) -> Any:
    reads = select(history, "read", name, "ok")
    return reads[-1].data.get("values") if reads else None


def _snapshots(history: History) -> tuple[list[SnapshotFact], int | None] | None:
    doc = _last(history, "storage_snapshots")
    if doc is None:
        return None
    main = doc.get("main")
    return [SnapshotFact.from_json(s) for s in doc.get("snapshots", ())], (
        None if main is None else int(main)
    )


@checker("no_file_added_twice")
def check_no_file_added_twice(
    history: History, ledger: Sequence[LedgerEntry], observed: Observed, params: Mapping[str, Any]
) -> CheckResult:
    """No file is added by two snapshots, and none is listed twice in the current snapshot.

    Reads ``storage_entries`` (path, adding snapshot, content of every ADDED entry),
    ``storage_files`` (path, content per row of ``$files``) and, to leave out snapshots
    outside main's lineage (staged ones), ``storage_snapshots``.

    Returns:
        ``invalid`` with ``added_twice`` or ``listed_twice``; ``unknown`` when the files were
        not read or the table has none.
    """
    entries, files = _last(history, "storage_entries"), _last(history, "storage_files")
    if entries is None or files is None:
        return CheckResult("no_file_added_twice", UNKNOWN, "the table's files were not read")
    if not entries and not files:
        return CheckResult("no_file_added_twice", UNKNOWN, "the table has no file to compare")
    snaps = _snapshots(history)
    off_main: set[int] = set()
    if snaps is not None:
        lineage = main_lineage(*snaps)
        off_main = {s.snapshot for s in snaps[0] if s.snapshot not in lineage}
    found = Found()
    twice = files_added_twice(((str(p), int(s)) for p, s, *_ in entries), off_main)
    for path, ids in twice.items():
        found.add("added_twice", f"{path} added by snapshots {', '.join(map(str, ids))}")
    for path, n in listed_twice(str(p) for p, *_ in files).items():
        found.add("listed_twice", f"{path} listed x{n} in the current snapshot")
    stats = {
        "added_entries": len({(str(p), int(s)) for p, s, *_ in entries}),
        "current_files": len(files),
        "left_out_off_main": len(off_main),
    }
    return found.result(
        "no_file_added_twice",
        f"{stats['added_entries']} files each added once, {len(files)} current files listed once",
        stats,
    )


@checker("files_exist")
def check_files_exist(
    history: History, ledger: Sequence[LedgerEntry], observed: Observed, params: Mapping[str, Any]
) -> CheckResult:
    """Every file the current snapshot references is in the object store.

    Reads ``storage_presence``: (path, kind, exists) for each data and delete file, manifest
    and the manifest list of the current snapshot.

    Returns:
        ``invalid`` with ``missing_file``; ``unknown`` when nothing was looked up.
    """
    presence = _last(history, "storage_presence")
    if presence is None:
        return CheckResult("files_exist", UNKNOWN, "the table's files were not looked up")
    if not presence:
        return CheckResult("files_exist", UNKNOWN, "the current snapshot references no file")
    found = Found()
    for path, kind in absent_files((str(p), str(k), bool(e)) for p, k, e in presence):
        found.add("missing_file", f"{kind} {path}")
    kinds = Counter(str(k) for _, k, _ in presence)
    stats = {"checked": len(presence), **dict(sorted(kinds.items()))}
    return found.result(
        "files_exist", f"all {len(presence)} referenced files are in the object store", stats
    )


@checker("staged_snapshots_bounded")
def check_staged_snapshots_bounded(
    history: History, ledger: Sequence[LedgerEntry], observed: Observed, params: Mapping[str, Any]
) -> CheckResult:
    """Staged snapshots that main never published do not pile up.

    Params:
        max_staged: the most unpublished staged snapshots allowed (default 10).

    Returns:
        ``invalid`` with ``staged_piled_up`` (one per snapshot over the bound, the oldest
        named first); ``unknown`` when the snapshots were not read or none was staged by a
        loader that stages; ``not_applicable`` for a loader that stages none.
    """
    snaps = _snapshots(history)
    if snaps is None:
        return CheckResult("staged_snapshots_bounded", UNKNOWN, "the snapshots were not read")
    snapshots, main = snaps
    bound = int(params.get("max_staged", DEFAULT_MAX_STAGED))
    ever = sum(1 for s in snapshots if s.wap_id is not None)
    staged = unpublished_staged(snapshots, main)
    stats = {
        "snapshots": len(snapshots),
        "staged": ever,
        "unpublished": len(staged),
        "bound": bound,
    }
    observer = observer_of(history.events)
    if not ever and not observer.stages:
        return CheckResult(
            "staged_snapshots_bounded", NOT_APPLICABLE,
            f"{observer.kind} stages no snapshots (no write-audit-publish), and none of "
            f"{len(snapshots)} snapshots was staged", {}, stats,
        )  # fmt: skip
    if not ever:
        return CheckResult(
            "staged_snapshots_bounded", UNKNOWN,
            f"none of {len(snapshots)} snapshots was staged (no wap.id)", {}, stats,
        )  # fmt: skip
    found = Found()
    newest = max(s.time for s in snapshots)
    for s in staged[: max(0, len(staged) - bound)]:
        age = newest - s.time
        found.add("staged_piled_up", f"{s.snapshot} (wap.id {s.wap_id}, {age:.0f} s old)")
    if found.anomalies:
        anomaly = found.anomalies["staged_piled_up"]
        return CheckResult(
            "staged_snapshots_bounded",
            "invalid",
            f"{len(staged)} staged snapshots never published, bound {bound}; "
            f"oldest {', '.join(anomaly.examples[:2])}",
            found.anomalies,
            stats,
        )
    return found.result(
        "staged_snapshots_bounded",
        f"{len(staged)} of {ever} staged snapshots never published (bound {bound})",
        stats,
    )


# -- gathering -----------------------------------------------------------------------------------


def _rows(client: RecordingClient, name: str, statement: str, attempts: int = 10) -> list[Any]:
    return client.sql(name, statement, attempts=attempts, record_rows=False)


def _entries_sql(client: RecordingClient, table: str) -> list[list[Any]]:
    rows = _rows(
        client,
        "storage_entries",
        "SELECT DISTINCT data_file.file_path, snapshot_id, data_file.content "
        f"FROM {metadata_table(table, 'all_entries')} WHERE status = {_ADDED}",
        attempts=3,  # a table Trino cannot read fails every time: the fallback reads it
    )
    return sorted([str(p), int(s), int(c)] for p, s, c in rows)


def entries_from_manifests(iceberg_table: Any) -> list[list[Any]]:
    """(path, adding snapshot, content) of every ADDED entry of every snapshot's manifests,
    read through pyiceberg (what ``$all_entries`` gives).

    Args:
        iceberg_table: A pyiceberg table.

    Returns:
        The distinct entries, sorted.
    """
    io = iceberg_table.io
    seen_manifests: set[str] = set()
    out: set[tuple[str, int, int]] = set()
    for snapshot in iceberg_table.metadata.snapshots:
        for manifest in snapshot.manifests(io):
            if manifest.manifest_path in seen_manifests:
                continue
            seen_manifests.add(manifest.manifest_path)
            for entry in manifest.fetch_manifest_entry(io, discard_deleted=False):
                if int(entry.status) == _ADDED:
                    out.add(
                        (
                            str(entry.data_file.file_path),
                            int(entry.snapshot_id),
                            int(entry.data_file.content),
                        )
                    )
    return [list(e) for e in sorted(out)]


def _snapshots_sql(client: RecordingClient, table: str) -> dict[str, Any]:
    rows = _rows(
        client,
        "storage_snapshots",
        "SELECT snapshot_id, parent_id, to_unixtime(committed_at), operation, "
        f"element_at(summary, '{WAP_ID_KEY}'), element_at(summary, '{PUBLISHED_WAP_ID}') "
        f"FROM {metadata_table(table, 'snapshots')}",
    )
    refs = _rows(
        client,
        "storage_snapshots",
        f"SELECT snapshot_id FROM {metadata_table(table, 'refs')} WHERE name = 'main'",
    )
    snapshots = [
        SnapshotFact(int(s), None if p is None else int(p), float(t), op, wap, pub).to_json()
        for s, p, t, op, wap, pub in sorted(rows, key=lambda r: r[2])
    ]
    return {"main": int(refs[0][0]) if refs else None, "snapshots": snapshots}


def _presence(client: RecordingClient, table: str, files: list[list[Any]]) -> list[list[Any]]:
    referenced = [(str(p), CONTENT.get(int(c), str(c))) for p, c in files]
    for (path,) in _rows(
        client, "storage_presence", f"SELECT path FROM {metadata_table(table, 'manifests')}"
    ):
        referenced.append((str(path), "manifest"))
    for (path,) in _rows(
        client,
        "storage_presence",
        f"SELECT s.manifest_list FROM {metadata_table(table, 'snapshots')} s "
        f"JOIN {metadata_table(table, 'refs')} r ON r.snapshot_id = s.snapshot_id "
        "WHERE r.name = 'main'",
    ):
        referenced.append((str(path), "manifest_list"))
    if not referenced:
        return []
    from pyarrow import fs

    infos = _filesystem(client.stack).get_file_info([p.split("://", 1)[-1] for p, _ in referenced])
    return [
        [path, kind, info.type == fs.FileType.File]
        for (path, kind), info in zip(referenced, infos, strict=True)
    ]


def _filesystem(stack: Any) -> Any:
    return stack.minio.filesystem()


def read_storage(client: RecordingClient, table: str, checks: Iterable[str] = CHECKS) -> None:
    """Read what the storage checks need and record it as named reads.

    A part that fails is recorded as a failed read (the check it serves says ``unknown``);
    nothing is raised.

    Args:
        client: The run's recording client.
        table: ``catalog.schema.table``.
        checks: The storage checks to serve (a subset of :data:`CHECKS`).
    """
    wanted = set(checks)
    history = client.history

    def part(name: str, read: Any) -> Any:
        try:
            values = read()
        except Exception as exc:  # recorded; the check says unknown
            history.record("read", "fail", name, table=table, error=str(exc)[:400])
            return None
        client.record_read(name, values, table=table)
        return values

    if wanted & {"no_file_added_twice", "staged_snapshots_bounded"}:
        part("storage_snapshots", lambda: _snapshots_sql(client, table))
    if (
        "no_file_added_twice" in wanted
        and part("storage_entries", lambda: _entries_sql(client, table)) is None
    ):
        # Trino 476's $all_entries fails on a data file with no sort order id (pyiceberg writes
        # none; trinodb/trino#29211): the same entries, read through pyiceberg.
        part("storage_entries", lambda: entries_from_manifests(client.iceberg_table(table)))
    files: list[list[Any]] | None = None
    if wanted & {"no_file_added_twice", "files_exist"}:
        files = part(
            "storage_files",
            lambda: [
                [str(p), int(c)]
                for p, c in _rows(
                    client,
                    "storage_files",
                    f"SELECT file_path, content FROM {metadata_table(table, 'files')}",
                )
            ],
        )
    if "files_exist" in wanted and files is not None:
        part("storage_presence", lambda: _presence(client, table, files or []))
