"""Missing rows told apart: lost, pending or late, from the loader's committed position.

A row that is not in the table when a run ends is not always lost. What decides is the
loader's committed position (``harness.observer``), where it resumes after any restart:

- **lost**: the position is past the row's offset, so the loader will never read it again
  (it committed past a row it never wrote). Each lost row names its evidence: the commit
  that carried the position past it (a snapshot of the table) or the first read of the
  consumer group that showed it past;
- **pending**: the position is before it (or the loader keeps none for its partition, or
  declares no position at all): the loader has not got to it yet, and may still;
- **late**: it is in the table, but arrived only in the run's drain (``info``/``drain``):
  after every fault healed, with the loader running, past the scenario's own wait.

Only *lost* breaks exactly-once. Pure functions over a history.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from icefloe.harness.history import Event, select
from icefloe.harness.observer import SUMMARY, Observer, decode_positions, observer_of
from icefloe.publisher.ledger import LedgerEntry

__all__ = [
    "PositionRead",
    "Verdicts",
    "classify_missing",
    "drain_began",
    "final_position",
    "late_ids",
    "position_reads",
]


@dataclass(frozen=True)
class PositionRead:
    """One read of the loader's committed position.

    Attributes:
        time: When it was read (epoch seconds).
        values: Topic -> partition -> next offset.
        held_by: What holds it (``snapshot 123``, ``consumer group connect-x``, ``the
            checkpoint's committed batch 7``).
        final: The read at the end of the run.
    """

    time: float
    values: Mapping[str, Mapping[int, int]]
    held_by: str
    final: bool = False


def position_reads(history: Iterable[Event]) -> list[PositionRead]:
    """Every position read of the run, in order (``read``/``positions``)."""
    out = []
    for e in select(history, "read", "positions", "ok"):
        values = decode_positions(e.data.get("values") or {}) or {}
        if "group" in e.data:
            held = f"consumer group {e.data['group']}"
        elif "checkpoint" in e.data:
            held = f"the checkpoint's committed batch {e.data.get('batch')}"
        else:
            held = f"snapshot {e.data.get('snapshot')}"
        out.append(PositionRead(e.time, values, held, bool(e.data.get("final"))))
    return out


def final_position(history: Iterable[Event]) -> PositionRead | None:
    """The position as last read (None: never read)."""
    reads = position_reads(history)
    return reads[-1] if reads else None


def drain_began(history: Iterable[Event]) -> float | None:
    """When the run's drain began (None: the run had none: nothing was missing)."""
    starts = select(history, "info", "drain", "invoke")
    return starts[-1].time if starts else None


def late_ids(history: Iterable[Event], first_seen: Mapping[str, float]) -> set[str]:
    """Ids first seen in the table after the drain began."""
    began = drain_began(history)
    if began is None:
        return set()
    return {eid for eid, t in first_seen.items() if t >= began}


def _stamp(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.UTC).strftime("%H:%M:%S")


def _summary_evidence(
    history: Sequence[Event], observer: Observer
) -> list[tuple[float, int, Mapping[str, Mapping[int, int]]]]:
    """(time, snapshot, position) of each of the loader's commits that carries a position."""
    from icefloe.harness.scenarios.checks.invariants import main_commits

    out = []
    for c in main_commits(history):
        if c["mine"] and c.get("position"):
            out.append((float(c["time"]), int(c["snapshot"]), c["position"]))
    return out


@dataclass(frozen=True)
class Verdicts:
    """Missing rows, each with why.

    Attributes:
        lost: (entry, evidence): the committed position is past it.
        pending: (entry, why): the position is before it, or unknown.
        position: The final position read, if any.
    """

    lost: tuple[tuple[LedgerEntry, str], ...]
    pending: tuple[tuple[LedgerEntry, str], ...]
    position: PositionRead | None


def classify_missing(history: Sequence[Event], missing: Sequence[LedgerEntry]) -> Verdicts:
    """Lost or pending, for each message missing from the table at the end of a run.

    Args:
        history: The run's events (its ``positions`` and ``commits`` reads).
        missing: The ledger entries of the rows not in the table.

    Returns:
        The verdicts, each with its evidence or reason.
    """
    final = final_position(history)
    if not missing:
        return Verdicts((), (), final)
    observer = observer_of(history)
    if final is None:
        why = (
            "the loader declares no committed position"
            if observer.position is None
            else "its committed position was never read"
        )
        return Verdicts((), tuple((e, why) for e in missing), None)
    reads = position_reads(history)
    commits = _summary_evidence(history, observer) if observer.position == SUMMARY else []
    lost: list[tuple[LedgerEntry, str]] = []
    pending: list[tuple[LedgerEntry, str]] = []
    for e in missing:
        offset = -1 if e.offset is None else e.offset
        at = final.values.get(e.topic, {}).get(e.partition)
        if at is None:
            pending.append((e, f"{final.held_by} holds no position for partition {e.partition}"))
            continue
        if at <= offset:
            pending.append((e, f"{final.held_by} is at offset {at}, before it"))
            continue
        lost.append((e, _passed_by(e, offset, reads, commits)))
    return Verdicts(tuple(lost), tuple(pending), final)


def _passed_by(
    e: LedgerEntry,
    offset: int,
    reads: Sequence[PositionRead],
    commits: Sequence[tuple[float, int, Mapping[str, Mapping[int, int]]]],
) -> str:
    """What first carried the committed position past ``e``: the evidence of its loss."""
    for when, snapshot, position in commits:
        at = position.get(e.topic, {}).get(e.partition)
        if at is not None and at > offset:
            return f"snapshot {snapshot} (committed {_stamp(when)}) carries position {at}"
    for read in reads:
        at = read.values.get(e.topic, {}).get(e.partition)
        if at is not None and at > offset:
            return f"{read.held_by} at offset {at} (read {_stamp(read.time)})"
    return "the committed position is past it"


def describe(e: LedgerEntry) -> str:
    """A message as anomalies name it."""
    return f"{e.event_id} ({e.topic}/{e.partition}@{e.offset})"


def summarise_position(read: PositionRead | None) -> dict[str, Any]:
    """The final position as stats (for reports)."""
    if read is None:
        return {}
    return {
        "position": {t: dict(sorted(p.items())) for t, p in sorted(read.values.items())},
        "position_held_by": read.held_by,
    }
