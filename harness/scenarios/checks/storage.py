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

The reads are gathered once at a run's end (``harness.scenarios.gather.storage``: SQL on Trino
and a HEAD per referenced file in MinIO) and recorded as named reads; the verdicts are pure
functions of that plain data (``harness.scenarios.checks.facts.storage``), so a saved history
gives the same verdict again.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from icefloe.harness.history import History
from icefloe.harness.observer import observer_of
from icefloe.harness.scenarios.checks.facts.reads import Observed, last_read
from icefloe.harness.scenarios.checks.facts.storage import (
    absent_files,
    files_added_twice,
    listed_twice,
    main_lineage,
    snapshot_facts,
    unpublished_staged,
)
from icefloe.harness.scenarios.checks.verdict import (
    NOT_APPLICABLE,
    UNKNOWN,
    CheckResult,
    Found,
    Param,
    checker,
)
from icefloe.publisher.ledger import LedgerEntry

__all__ = [
    "CHECKS",
    "check_files_exist",
    "check_no_file_added_twice",
    "check_staged_snapshots_bounded",
]

CHECKS = ("no_file_added_twice", "files_exist", "staged_snapshots_bounded")
"""The checkers of this module: a scenario naming one gets the storage reads at its end
(``harness.scenarios.gather.storage.read_storage``)."""


DEFAULT_MAX_STAGED = 10


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
    entries, files = last_read(history, "storage_entries"), last_read(history, "storage_files")
    if entries is None or files is None:
        return CheckResult("no_file_added_twice", UNKNOWN, "the table's files were not read")
    if not entries and not files:
        return CheckResult("no_file_added_twice", UNKNOWN, "the table has no file to compare")
    snaps = snapshot_facts(history)
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
    presence = last_read(history, "storage_presence")
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


@checker(
    "staged_snapshots_bounded",
    Param("max_staged", int, "the most unpublished staged snapshots allowed", DEFAULT_MAX_STAGED),
)
def check_staged_snapshots_bounded(
    history: History, ledger: Sequence[LedgerEntry], observed: Observed, params: Mapping[str, Any]
) -> CheckResult:
    """Staged snapshots that main never published do not pile up.

    Returns:
        ``invalid`` with ``staged_piled_up`` (one per snapshot over the bound, the oldest
        named first); ``unknown`` when the snapshots were not read or none was staged by a
        loader that stages; ``not_applicable`` for a loader that stages none.
    """
    snaps = snapshot_facts(history)
    if snaps is None:
        return CheckResult("staged_snapshots_bounded", UNKNOWN, "the snapshots were not read")
    snapshots, main = snaps
    bound = int(params["max_staged"])
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
