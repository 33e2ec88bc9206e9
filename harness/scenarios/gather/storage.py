"""The storage checks' reads, gathered once at a run's end and recorded as named reads.

SQL on Trino through the run's recording client and a HEAD per referenced file in MinIO
(pyarrow's S3 file system, as the stack makes it), each result recorded as a named read
(``harness.scenarios.checks.facts.storage.READS``): the checks of
``harness.scenarios.checks.storage`` judge that plain data. :func:`entries_from_manifests`
reads the same entries through pyiceberg, for a Trino without ``$all_entries`` (it arrived in
Trino 466) or one that cannot read a table's entries (Trino 476 fails on a data file with no
sort order id, which pyiceberg writes: trinodb/trino#29211); :func:`read_storage` falls back
to it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from icefloe.harness.observer import WAP_ID_KEY
from icefloe.harness.scenarios.checks.facts.storage import CONTENT, PUBLISHED_WAP_ID, SnapshotFact
from icefloe.harness.scenarios.checks.storage import CHECKS
from icefloe.harness.scenarios.client import RecordingClient, metadata_table

__all__ = ["entries_from_manifests", "read_storage"]

_ADDED = 1  # manifest entry status: 0 existing, 1 added, 2 deleted


def _rows(client: RecordingClient, name: str, statement: str, attempts: int = 10) -> list[Any]:
    return client.sql(name, statement, attempts=attempts, record_rows=False)


def _entries_sql(client: RecordingClient, table: str) -> list[list[Any]]:
    rows = _rows(
        client,
        "storage_entries",
        "SELECT DISTINCT data_file.file_path, snapshot_id, data_file.content "
        f"FROM {metadata_table(table, 'all_entries')} WHERE status = {_ADDED}",
        attempts=1,  # a table Trino cannot read fails every time: the fallback reads it
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
