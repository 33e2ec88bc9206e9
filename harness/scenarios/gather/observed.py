"""What the checkers get from a run: its reads replayed, and the facts its seeds give.

:func:`observed` builds the :class:`~harness.scenarios.checks.facts.reads.Observed` every
checker reads, from the history and the run's folder alone (no service is asked): the rows per
id of the final read-back, every dead letter, named reads, when each id was first seen; and,
for the checks that need them, the facts regenerated from the publisher's seeds (event times,
the values each message was sent with, the table's schema changes).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from icefloe.harness.history import History, select
from icefloe.harness.scenarios.checks.facts.reads import (
    NAMED_READS,
    Observed,
    dead_letters,
    first_seen,
    last_read,
    phases,
    table_counts,
)
from icefloe.harness.scenarios.checks.facts.schema import schema_changes
from icefloe.harness.scenarios.params import parse_params
from icefloe.publisher.ledger import Ledger, LedgerEntry

__all__ = ["REFERENCE_VALUE_COLUMNS", "observed", "value_columns"]


def _reference_value_columns() -> tuple[str, ...]:
    from pyiceberg.types import TimestamptzType

    from icefloe.publisher.rows import EVENT_ID_FIELD, reference_schema

    return tuple(
        f.name
        for f in reference_schema().fields
        if f.field_type.is_primitive
        and not isinstance(f.field_type, TimestamptzType)
        and f.name != EVENT_ID_FIELD
    )


REFERENCE_VALUE_COLUMNS = _reference_value_columns()
"""What a ``values`` check compares unless told otherwise: the reference table's scalar
columns (its timestamp, rendered in many zones, aside)."""


def _regenerated(
    history: History, run_dir: Path, valid: set[str], *, as_sent: bool = False
) -> list[tuple[str, dict]]:
    """The rows of valid messages, regenerated from the phase seeds the history's publish
    events name.

    Args:
        history: The run's history.
        run_dir: Its folder (the ledgers).
        valid: The ids wanted.
        as_sent: Each message as it was sent (extra fields and all) instead of the plain
            (undrifted) row; a phase whose fields are not the table's columns (an envelope,
            camelCase) is left out.

    Returns:
        (event id, row) pairs.
    """
    from icefloe.harness.scenarios.traffic import Workload, generation
    from icefloe.publisher.drift import DriftConfig
    from icefloe.publisher.messages import generate

    out: list[tuple[str, dict[str, Any]]] = []
    for event in select(history, "publish", "publish", "invoke"):
        path = run_dir / str(event.data.get("ledger", ""))
        if not path.is_file():
            continue
        entries = Ledger.read(path).entries
        if not entries:
            continue
        workload = parse_params(Workload, event.data["workload"], "publish")
        config = generation(workload, int(event.data["seed"]), event.data.get("pool_seed"))
        if as_sent:
            if workload.envelope or workload.camel_case:
                continue
        else:
            # Drift never changes the values of a valid row, so the plain row is the truth.
            config = dataclasses.replace(config, drift=DriftConfig())
        for m in generate(config, max(e.seq for e in entries) + 1):
            if m.event_id in valid and m.kind is None and m.value is not None:
                out.append((m.event_id, json.loads(m.value)))
    return out


def value_columns(columns: Iterable[str]) -> list[str]:
    """The columns of a table whose values a ``values_match_ledger`` check compares: the
    reference table's scalar columns and every column the reference table does not have
    (the ones a scenario or a schema fault added, under their names at the end)."""
    from icefloe.publisher.rows import EVENT_ID_FIELD, reference_schema

    reference = {f.name for f in reference_schema().fields}
    return [
        c
        for c in columns
        if c != EVENT_ID_FIELD and (c in REFERENCE_VALUE_COLUMNS or c not in reference)
    ]


def _micros(text: str) -> int:
    return int(dt.datetime.fromisoformat(text).timestamp() * 1_000_000)


def observed(
    history: History,
    run_dir: Path,
    ledger: Sequence[LedgerEntry],
    checks: Iterable[tuple[str, Mapping[str, Any]]] = (),
) -> Observed:
    """What the run read back, for the checkers.

    Args:
        history: The run's history.
        run_dir: The run's folder (its ledgers).
        ledger: Every ledger entry of the run.
        checks: (checker name, params) of the checks to come: decides which generated facts
            (event times, expected values) are worth regenerating.

    Returns:
        The readings.
    """
    reads: dict[str, Any] = {}
    for name in NAMED_READS:
        value = last_read(history, name)
        if value is not None:
            reads[name] = value
    reads["columns"] = last_read(history, "columns") or []
    reads["first_seen"] = first_seen(history)
    for event in select(history, "read", phase="ok"):
        if event.name.startswith("column:"):
            reads[event.name] = dict(event.data.get("values") or {})
    facts: dict[str, Any] = {"phases": phases(run_dir)}
    wanted = {name for name, _ in checks}
    if "values_match_ledger" in wanted:
        read = set(reads.get("row_values") or ())
        facts["sent_rows"] = dict(_regenerated(history, run_dir, read, as_sent=True))
        facts["schema_changes"] = schema_changes(history)
    if wanted & {"retention", "values"}:
        valid = {e.event_id for e in ledger if e.delivered and e.status == "valid"}
        rows = _regenerated(history, run_dir, valid)
        if "retention" in wanted:
            facts["event_times"] = {eid: _micros(row["timestamp"]) for eid, row in rows}
        for name, params in checks:
            if name == "values":
                named = params.get("columns") or REFERENCE_VALUE_COLUMNS
                columns = [c for c in named if c in reads["columns"]]
                facts["expected_rows"] = {
                    eid: {c: row[c] for c in columns if c in row} for eid, row in rows
                }
    return Observed(table_counts(history), dead_letters(history), reads, facts)
