"""The loader's committed position over a run, read from its history.

Where a loader resumes after any restart (``harness.observer``): every read of it the run
recorded (``read``/``positions``), the final one, and for a loader whose commits carry it
(``position = "summary"``) each commit's position. Also when the run's drain began and which
rows arrived only in it (*late*). ``harness.scenarios.checks.missing`` judges a missing row
lost or pending from these.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from icefloe.harness.history import Event, select
from icefloe.harness.observer import Observer, decode_positions
from icefloe.harness.scenarios.checks.facts.commits import main_commits

__all__ = [
    "PositionRead",
    "drain_began",
    "final_position",
    "late_ids",
    "position_reads",
    "stamp",
    "summarise_position",
    "summary_evidence",
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
        held_checkpoint: The newest complete checkpoint then in the loader's
            ``held_checkpoints`` folder (None: it declares none, or none was complete).
    """

    time: float
    values: Mapping[str, Mapping[int, int]]
    held_by: str
    final: bool = False
    held_checkpoint: int | None = None


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
        held_checkpoint = e.data.get("held_checkpoint")
        out.append(
            PositionRead(
                e.time,
                values,
                held,
                bool(e.data.get("final")),
                None if held_checkpoint is None else int(held_checkpoint),
            )
        )
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


def stamp(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.UTC).strftime("%H:%M:%S")


def summary_evidence(
    history: Sequence[Event], observer: Observer
) -> list[tuple[float, int, Mapping[str, Mapping[int, int]]]]:
    """(time, snapshot, position) of each of the loader's commits that carries a position."""

    out = []
    for c in main_commits(history):
        if c["mine"] and c.get("position"):
            out.append((float(c["time"]), int(c["snapshot"]), c["position"]))
    return out


def summarise_position(read: PositionRead | None) -> dict[str, Any]:
    """The final position as stats (for reports)."""
    if read is None:
        return {}
    return {
        "position": {t: dict(sorted(p.items())) for t, p in sorted(read.values.items())},
        "position_held_by": read.held_by,
    }
