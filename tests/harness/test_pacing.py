"""The soak's pacing of loader faults by commits, with fake loaders (no services)."""

from __future__ import annotations

import random
import threading
import time
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings

from icefloe.harness.history import History, select
from icefloe.harness.scenarios.faults import FAULTS, build_fault
from icefloe.harness.scenarios.faults.loader import KillLoaderParams, ZombieLoader, ZombieParams
from icefloe.harness.scenarios.generative.generate import PROFILES, ZOMBIE_POINTS, schedules
from icefloe.harness.scenarios.pacing import LoaderPacer, Pace, committed_batches
from icefloe.harness.scenarios.params import parse_params
from icefloe.harness.scenarios.player import SchedulePlayer
from icefloe.harness.scenarios.schedule import Schedule, ScheduledFault
from icefloe.loader.testing.faultpoints import PAUSE_AFTER_COMMITS_ENV, PAUSE_AT_ENV, POINTS

# Lines as the loader writes them (loader/run/job.py, loader/commit/sink.py).
STARTED = "2026-11-22 20:35:39,462 INFO icefloe.loader: starting lake.s.t at earliest\n"
TOOK_OVER = "2026-11-22 20:35:39,341 INFO icefloe.loader: took over lake.s.t as loader a (x)\n"
NOTHING_NEW = (
    "2026-11-22 20:36:10,000 INFO icefloe.loader: batch 3: every record is already committed\n"
)


def committed(batch: int, rows: int = 797) -> str:
    return (
        f"2026-11-22 20:36:17,715 INFO icefloe.loader: batch {batch}: committed {rows} rows, "
        "201 dead letters (table state 0.27 s, decode 9.47 s, write and publish 12.72 s)\n"
    )


class FakeLoader:
    """A loader process as the pacer sees it: a log that grows."""

    def __init__(self, log: str = "") -> None:
        self.log = log
        self._lock = threading.Lock()

    def write(self, text: str) -> None:
        with self._lock:
            self.log += text

    def log_size(self) -> int:
        with self._lock:
            return len(self.log.encode())

    def log_since(self, mark: int) -> str:
        with self._lock:
            return self.log.encode()[mark:].decode()


class FakeLoaders:
    def __init__(self) -> None:
        self.current = FakeLoader()
        self.armed: dict[str, str] = {}

    def arm(self, hooks: dict[str, str], expect_codes: tuple[int, ...] = ()) -> None:
        self.armed = dict(hooks)


class FakeRun:
    """Records injections; a loader fault makes the loader commit ``commit_after_s`` later."""

    def __init__(self, commit_after_s: float = 0.15) -> None:
        self.history = History()
        self.rng = random.Random(1)
        self.loaders = FakeLoaders()
        self.commit_after_s = commit_after_s
        self.injected: list[tuple[float, str]] = []
        self.commits: list[float] = []
        self.batch = 0
        self._lock = threading.Lock()

    def start_loader(self, wait: bool = True) -> float:
        self._commit_later()
        return 0.0

    def _commit_later(self) -> None:
        def commit() -> None:
            with self._lock:
                self.batch += 1
                self.commits.append(time.monotonic())
                batch = self.batch
            self.loaders.current.write(committed(batch))

        timer = threading.Timer(self.commit_after_s, commit)
        timer.daemon = True
        timer.start()

    def inject(self, fault: Any) -> bool:
        with self._lock:
            self.injected.append((time.monotonic(), fault.name))
        if fault.lane == "loader":
            self.loaders.current.write(STARTED)  # restarted: it logs its start at once
            self._commit_later()  # ... and commits only later
        return True

    def heal(self, fault: Any) -> None:
        pass


def test_only_batch_commits_count_not_the_start_or_an_empty_batch() -> None:
    log = TOOK_OVER + STARTED + NOTHING_NEW + committed(0) + committed(1, rows=0)
    assert committed_batches(log) == [0, 1]
    assert committed_batches(TOOK_OVER + STARTED + NOTHING_NEW) == []


def test_the_pacer_waits_for_a_commit_after_the_mark() -> None:
    run = FakeRun()
    run.loaders.current.write(STARTED + committed(0))
    pacer = LoaderPacer(Pace(timeout_s=5.0, delay_s=0.0, poll_s=0.01))
    pacer.mark(run.loaders)  # a fault was injected: commit 0 came before it
    assert pacer.committed(run.loaders) == []
    threading.Timer(0.2, run.loaders.current.write, args=(committed(1),)).start()
    began = time.monotonic()
    assert pacer.wait(run, threading.Event())
    assert time.monotonic() - began >= 0.19
    (event,) = select(run.history, "loader", "paced")
    assert event.phase == "ok" and event.data["batch"] == 1


