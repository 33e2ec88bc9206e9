"""What a loader did with each hostile input: loaded, coerced (to what), dead-lettered, stopped.

Read from one run of the hostile-inputs scenario (``scenarios/semantics/hostile_inputs.toml``):
its ledger (each malformed message's kind, partition and offset), the table's rows at the end
(by event id), the dead letters read back (their source partition and offset, under icefloe's
header names whatever the loader) and the rows the run recorded (``hostile_rows``). Each kind's
messages are then in the table (*loaded*: as sent, or *coerced* to what the row holds), in the
dead-letter topic, or neither; when the valid rows published after the hostile ones never
arrived, the loader *stopped*: at the kind of the message its exit named, if it named one, else
at one of the kinds after the last one that got anywhere, and the table says it cannot tell
which (*stopped at one of N kinds from K*); earlier ones that went nowhere were *passed, not
loaded*. Pure functions: no service is asked.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from icefloe.harness.observer import NO_ID, Letter

__all__ = ["SENT", "Fate", "fates", "markdown"]

COLUMNS = (
    "event_id", "bool", "integer", "floating", "string", "timestamp", "bools", "integers",
    "floatings", "strings", "string_map", "nested",
)  # fmt: skip
"""The columns of the scenario's ``hostile_rows`` read, in its order."""

SENT = {
    "bool_as_string": ("bool", '"yes"'),
    "float_for_bigint": ("integer", "1.5"),
    "object_for_string": ("string", '{"unexpected": "object"}'),
    "bad_timestamp": ("timestamp", '"yesterday at noon"'),
    "bigint_out_of_range": ("integer", "2**63"),
    "nan_literal": ("floating", "NaN"),
}
"""For a kind whose wrong value is known: the column it targets and the value sent
(``publisher.malformations``), so a loaded row shows what it was coerced to."""

LOADED = "loaded"
DEAD_LETTER = "dead letter"
STOPPED = "stopped"
STOPPED_AMONG = "stopped at one of these"
DROPPED = "dropped"
NAMELESS = "dropped, or a row with no id"
PASSED = "passed, not loaded"
NOT_REACHED = "not reached"


@dataclass(frozen=True)
class Fate:
    """What became of one kind's messages.

    Attributes:
        kind: The malformation's name.
        sent: Messages of this kind delivered to the topic.
        loaded: Of them, in the table.
        dead_lettered: Of them, in the dead-letter topic.
        outcome: ``dead letter``, ``loaded``, ``dropped`` (neither, and the loader went on),
            ``stopped`` (its exit named a message of this kind), ``stopped at one of these``
            (the loader stopped naming no message, and nothing of this kind or after it got
            anywhere: it stopped at one of the ``among`` kinds from ``first``, passing those
            before and never reaching those after), ``not reached`` (after the message its
            exit named), ``passed, not loaded`` (neither, though a later message got somewhere,
            or before the message its exit named: skipped, or in a batch never committed before
            it stopped), or several joined by
            ``+``; ``dropped, or a row with no id`` where the loader went on and its table
            holds rows whose event id is null (which messages they were cannot be told).
        stored: For loaded rows: the targeted column's value (or the whole row), per row.
        nameless: Rows with no event id in the loader's table (the same for every kind).
        among: For ``stopped at one of these``: how many kinds it may have stopped at.
        first: For ``stopped at one of these``: the first of them.
    """

    kind: str
    sent: int
    loaded: int
    dead_lettered: int
    outcome: str
    stored: tuple[str, ...] = field(default_factory=tuple)
    nameless: int = 0
    among: int = 0
    first: str = ""

    def text(self) -> str:
        """The table's cell: the outcome, and what a loaded value became."""
        if STOPPED_AMONG in self.outcome:
            where = f"stopped at one of {self.among} kinds from {self.first}"
            return self.outcome.replace(STOPPED_AMONG, where)
        if self.outcome == LOADED and self.kind in SENT and self.stored:
            column, sent = SENT[self.kind]
            return f"coerced: {column} {sent} -> {self.stored[0]}"
        if LOADED in self.outcome and self.stored:
            return f"{self.outcome} ({self.stored[0][:60]})"
        return self.outcome


def _stored(kind: str, row: Sequence[Any]) -> str:
    values = dict(zip(COLUMNS, row, strict=False))
    if kind in SENT:
        return repr(values.get(SENT[kind][0]))
    return ", ".join(f"{k}={v!r}" for k, v in values.items() if k != "event_id")


