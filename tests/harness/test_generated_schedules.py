"""Generated schedules without services: the strategies keep their profiles' promises, a
schedule survives the trip through a scenario file, the player plays lanes as it should, and
a timeline is drawn."""

from __future__ import annotations

import threading
import time
import tomllib
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings

from icefloe.harness.history import History
from icefloe.harness.scenarios.faults import FAULTS, build_fault
from icefloe.harness.scenarios.faults.loader import KillLoader, KillLoaderParams
from icefloe.harness.scenarios.generative.generate import (
    INSIDE_BATCH,
    PROFILES,
    draw_schedule,
    scenario_doc,
    schedules,
    without_lanes,
)
from icefloe.harness.scenarios.generative.tomlout import dumps
from icefloe.harness.scenarios.model import parse
from icefloe.harness.scenarios.params import ParamError, as_dict, parse_params
from icefloe.harness.scenarios.player import SchedulePlayer
from icefloe.harness.scenarios.reports.timeline import draw
from icefloe.harness.scenarios.schedule import Schedule, ScheduledFault
from icefloe.loader.testing.faultpoints import KILL_AFTER_COMMIT_ENV

FAST = settings(
    max_examples=15,
    deadline=None,
    database=None,
    phases=[Phase.generate],
    suppress_health_check=list(HealthCheck),
)


@FAST
@given(schedules(PROFILES["ci"]))
def test_ci_schedules_have_forty_faults_and_ten_loader_kills(schedule: Schedule) -> None:
    counts = schedule.counts()
    assert len(schedule.faults) >= 40 and counts["kill_loader"] >= 10
    assert {f.lane for f in schedule.faults} == set(PROFILES["ci"].lanes)
    # What keeps the profile inside its minutes: no kill waits for the restart, and a zombie's
    # successor is awaited only until it has taken the table over.
    loader = [f.params for f in schedule.faults if f.lane == "loader"]
    assert all(p.restart == "launch" for p in loader if f_kind(p) == "kill")
    assert all(p.successor == "took_over" for p in loader if f_kind(p) == "zombie")


def _place(params: Any) -> str:
    """Where the goal of a soak counts a loader fault of the loader lane."""
    if isinstance(params, KillLoaderParams):
        return "inside" if params.at in INSIDE_BATCH else params.at
    return "zombie" if params.freeze in INSIDE_BATCH else "other"


@FAST
@given(schedules(PROFILES["soak"]))
def test_every_round_of_the_soak_loader_lane_holds_each_place_the_goal_counts(
    schedule: Schedule,
) -> None:
    places = [_place(f.params) for f in schedule.faults if f.lane == "loader"]
    assert len(places) >= 30
    for start in range(0, len(places) - 5, 6):
        dealt = Counter(places[start : start + 6])
        assert dealt["inside"] == 2, places
        assert dealt["commit_sent"] == dealt["committed"] == dealt["zombie"] == 1, places
        assert dealt["take_over"] + dealt["other"] == 1, places


def test_soak_chapters_draw_each_point_of_a_card_alike() -> None:
    inside: Counter[str] = Counter()
    for n in range(15):  # chapters, each drawn by a search of its own
        schedule = draw_schedule(PROFILES["soak"], 100 + n)
        inside.update(
            f.params.at
            for f in schedule.faults
            if f.lane == "loader" and isinstance(f.params, KillLoaderParams)
            if f.params.at in INSIDE_BATCH
        )
    total = sum(inside.values())
    assert total >= 15 * 10
    for point in INSIDE_BATCH:  # a fifth each; 0.5 and 1.5 times that are > 3.5 sd away
        assert 0.5 * total / 5 < inside[point] < 1.5 * total / 5, inside


def test_a_seed_draws_the_same_chapter_again_and_another_seed_another() -> None:
    first = draw_schedule(PROFILES["soak"], 11)
    assert draw_schedule(PROFILES["soak"], 11) == first
    assert draw_schedule(PROFILES["soak"], 12) != first


NO_LOADER_FAULTS = without_lanes(PROFILES["soak"], ["loader", "infra"])


@FAST
@given(schedules(NO_LOADER_FAULTS))
def test_a_soak_without_its_loader_and_infra_lanes_draws_neither(schedule: Schedule) -> None:
    lanes = {f.lane for f in schedule.faults}
    assert {"maintenance", "schema", "traffic"} <= lanes and not lanes & {"loader", "infra"}
    assert len(schedule.faults) >= NO_LOADER_FAULTS.min_faults > 0
    assert "kill_loader" not in schedule.counts()