def test_a_successor_started_after_the_mark_counts_from_its_first_line() -> None:
    run = FakeRun()
    pacer = LoaderPacer(Pace(timeout_s=5.0, delay_s=0.0, poll_s=0.01))
    pacer.mark(run.loaders)
    run.loaders.current = FakeLoader(STARTED + committed(0))  # a zombie's successor
    assert pacer.committed(run.loaders) == [0]
    assert pacer.wait(run, threading.Event())


def test_a_wait_that_times_out_lets_the_fault_come_and_says_so() -> None:
    run = FakeRun()
    pacer = LoaderPacer(Pace(timeout_s=0.1, delay_s=0.0, poll_s=0.01))
    pacer.mark(run.loaders)
    assert pacer.wait(run, threading.Event())
    (event,) = select(run.history, "loader", "paced")
    assert event.phase == "fail" and event.data["batch"] is None


def test_a_stopped_wait_injects_nothing() -> None:
    run = FakeRun()
    pacer = LoaderPacer(Pace(timeout_s=30.0, delay_s=0.0, poll_s=0.01))
    pacer.mark(run.loaders)
    stopped = threading.Event()
    threading.Timer(0.1, stopped.set).start()
    began = time.monotonic()
    assert not pacer.wait(run, stopped)
    assert time.monotonic() - began < 5 and not select(run.history, "loader", "paced")


def _kill(at_s: float) -> ScheduledFault:
    return ScheduledFault(at_s, "kill_loader", KillLoaderParams(at="now"))


def test_paced_loader_faults_each_follow_a_commit_and_the_first_lane_done_ends_it() -> None:
    run = FakeRun(commit_after_s=0.3)
    burst = parse_params(FAULTS["burst"].params, {}, "x")
    # By the clock the kills would come 0.01 s apart; the bursts every 0.05 s for 5 s.
    events = (
        *[_kill(0.01 * i) for i in range(4)],
        *[ScheduledFault(0.05 * i, "burst", burst) for i in range(100)],
    )
    pacer = LoaderPacer(Pace(timeout_s=10.0, delay_s=0.05, poll_s=0.01))
    player = SchedulePlayer(run, Schedule(events), pacer=pacer, until_first_lane=True)  # type: ignore[arg-type]
    began = time.monotonic()
    player.play()
    took = time.monotonic() - began
    kills = [t for t, name in run.injected if name == "kill_loader"]
    bursts = [t for t, name in run.injected if name == "burst"]
    assert len(kills) == 4
    # Every kill came after a commit that came after the previous kill (or the start).
    previous = began
    for kill in kills:
        assert any(previous < c <= kill for c in run.commits), (previous, kill, run.commits)
        previous = kill
    waits = select(run.history, "loader", "paced", "ok")
    assert len(waits) == 4 and all(e.data["waited_s"] >= 0.2 for e in waits[1:])
    # The cheap lane kept its clock while the kills waited, and stopped with the loader lane.
    assert len(bursts) >= 15 and took < 4.0 and len(bursts) < 100


def test_a_cheap_lane_done_first_cuts_the_paced_loader_lane_and_a_lone_event_does_not() -> None:
    run = FakeRun(commit_after_s=0.4)
    burst = parse_params(FAULTS["burst"].params, {}, "x")
    partitions = parse_params(FAULTS["add_partitions"].params, {"add": 1}, "x")
    events = (
        *[_kill(0.01 * i) for i in range(20)],
        *[ScheduledFault(0.1 * i, "burst", burst) for i in range(8)],
        ScheduledFault(0.0, "add_partitions", partitions),  # a lane of one event
    )
    pacer = LoaderPacer(Pace(timeout_s=10.0, delay_s=0.0, poll_s=0.01))
    player = SchedulePlayer(run, Schedule(events), pacer=pacer, until_first_lane=True)  # type: ignore[arg-type]
    began = time.monotonic()
    player.play()
    names = [name for _, name in run.injected]
    assert names.count("burst") == 8 and "add_partitions" in names
    assert 1 <= names.count("kill_loader") < 20 and time.monotonic() - began < 5.0
    (done,) = select(run.history, "info", "lane_done")
    assert done.data == {"lane": "traffic", "events": 8}


