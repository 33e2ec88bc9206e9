"""Loader exits: every exit of a loader has a cause the run knows of, or the run fails.

A supervised loader that crashes on its own is started again and loads on, so no row count
shows the crash. This check reads every ``loader``/``exit`` event of the history and explains
it by one of the causes the run recorded:

- ``harness``: the harness killed or stopped it, or its exit code is one the harness expected
  (a self-kill at an armed fault point, a zombie's step-down): the exit event says
  ``expected``;
- ``fault_point``: the loader's trace says a kill fired in that process
  (``loader``/``fault_landed``, action ``kill``, same pid);
- ``zombie``: it exited with the code its observer says means "not the owner"
  (``harness.observer``; icefloe's 3) while a zombie fault was active: two loaders were on
  the table;
- ``service``: a fault on a service (the ``infra`` lane: kill or pause of a service, a wire
  fault, a catalog HTTP fault) was active within ``grace_s`` before the exit, or within
  ``stall_window_s`` for an exit with the code meaning "stalled" (icefloe's 4, no progress
  for ``progress_timeout``).

Any other exit is ``unexplained_exit``, with its log tail (the exit event's ``message``) kept
in the anomaly. A run without any loader start compared nothing: ``unknown``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from icefloe.harness.history import Event, History, select
from icefloe.harness.observer import ICEFLOE, observer_of
from icefloe.harness.scenarios.checks.checkers import UNKNOWN, CheckResult, Found, Observed, checker
from icefloe.publisher.ledger import LedgerEntry

__all__ = [
    "DEFAULT_GRACE_S",
    "DEFAULT_STALL_WINDOW_S",
    "FaultWindow",
    "explain",
    "fault_windows",
]

DEFAULT_GRACE_S = 60.0
"""How long after a service fault ended an exit may still be its doing."""
DEFAULT_STALL_WINDOW_S = 360.0
"""For an exit as stalled: the loader's ``progress_timeout`` (300 s) and a minute's margin."""
SERVICE_LANES = ("infra",)
_TAIL_CHARS = 1500


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


def explain(
    exit_event: Event,
    windows: Sequence[FaultWindow],
    killed_pids: set[Any],
    *,
    grace_s: float = DEFAULT_GRACE_S,
    stall_window_s: float = DEFAULT_STALL_WINDOW_S,
    service_faults_explain: bool = True,
    exit_codes: Mapping[str, int] | None = None,
) -> str | None:
    """The cause of one loader exit, or None when the run knows of none.

    Args:
        exit_event: A ``loader``/``exit`` event.
        windows: The run's fault windows (:func:`fault_windows`).
        killed_pids: Pids in which the loader's trace says a kill fired.
        grace_s: How long after a service fault an exit may still be its doing.
        stall_window_s: The same for an exit as stalled (code 4).
        service_faults_explain: ``False`` for a run whose loader must ride out its service
            faults (short faults on the wire): an exit during one is then unexplained.
        exit_codes: What the loader's exit codes mean (its observer's ``exit_codes``:
            ``not_owner``, ``stalled``; icefloe's loader's by default).

    Returns:
        ``harness``, ``fault_point``, ``zombie`` or ``service``; None: unexplained.
    """
    data = exit_event.data
    if data.get("expected"):
        return "harness"
    if data.get("pid") in killed_pids:
        return "fault_point"
    codes = ICEFLOE.exit_codes if exit_codes is None else exit_codes
    code, when = data.get("code"), exit_event.time
    if (
        code is not None
        and code == codes.get("not_owner")
        and any(w.kind == "zombie_loader" and w.near(when, grace_s) for w in windows)
    ):
        return "zombie"
    stalled = code is not None and code == codes.get("stalled")
    before = stall_window_s if stalled else grace_s
    if service_faults_explain and any(
        w.lane in SERVICE_LANES and w.near(when, before) for w in windows
    ):
        return "service"
    return None


@checker("loader_exits_explained")
def check_loader_exits_explained(
    history: History, ledger: Sequence[LedgerEntry], observed: Observed, params: Mapping[str, Any]
) -> CheckResult:
    """Every loader exit had a cause the run recorded (see the module docstring).

    Params:
        grace_s: How long after a service fault an exit may still be its doing (60).
        stall_window_s: The same for an exit as stalled, code 4 (360).
        service_faults_explain: ``false``: the loader must ride out the run's service faults
            (short faults on the wire), so they explain no exit (true).

    Returns:
        ``invalid`` with ``unexplained_exit`` (its pid, code, time and log tail) for each exit
        no fault caused; ``unknown`` when no loader was ever started.
    """
    starts = select(history, "loader", "start", "invoke")
    if not starts:
        return CheckResult("loader_exits_explained", UNKNOWN, "no loader was started")
    windows = fault_windows(history)
    killed = {
        e.data.get("pid")
        for e in select(history, "loader", "fault_landed")
        if e.data.get("action") == "kill"
    }
    grace = float(params.get("grace_s", DEFAULT_GRACE_S))
    stall = float(params.get("stall_window_s", DEFAULT_STALL_WINDOW_S))
    found = Found()
    causes: Counter[str] = Counter()
    for e in select(history, "loader", "exit"):
        cause = explain(
            e,
            windows,
            killed,
            grace_s=grace,
            stall_window_s=stall,
            service_faults_explain=bool(params.get("service_faults_explain", True)),
            exit_codes=observer_of(history.events).exit_codes,
        )
        if cause is not None:
            causes[cause] += 1
            continue
        tail = str(e.data.get("message") or "")[-_TAIL_CHARS:]
        found.add(
            "unexplained_exit",
            f"pid {e.data.get('pid')} exit code {e.data.get('code')} at event {e.index}, "
            f"no fault active; its log ends:\n{tail}",
        )
    exits = sum(causes.values()) + sum(a.count for a in found.anomalies.values())
    stats = {"starts": len(starts), "exits": exits, **{f"by_{k}": n for k, n in causes.items()}}
    explained = ", ".join(f"{n} {k}" for k, n in sorted(causes.items())) or "none"
    return found.result(
        "loader_exits_explained",
        f"{len(starts)} loader starts, {exits} exits, each caused ({explained})",
        stats,
    )