def test_leaving_out_an_unknown_lane_or_every_lane_is_refused() -> None:
    with pytest.raises(ValueError, match="no lane"):
        without_lanes(PROFILES["soak"], ["loaders"])
    with pytest.raises(ValueError, match="every lane"):
        without_lanes(PROFILES["ci"], list(PROFILES["ci"].lanes))
    assert without_lanes(PROFILES["ci"], []) is PROFILES["ci"]


def f_kind(params: Any) -> str:
    return "kill" if isinstance(params, KillLoaderParams) else "zombie"


@FAST
@given(schedules(PROFILES["break"]))
def test_a_generated_schedule_round_trips_through_a_scenario_file(schedule: Schedule) -> None:
    doc = scenario_doc(schedule, PROFILES["break"], name="generated")
    text = dumps(doc, "a header\nof two lines")
    assert tomllib.loads(text) == doc
    scenario = parse(tomllib.loads(text), name="generated")
    (step,) = [s for s in scenario.steps if s.do == "schedule"]
    assert step.params.events.to_docs() == schedule.to_docs()


def test_every_fault_kind_has_typed_parameters() -> None:
    for kind in FAULTS.values():
        assert kind.lane in ("loader", "infra", "maintenance", "schema", "topic", "traffic")
    with pytest.raises(ParamError, match="not 'now'"):
        parse_params(KillLoaderParams, {"at": "later"}, "x")
    assert as_dict(parse_params(KillLoaderParams, {"at": "commit"}, "x"))["at"] == "commit"
    with pytest.raises(ParamError, match="at_s"):
        Schedule.parse([{"fault": "burst"}], "x")


class _FakeLoaders:
    def __init__(self) -> None:
        self.armed: dict[str, str] = {}
        self.starts: list[dict[str, str]] = []

    def arm(self, hooks: dict[str, str], expect_codes: tuple[int, ...] = ()) -> None:
        self.armed = dict(hooks)


class _FakeRun:
    """Records what the player asks of a run; faults' own effects are not played."""

    def __init__(self) -> None:
        self.history = History()
        self.rng = __import__("random").Random(1)
        self.loaders = _FakeLoaders()
        self.calls: list[tuple[float, str, str]] = []
        self._lock = threading.Lock()
        self.t0 = time.monotonic()

    def start_loader(self, wait: bool = True) -> float:
        self.loaders.starts.append(dict(self.loaders.armed))
        self.loaders.armed = {}
        return 0.0

    def inject(self, fault: Any) -> bool:
        with self._lock:
            self.calls.append((time.monotonic() - self.t0, "inject", fault.name))
        return True

    def heal(self, fault: Any) -> None:
        with self._lock:
            self.calls.append((time.monotonic() - self.t0, "heal", fault.name))
        if isinstance(fault, KillLoader):
            self.start_loader()


def test_the_player_plays_lanes_side_by_side_and_arms_the_loader_hooks() -> None:
    run = _FakeRun()
    events = (
        ScheduledFault(0.0, "kill_loader", KillLoaderParams(at="after_commit")),
        ScheduledFault(0.1, "kill_loader", KillLoaderParams(at="now")),
        ScheduledFault(0.2, "kill_loader", KillLoaderParams(at="after_commit")),
        ScheduledFault(
            0.0,
            "pause_service",
            parse_params(FAULTS["pause_service"].params, {"service": "kafka"}, "x"),
            0.3,
        ),
    )
    player = SchedulePlayer(run, Schedule(events))  # type: ignore[arg-type]
    player.play()
    names = [name for _, what, name in run.calls if what == "inject"]
    assert names.count("kill_loader") == 3 and "pause_kafka" in names
    # The first start and the start before the third kill carry the after-commit hook.
    hooked = [KILL_AFTER_COMMIT_ENV in s for s in run.loaders.starts]
    assert hooked == [True, False, True, False]
    pause = [t for t, what, name in run.calls if name == "pause_kafka"]
    assert pause[1] - pause[0] >= 0.29  # held for its duration, while the loader lane went on


def test_a_stopped_player_injects_nothing_more() -> None:
    run = _FakeRun()
    burst = parse_params(FAULTS["burst"].params, {}, "x")
    player = SchedulePlayer(
        run, Schedule((ScheduledFault(5.0, "burst", burst),)), start_loader=False
    )  # type: ignore[arg-type]
    threading.Timer(0.1, player.stop).start()
    began = time.monotonic()
    player.play()
    assert time.monotonic() - began < 2 and not run.calls


def test_build_fault_names_services(tmp_path: Path) -> None:
    kill = build_fault(
        "kill_service", parse_params(FAULTS["kill_service"].params, {"service": "trino"}, "x"), None
    )  # type: ignore[arg-type]
    assert kill.name == "kill_trino" and kill.lane == "infra"