def fates(
    ledger: Iterable[Any],
    table_counts: Mapping[str, int],
    letters: Iterable[Letter],
    rows: Iterable[Sequence[Any]],
    after_ids: Iterable[str],
    stopped_at: tuple[int, int] | None = None,
) -> list[Fate]:
    """Each malformation kind's fate, in the order the kinds were published.

    Args:
        ledger: The run's ledger entries (``publisher.ledger.LedgerEntry``).
        table_counts: Event id -> rows in the table at the end.
        letters: Each dead letter, as the loader's observer reads it (``harness.observer``).
        rows: The ``hostile_rows`` read (``COLUMNS``).
        after_ids: Event ids of the valid rows published after every hostile one.
        stopped_at: The (partition, offset) the loader named when it stopped, if it did: its
            kind is where it stopped, the kinds after it were *not reached*.

    Returns:
        One fate per kind.
    """
    # In the order the loader met them: by offset (the scenario's topic has one partition;
    # each phase's ledger counts its own seq from 0).
    entries = sorted((e for e in ledger if e.delivered), key=lambda e: (e.offset, e.partition))
    lettered = {
        (str(letter.source[1]), str(letter.source[2]))
        for letter in letters
        if letter.source is not None
    }
    by_id = {str(row[0]): row for row in rows if row}
    after = list(after_ids)
    stopped = bool(after) and not any(table_counts.get(i) for i in after)
    # A row whose id did not survive (e.g. parsed permissively to nulls) names no message.
    nameless = table_counts.get(NO_ID, 0)
    kinds: dict[str, list[Any]] = {}
    for entry in entries:
        if entry.status == "malformed" and entry.kind:
            kinds.setdefault(entry.kind, []).append(entry)
    reached = [
        i
        for i, sent in enumerate(kinds.values())
        if any(table_counts.get(e.event_id) for e in sent)
        or any((str(e.partition), str(e.offset)) in lettered for e in sent)
    ]
    last = reached[-1] if reached else -1
    named = [
        i
        for i, sent in enumerate(kinds.values())
        if stopped_at is not None and any((e.partition, e.offset) == stopped_at for e in sent)
    ]
    if stopped and named and named[0] > last:
        last = named[0] - 1  # the loader said where: passed up to there, not reached after
    out: list[Fate] = []
    for i, (kind, sent) in enumerate(kinds.items()):
        loaded = [e for e in sent if table_counts.get(e.event_id)]
        dead = [e for e in sent if (str(e.partition), str(e.offset)) in lettered]
        parts = []
        if dead:
            parts.append(DEAD_LETTER)
        if loaded:
            parts.append(LOADED)
        if len(loaded) + len(dead) < len(sent):
            if not stopped:
                parts.append(NAMELESS if nameless else DROPPED)
            elif i < last or (named and i < named[0]):
                parts.append(PASSED)  # a later message got somewhere: this one was passed
            elif named and i > named[0]:
                parts.append(NOT_REACHED)
            elif named:
                parts.append(STOPPED)
            else:
                parts.append(STOPPED_AMONG)
        stored = tuple(_stored(kind, by_id[e.event_id]) for e in loaded if e.event_id in by_id)
        out.append(
            Fate(kind, len(sent), len(loaded), len(dead), " + ".join(parts), stored, nameless)
        )
    # Stopped naming no message: at one of the kinds after the last that got anywhere.
    span = [f.kind for f in out if STOPPED_AMONG in f.outcome]
    if span:
        out = [
            dataclasses.replace(f, among=len(span), first=span[0]) if f.kind in span else f
            for f in out
        ]
    return out


def markdown(by_loader: Mapping[str, Sequence[Fate]]) -> str:
    """The kind x loader table of fates.

    Args:
        by_loader: Each loader's fates (``fates``).

    Returns:
        Markdown text.
    """
    loaders = list(by_loader)
    kinds = list(dict.fromkeys(f.kind for fs in by_loader.values() for f in fs))
    cells = {(name, f.kind): f for name, fs in by_loader.items() for f in fs}
    lines = ["| input | " + " | ".join(loaders) + " |", "|---|" + "---|" * len(loaders)]
    for kind in kinds:
        row = []
        for name in loaders:
            fate = cells.get((name, kind))
            row.append(f"{fate.text()} ({fate.sent})".replace("|", "/") if fate else "-")
        lines.append(f"| {kind} | " + " | ".join(row) + " |")
    for name in loaders:
        if any(STOPPED_AMONG in f.outcome for f in by_loader[name]):
            lines.append(
                f"\n{name} stopped naming no message: at one of the kinds marked *stopped at one "
                "of*, passing those before it and never reaching those after; which one cannot "
                "be told from what it wrote."
            )
        nameless = max((f.nameless for f in by_loader[name]), default=0)
        if nameless:
            lines.append(
                f"\n{name}'s table holds {nameless} row(s) with no event id: messages it kept "
                "without their id, which cannot be told apart (*dropped, or a row with no id*)."
            )
    return "\n".join(lines) + "\n"
