"""What a run read back, replayed from its history: rows, dead letters, ids over time, reads.

The recording client writes every read into the history, repeated reads as differences. These
functions replay them: the rows per id of the final read-back, every dead letter read, the ids
visible at any moment, when each id was first seen, the ids retention removed, the reads that
failed and named reads; and the ledgers a saved run keeps. :class:`Observed` is what the
checkers get (``harness.scenarios.gather.observed`` builds it), during a run and afterwards
from the saved files alike (``icefloe scenario check RUN_DIR``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from icefloe.harness.history import Event, select
from icefloe.harness.observer import Letter, observer_of
from icefloe.publisher.ledger import Ledger, LedgerEntry

__all__ = [
    "NAMED_READS",
    "DeadLetter",
    "Observed",
    "dead_letters",
    "first_seen",
    "ids_timeline",
    "last_read",
    "ledger_entries",
    "phases",
    "read_errors",
    "removed_by_retention",
    "table_counts",
]

NAMED_READS = ("before_delete", "visible_at_halt", "compaction", "rows", "row_values")


DeadLetter = Letter
"""One record read back from a dead-letter topic, as the loader's observer reads it."""


@dataclass(frozen=True)
class Observed:
    """What the run read back from the services, gathered once after the timeline.

    Attributes:
        table_counts: For every event id in the table, how many rows carry it.
        dead_letters: Every record of the dead-letter topic (its source and reason as the
            loader's observer reads them).
        reads: Named reads taken during the run (e.g. ids visible before a DELETE).
        facts: What the runner knows from generation, e.g. event times by id.
    """

    table_counts: Mapping[str, int] = field(default_factory=dict)
    dead_letters: Sequence[DeadLetter] = ()
    reads: Mapping[str, Any] = field(default_factory=dict)
    facts: Mapping[str, Any] = field(default_factory=dict)


def ids_timeline(history: Iterable[Event]) -> Iterator[tuple[Event, set[str]]]:
    """Every id read, in order, with the set of ids visible then (the differences replayed)."""
    visible: set[str] = set()
    for event in select(history, "read", "ids", "ok"):
        visible -= set(event.data.get("removed", ()))
        visible |= set(event.data.get("added", ()))
        yield event, visible


def first_seen(history: Iterable[Event]) -> dict[str, float]:
    """When each id was first seen visible (epoch seconds)."""
    seen: dict[str, float] = {}
    for event in select(history, "read", "ids", "ok"):
        for eid in event.data.get("added", ()):
            seen.setdefault(eid, event.time)
    return seen


def removed_by_retention(history: Iterable[Event]) -> set[str]:
    """Ids a retention DELETE removed (recorded by the ``retention_delete`` fault)."""
    out: set[str] = set()
    for event in select(history, "read", "retention_removed", "ok"):
        out.update(event.data.get("values") or ())
    return out


def read_errors(history: Iterable[Event]) -> dict[str, int]:
    """Reads that failed, per read (``ids``, ``duplicates``, ``commits``, ``dead_letters``...).

    The live monitor tries again next round when a read fails (a service down, a query that
    timed out); every failure is still recorded (``read``/``fail``), and counted here so a run
    whose monitor read little says so instead of passing quietly.
    """
    return dict(Counter(e.name for e in select(history, "read", phase="fail")))


def table_counts(history: Iterable[Event]) -> dict[str, int]:
    """Rows per event id in the last full read of the table (empty if none was made)."""
    reads = select(history, "read", "table", "ok")
    return {str(k): int(v) for k, v in reads[-1].data.get("values", ())} if reads else {}


def dead_letters(history: Iterable[Event]) -> list[DeadLetter]:
    """Every dead letter read during the run, in the order of the topic, as the loader's
    observer reads its headers (``harness.observer.Observer.letter``)."""
    events = list(history)
    observer = observer_of(events)
    out: list[DeadLetter] = []
    for event in select(events, "read", "dead_letters", "ok"):
        for d in event.data.get("values") or ():
            out.append(observer.letter(int(d["partition"]), int(d["offset"]), d["headers"]))
    return out


def last_read(history: Iterable[Event], name: str) -> Any:
    """The values of the last successful read called ``name`` (None: never read)."""
    reads = select(history, "read", name, "ok")
    return reads[-1].data.get("values") if reads else None


def ledger_entries(run_dir: Path) -> list[LedgerEntry]:
    """Every ledger entry of a run (its ``ledgers/`` folder)."""
    out: list[LedgerEntry] = []
    for path in sorted((run_dir / "ledgers").glob("*.jsonl")):
        out.extend(Ledger.read(path).entries)
    return out


def phases(run_dir: Path) -> dict[str, list[str]]:
    """The event ids of each publish phase (ledger file stem)."""
    return {
        p.stem: [e.event_id for e in Ledger.read(p).entries]
        for p in sorted((run_dir / "ledgers").glob("*.jsonl"))
    }