def test_an_unpaced_player_keeps_the_schedules_clock() -> None:
    run = FakeRun(commit_after_s=5.0)
    player = SchedulePlayer(run, Schedule(tuple(_kill(0.02 * i) for i in range(3))))  # type: ignore[arg-type]
    began = time.monotonic()
    player.play()
    assert len(run.injected) == 3 and time.monotonic() - began < 2.0
    assert not select(run.history, "loader", "paced")


def test_a_zombie_armed_after_a_commit_freezes_a_loader_at_work() -> None:
    run = FakeRun()
    ZombieLoader(ZombieParams(freeze="planned", after_commits=1), run.rng).prepare(run)
    assert run.loaders.armed == {PAUSE_AT_ENV: "planned", PAUSE_AFTER_COMMITS_ENV: "1"}
    ZombieLoader(ZombieParams(freeze="write"), run.rng).prepare(run)
    assert run.loaders.armed[PAUSE_AFTER_COMMITS_ENV] == "0"


@settings(
    max_examples=10,
    deadline=None,
    database=None,
    phases=[Phase.generate],
    suppress_health_check=list(HealthCheck),
)
@given(schedules(PROFILES["soak"]))
def test_soak_chapters_hold_faults_at_the_loader_s_points(schedule: Schedule) -> None:
    counts = schedule.counts()
    lanes = schedule.lanes()
    assert 30 <= len(lanes["loader"]) <= 36 and counts["kill_loader"] >= 10
    # Every loader fault lands at a point of the loader's own, armed on the start before it:
    # none aimed from outside, none waiting for a commit (unpaced), start-up one point of many.
    ats = [e.params.at for e in lanes["loader"] if e.kind == "kill_loader"]
    assert set(ats) <= set(POINTS)
    assert ats.count("take_over") < len(ats) / 2
    freezes = [e.params for e in lanes["loader"] if e.kind == "zombie_loader"]
    assert {p.freeze for p in freezes} <= set(ZOMBIE_POINTS)
    assert all(p.after_commits == 0 and p.successor == "took_over" for p in freezes)
    faults = [build_fault(e.kind, e.params, random.Random(0)) for e in lanes["loader"]]
    assert all(getattr(f, "unpaced", False) for f in faults)
    # The cheap lanes hold minutes of faults each (a chapter ends with its first lane done).
    assert len(lanes["traffic"]) >= 110 and len(lanes["schema"]) >= 55


class HookedLoaders(FakeLoaders):
    """Loaders whose current start carries ``hooks``; restarts are recorded."""

    def __init__(self, hooks: dict[str, str]) -> None:
        super().__init__()
        self.hooks = dict(hooks)
        self.restarts: list[tuple[bool, dict[str, str]]] = []

    def restart(self, *, kill: bool = False) -> float:
        self.restarts.append((kill, dict(self.armed)))
        self.hooks, self.armed = dict(self.armed), {}
        return 0.0


class HookedRun(FakeRun):
    def __init__(self, hooks: dict[str, str]) -> None:
        super().__init__()
        self.loaders = HookedLoaders(hooks)

    def restart_loader(self, *, kill: bool = False) -> float:
        return self.loaders.restart(kill=kill)


def test_the_catch_up_runs_a_loader_without_the_hook_armed_for_a_fault_cut_off() -> None:
    from icefloe.harness.scenarios.generative.soak import clear_loader_hooks
    from icefloe.loader.testing.faultpoints import KILL_AFTER_COMMIT_ENV

    run = HookedRun({KILL_AFTER_COMMIT_ENV: "1"})
    run.loaders.armed = {PAUSE_AT_ENV: "write"}  # armed for a start that will not come
    assert clear_loader_hooks(run)
    assert run.loaders.restarts == [(True, {})] and not run.loaders.hooks
    assert select(run.history, "loader", "hooks_cleared")
    clean = HookedRun({})
    assert not clear_loader_hooks(clean) and not clean.loaders.restarts


class RestartLoaders(FakeLoaders):
    def __init__(self, running: bool) -> None:
        super().__init__()
        self.running = running
        self.started = 0

    def is_running(self) -> bool:
        return self.running

    def start(self, *, wait: bool = True) -> float:
        self.started += 1
        self.running = True
        return 0.0


def test_a_kill_healed_again_does_not_start_a_second_loader() -> None:
    from icefloe.harness.scenarios.faults.loader import KillLoader

    run = FakeRun()
    run.loaders = RestartLoaders(running=False)  # type: ignore[assignment]
    kill = KillLoader(KillLoaderParams(at="now"), run.rng)
    assert "already_running" not in kill.heal(run) and run.loaders.started == 1
    # A restart failed (the catalog was down) and the supervisor has since started it.
    assert kill.heal(run)["already_running"] and run.loaders.started == 1


