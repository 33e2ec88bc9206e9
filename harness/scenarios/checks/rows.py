"""Checks of the table's rows against the ledger: exactly once, retention, new partitions.

Each turns the final read-back (rows per event id) and the ledger into named anomalies through
``harness.scenarios.checks.missing`` (a missing row lost or pending) and
``harness.scenarios.checks.compare`` (one comparison of the rows with the ledger).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from icefloe.harness.history import History, select
from icefloe.harness.scenarios.checks.facts.ledger import describe, valid_entries
from icefloe.harness.scenarios.checks.facts.reads import Observed, removed_by_retention
from icefloe.harness.scenarios.checks.missing import classify_missing, judge_rows
from icefloe.harness.scenarios.checks.verdict import (
    REQUIRED,
    UNKNOWN,
    CheckResult,
    Found,
    Param,
    checker,
)
from icefloe.publisher.ledger import LedgerEntry

__all__ = [
    "check_exactly_once",
    "check_partitions_loaded",
    "check_retention",
    "check_table_matches_ledger",
]


@checker("exactly_once")
def check_exactly_once(
    history: History, ledger: Sequence[LedgerEntry], observed: Observed, params: Mapping[str, Any]
) -> CheckResult:
    """Every valid delivered message is in the table exactly once, and nothing else is
    (:func:`judge_rows` over the final read-back).

    Returns:
        ``invalid`` with ``lost`` (the loader's committed position passed it), ``pending``
        (not loaded, the position before it or unknown), ``duplicated``, ``misrouted`` (a
        malformed message's id in the table) or ``unexpected`` (an id the ledger never sent);
        ``unknown`` when nothing valid was delivered. Rows that arrived only in the drain are
        counted ``late`` in the stats.
    """
    if not valid_entries(ledger):
        return CheckResult("exactly_once", UNKNOWN, "no valid message was delivered")
    found, stats = judge_rows(
        observed.table_counts, ledger, (), history.events, observed.reads.get("first_seen")
    )
    late = f" ({stats['late']} late, in the drain)" if stats["late"] else ""
    return found.result(
        "exactly_once",
        f"{stats['expected']} valid messages, {stats['rows']} rows, all exactly once{late}",
        stats,
    )


@checker("retention")
def check_retention(
    history: History, ledger: Sequence[LedgerEntry], observed: Observed, params: Mapping[str, Any]
) -> CheckResult:
    """After a DELETE of old rows: retained rows exactly once, deleted rows stay gone.

    Uses the ``delete`` SQL event's ``cutoff_micros``, ``facts["event_times"]`` (event id to
    event time in epoch microseconds) and ``reads["before_delete"]`` (ids visible just before
    the DELETE ran). An old message loaded only after the DELETE may be present, once.

    Returns:
        ``invalid`` with ``lost``/``pending``/``duplicated`` (retained rows; lost and pending
        as ``exactly_once`` tells them apart), ``undeleted`` (an old row
        that was visible before the DELETE is still there), ``duplicated`` (old rows);
        ``unknown`` when no DELETE ran or no old/new rows were sent.
    """
    deletes = [e for e in select(history, kind="sql", phase="ok") if "cutoff_micros" in e.data]
    if not deletes:
        return CheckResult("retention", UNKNOWN, "no retention DELETE ran")
    cutoff = int(deletes[-1].data["cutoff_micros"])
    times: Mapping[str, int] = observed.facts["event_times"]
    before = set(observed.reads.get("before_delete", ()))
    found = Found()
    old = new = 0
    absent: list[LedgerEntry] = []
    for e in valid_entries(ledger):
        n = observed.table_counts.get(e.event_id, 0)
        if times[e.event_id] >= cutoff:
            new += 1
            if n == 0:
                absent.append(e)
            elif n > 1:
                found.add("duplicated", f"{describe(e)} x{n}", e.event_id)
        else:
            old += 1
            if n and e.event_id in before:
                found.add(
                    "undeleted",
                    f"{describe(e)} visible before the DELETE and still there",
                    e.event_id,
                )
            elif n > 1:
                found.add("duplicated", f"old {describe(e)} x{n}", e.event_id)
    missing = classify_missing(history.events, absent)
    for e, evidence in missing.lost:
        found.add("lost", f"{describe(e)}: not in the table, {evidence}", e.event_id)
    for e, why in missing.pending:
        found.add("pending", f"{describe(e)}: not in the table, {why}", e.event_id)
    stats = {"retained_expected": new, "old": old, "old_visible_before_delete": len(before)}
    if not old or not new:
        return CheckResult("retention", UNKNOWN, f"{old} old and {new} new rows sent", {}, stats)
    return found.result(
        "retention", f"{new} retained rows exactly once, {old} old rows deleted or late", stats
    )


@checker(
    "partitions_loaded",
    Param("from_partition", int, "the first partition number that was added", REQUIRED),
)
def check_partitions_loaded(
    history: History, ledger: Sequence[LedgerEntry], observed: Observed, params: Mapping[str, Any]
) -> CheckResult:
    """Partitions added mid-run are read: each new partition's valid messages reach the table.

    Judged per partition, so its rows are not counted twice beside ``exactly_once`` (which
    counts each missing row once, lost or pending): a new partition none of whose messages is
    in the table is ``unread_partition``, one with only some of them ``partly_read``.

    Returns:
        ``invalid`` with ``unread_partition`` or ``partly_read`` (each partition with its
        counts); ``unknown`` when no message landed in a new partition.
    """
    first = int(params["from_partition"])
    per: dict[int, list[LedgerEntry]] = defaultdict(list)
    for e in valid_entries(ledger):
        per[e.partition].append(e)
    new = {p: es for p, es in per.items() if p >= first}
    if not new:
        return CheckResult("partitions_loaded", UNKNOWN, "no message landed in a new partition")
    found = Found()
    for p, es in sorted(new.items()):
        loaded = sum(1 for e in es if observed.table_counts.get(e.event_id))
        if not loaded:
            found.add("unread_partition", f"partition {p}: none of its {len(es)} messages loaded")
        elif loaded < len(es):
            found.add("partly_read", f"partition {p}: {loaded} of {len(es)} messages loaded")
    stats = {f"partition_{p}": len(es) for p, es in sorted(per.items())}
    return found.result("partitions_loaded", f"new partitions {sorted(new)} loaded", stats)


@checker("table_matches_ledger")
def check_table_matches_ledger(
    history: History, ledger: Sequence[LedgerEntry], observed: Observed, params: Mapping[str, Any]
) -> CheckResult:
    """The table holds every valid delivered message once, except those a retention DELETE
    removed (which must stay gone), and nothing else (:func:`judge_rows`, the same verdict as
    ``exactly_once`` with retention's removals).

    Returns:
        ``invalid`` with ``lost``, ``duplicated``, ``undeleted``, ``misrouted`` or
        ``unexpected``; ``unknown`` when nothing valid was delivered or the table never read.
    """
    if not select(history, "read", "table", "ok"):
        return CheckResult("table_matches_ledger", UNKNOWN, "the table was not read back")
    if not any(e.delivered and e.status == "valid" for e in ledger):
        return CheckResult("table_matches_ledger", UNKNOWN, "no valid message was delivered")
    removed = removed_by_retention(history)
    found, stats = judge_rows(
        observed.table_counts, ledger, removed, history.events, observed.reads.get("first_seen")
    )
    stats["removed_by_retention"] = len(removed)
    return found.result(
        "table_matches_ledger",
        f"{stats['expected']} valid messages exactly once, {len(removed)} removed by retention, "
        f"{stats['rows']} rows",
        stats,
    )
