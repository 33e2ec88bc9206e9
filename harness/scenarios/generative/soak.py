"""The soak: generated fault schedules, chapter after chapter, against one long-lived world.

One topic, table and loader live for the whole soak. Hypothesis draws each chapter's schedule
in a search of its own, seeded from the soak's seed and the chapter's number (profile ``soak``
of ``harness.scenarios.generative.generate``: hundreds of cheap faults - traffic, malformed
fractions, schema changes, pauses, maintenance - among 30-36 loader kills and zombie
writers), the player plays it while the monitor checks the live invariants, and at the
chapter's end every fault is healed. Chapters follow until the time is up.
The loader lane's faults land at the loader's fault points (``loader.testing.faultpoints``): each is
armed on the start before it and fires in that start's first batch, so none waits for a
commit; loader faults aimed from outside are paced by commits (``harness.scenarios.pacing``);
the cheap lanes keep their clock. The report counts faults where they landed
(``harness.scenarios.checks.facts.landed``: the loader's traces, recorded in the history). A
chapter ends as soon as one of its lanes has played all its events (the others are cut there,
and the next chapter draws fresh lanes), so no lane stands idle while a slower one finishes.
Only after the last chapter does the table catch up and the final checks compare it and the
dead-letter topic with the ledgers (a catch-up per chapter would cost minutes of faults). A
failure stops the soak and its chapter is written as a scenario file that plays it again on a
fresh world; the soak reports faults per minute, per kind, and the totals.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import random
import threading
import time
import zlib
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from icefloe.harness.history import Event, select
from icefloe.harness.loaders.base import Capability
from icefloe.harness.loaders.capabilities import not_applicable
from icefloe.harness.scenarios.checks.facts.faults import injections
from icefloe.harness.scenarios.checks.facts.landed import FaultCounts, fault_counts
from icefloe.harness.scenarios.checks.verdict import CheckResult
from icefloe.harness.scenarios.engine import Run, RunSetup
from icefloe.harness.scenarios.generative.generate import (
    LOADER,
    PARTITIONS,
    PROFILES,
    SOAK_LOADER,
    START_COLUMNS,
    WORKLOAD,
    Profile,
    WorldOptions,
    draw_schedule,
    scenario_doc,
    without_lanes,
)
from icefloe.harness.scenarios.loaders import LoaderOptions
from icefloe.harness.scenarios.model import parse
from icefloe.harness.scenarios.pacing import LoaderPacer
from icefloe.harness.scenarios.params import parse_params
from icefloe.harness.scenarios.player import Monitor, SchedulePlayer
from icefloe.harness.scenarios.runner import judge, read_for_checks, record_checks
from icefloe.harness.scenarios.schedule import Schedule
from icefloe.harness.scenarios.steps import perform
from icefloe.harness.scenarios.traffic import Workload

__all__ = ["SoakResult", "clear_loader_hooks", "soak"]


@dataclass
class SoakResult:
    """What a soak did and found.

    Attributes:
        run_dir: Its folder (history, ledgers, report, timeline).
        minutes: The time asked for.
        elapsed_s: Wall-clock seconds, setup to teardown.
        chapters: Schedules played.
        faults: Faults injected, per registered kind (``kill_loader``, ``kill_service``...;
            traffic is load, not counted).
        fault_minutes: Minutes during which faults were injected (first to last injection).
        checks: The final checks of the last chapter.
        anomalies: Anomaly name to count over every check.
        unhealed: Faults left unhealed.
        paced: Loader faults that waited for a commit and saw one.
        pace_timeouts: Loader faults whose wait for a commit timed out (they came anyway).
        pace_waits: Seconds each loader fault waited for its commit.
        counts: Faults by kind, service and where they landed (``landed.fault_counts``).
        load: 1-minute load averages sampled during the soak.
        failure: What failed, if anything did.
        written: The scenario file a failing chapter was written to.
    """

    run_dir: Path
    minutes: float
    elapsed_s: float = 0.0
    chapters: int = 0
    faults: Counter[str] = field(default_factory=Counter)
    fault_minutes: float = 0.0
    checks: list[CheckResult] = field(default_factory=list)
    anomalies: Counter[str] = field(default_factory=Counter)
    unhealed: int = 0
    paced: int = 0
    pace_timeouts: int = 0
    pace_waits: list[float] = field(default_factory=list)
    counts: FaultCounts = field(default_factory=FaultCounts)
    load: list[float] = field(default_factory=list)
    failure: str | None = None
    written: Path | None = None

    @property
    def total(self) -> int:
        return sum(self.faults.values())

    @property
    def per_minute(self) -> float:
        return self.total / self.fault_minutes if self.fault_minutes else 0.0

    @property
    def passed(self) -> bool:
        return (
            self.failure is None
            and not self.anomalies
            and not self.unhealed
            and bool(self.checks)
            and all(c.ok for c in self.checks)
        )


NEEDS = {
    Capability.FAULT_POINTS: "its loader lane kills and freezes at fault points inside batches",
    Capability.FENCING: "its zombies (a successor fences the frozen loader off)",
    Capability.ROUTES: "its infra lane's faults on the wire reach the loader through proxies",
    Capability.SETTINGS: "it sets icefloe's loader settings (timeouts, catch-up batches)",
}
"""What the soak needs of a loader (``harness.loaders.capabilities``): capability -> why."""


class NotApplicable(ValueError):
    """The loader under test lacks what a run needs."""


def _setup(world: WorldOptions) -> RunSetup:
    loader = LoaderOptions.read({**LOADER, **dict(world.loader)}, "soak loader")
    columns = tuple((c, t.upper()) for c, t in START_COLUMNS.items())
    return RunSetup(
        "soak", loader, parse_params(Workload, WORKLOAD, "soak workload"), PARTITIONS, True, columns
    )


class _Soak:
    """The long-lived world and the chapters played on it."""

    def __init__(
        self, stack: Any, run: Run, profile: Profile, deadline: float, world: WorldOptions
    ):
        self.stack, self.run, self.profile, self.deadline = stack, run, profile, deadline
        self.world = world
        self.player: SchedulePlayer | None = None
        self.pacer = LoaderPacer()  # one for the whole soak: its mark spans chapters
        self.monitor = Monitor(run, profile.monitor_every_s, on_failure=self._stop_player)
        self.failure: str | None = None
        self.failed_schedule: Schedule | None = None
        self.chapters = 0
        self.schedules: list[Schedule] = []
        self.checks: list[CheckResult] = []

    def _stop_player(self) -> None:
        if self.player is not None:
            self.player.stop()

    def chapter(self, schedule: Schedule) -> None:
        """Play one schedule (the world and its trickle go on into the next chapter); after
        the last one, heal, catch up and check everything."""
        if self.failure is not None or time.monotonic() >= self.deadline:
            return
        run = self.run
        self.chapters += 1
        self.schedules.append(schedule)
        run.history.record(
            "info",
            "info",
            "chapter",
            number=self.chapters,
            faults=len(schedule.faults),
            kinds=dict(schedule.counts()),
        )
        if "trickle" not in run.tasks:
            perform(run, "trickle", {"action": "start", "rate": self.world.trickle_rate})
        self.player = SchedulePlayer(
            run, schedule, start_loader=self.chapters == 1, pacer=self.pacer, until_first_lane=True
        )
        timer = threading.Timer(max(0.0, self.deadline - time.monotonic()), self._stop_player)
        timer.daemon = True
        timer.start()
        try:
            self.player.play()
        finally:
            timer.cancel()
            self.player.stop()  # interrupted (Ctrl-C, SIGTERM): the lanes inject nothing more
            run.heal_all()
        if self.monitor.failure or time.monotonic() >= self.deadline:
            self.finish()

    def finish(self) -> None:
        """Stop the trickle, let the table catch up, and check everything so far."""
        run = self.run
        perform(run, "trickle", {"action": "stop"})
        schedule = self.schedules[-1]
        if not self.monitor.failure:
            clear_loader_hooks(run)
            _catch_up(run)
            run.await_loaded(
                self.profile.await_timeout_s, progress_s=CATCH_UP_PROGRESS_S, drain=True
            )
        # Its rounds (a full read of the table's ids each) would compete with the checks.
        self.monitor.stop()
        self.monitor.check_now()
        scenario = parse(scenario_doc(schedule, self.profile, self.world, name="soak"), name="soak")
        run.read_back()
        read_for_checks(run, scenario.checks)
        self.checks = judge(scenario, run.history, run.run_dir)
        for result in self.checks:
            record_checks(
                run.history,
                [result],
                anomalies={n: a.count for n, a in result.anomalies.items()},
                chapter=self.chapters,
            )
        bad = [c for c in self.checks if not c.ok] + (
            [CheckResult("live", "invalid", str(self.monitor.failure))]
            if self.monitor.failure
            else []
        )
        if bad:
            self.failure = "; ".join(f"{c.check}: {c.summary}" for c in bad)
            self.failed_schedule = schedule
            raise AssertionError(self.failure)


# A soak's backlog at its end: bursts published while the loader was being killed every few
# seconds (116,000 records after an hour). At the world's 1,000 records a batch it loads about
# 110 rows/s, so the catch-up restarts the loader with bigger batches, and waits while the
# table still grows.
CATCH_UP_MAX_OFFSETS = 20_000
CATCH_UP_PROGRESS_S = 300.0


def _catch_up(run: Any) -> None:
    """Restart the loader with bigger batches for the catch-up (no faults are left to play)."""
    run.loaders.configure({"kafka.max_offsets_per_trigger": CATCH_UP_MAX_OFFSETS})
    try:
        run.restart_loader()
    except RuntimeError as exc:  # recorded as a failed start; the supervisor tries again
        run.history.record("loader", "fail", "catch_up", error=str(exc)[:500])
        perform(run, "start_loader", {"only_if_stopped": True})


def clear_loader_hooks(run: Any) -> bool:
    """Restart a loader still carrying a fault hook, without it; True when it did.

    The player arms a hooked fault (a kill right after a commit, a freeze at a point of a
    batch) on the loader start before it. When the time is up between that start and the
    fault, the hook stays: during the catch-up the loader would kill itself (an expected exit,
    not restarted) or freeze, and the table would never catch up.
    """
    run.loaders.arm({})
    hooks = run.loaders.hooks
    if not hooks:
        return False
    run.history.record("loader", "info", "hooks_cleared", hooks=hooks)
    run.restart_loader(kill=True)  # kill -9 also ends a loader its hook has frozen
    return True


def _sample_load(stop: threading.Event, load: list[float]) -> None:
    while not stop.wait(60.0):
        load.append(round(os.getloadavg()[0], 2))


def soak(
    stack: Any,
    minutes: float,
    *,
    reports_dir: Path = Path("reports"),
    seed: int | None = None,
    world: WorldOptions | None = None,
    listener: Callable[[Event], None] | None = None,
    loader: Any = None,
    without: Sequence[str] = (),
) -> SoakResult:
    """Play generated chapters against one world until ``minutes`` are up; check, report.

    Args:
        stack: A running stack.
        minutes: How long faults are injected (the catch-up after the last chapter adds to it).
        reports_dir: Where the run's folder goes.
        seed: Hypothesis's seed and the run's (drawn if None; printed in the report).
        world: Loader overrides and the trickle.
        listener: Every history event (progress).
        loader: The kind of loader under test (``harness.loaders.kinds``; None: icefloe's).
        without: Lanes left out (``generate.without_lanes``): ``loader`` and ``infra`` for a
            soak whose loader no fault stops.

    Returns:
        What the soak did and found (its report is ``report.md`` in its folder).

    Raises:
        NotApplicable: the loader lacks a capability the soak's faults need (the reasons).
    """
    if loader is not None:
        missing = not_applicable(NEEDS, loader.capabilities)
        if missing:
            raise NotApplicable(f"the soak does not apply to {loader.name}: {'; '.join(missing)}")

    # The loader behind the fault points unless told otherwise (a break's settings add to it).
    world = world or WorldOptions()
    world = dataclasses.replace(world, loader={**SOAK_LOADER, **dict(world.loader)})
    seed = seed if seed is not None else random.SystemRandom().randrange(2**31)
    profile = without_lanes(PROFILES["soak"], without)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    run = Run(
        _setup(world), stack, reports_dir / "runs" / f"{stamp}-soak", seed, listener,
        loader=loader,
    )  # fmt: skip
    result = SoakResult(run.run_dir, minutes, load=[round(os.getloadavg()[0], 2)])
    began = time.monotonic()
    state = _Soak(stack, run, profile, began + minutes * 60, world)
    stop_sampling = threading.Event()
    threading.Thread(target=_sample_load, args=(stop_sampling, result.load), daemon=True).start()
    run.history.record(
        "info", "info", "soak", minutes=minutes, seed=seed, without=list(without),
        **run.names.as_dict(),
    )  # fmt: skip
    try:
        run.setup()
        state.monitor.start()
        # Each chapter is drawn by a search of its own (seeded from the soak's seed and its
        # number): one search's examples are made from each other's choices, chapters must not.
        while not state.checks and state.failure is None and time.monotonic() < state.deadline:
            state.chapter(draw_schedule(profile, zlib.crc32(f"{seed}:{state.chapters}".encode())))
        if not state.checks and state.schedules:
            state.finish()  # interrupted before the time was up
    except AssertionError:
        pass  # recorded in state.failure
    except Exception as exc:
        if state.failure is None:
            result.failure = f"{type(exc).__name__}: {exc}"
            run.history.record("info", "fail", "soak", error=result.failure)
    finally:
        state.monitor.stop()
        stop_sampling.set()
        result.unhealed = len(run.heal_all())
        result.failure = result.failure or state.failure
        # A failing soak keeps its topic and table: the verdict is recomputed from the history,
        # but what the table held can only be read while it is there.
        run.teardown(keep=bool(result.failure))
    result.chapters, result.checks = state.chapters, state.checks
    result.elapsed_s = time.monotonic() - began
    _tally(result, run)
    if state.failed_schedule is not None:
        result.written = _write(state, result)
    return result


def _tally(result: SoakResult, run: Run) -> None:
    injected = [e for e in select(run.history, "fault", phase="ok") if e.name.endswith(".inject")]
    result.counts = fault_counts(run.history)
    result.faults = Counter(result.counts.by_kind)
    if injected:
        result.fault_minutes = max((injected[-1].time - injected[0].time) / 60, 1 / 60)
    for check in result.checks:
        for name, a in check.anomalies.items():
            result.anomalies[name] += a.count
    result.unhealed += sum(1 for _, _, heal in injections(run.history) if heal is None)
    paced = select(run.history, "loader", "paced")
    result.paced = sum(1 for e in paced if e.phase == "ok")
    result.pace_timeouts = sum(1 for e in paced if e.phase == "fail")
    result.pace_waits = [float(e.data["waited_s"]) for e in paced]


def _write(state: _Soak, result: SoakResult) -> Path:
    from icefloe.harness.scenarios.generative.explore import write_found
    from icefloe.harness.scenarios.runner import RunResult

    assert state.failed_schedule is not None
    doc = scenario_doc(state.failed_schedule, state.profile, state.world, name="soak_chapter")
    scenario = parse(doc, name="soak_chapter")
    stand_in = RunResult(
        scenario,
        state.run.seed,
        None,
        state.checks,
        "invalid",
        result.elapsed_s,
        [],
        state.run.run_dir,
        state.run.names.as_dict(),
        result.failure,
        state.run.history,
    )
    note = (
        f"Chapter {state.chapters} of a soak that failed ({result.failure}); "
        "played again here on a fresh world."
    )
    return write_found(
        stand_in, state.failed_schedule, state.run.run_dir / "failed-chapter.toml", note
    )
