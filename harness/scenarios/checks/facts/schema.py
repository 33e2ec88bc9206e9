"""The table's schema over a run, rebuilt from the ALTER statements its history recorded (pure).

A run changes a table's columns through Trino: a scenario's ``sql`` step or a schema fault
(``add_column``, ``drop_column``, ``widen_column``, ``rename_column``), each recorded as a
``sql`` event with its statement, ``invoke`` before it runs and ``ok`` (or ``fail``) after. To
compare a row's values with what was sent, the checker needs, for each column of the table as
it ends, the name that column had when the row was loaded: the loader matches a message's
fields to the columns by name at that moment. A column renamed from ``a`` to ``b`` holds the
``a`` of rows loaded before the rename and, after it, the ``b`` of the messages (which carry
none: NULL). A column added holds NULL for rows loaded before it. A dropped column is gone; a
widened one keeps its values.

When was a row loaded? Not before its message was published (the ledger's Kafka timestamp),
and not after the monitor first saw its id. A change that ended before the publish applies
to the row; one that began after its first sighting does not; one in between may or may not,
so the row may hold either value (:func:`states_of`).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from icefloe.harness.history import Event, select

__all__ = ["SchemaChange", "SchemaTimeline", "names_over_time", "schema_changes", "states_of"]

_IDENT = r'"?([A-Za-z_][A-Za-z0-9_]*)"?'
_PATTERNS = (
    ("add", re.compile(rf"ADD\s+COLUMN\s+(?:IF\s+NOT\s+EXISTS\s+)?{_IDENT}", re.I)),
    ("drop", re.compile(rf"DROP\s+COLUMN\s+(?:IF\s+EXISTS\s+)?{_IDENT}", re.I)),
    ("rename", re.compile(rf"RENAME\s+COLUMN\s+{_IDENT}\s+TO\s+{_IDENT}", re.I)),
    ("widen", re.compile(rf"ALTER\s+COLUMN\s+{_IDENT}\s+SET\s+DATA\s+TYPE", re.I)),
)


@dataclass(frozen=True)
class SchemaChange:
    """One change of the table's columns.

    Attributes:
        op: ``add``, ``drop``, ``rename`` or ``widen``.
        column: The column it acts on (its name before the change).
        to: The new name (``rename``), else None.
        start: When its statement was sent (epoch seconds).
        end: When Trino answered it; None when it failed (it may or may not have applied).
    """

    op: str
    column: str
    to: str | None
    start: float
    end: float | None


def _parse(statement: str) -> tuple[str, str, str | None] | None:
    if not re.match(r"\s*ALTER\s+TABLE\b", statement, re.I):
        return None
    for op, pattern in _PATTERNS:
        m = pattern.search(statement)
        if m:
            groups = m.groups()
            return op, groups[0].lower(), (groups[1].lower() if len(groups) > 1 else None)
    return None


def schema_changes(history: Iterable[Event]) -> list[SchemaChange]:
    """Every column change the run's ``sql`` events record, in order.

    A statement tried again (``attempt`` > 1) after a failure counts once: its last try.

    Args:
        history: The run's events.

    Returns:
        The changes, oldest first.
    """
    out: list[SchemaChange] = []
    started: dict[str, float] = {}
    for e in select(history, "sql"):
        statement = str(e.data.get("statement", ""))
        parsed = _parse(statement)
        if parsed is None:
            continue
        if e.phase == "invoke":
            started.setdefault(statement, e.time)
        elif e.phase in ("ok", "fail"):
            last = e.phase == "ok" or not _retried_later(history, e)
            if last:
                op, column, to = parsed
                start = started.pop(statement, e.time)
                out.append(SchemaChange(op, column, to, start, e.time if e.phase == "ok" else None))
    return out


def _retried_later(history: Iterable[Event], failed: Event) -> bool:
    statement = failed.data.get("statement")
    for e in select(history, "sql", failed.name, "invoke"):
        if e.index > failed.index and e.data.get("statement") == statement:
            return int(e.data.get("attempt", 1)) > 1
    return False


def names_over_time(changes: Sequence[SchemaChange], final: str) -> list[str | None]:
    """The name a column of the final table had in each state of the schema.

    Args:
        changes: The run's changes (:func:`schema_changes`), n of them.
        final: The column's name at the end.

    Returns:
        n + 1 names: before the first change, after each one; None where the column did not
        exist yet (it was added later).
    """
    names: list[str | None] = [final]
    name: str | None = final
    for change in reversed(changes):
        if name is not None:
            if change.op == "rename" and change.to == name:
                name = change.column
            elif change.op == "add" and change.column == name:
                name = None
        names.append(name)
    return names[::-1]


def states_of(
    changes: Sequence[SchemaChange], published_s: float | None, first_seen_s: float | None
) -> range:
    """The states of the schema (indexes into :func:`names_over_time`) a row may have been
    loaded in.

    Args:
        changes: The run's changes.
        published_s: When its message was published (None: unknown, any state from the first).
        first_seen_s: When its id was first seen in the table (None: never during the run).

    Returns:
        The possible states, a range of at least one.
    """
    return SchemaTimeline(changes).states(published_s, first_seen_s)


class SchemaTimeline:
    """A run's changes indexed for many rows: the states a row may have been loaded in and
    the names a column had over them, each in O(log n) for n changes (a soak's hour makes
    about 300 changes and 130,000 rows).

    Args:
        changes: The run's changes (:func:`schema_changes`).
    """

    def __init__(self, changes: Sequence[SchemaChange]) -> None:
        self.changes = changes
        self._ends = sorted(c.end for c in changes if c.end is not None)
        self._starts = sorted(c.start for c in changes)
        self._runs: dict[str, tuple[list[int], list[str | None]]] = {}

    def states(self, published_s: float | None, first_seen_s: float | None) -> range:
        """:func:`states_of`: a change that ended by the publish applies to the row, one that
        began after its first sighting does not."""
        low = 0 if published_s is None else bisect.bisect_right(self._ends, published_s)
        high = len(self.changes)
        if first_seen_s is not None:
            high = bisect.bisect_left(self._starts, first_seen_s)
        return range(min(low, high), high + 1)

    def names(self, final: str, states: range) -> list[str | None]:
        """The names column ``final`` had over ``states`` (:func:`names_over_time`), each
        stretch of one name once, in order."""
        if final not in self._runs:
            firsts: list[int] = []
            names: list[str | None] = []
            for k, name in enumerate(names_over_time(self.changes, final)):
                if not names or name != names[-1]:
                    firsts.append(k)
                    names.append(name)
            self._runs[final] = (firsts, names)
        firsts, names = self._runs[final]
        first = bisect.bisect_right(firsts, states.start) - 1
        last = bisect.bisect_right(firsts, states.stop - 1) - 1
        return names[first : last + 1]