class HealingRun(FakeRun):
    """A run whose first heal of each fault fails; ``heal_all`` heals it again."""

    def __init__(self) -> None:
        super().__init__()
        self.tasks: dict[str, Any] = {}
        self.active: list[Any] = []
        self.healed: list[str] = []

    def inject(self, fault: Any) -> bool:
        self.active.append(fault)
        return super().inject(fault)

    def heal(self, fault: Any) -> None:
        if fault in self.healed:
            return
        self.healed.append(fault)
        raise RuntimeError("the catalog is down")

    def heal_all(self) -> list[str]:
        left, self.active = self.active, []
        return [f.name for f in left]


def test_the_schedule_step_heals_what_a_failed_heal_left_before_the_checks() -> None:
    from icefloe.harness.scenarios.steps.faulting import PlaySchedule, schedule

    run = HealingRun()
    burst = parse_params(FAULTS["burst"].params, {}, "x")
    events = Schedule((ScheduledFault(0.0, "burst", burst),))
    schedule(run, PlaySchedule(events, start_loader=False, monitor_every_s=0))
    assert len(run.healed) == 1 and not run.active


def test_a_kill_during_start_up_comes_at_once_and_the_next_paced_fault_waits_again() -> None:
    run = FakeRun(commit_after_s=0.4)
    start_kill = ScheduledFault(0.0, "kill_loader", KillLoaderParams(at="start"))
    events = (_kill(0.0), start_kill, _kill(0.0))
    pacer = LoaderPacer(Pace(timeout_s=10.0, delay_s=0.0, poll_s=0.01))
    SchedulePlayer(run, Schedule(events), pacer=pacer).play()  # type: ignore[arg-type]
    (first, second, third) = [t for t, _ in run.injected]
    # The start-up kill did not wait for the commit the first kill's restart made ...
    assert second - first < 0.3 and not any(first < c <= second for c in run.commits)
    # ... and the paced kill after it waited for a commit after it.
    assert any(second < c <= third for c in run.commits)
    assert len(select(run.history, "loader", "paced", "ok")) == 2


class StartingLoader(FakeLoader):
    def __init__(self) -> None:
        super().__init__(STARTED)

    def uptime_s(self) -> float:
        return 3.25

    def has_started(self) -> bool:
        return STARTED in self.log


class StartingLoaders(RestartLoaders):
    def __init__(self, running: bool) -> None:
        super().__init__(running)
        self.current = StartingLoader()
        self.kills = 0

    def kill(self) -> int:
        self.kills += 1
        self.running = False
        return 4242


def test_a_start_up_kill_says_where_it_landed_and_skips_a_loader_that_is_down() -> None:
    from icefloe.harness.scenarios.faults import FaultSkipped
    from icefloe.harness.scenarios.faults.loader import KillLoader

    run = FakeRun()
    run.loaders = StartingLoaders(running=True)  # type: ignore[assignment]
    kill = KillLoader(KillLoaderParams(at="start", max_delay_s=0.05), run.rng)
    assert kill.unpaced and not KillLoader(KillLoaderParams(at="now"), run.rng).unpaced
    data = kill.inject(run)
    assert data == {"at": "start", "pid": 4242, "uptime_s": 3.25, "had_started": True}
    assert run.loaders.kills == 1
    try:
        kill.inject(run)  # the loader is down: nothing to kill
    except FaultSkipped:
        pass
    else:
        raise AssertionError("a start-up kill of a stopped loader must be skipped")


class FreezableLoader(StartingLoader):
    def __init__(self) -> None:
        super().__init__()
        self.is_frozen = False

    def freeze(self) -> int:
        self.is_frozen = True
        return 4242


class ZombieLoaders(StartingLoaders):
    def __init__(self) -> None:
        super().__init__(running=True)
        self.current = FreezableLoader()
        self.successors = 0

    def start_successor(self, *, wait: bool = True) -> tuple[Any, float]:
        self.successors += 1
        self.current = FreezableLoader()
        return self.current, 0.0


def test_a_zombie_frozen_during_start_up_comes_unpaced_and_says_where_it_froze() -> None:
    from types import SimpleNamespace

    run = FakeRun()
    run.loaders = ZombieLoaders()  # type: ignore[assignment]
    run.names = SimpleNamespace(table="lake.s.t")  # type: ignore[attr-defined]
    run.client = SimpleNamespace(lease_expires_ms=lambda table: None)  # type: ignore[attr-defined]
    zombie = ZombieLoader(ZombieParams(freeze="start", delay_s=0.05), run.rng)
    assert zombie.unpaced and not ZombieLoader(ZombieParams(freeze="now"), run.rng).unpaced
    frozen = run.loaders.current
    data = zombie.inject(run)
    assert frozen.is_frozen and run.loaders.successors == 1
    assert data["freeze"] == "start" and data["uptime_s"] == 3.25 and data["had_started"]


