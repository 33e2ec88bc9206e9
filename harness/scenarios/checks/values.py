"""Checks of the values the table holds: as generated, as sent through schema changes, a
column filled or gone, and rows unchanged by compaction."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from icefloe.harness.history import History
from icefloe.harness.scenarios.checks.facts.ledger import valid_entries
from icefloe.harness.scenarios.checks.facts.reads import Observed
from icefloe.harness.scenarios.checks.facts.schema import SchemaChange, SchemaTimeline
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
    "DROPPED",
    "check_column_absent",
    "check_column_values",
    "check_compaction",
    "check_values",
    "check_values_match_ledger",
    "same_value",
]

DROPPED = "dropped_value"
"""A value sent that the table holds as NULL: the loader dropped it (a column it never wrote,
a field it did not map), a class of its own beside ``wrong_value`` (a value changed)."""


@checker(
    "values",
    Param("columns", tuple[str, ...], "the columns compared (none: the reference table's scalars)"),
)
def check_values(
    history: History, ledger: Sequence[LedgerEntry], observed: Observed, params: Mapping[str, Any]
) -> CheckResult:
    """Rows hold the values generated for them, in the expected (renamed) columns.

    ``facts["expected_rows"]`` maps event id to expected column values and
    ``reads["rows"]`` maps event id to what Trino returned for the same columns. Kafka
    metadata columns are compared with the ledger (``kafka_partition``, ``kafka_offset``).
    What counts is values compared, not rows: a row whose columns were all left out of the
    read compares nothing.

    Returns:
        ``invalid`` with ``wrong_value``, or ``dropped_value`` for a value sent that reads
        NULL; ``unknown`` if no value could be compared.
    """
    expected: Mapping[str, Mapping[str, Any]] = observed.facts.get("expected_rows", {})
    rows: Mapping[str, Mapping[str, Any]] = observed.reads.get("rows", {})
    by_id = {e.event_id: e for e in valid_entries(ledger)}
    found = Found()
    compared = values = 0
    for eid, want in expected.items():
        got = rows.get(eid)
        if got is None:
            continue
        entry = by_id.get(eid)
        full = dict(want)
        if entry is not None:
            full.setdefault("kafka_partition", entry.partition)
            full.setdefault("kafka_offset", entry.offset)
        columns = [c for c in full if c in got]
        compared += bool(columns)
        for column in columns:
            values += 1
            if got[column] is None and full[column] is not None:
                found.add(DROPPED, f"{eid}: {column}=NULL, sent {full[column]!r} (dropped)", eid)
            elif not same_value(got[column], full[column], rel_tol=1e-12):
                found.add(
                    "wrong_value",
                    f"{eid}: {column}={got[column]!r}, expected {full[column]!r}",
                    eid,
                )
    stats = {"rows": compared, "values": values}
    if not values:
        return CheckResult(
            "values", UNKNOWN, f"no value could be compared ({len(rows)} rows read)", {}, stats
        )
    return found.result("values", f"{values} values of {compared} rows as generated", stats)


@checker(
    "column_values",
    Param("column", str, 'the column read (reads["column:<name>"])', REQUIRED),
    Param("null_phases", tuple[str, ...], "publish phases whose rows must read NULL", ()),
    Param("filled_phases", tuple[str, ...], "publish phases whose rows must hold value", REQUIRED),
    Param("value", Any, "the value the filled phases' rows must hold", REQUIRED),
)
def check_column_values(
    history: History, ledger: Sequence[LedgerEntry], observed: Observed, params: Mapping[str, Any]
) -> CheckResult:
    """A column is NULL for rows of some publish phases and holds a value for others.

    Returns:
        ``invalid`` with ``wrong_value``, or ``dropped_value`` for a filled phase's row that
        reads NULL; ``unknown`` if a phase sent no valid rows, the
        column was not read, or no row of a phase was found in the read.
    """
    column = params["column"]
    values: Mapping[str, Any] = observed.reads.get(f"column:{column}", {})
    phases: Mapping[str, Sequence[str]] = observed.facts.get("phases", {})
    valid_ids = {e.event_id for e in valid_entries(ledger)}
    found = Found()
    stats: dict[str, Any] = {}
    for phase_list, want_null in (
        (params["null_phases"], True),
        (params["filled_phases"], False),
    ):
        for phase in phase_list:
            ids = [i for i in phases.get(phase, ()) if i in valid_ids]
            stats[f"{phase}_rows"] = len(ids)
            if not ids:
                return CheckResult("column_values", UNKNOWN, f"phase {phase} sent no rows")
            compared = sum(1 for eid in ids if eid in values)
            stats[f"{phase}_compared"] = compared
            if not compared:
                return CheckResult(
                    "column_values", UNKNOWN,
                    f"no row of phase {phase} was in the read of {column} "
                    f"({len(values)} rows read)", {}, stats,
                )  # fmt: skip
            for eid in ids:
                if eid not in values:
                    continue  # absence is the exactly_once checker's business
                got = values[eid]
                if want_null and got is not None:
                    found.add(
                        "wrong_value",
                        f"{eid} ({phase}): {column}={got!r}, expected NULL",
                        key=f"{eid}:{column}",
                    )
                elif not want_null and got is None and params["value"] is not None:
                    found.add(
                        DROPPED,
                        f"{eid} ({phase}): {column}=NULL, sent {params['value']!r} (dropped)",
                        key=f"{eid}:{column}",
                    )
                elif not want_null and got != params["value"]:
                    found.add(
                        "wrong_value",
                        f"{eid} ({phase}): {column}={got!r}, expected {params['value']!r}",
                        key=f"{eid}:{column}",
                    )
    return found.result("column_values", f"{column} NULL before, filled after", stats)


@checker("column_absent", Param("column", str, "the column that must be gone", REQUIRED))
def check_column_absent(
    history: History, ledger: Sequence[LedgerEntry], observed: Observed, params: Mapping[str, Any]
) -> CheckResult:
    """A dropped column is gone from the table (``reads["columns"]``)."""
    columns = list(observed.reads.get("columns", ()))
    found = Found()
    if not columns:
        return CheckResult("column_absent", UNKNOWN, "the table's columns were not read")
    if params["column"] in columns:
        found.add("wrong_value", f"column {params['column']} still in the table")
    return found.result("column_absent", f"column {params['column']} is gone", {})


@checker("compaction")
def check_compaction(
    history: History, ledger: Sequence[LedgerEntry], observed: Observed, params: Mapping[str, Any]
) -> CheckResult:
    """Compaction lowers the data file count and leaves the rows unchanged.

    ``reads["compaction"]`` holds ``before`` and ``after``: the snapshot before the rewrite
    (its parent) and the rewrite snapshot itself, each with ``files`` and ``rows`` (a tuple
    of aggregates over the rows as of that snapshot).

    Returns:
        ``invalid`` with ``not_compacted`` or ``wrong_value``; ``unknown`` without a rewrite,
        or when neither snapshot's rows were read (two empty reads compare nothing).
    """
    read = observed.reads.get("compaction")
    if not read:
        return CheckResult("compaction", UNKNOWN, "no rewrite snapshot was found")
    before, after = read["before"], read["after"]
    if not before["rows"] and not after["rows"]:
        return CheckResult(
            "compaction", UNKNOWN, "the rows as of either snapshot were not read: nothing compared"
        )
    found = Found()
    if not after["files"] < before["files"]:
        found.add("not_compacted", f"data files {before['files']} -> {after['files']}")
    if list(before["rows"]) != list(after["rows"]):
        found.add("wrong_value", f"rows {before['rows']} -> {after['rows']}")
    stats = {"files_before": before["files"], "files_after": after["files"], "rows": before["rows"]}
    return found.result(
        "compaction", f"data files {before['files']} -> {after['files']}, rows unchanged", stats
    )


@checker(
    "values_match_ledger",
    Param("columns", tuple[str, ...], "the columns compared (none: every value column)"),
)
def check_values_match_ledger(
    history: History, ledger: Sequence[LedgerEntry], observed: Observed, params: Mapping[str, Any]
) -> CheckResult:
    """Every row holds, column by column, the values its message was sent with, mapped through
    the table's schema history (``harness.scenarios.checks.facts.schema``): a column added holds
    NULL for rows loaded before it, a renamed one the old field's value for rows loaded before
    the rename and NULL after, a widened one the same value, a dropped one is not compared.

    Reads ``reads["row_values"]`` (event id to the final table's value columns, read after
    everything healed) and ``facts["sent_rows"]`` (each valid message as sent, regenerated
    from its phase's seed). A row that may have been loaded on either side of a change (its
    message published before the change ended, its id first seen after it began) may hold
    either value. A column whose change failed (it may or may not have applied) is left out.

    Returns:
        ``invalid`` with ``wrong_value`` (the row, the column, the value read and the ones
        expected), or ``dropped_value`` where it reads NULL and NULL was none of them;
        ``unknown`` when the values were not read or no row could be compared.
    """
    rows: Mapping[str, Mapping[str, Any]] = observed.reads.get("row_values") or {}
    sent: Mapping[str, Mapping[str, Any]] = observed.facts.get("sent_rows") or {}
    if not rows:
        return CheckResult("values_match_ledger", UNKNOWN, "the rows' values were not read")
    changes: Sequence[SchemaChange] = observed.facts.get("schema_changes") or ()
    seen: Mapping[str, float] = observed.reads.get("first_seen") or {}
    columns = sorted({c for values in rows.values() for c in values})
    uncertain = {n for c in changes if c.end is None for n in (c.column, c.to) if n}
    timeline = SchemaTimeline(changes)
    every_state = range(len(changes) + 1)
    compared = [
        c for c in columns if not uncertain & set(filter(None, timeline.names(c, every_state)))
    ]
    entries = {e.event_id: e for e in ledger if e.delivered and e.status == "valid"}
    found = Found()
    checked = values = either = 0
    for eid, got in rows.items():
        message, entry = sent.get(eid), entries.get(eid)
        if message is None or entry is None:
            continue
        checked += 1
        published = entry.timestamp / 1000 if entry.timestamp is not None else None
        states = timeline.states(published, seen.get(eid))
        for column in compared:
            wants: list[Any] = []
            for name in timeline.names(column, states):
                want = message.get(name) if name is not None else None
                if not any(same_value(want, w) for w in wants):
                    wants.append(want)
            values += 1
            either += len(wants) > 1
            if not any(same_value(got.get(column), w) for w in wants):
                expected = " or ".join(repr(w) for w in wants)
                if got.get(column) is None:  # every value it could hold was sent, none kept
                    found.add(
                        DROPPED,
                        f"{eid}: {column}=NULL, sent {expected} (dropped)",
                        key=f"{eid}:{column}",
                    )
                    continue
                found.add(
                    "wrong_value",
                    f"{eid}: {column}={got.get(column)!r}, expected {expected}",
                    key=f"{eid}:{column}",
                )
    stats = {
        "rows": checked,
        "values": values,
        "either_side_of_a_change": either,
        "columns": len(compared),
        "columns_left_out": len(columns) - len(compared),
        "schema_changes": len(changes),
    }
    if not values:
        return CheckResult(
            "values_match_ledger", UNKNOWN,
            f"no value could be compared ({len(rows)} rows read, {checked} with a message "
            "regenerated)", {}, stats,
        )  # fmt: skip
    return found.result(
        "values_match_ledger",
        f"{values} values of {checked} rows in {len(compared)} columns as sent, through "
        f"{len(changes)} schema changes",
        stats,
    )


def same_value(got: Any, want: Any, rel_tol: float = 1e-6) -> bool:
    """Equal; a float by value within ``rel_tol`` relative (a REAL column holds a float32, so
    values read back through the table's schema changes compare within 1e-6)."""
    if isinstance(got, bool) or isinstance(want, bool) or got is None or want is None:
        return bool(got == want)
    numbers = isinstance(got, int | float) and isinstance(want, int | float)
    if numbers and (isinstance(got, float) or isinstance(want, float)):
        return math.isclose(got, want, rel_tol=rel_tol, abs_tol=1e-30)
    return bool(got == want)
