"""Liveness: after a fault heals, the loader commits again within a bound, or exits non-zero.

A loader that neither loads nor exits (a half-open connection it waits on for ever, a lock it
never gets, a frozen process) turns a short fault into an outage that no row count shows: the
rows arrive in the end, after a restart nobody planned. This check judges every healed fault
from the history alone:

- the window opens when the fault's heal ends (its ``.heal`` ``ok`` event) and lasts
  ``bound_s`` seconds;
- it is *resumed* if a commit of the loader under test (a snapshot read back by the
  recording client that its observer recognises, ``harness.observer``) that added rows or
  moved its declared position was made in it (``facts.commits.progress_commits``: an empty
  checkpoint commit or a take-over's claim is not progress),
  *exited* if a loader exited with a non-zero code in it (or had exited so before and was
  not started again);
- it is *cut* (not judged) if the harness itself stopped, killed or froze the loader, or
  injected another fault that may stop it (any lane but those of :data:`IGNORED_LANES`),
  before the bound ran out, or the history ends first;
- it is *no_work* (not judged) if no valid message was published after the loader's last
  commit before the heal and up to half the bound after it: a loader with nothing to load
  need not commit;
- otherwise it is ``stalled``: an anomaly.

Commits come from ``read``/``commits`` events (the final read-back records every snapshot
still in the table; a monitor reading during the run keeps those a later expiry removes),
whatever keys the loader writes: its observer says which snapshots are its own.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from icefloe.harness.history import History, select
from icefloe.harness.observer import observer_of
from icefloe.harness.scenarios.checks.facts.commits import progress_commits
from icefloe.harness.scenarios.checks.facts.faults import Heal, cuts, heals, lifecycle
from icefloe.harness.scenarios.checks.facts.numbers import percentile
from icefloe.harness.scenarios.checks.facts.reads import Observed
from icefloe.harness.scenarios.checks.verdict import (
    UNKNOWN,
    CheckResult,
    Found,
    Param,
    checker,
)
from icefloe.publisher.ledger import LedgerEntry

__all__ = ["CADENCES", "DEFAULT_BOUND_S", "IGNORED_LANES", "Window", "judge_windows"]


DEFAULT_BOUND_S = 120.0


CADENCES = 6
"""A loader that commits every ``cadence_s`` has at least this many of its cadences after a
heal (a restart, a rebalance and a commit interval or two) before it is called stalled."""


IGNORED_LANES = ("traffic", "schema", "maintenance", "topic")
"""Lanes whose injections do not cut a window: traffic, a schema change, maintenance and new
partitions never stop a loader for long (it plans again). Any other lane (the loader's, the
services', faults on the wire) may keep it from committing: its injection ends the window."""


RESUMED, EXITED, STALLED, CUT, NO_WORK = "resumed", "exited", "stalled", "cut", "no_work"


@dataclass(frozen=True)
class Window:
    """What the loader did in the bound after one heal.

    Attributes:
        heal: The heal.
        outcome: ``resumed``, ``exited``, ``stalled``, ``cut`` or ``no_work``.
        after_s: Seconds from the heal to the commit or exit (or to the cut).
        detail: Why, for reports.
    """

    heal: Heal
    outcome: str
    after_s: float | None = None
    detail: str = ""


def judge_windows(
    healed: Sequence[Heal],
    commits: Sequence[float],
    exits: Sequence[tuple[float, int | None]],
    states: Sequence[tuple[float, str]],
    cuts: Sequence[tuple[float, str]],
    published: Sequence[float],
    end: float,
    bound_s: float,
) -> list[Window]:
    """Judge the window after each heal (pure: plain times in, one window each out).

    Args:
        healed: The heals.
        commits: Loader commit times, sorted.
        exits: (time, code) of loader exits with a non-zero code.
        states: The loader's lifecycle (see :func:`lifecycle`), in order.
        cuts: (time, why) of harness actions that end a window early, sorted.
        published: Publish times of valid delivered messages, sorted.
        end: The time of the history's last event.
        bound_s: The bound.

    Returns:
        One window per heal.
    """
    out: list[Window] = []
    cut_times = [t for t, _ in cuts]
    for heal in healed:
        h = heal.time
        limit = h + bound_s
        i = bisect.bisect_right(cut_times, h)
        cut_at, why = cuts[i] if i < len(cuts) else (end, "the history ends")
        close = min(limit, cut_at, end)
        j = bisect.bisect_left(commits, h)
        first = commits[j] if j < len(commits) else None
        if first is not None and first <= close:
            out.append(Window(heal, RESUMED, first - h, "committed"))
            continue
        exit_in = [t for t, _ in exits if h <= t <= close]
        if exit_in:
            out.append(Window(heal, EXITED, exit_in[0] - h, "exited non-zero"))
            continue
        before = [s for t, s in states if t <= h]
        started = any(h < t <= close and s == "up" for t, s in states)
        if before and before[-1] == "exited" and not started:
            out.append(Window(heal, EXITED, None, "had exited non-zero and was not restarted"))
            continue
        last = commits[bisect.bisect_right(commits, h) - 1] if commits and commits[0] <= h else None
        lo = bisect.bisect_right(published, last) if last is not None else 0
        hi = bisect.bisect_right(published, h + bound_s / 2)
        if hi <= lo:
            out.append(Window(heal, NO_WORK, None, "nothing published since its last commit"))
            continue
        if close < limit:
            out.append(Window(heal, CUT, close - h, why))
            continue
        if before and before[-1] != "up" and not started:
            out.append(Window(heal, CUT, None, "no loader was running"))
            continue
        since = f"last commit {h - last:.1f} s before the heal" if last is not None else "none yet"
        out.append(
            Window(
                heal,
                STALLED,
                None,
                f"{hi - lo} messages waiting, no commit and no exit in {bound_s:.0f} s ({since})",
            )
        )
    return out


@checker(
    "liveness",
    Param(
        "bound_s",
        float,
        "seconds after a heal to commit again (or its cadences, if longer)",
        DEFAULT_BOUND_S,
    ),
    Param("faults", tuple[str, ...], "judge only the heals of these faults (none: every fault)"),
    Param(
        "ignore_lanes", tuple[str, ...], "lanes whose injections do not cut a window", IGNORED_LANES
    ),
)
def check_liveness(
    history: History, ledger: Sequence[LedgerEntry], observed: Observed, params: Mapping[str, Any]
) -> CheckResult:
    """Within a bound after each fault heals, the loader commits again or exits non-zero.

    The bound is ``bound_s``, or :data:`CADENCES` of the loader's own commit cadence (its
    observer's ``cadence_s``) when that is longer: a loader is judged against how often it
    says it commits. Each window's seconds from the heal to the next commit are reported.

    Returns:
        ``invalid`` with ``stalled``; ``unknown`` when no heal could be judged (no fault
        healed, every window cut short, or nothing was waiting to be loaded).
    """
    events = history.events
    cadence = observer_of(events).cadence_s
    bound = max(float(params["bound_s"]), CADENCES * (cadence or 0.0))
    names = set(params.get("faults") or ())
    healed = [h for h in heals(events) if not names or h.fault in names]
    if not healed:
        return CheckResult("liveness", UNKNOWN, "no fault was healed")
    exits = [
        (e.time, e.data.get("code"))
        for e in select(events, "loader", "exit")
        if e.data.get("code") not in (0, None) and not e.data.get("expected")
    ]
    published = sorted(
        e.timestamp / 1000
        for e in ledger
        if e.delivered and e.status == "valid" and e.timestamp is not None
    )
    windows = judge_windows(
        healed,
        progress_commits(events),
        exits,
        lifecycle(events),
        cuts(events, tuple(params["ignore_lanes"])),
        published,
        events[-1].time,
        bound,
    )
    found = Found()
    counts = {o: 0 for o in (RESUMED, EXITED, STALLED, CUT, NO_WORK)}
    for w in windows:
        counts[w.outcome] += 1
        if w.outcome == STALLED:
            found.add("stalled", f"{w.heal.fault} healed at {w.heal.time:.1f}: {w.detail}")
    resumed = [w.after_s for w in windows if w.outcome == RESUMED and w.after_s is not None]
    stats: dict[str, Any] = {"heals": len(windows), "bound_s": bound, **counts}
    stats["cadence_s"] = cadence
    stats["resume_s"] = [round(s, 1) for s in resumed]
    if resumed:
        stats["resume_p50_s"] = round(percentile(resumed, 50), 2)
        stats["resume_max_s"] = round(max(resumed), 2)
    judged = counts[RESUMED] + counts[EXITED] + counts[STALLED]
    if not judged:
        reasons = ", ".join(f"{n} {o}" for o, n in counts.items() if n)
        return CheckResult("liveness", UNKNOWN, f"no heal could be judged ({reasons})", {}, stats)
    return found.result(
        "liveness",
        f"after {judged} heals the loader committed again ({counts[RESUMED]}) or exited "
        f"({counts[EXITED]}) within {bound:.0f} s",
        stats,
    )
