"""Where a run's wall time went, from its history: the scenario's own timeline, the loader's
own time, and the kit's.

A run's time divides into consecutive parts, each someone's:

- ``setup`` (kit): the schema, table and topic, before the first step.
- ``timeline`` (scenario): from the first step to the end of its last publish phase or fault
  heal, whichever is later: what the scenario asks for. The loader's start-ups and the faults'
  own windows fall inside it and are given beside it (:attr:`Spent.loader_starts_s`,
  :attr:`Spent.faults_s`), not again as parts.
- ``catching up`` (loader): after the timeline, the waits for rows until every expected row was
  visible (or the wait ended): the loader loading what was published.
- ``drain`` (kit): the run's drain, which gives rows still missing the loader's own time.
- ``settle`` (kit): the pause after every row is visible, in which a late commit can show,
  and the wait for a batch still in flight.
- the other steps after the timeline, each by its name (``stop_loader`` is the loader's;
  the rest, SQL and checks of the steps, the kit's).
- ``read back`` (kit): the table, commits, positions, storage and dead letters the checks read.
- ``checks`` (kit): judging them.
- ``teardown`` (kit): dropping the run's table and schema, up to the run's end.

``beyond_timeline_s`` is every part after the timeline and before it; ``kit_s`` the kit's parts.
"""

from __future__ import annotations

from dataclasses import dataclass

from icefloe.harness.history import History, select
from icefloe.harness.scenarios.checks.facts.faults import fault_windows

__all__ = ["KIT", "LOADER", "SCENARIO", "Part", "Spent", "spent"]

KIT, LOADER, SCENARIO = "kit", "loader", "scenario"

_LOADER_STEPS = frozenset({"stop_loader", "start_loader", "await_loader_exit"})
"""Steps whose time after the timeline is the loader's own (its start-up, its shutdown)."""


@dataclass(frozen=True)
class Part:
    """One consecutive part of a run's time: what it was, whose, and how long."""

    name: str
    whose: str
    seconds: float


@dataclass(frozen=True)
class Spent:
    """A run's time, divided.

    Attributes:
        total_s: The run's wall time.
        parts: Its consecutive parts, in order (they add up to ``total_s``).
        loader_starts_s: The loader's start-ups, summed (inside the parts above).
        faults_s: The time some fault was active (inside the parts above).
    """

    total_s: float
    parts: tuple[Part, ...]
    loader_starts_s: float
    faults_s: float

    def of(self, whose: str) -> float:
        """The seconds of every part that is ``whose``'s."""
        return sum(p.seconds for p in self.parts if p.whose == whose)

    @property
    def kit_s(self) -> float:
        """The kit's own share: its setup, waits, drains, reads, checks and teardown."""
        return self.of(KIT)

    @property
    def beyond_timeline_s(self) -> float:
        """Everything but the scenario's own timeline."""
        return self.total_s - self.of(SCENARIO)

    def line(self) -> str:
        """One line for the console: the total and its three shares."""
        kit_share = self.kit_s / self.total_s if self.total_s > 0 else 0.0
        return (
            f"time {self.total_s:.1f} s: timeline {self.of(SCENARIO):.1f} s, loader "
            f"{self.of(LOADER):.1f} s after it, kit {self.kit_s:.1f} s ({kit_share:.0%}); "
            f"beyond the timeline {self.beyond_timeline_s:.1f} s"
        )


def _union(windows: list[tuple[float, float]]) -> float:
    total, end = 0.0, float("-inf")
    for a, b in sorted(windows):
        if b <= end:
            continue
        total += b - max(a, end)
        end = b
    return total


def _steps(history: History) -> list[tuple[str, float, float]]:
    """Each step as (name, start, end); a step with no end (the run failed in it) ends at the
    next event after its last one."""
    out: list[tuple[str, float, float]] = []
    open_step: tuple[str, float] | None = None
    for e in select(history, "step"):
        if e.phase == "invoke":
            open_step = (e.name, e.time)
        elif open_step is not None:
            out.append((open_step[0], open_step[1], e.time))
            open_step = None
    if open_step is not None:
        out.append((open_step[0], open_step[1], history.events[-1].time))
    return out


def _starts(history: History) -> float:
    began: float | None = None
    total = 0.0
    for e in select(history, "loader", "start"):
        if e.phase == "invoke":
            began = e.time
        elif began is not None:
            total += e.time - began
            began = None
    return total


def _await_parts(history: History, start: float, end: float) -> list[Part]:
    """An ``await_loaded`` step's time from ``start`` (past the timeline) to ``end``: catching
    up until its read of the rows, the drain, then the settle."""
    reads = [e.time for e in select(history, "read", "await_loaded") if start <= e.time <= end]
    visible = min(reads[0], end) if reads else end
    drain = [(e.time, e.phase) for e in history.events if e.name == "drain"
             and start <= e.time <= end]  # fmt: skip
    drained = 0.0
    if drain:
        drained = max(t for t, _ in drain) - min(t for t, _ in drain)
    settle = max(0.0, end - visible - drained)
    return [
        Part("catching up", LOADER, visible - start),
        Part("drain", KIT, drained),
        Part("settle", KIT, settle),
    ]


def spent(history: History, total_s: float | None = None) -> Spent | None:
    """Divide a run's time (see the module's text).

    Args:
        history: The run's history.
        total_s: The run's wall time, when known (what passes after the last event is
            the teardown's); else the history's own span.

    Returns:
        The division, or None for a history with no step.
    """
    events = history.events
    steps = _steps(history)
    if not events or not steps:
        return None
    begin, last = events[0].time, events[-1].time
    end = max(last, begin + total_s) if total_s is not None else last
    first_step, last_step = steps[0][1], steps[-1][2]
    marks = [e.time for e in select(history, "publish", "publish") if e.phase != "invoke"]
    faulting = select(history, "fault", phase="ok")
    marks += [e.time for e in faulting if e.name.endswith((".heal", ".inject"))]
    timeline_end = min(max([first_step, *marks]), last_step)
    parts = [
        Part("setup", KIT, first_step - begin),
        Part("timeline", SCENARIO, timeline_end - first_step),
    ]
    for name, a, b in steps:
        a = max(a, timeline_end)
        if b <= a:
            continue
        if name == "await_loaded":
            parts += _await_parts(history, a, b)
        else:
            parts.append(Part(name, LOADER if name in _LOADER_STEPS else KIT, b - a))
    checks = [e.time for e in select(history, "check") if e.time >= last_step]
    checked_from = checks[0] if checks else last_step
    checked_to = checks[-1] if checks else last_step
    parts += [
        Part("read back", KIT, checked_from - last_step),
        Part("checks", KIT, checked_to - checked_from),
        Part("teardown", KIT, end - checked_to),
    ]
    merged: dict[tuple[str, str], float] = {}
    for p in parts:
        merged[(p.name, p.whose)] = merged.get((p.name, p.whose), 0.0) + max(0.0, p.seconds)
    faults = [(w.start, min(w.end, end)) for w in fault_windows(history)]
    return Spent(
        total_s=end - begin,
        parts=tuple(Part(n, w, s) for (n, w), s in merged.items() if s > 0.05 or n == "timeline"),
        loader_starts_s=_starts(history),
        faults_s=_union(faults),
    )
