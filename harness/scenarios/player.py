"""Playing a fault schedule against a run, with a monitor that checks the invariants live.

:class:`SchedulePlayer` runs each lane of a :class:`~harness.scenarios.schedule.Schedule` in a
thread of its own: wait for the event's time, inject, hold for its duration, heal (a lane
that runs late keeps the spacing the schedule gave its events). A loader
event that needs one of the loader's hooks is armed on the loader start that comes before it.
:class:`Monitor` reads the table (its ids and duplicates), the dead-letter topic and the
table's commits every few seconds through the run's recording client and judges the reads
with :class:`~harness.scenarios.checks.live.LiveJudge`; when a rule breaks it records the
verdict and stops the player, which injects nothing more and heals what is injected.

Given a :class:`~harness.scenarios.pacing.LoaderPacer` (the soak), the player paces its loader
lane by the loader's progress instead of the clock: each loader fault waits for a commit since
the previous one, then comes promptly. With ``until_first_lane`` (the soak's chapters) the
player stops as soon as one lane of at least two events has played them all, so no lane
stands idle while a slower one finishes; events not reached are not injected (the next
chapter draws fresh lanes).
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any

from icefloe.harness.observer import observer_of
from icefloe.harness.scenarios.checks.facts.ledger import LedgerIndex, under_contract
from icefloe.harness.scenarios.checks.live import LiveJudge
from icefloe.harness.scenarios.faults import Fault, build_fault
from icefloe.harness.scenarios.pacing import LoaderPacer
from icefloe.harness.scenarios.schedule import Schedule

__all__ = ["Monitor", "SchedulePlayer"]


class Monitor:
    """Checks the live invariants of a run every ``every_s`` seconds, in a thread.

    Args:
        run: The run (``harness.scenarios.engine.Run``).
        every_s: Seconds between rounds.
        on_failure: Called once when a rule first breaks.
    """

    def __init__(self, run: Any, every_s: float = 10.0, on_failure: Any = None) -> None:
        self.run = run
        self.every_s = every_s
        self.on_failure = on_failure
        self.judge = LiveJudge()
        self.failure: dict[str, Any] | None = None
        self.rounds = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="monitor", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=120)

    def _loop(self) -> None:
        while not self._stop.wait(self.every_s):
            self.check_now()

    def _index(self) -> LedgerIndex:
        traffic = self.run.traffic
        running = frozenset(p.prefix for p in list(traffic.phases.values()) if not p.done)
        held_to = under_contract(
            traffic.entries(finished_only=True), observer_of(self.run.history.events)
        )
        return LedgerIndex(held_to, running)

    def check_now(self) -> dict[str, Any]:
        """One round: read, judge, record; return every anomaly found so far."""
        run, table = self.run, self.run.table
        for read in (run.client.ids, run.client.duplicates, run.client.commits):
            # A failed read is recorded by the client; a service down now is read next round.
            with contextlib.suppress(Exception):
                read(table, attempts=1)
        if run.names.dead_letter_topic:
            with contextlib.suppress(Exception):
                run.client.dead_letters(run.names.dead_letter_topic, timeout_s=20)
        with contextlib.suppress(Exception):  # the loader's committed position, when it moved
            run.read_position()
        anomalies = self.judge.update(run.history, self._index())
        self.rounds += 1
        verdict = "invalid" if anomalies else "valid"
        run.history.record(
            "check",
            "fail" if anomalies else "ok",
            "live",
            verdict=verdict,
            anomalies=anomalies,
            round=self.rounds,
        )
        if anomalies and self.failure is None:
            self.failure = anomalies
            if self.on_failure is not None:
                self.on_failure()
        return anomalies


class SchedulePlayer:
    """Plays a schedule on a run, lane by lane.

    Args:
        run: The run.
        schedule: What to play.
        start_loader: Start the loader first (armed for the loader lane's first event).
        pacer: Pace the loader lane by commits; None: by the clock.
        until_first_lane: Stop once one lane of at least two events has played them all.
    """

    def __init__(
        self,
        run: Any,
        schedule: Schedule,
        *,
        start_loader: bool = True,
        pacer: LoaderPacer | None = None,
        until_first_lane: bool = False,
    ) -> None:
        self.run = run
        self.schedule = schedule
        self.start_loader = start_loader
        self.pacer = pacer
        self.until_first_lane = until_first_lane
        self.stopped = threading.Event()
        self._t0 = 0.0

    def stop(self) -> None:
        """Inject nothing more; faults already injected are healed as they end."""
        self.stopped.set()

    def play(self) -> None:
        """Play every lane to its end (or until stopped); returns when all lanes are done."""
        run = self.run
        lanes = {
            lane: [(e, build_fault(e.kind, e.params, run.rng)) for e in events]
            for lane, events in self.schedule.lanes().items()
        }
        if self.start_loader:
            first = lanes.get("loader", [])
            if first:
                self._prepare(first[0][1])
            run.start_loader(wait=False)
        run.history.record(
            "info",
            "info",
            "schedule",
            events=len(self.schedule.faults),
            kinds=dict(self.schedule.counts()),
        )
        self._t0 = time.monotonic()
        threads = [
            threading.Thread(
                target=self._lane, args=(lane, pairs), name=f"lane-{lane}", daemon=True
            )
            for lane, pairs in lanes.items()
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    def _prepare(self, fault: Fault) -> None:
        prepare = getattr(fault, "prepare", None)
        if prepare is not None:
            prepare(self.run)

    def _lane(self, lane: str, pairs: list[tuple[Any, Fault]]) -> None:
        self._play_lane(pairs, self.pacer if lane == "loader" else None)
        if self.until_first_lane and len(pairs) >= 2 and not self.stopped.is_set():
            self.run.history.record("info", "info", "lane_done", lane=lane, events=len(pairs))
            self.stop()

    def _play_lane(self, pairs: list[tuple[Any, Fault]], pacer: LoaderPacer | None) -> None:
        run = self.run
        previous_at, previous_end = 0.0, self._t0
        for i, (event, fault) in enumerate(pairs):
            if pacer is not None:
                # A fault that is unpaced (a kill during start-up) comes at once, after the
                # previous one: its own delay places it.
                if getattr(fault, "unpaced", False):
                    if self.stopped.is_set():
                        return
                elif not pacer.wait(run, self.stopped):
                    return
            else:
                # An event comes at its time, or - when the lane runs late (a loader start, a
                # commit awaited) - as long after the previous one ended as the schedule
                # spaced them.
                due = max(self._t0 + event.at_s, previous_end + event.at_s - previous_at)
                previous_at = event.at_s
                if self.stopped.wait(max(0.0, due - time.monotonic())):
                    return
            try:
                injected = run.inject(fault)
            except Exception:
                injected = True  # half-injected: it is in the active set, heal it
            if pacer is not None and injected:
                pacer.mark(run.loaders)  # the next loader fault waits for a commit after this
            if not injected:
                previous_end = time.monotonic()
                continue
            self.stopped.wait(event.duration_s)
            if i + 1 < len(pairs):
                self._prepare(pairs[i + 1][1])  # before a heal that restarts the loader
            # A failed heal is recorded; the fault stays active and is healed again at teardown.
            with contextlib.suppress(Exception):
                run.heal(fault)
            previous_end = time.monotonic()
