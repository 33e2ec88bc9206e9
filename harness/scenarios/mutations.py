"""What a break changes in what a run read back or recorded, to show a checker notices.

A scenario's break may, instead of breaking the loader, mutate the facts its checks judge
(``[breaks.NAME] mutate = "..."``): the readings gathered after the run (``Observed``) or the
recorded history. A mutation stands for a broken system the run did not have at hand (a loader
that dropped a dead letter, a rewrite that compacted nothing, a loader that went on past a
malformed message): the checker that must see it is shown failing on otherwise real facts,
live (``icefloe scenario run X --break B``) or on a recorded run (``icefloe scenario check``,
``tests/scenarios/test_breaks_recorded.py``).

Each mutation is registered in :data:`MUTATIONS` with what it changes; :func:`apply` applies
one. A scenario file naming an unknown one is refused when it is read.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from icefloe.harness.history import History
from icefloe.harness.observer import WAP_ID_KEY, summary_of
from icefloe.harness.scenarios.checks.facts.commits import main_commits, recorded_snapshots
from icefloe.harness.scenarios.checks.facts.faults import PROXY_FIRED
from icefloe.harness.scenarios.checks.facts.reads import Observed
from icefloe.publisher.ledger import LedgerEntry

__all__ = ["MUTATIONS", "Mutation", "apply"]

Facts = tuple[Observed, History]


@dataclass(frozen=True)
class Mutation:
    """A registered mutation: what it changes, and the change."""

    name: str
    doc: str
    change: Callable[[Observed, History, Sequence[LedgerEntry]], Facts]


MUTATIONS: dict[str, Mutation] = {}
"""Every mutation by name."""


def _mutation(name: str, doc: str) -> Callable[[Callable[..., Facts]], Callable[..., Facts]]:
    def register(change: Callable[..., Facts]) -> Callable[..., Facts]:
        MUTATIONS[name] = Mutation(name, doc, change)
        return change

    return register


def apply(mutation: str, found: Observed, history: History, ledger: Sequence[LedgerEntry]) -> Facts:
    """The readings and history with ``mutation`` applied.

    Raises:
        ValueError: An unknown mutation.
    """
    if mutation not in MUTATIONS:
        raise ValueError(f"unknown mutation {mutation!r}; one of {sorted(MUTATIONS)}")
    return MUTATIONS[mutation].change(found, history, ledger)


def _events(history: History) -> list[tuple[float, str, str, str, dict[str, Any]]]:
    return [(e.time, e.kind, e.phase, e.name, dict(e.data)) for e in history.events]


def _first_letters(found: Observed) -> set[int]:
    """The index of the first dead letter of each error kind (or reason)."""
    kinds: dict[str, int] = {}
    for i, letter in enumerate(found.dead_letters):
        kinds.setdefault(letter.kind or letter.reason or "", i)
    return set(kinds.values())


@_mutation("drop_dead_letters", "the first dead letter of each error kind is lost")
def _drop_dead_letters(found: Observed, history: History, ledger: Any) -> Facts:
    firsts = _first_letters(found)
    kept = [d for i, d in enumerate(found.dead_letters) if i not in firsts]
    return dataclasses.replace(found, dead_letters=kept), history


@_mutation(
    "duplicate_dead_letters",
    "the first dead letter of each error kind is read twice, as if the same loader had sent it "
    "again",
)
def _duplicate_dead_letters(found: Observed, history: History, ledger: Any) -> Facts:
    firsts = _first_letters(found)
    letters = [*found.dead_letters, *(found.dead_letters[i] for i in sorted(firsts))]
    return dataclasses.replace(found, dead_letters=letters), history


def _plus_one(rows: Any) -> dict[str, dict[str, Any]]:
    changed = {eid: dict(v) for eid, v in (rows or {}).items()}
    for values in list(changed.values())[:5]:
        for column, value in values.items():
            if isinstance(value, int) and not isinstance(value, bool):
                values[column] = value + 1
                break
    return changed


@_mutation(
    "change_values",
    "the values read back are changed: one integer of each of the first five rows, plus one",
)
def _change_values(found: Observed, history: History, ledger: Any) -> Facts:
    reads = dict(found.reads)
    for name in ("row_values", "rows"):  # values_match_ledger's read, and values'
        if name in reads:
            reads[name] = _plus_one(reads[name])
    return dataclasses.replace(found, reads=reads), history


@_mutation(
    "blank_columns",
    "every column read by name reads NULL, as if the loader had never written the column",
)
def _blank_columns(found: Observed, history: History, ledger: Any) -> Facts:
    reads = {
        name: ({eid: None for eid in value} if name.startswith("column:") else value)
        for name, value in found.reads.items()
    }
    return dataclasses.replace(found, reads=reads), history


_DROPPED = re.compile(r'DROP COLUMN "?([^"\s]+)"?')


@_mutation(
    "restore_dropped_columns",
    "the columns an ALTER TABLE dropped are read back among the table's columns again",
)
def _restore_dropped_columns(found: Observed, history: History, ledger: Any) -> Facts:
    dropped = [
        m.group(1)
        for e in history.events
        if e.phase == "ok"  # the statement ran (a sql step, or a fault's)
        for m in [_DROPPED.search(str(e.data.get("statement", "")))]
        if m
    ]
    columns = [*found.reads.get("columns", ()), *dropped]
    return dataclasses.replace(found, reads={**found.reads, "columns": columns}), history


@_mutation(
    "uncompacted",
    "the rewrite read back leaves as many data files as there were before it",
)
def _uncompacted(found: Observed, history: History, ledger: Any) -> Facts:
    read = found.reads.get("compaction")
    if not read:
        return found, history
    after = {**read["after"], "files": read["before"]["files"]}
    return dataclasses.replace(
        found, reads={**found.reads, "compaction": {**read, "after": after}}
    ), history


@_mutation(
    "seen_late",
    "every row is first seen a minute later than it was: a loader that fell behind",
)
def _seen_late(found: Observed, history: History, ledger: Any) -> Facts:
    seen = {eid: t + 60.0 for eid, t in found.reads.get("first_seen", {}).items()}
    return dataclasses.replace(found, reads={**found.reads, "first_seen": seen}), history


@_mutation(
    "lose_last_partition",
    "no row of the topic's highest partition is in the table: a partition never read",
)
def _lose_last_partition(found: Observed, history: History, ledger: Any) -> Facts:
    last = max((e.partition for e in ledger), default=None)
    gone = {e.event_id for e in ledger if e.partition == last}
    counts = {eid: n for eid, n in found.table_counts.items() if eid not in gone}
    return dataclasses.replace(found, table_counts=counts), history


@_mutation(
    "forget_exit_causes",
    "what explains each loader exit is taken out of the history: the harness's mark on an exit "
    "it caused and the loader's trace of the kills that fired in it",
)
def _forget_exit_causes(found: Observed, history: History, ledger: Any) -> Facts:
    kept = []
    for when, kind, phase, name, data in _events(history):
        if kind == "loader" and name == "fault_landed":
            continue
        if kind == "loader" and name == "exit":
            data.pop("expected", None)
        kept.append((when, kind, phase, name, data))
    return found, History.of(kept)


@_mutation(
    "take_table_back",
    "after the newest commit, the process that took the table over first takes it over again, "
    "as a thawed zombie would after its successor's take-over",
)
def _take_table_back(found: Observed, history: History, ledger: Any) -> Facts:
    commits = main_commits(history.events)
    claims = [c for c in commits if c["claim"] and c["process"]]
    if not commits or not claims:
        return found, history
    newest = commits[-1]
    recorded = recorded_snapshots(history.events)[int(claims[0]["snapshot"])]
    summary = {k: v for k, v in summary_of(recorded).items() if k != WAP_ID_KEY}
    again = {
        **recorded,
        "snapshot": max(int(c["snapshot"]) for c in commits) + 1,
        "parent": newest["snapshot"],
        "time": float(newest["time"]) + 1.0,
        "summary": summary,
    }
    events = _events(history)
    when = events[-1][0] if events else 0.0
    events.append((when, "read", "ok", "commits", {"values": [again]}))
    return found, History.of(events)


@_mutation(
    "crash_once",
    "the loader exits once by itself, code 1, after its first start: a crash",
)
def _crash_once(found: Observed, history: History, ledger: Any) -> Facts:
    events = _events(history)
    start = next(
        (i for i, e in enumerate(events) if e[1] == "loader" and e[3] == "start" and e[2] == "ok"),
        None,
    )
    if start is None:
        return found, history
    crash = (events[start][0] + 1.0, "loader", "info", "exit", {"code": 1, "message": "crashed"})
    return found, History.of([*events[: start + 1], crash, *events[start + 1 :]])


@_mutation(
    "unhalted",
    "the loader's exits of its own are taken out of the history: it went on past the malformed "
    "message",
)
def _unhalted(found: Observed, history: History, ledger: Any) -> Facts:
    kept = [
        e
        for e in _events(history)
        if not (e[1] == "loader" and e[3] == "exit" and not e[4].get("expected"))
    ]
    return found, History.of(kept)


@_mutation(
    "forget_faults",
    "the fault events are taken out of the history: a run in which no fault was injected",
)
def _forget_faults(found: Observed, history: History, ledger: Any) -> Facts:
    kept = [
        e for e in _events(history) if not (e[1] == "fault" and e[3].endswith((".inject", ".heal")))
    ]
    return found, History.of(kept)


@_mutation(
    "forget_catalog_faults",
    "the catalog proxy's firings are taken out of the history: faults that never landed",
)
def _forget_catalog_faults(found: Observed, history: History, ledger: Any) -> Facts:
    kept = [e for e in _events(history) if not (e[1] == "fault" and e[3] == PROXY_FIRED)]
    return found, History.of(kept)


@_mutation(
    "no_expiry",
    "every snapshot expiry read back left as many snapshots as it found",
)
def _no_expiry(found: Observed, history: History, ledger: Any) -> Facts:
    events = []
    for when, kind, phase, name, data in _events(history):
        if kind == "read" and name == "snapshots" and "before" in data:
            data["after"] = data["before"]
        events.append((when, kind, phase, name, data))
    return found, History.of(events)
