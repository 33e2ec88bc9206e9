"""The run's faults as its history records them: windows, heals, and the loader's lifecycle.

:func:`fault_windows` gives each fault from the start of its injection to the end of its heal
(a skipped one has none); :func:`injections` each injection that took effect with its heal's
time (None: never healed), as the reports draw them. :func:`heals` and :func:`lifecycle` give
the heals and the loader's states (up, exited, down), :func:`cuts` the harness actions that
may stop a loader; :func:`commits_struck` whether a fault timed on a commit struck inside it;
:func:`landed_counts` what the catalog proxy recorded of each firing.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from icefloe.harness.history import PROXY_FIRED, Event, History, select

__all__ = [
    "FaultWindow",
    "Heal",
    "commits_struck",
    "cuts",
    "fault_windows",
    "heals",
    "injections",
    "landed_counts",
    "lifecycle",
]


@dataclass(frozen=True)
class FaultWindow:
    """One fault, from the start of its injection to the end of its heal.

    Attributes:
        name: Its name in the history (``kill_catalog``).
        kind: Its registered kind (``kill_service``).
        lane: Its lane.
        start: When its injection began (epoch seconds).
        end: When its heal ended (``inf`` when it never was).
    """

    name: str
    kind: str
    lane: str
    start: float
    end: float

    def near(self, when: float, before_s: float) -> bool:
        """Whether the fault was active at some moment of ``[when - before_s, when]``."""
        return self.start <= when and self.end >= when - before_s


def fault_windows(history: History) -> list[FaultWindow]:
    """Every fault's window, from its injection's ``invoke`` to its heal's ``ok``.

    Args:
        history: The run's history.

    Returns:
        The windows in the order the faults were injected; a skipped fault has none.
    """
    windows: list[FaultWindow | None] = []
    open_: dict[str, list[int]] = {}
    for e in select(history, "fault"):
        base, _, what = e.name.rpartition(".")
        if what == "inject" and e.phase == "invoke":
            kind, lane = str(e.data.get("kind", base)), str(e.data.get("lane", ""))
            open_.setdefault(base, []).append(len(windows))
            windows.append(FaultWindow(base, kind, lane, e.time, math.inf))
        elif e.name == f"{base}.skipped" and open_.get(base):
            windows[open_[base].pop()] = None  # nothing was done: nothing to heal
        elif what == "heal" and e.phase == "ok" and open_.get(base):
            i = open_[base].pop(0)
            w = windows[i]
            if w is not None:
                windows[i] = FaultWindow(w.name, w.kind, w.lane, w.start, e.time)
    return [w for w in windows if w is not None]


def injections(history: History) -> list[tuple[str, float, float | None]]:
    """(fault name, inject time, heal time or None) for every injection, for reports.

    Args:
        history: The run's history.

    Returns:
        One tuple per injection, in order.
    """
    windows: list[tuple[str, float, float | None]] = []
    open_: dict[str, list[int]] = defaultdict(list)
    for e in select(history, "fault", phase="ok"):
        base, _, what = e.name.rpartition(".")
        if what == "inject":
            open_[base].append(len(windows))
            windows.append((base, e.time, None))
        elif what == "heal" and open_[base]:
            i = open_[base].pop(0)
            windows[i] = (windows[i][0], windows[i][1], e.time)
    return windows


@dataclass(frozen=True)
class Heal:
    """One healed fault.

    Attributes:
        fault: The fault's name (``kill_minio``, ``kill_loader``...).
        time: When its heal ended (epoch seconds).
        lane: Its lane (``infra``, ``loader``, ``traffic``...).
    """

    fault: str
    time: float
    lane: str = ""


def heals(history: Iterable[Event]) -> list[Heal]:
    """Every healed fault, in the order of the heals.

    Args:
        history: The run's events.

    Returns:
        One heal per ``.heal`` ``ok`` event, with the lane its injection named.
    """
    lanes: dict[str, str] = {}
    out: list[Heal] = []
    for e in select(history, "fault"):
        base, _, what = e.name.rpartition(".")
        if what == "inject" and e.phase == "invoke":
            lanes[base] = str(e.data.get("lane", ""))
        elif what == "heal" and e.phase == "ok":
            out.append(Heal(base, e.time, lanes.get(base, "")))
    return out


def lifecycle(history: Iterable[Event]) -> list[tuple[float, str]]:
    """The loader's states over the run: (time, state) with state ``up`` (a start was invoked),
    ``exited`` (an exit with a non-zero code the harness did not cause) or ``down`` (stopped,
    killed or frozen by the harness, or exited with code 0).

    Args:
        history: The run's events.

    Returns:
        The state changes, in order.
    """
    out: list[tuple[float, str]] = []
    for e in select(history, "loader"):
        if e.name == "start" and e.phase == "invoke":
            out.append((e.time, "up"))
        elif e.name in ("killed", "stopped", "frozen"):
            out.append((e.time, "down"))
        elif e.name == "exit":
            code = e.data.get("code")
            failed = code not in (0, None) and not e.data.get("expected")
            out.append((e.time, "exited" if failed else "down"))
    return out


def cuts(history: Iterable[Event], ignored: Sequence[str]) -> list[tuple[float, str]]:
    out: list[tuple[float, str]] = []
    for e in history:
        if e.kind == "loader" and e.name in ("killed", "stopped", "frozen"):
            out.append((e.time, f"the harness {e.name} the loader"))
        elif (
            e.kind == "fault"
            and e.phase == "invoke"
            and e.name.endswith(".inject")
            and str(e.data.get("lane", "")) not in ignored
        ):
            out.append((e.time, f"{e.name.rpartition('.')[0]} injected"))
    return sorted(out)


def landed_counts(history: History, mode: str | None = None) -> dict[str, int]:
    """How many catalog faults fired, and how many of those the catalog applied.

    Args:
        history: The run's history.
        mode: Count only this mode (``drop_after_forward``...); ``None``: every mode.

    Returns:
        ``fired``, ``applied`` (the catalog applied the request: its answer was what was lost
        or replaced), ``not_applied``, ``unknown``, and ``fired.<mode>`` per mode.
    """
    fired = [
        e.data
        for e in select(history, "fault", phase="info")
        if e.name == PROXY_FIRED and (mode is None or e.data.get("mode") == mode)
    ]
    by_mode = Counter(str(f.get("mode")) for f in fired)
    return {
        "fired": len(fired),
        "applied": sum(1 for f in fired if f.get("applied") is True),
        "not_applied": sum(1 for f in fired if f.get("applied") is False),
        "unknown": sum(1 for f in fired if f.get("applied") is None),
        **{f"fired.{m}": n for m, n in sorted(by_mode.items())},
    }


def commits_struck(events: Iterable[Event], name: str) -> list[bool]:
    """For each fault named ``name`` that saw the commit it was timed on (the ``<name>.commit``
    events ``harness.scenarios.faults.timing.landed`` records): whether it struck inside it
    (that commit never reached main)."""
    found = select(events, "fault", name=f"{name}.commit", phase="info")
    return [bool(e.data.get("during_commit")) for e in found]