COMMIT = {"snapshot": 1, "time": 4.2, "loader": "l"}


def test_timeline_draws_faults_rows_and_the_first_failure(tmp_path: Path) -> None:
    history = History.of(
        [
            (0.0, "info", "info", "run", {}),
            (1.0, "loader", "ok", "start", {}),
            (2.0, "fault", "ok", "kill_loader.inject", {}),
            (2.5, "loader", "info", "killed", {}),
            (3.0, "read", "ok", "ids", {"added": ["a", "b"], "removed": []}),
            (4.0, "fault", "ok", "kill_loader.heal", {}),
            (4.5, "read", "ok", "commits", {"values": [COMMIT]}),
            (5.0, "fault", "ok", "pause_kafka.inject", {}),
            (6.0, "check", "fail", "live", {"anomalies": {"duplicated": {"count": 1}}}),
        ]
    )
    path = draw(history, [], tmp_path / "t.png", "test")
    assert path.stat().st_size > 10_000


def test_a_saved_run_is_judged_again_from_its_folder(tmp_path: Path) -> None:
    import json

    from icefloe.harness.scenarios.runner import judge, saved_run
    from icefloe.publisher.ledger import LedgerWriter

    schedule = Schedule((ScheduledFault(1.0, "kill_loader", KillLoaderParams()),))
    doc = scenario_doc(schedule, PROFILES["break"], name="generated")
    saved = {"name": "generated", "profile": "ci", "break": None, "seed": 7, "doc": doc}
    (tmp_path / "scenario.json").write_text(json.dumps(saved))
    writer = LedgerWriter(tmp_path / "ledgers" / "trickle.jsonl", {"topic": "t"})
    ids = [f"aaaaaaaa-bbbb-4ccc-addd-{i:012x}" for i in range(3)]
    for i, eid in enumerate(ids):
        writer.message(i, "t", 0, i, 1000, None, eid, None, None, (), 1, None)
    writer.close({})
    history = History(tmp_path / "history.jsonl")
    history.record("fault", "ok", "kill_loader.inject")
    history.record("fault", "ok", "kill_loader.heal")
    history.record("read", "ok", "ids", added=ids, removed=[])
    history.record("read", "ok", "table", values=[[eid, 1] for eid in ids])
    scenario, again, brk, seed = saved_run(tmp_path)
    verdicts = {r.check: r.verdict for r in judge(scenario, again, tmp_path, brk)}
    assert seed == 7 and verdicts["table_matches_ledger"] == "valid"
    assert verdicts["faults_healed"] == "valid" and verdicts["live_invariants"] == "valid"
    # A duplicate in what was read back turns the same folder's verdict invalid.
    history.record("read", "ok", "table", values=[[ids[0], 2], [ids[1], 1], [ids[2], 1]])
    verdicts = {r.check: r.verdict for r in judge(*saved_run(tmp_path)[:2], tmp_path)}
    assert verdicts["table_matches_ledger"] == "invalid"


def test_a_failing_search_is_shrunk_and_written_as_a_scenario_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The search's own mechanics, with a stand-in for the run (a real one takes minutes):
    a schedule "fails" when it holds a zombie writer; Hypothesis shrinks it and the smallest
    failing schedule is written as a file that reads back as the same scenario."""
    import json

    from icefloe.harness.scenarios.checks.verdict import CheckResult
    from icefloe.harness.scenarios.generative import explore as explore_module
    from icefloe.harness.scenarios.model import load
    from icefloe.harness.scenarios.runner import RunResult

    def run(scenario: Any, stack: Any, options: Any) -> RunResult:
        broken = "zombie_loader" in json.dumps(scenario.doc, default=str)
        check = CheckResult("table_matches_ledger", "invalid" if broken else "valid", "")
        verdict = check.verdict
        return RunResult(scenario, options.seed, None, [check], verdict, 0.0, [], tmp_path, {})

    class Stack:
        def healthy(self) -> bool:
            return True

    monkeypatch.setattr(explore_module, "run_scenario", run)
    monkeypatch.setattr(explore_module.report, "write_markdown", lambda result: None)
    found = explore_module.explore(
        Stack(), PROFILES["break"], found_path=tmp_path / "found.toml", seed=1
    )
    assert found.failed and found.smallest_schedule is not None and found.written is not None
    assert len(found.runs) > 1, (found.hypothesis_error, len(found.runs))  # then shrunk
    kinds = [e.kind for e in found.smallest_schedule.faults]
    assert kinds == ["zombie_loader"], (kinds, len(found.runs), found.hypothesis_error)
    again = load(found.written)
    assert "zombie_loader" in json.dumps(again.doc, default=str)
    assert "Replay: icefloe scenario run" in found.written.read_text()
