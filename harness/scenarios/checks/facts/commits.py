"""The loader's commits, read from the snapshots a run recorded (``read``/``commits``).

Every snapshot the recording client read is in the history once, with its summary; the
loader's observer (``harness.observer``) says which are the loader's and what each one says
(its position, its process, a take-over's claim, a staged ``wap.id``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from icefloe.harness.history import Event, select
from icefloe.harness.observer import Observer, observer_of, summary_of

__all__ = [
    "committed_checkpoint",
    "loader_commits",
    "main_commits",
    "progress_commits",
    "recorded_snapshots",
]


def recorded_snapshots(history: Iterable[Event]) -> dict[int, Mapping[str, Any]]:
    """Every snapshot the run's commit reads recorded, by id (each is recorded once, when
    first read; a later expiry does not take it out of the history)."""
    snaps: dict[int, Mapping[str, Any]] = {}
    for e in select(history, "read", "commits", "ok"):
        for c in e.data.get("values") or ():
            snaps.setdefault(int(c["snapshot"]), c)
    return snaps


def main_commits(
    history: Iterable[Event], observer: Observer | None = None
) -> list[dict[str, Any]]:
    """The snapshots that reached the table's main branch, in commit order, as the loader's
    observer reads them (``harness.observer.Observer.commit``: ``mine``, ``loader``,
    ``process``, ``claim``, ``staged``, ``position``).

    A staged snapshot (write-audit-publish: ``staged`` names its id) reached main only if it
    was published: then a later snapshot has it as parent, or it is the last one published,
    staged on top of the newest snapshot that reached main. One never published (a fenced
    zombie's batch) has no child (nothing is planned or written on top of a snapshot main
    never pointed at) and was staged on a snapshot that main had moved past.

    Args:
        history: The run's events.
        observer: How to read the loader's summaries (default: the one the run recorded).

    Returns:
        The commits, oldest first.
    """
    events = list(history)
    read = observer or observer_of(events)
    snaps = {s: read.commit(c) for s, c in recorded_snapshots(events).items()}
    parents = {c.get("parent") for c in snaps.values()}
    main = {s: c for s, c in snaps.items() if not c.get("staged") or s in parents}
    leaves = [c for s, c in snaps.items() if s not in main]
    if leaves:
        last = max(leaves, key=lambda c: float(c["time"]))
        head = max(main.values(), key=lambda c: float(c["time"]), default=None)
        if head is None or last.get("parent") == head["snapshot"]:
            main[int(last["snapshot"])] = last
    return sorted(main.values(), key=lambda c: float(c["time"]))


def loader_commits(history: Iterable[Event]) -> list[float]:
    """When each snapshot the loader under test committed was committed (epoch seconds,
    sorted): any snapshot its observer recognises as its commit (``harness.observer``),
    whatever keys it writes; the kit's own snapshots (maintenance) are not.

    Args:
        history: The run's events (``read``/``commits`` and the ``observer`` record).

    Returns:
        The commit times.
    """
    events = list(history)
    observer = observer_of(events)
    return sorted(
        float(c["time"])
        for c in (observer.commit(r) for r in recorded_snapshots(events).values())
        if c["mine"]
    )


def progress_commits(history: Iterable[Event]) -> list[float]:
    """When the loader under test made a commit that moved it forward (epoch seconds, sorted):
    one that added rows, or that moved the position its summary declares (a batch of dead
    letters alone adds no rows). A commit that adds nothing (a checkpoint's empty snapshot, a
    take-over's claim) is not progress: a loader whose source is stuck can make those for ever.

    Iceberg leaves ``added-records`` out of a summary that added none, so a snapshot whose
    ``records`` is missing added nothing.
    """
    events = list(history)
    observer = observer_of(events)
    moved: list[float] = []
    last_position: Any = None
    mine = sorted(
        (c for c in (observer.commit(r) for r in recorded_snapshots(events).values()) if c["mine"]),
        key=lambda c: float(c["time"]),
    )
    for c in mine:
        position = c.get("position")
        if (c.get("records") or 0) > 0 or (position is not None and position != last_position):
            moved.append(float(c["time"]))
        if position is not None:
            last_position = position
    return moved


def committed_checkpoint(history: Iterable[Event], observer: Observer | None = None) -> int | None:
    """The highest checkpoint number the loader's commits name (its observer's ``commit_key``,
    for a loader that declares ``held_checkpoints``); None when no commit names one."""
    events = list(history)
    read = observer or observer_of(events)
    if not read.commit_key:
        return None
    numbers = []
    for record in recorded_snapshots(events).values():
        summary = summary_of(record)
        value = str(summary.get(read.commit_key))
        if read.is_commit(summary) and value.lstrip("-").isdigit():
            numbers.append(int(value))
    return max(numbers, default=None)