class Successor(FreezableLoader):
    """A successor with a loader id, running until told otherwise."""

    def __init__(self, loader_id: str, running: bool = True) -> None:
        from types import SimpleNamespace

        super().__init__()
        self.settings = SimpleNamespace(loader_id=loader_id)
        self.running = running

    def is_running(self) -> bool:
        return self.running


class SuccessorLoaders(ZombieLoaders):
    def __init__(self, successor: Successor) -> None:
        super().__init__()
        self.successor = successor
        self.waited: list[bool] = []

    def start_successor(self, *, wait: bool = True) -> tuple[Any, float]:
        self.waited.append(wait)
        self.successors += 1
        self.current = self.successor
        return self.current, 0.0


def zombie_run(loaders: SuccessorLoaders, owners: list[str | None]) -> FakeRun:
    """A run whose table lease names ``owners`` in turn (the last one from then on)."""
    from types import SimpleNamespace

    run = FakeRun()
    run.loaders = loaders  # type: ignore[assignment]
    run.names = SimpleNamespace(table="lake.s.t")  # type: ignore[attr-defined]
    reads = iter(owners)
    last: list[str | None] = [None]

    def lease_owner(table: str) -> str | None:
        last[0] = next(reads, last[0])
        return last[0]

    run.client = SimpleNamespace(  # type: ignore[attr-defined]
        lease_expires_ms=lambda table: None, lease_owner=lease_owner
    )
    return run


def test_a_start_up_zombie_thaws_once_the_successor_has_taken_over(monkeypatch: Any) -> None:
    from icefloe.harness.scenarios.faults import loader as faults

    monkeypatch.setattr(faults, "TAKE_OVER_POLL_S", 0.01)
    loaders = SuccessorLoaders(Successor("b"))
    run = zombie_run(loaders, ["a", "a", None, "b"])
    zombie = ZombieLoader(ZombieParams(freeze="start", delay_s=0.0, successor="took_over"), run.rng)
    data = zombie.inject(run)
    assert loaders.waited == [False]  # launched, not waited for
    assert data["successor_took_over"] is True and data["successor_start_s"] < 5


def test_a_successor_that_exits_before_its_take_over_ends_the_wait(monkeypatch: Any) -> None:
    from icefloe.harness.scenarios.faults import loader as faults

    monkeypatch.setattr(faults, "TAKE_OVER_POLL_S", 0.01)
    loaders = SuccessorLoaders(Successor("b", running=False))
    run = zombie_run(loaders, ["a"])
    zombie = ZombieLoader(ZombieParams(freeze="start", delay_s=0.0, successor="took_over"), run.rng)
    began = time.monotonic()
    assert zombie.inject(run)["successor_took_over"] is False
    assert time.monotonic() - began < 5


def test_soak_zombies_frozen_at_start_up_wait_only_for_the_take_over() -> None:
    from hypothesis import strategies as st

    from icefloe.harness.scenarios.generative.generate import _loader_event

    profile = PROFILES["soak"]

    @settings(max_examples=20, deadline=None, phases=[Phase.generate])
    @given(st.data())
    def check(data: st.DataObject) -> None:
        _, start_up, _ = data.draw(_loader_event("zombie_start", profile))
        _, at_work, _ = data.draw(_loader_event("zombie", profile))
        assert start_up.successor == "took_over" and at_work.successor == "started"

    check()


class RestartedLoader:
    """The armed start died and its supervisor started it again, without the hook."""

    def __init__(self) -> None:
        self.hooks: dict[str, str] = {}
        self.froze_from_outside = False

    def frozen(self) -> bool:
        return False

    def is_running(self) -> bool:
        return True

    def freeze(self) -> None:
        self.froze_from_outside = True


def test_a_zombie_whose_armed_start_died_is_frozen_from_outside_at_once() -> None:
    zombie = ZombieLoader(ZombieParams(freeze="write", freeze_timeout_s=30.0), random.Random(1))
    loader = RestartedLoader()
    began = time.monotonic()
    assert zombie._await_frozen(loader) == "now"
    assert loader.froze_from_outside and time.monotonic() - began < 5.0
