"""Where a run's time went (``harness.scenarios.reports.spent``), on a recorded history."""

from __future__ import annotations

from typing import Any

import pytest

from icefloe.harness.history import History
from icefloe.harness.scenarios.reports.spent import KIT, LOADER, SCENARIO, spent


def _run(drain: bool = False) -> History:
    events: list[tuple[float, str, str, str, dict[str, Any]]] = [
        (0.0, "info", "info", "run", {}),
        (1.0, "step", "invoke", "start_loader", {}),
        (1.0, "loader", "invoke", "start", {}),
        (9.0, "loader", "ok", "start", {}),
        (9.0, "step", "ok", "start_loader", {}),
        (9.0, "step", "invoke", "publish", {}),
        (9.0, "step", "ok", "publish", {}),
        (9.0, "step", "invoke", "nemesis", {}),
        (20.0, "fault", "invoke", "kill_loader.inject", {}),
        (20.0, "fault", "ok", "kill_loader.inject", {}),
        (20.0, "fault", "invoke", "kill_loader.heal", {}),
        (20.0, "loader", "invoke", "start", {}),
        (28.0, "loader", "ok", "start", {}),
        (28.0, "fault", "ok", "kill_loader.heal", {}),
        (28.0, "step", "ok", "nemesis", {}),
        (28.0, "step", "invoke", "await_loaded", {}),
        (60.0, "publish", "ok", "publish", {"phase": "steady"}),
        (70.0, "read", "ok" if not drain else "fail", "await_loaded", {}),
    ]
    if drain:
        events += [
            (70.0, "info", "invoke", "drain", {}),
            (85.0, "read", "ok", "drain", {}),
        ]
    after = 15.0 if drain else 0.0
    events += [
        (74.0 + after, "step", "ok", "await_loaded", {}),
        (74.0 + after, "step", "invoke", "stop_loader", {}),
        (76.0 + after, "step", "ok", "stop_loader", {}),
        (80.0 + after, "read", "ok", "table", {}),
        (86.0 + after, "check", "ok", "exactly_once", {}),
        (86.5 + after, "check", "ok", "liveness", {}),
        (88.0 + after, "sql", "ok", "teardown", {}),
    ]
    return History.of(events)


def test_the_parts_follow_one_another_and_add_up_to_the_run() -> None:
    split = spent(_run(), total_s=90.0)
    assert split is not None
    parts = {p.name: (p.whose, round(p.seconds, 1)) for p in split.parts}
    assert parts == {
        "setup": (KIT, 1.0),
        # to the publish's end, past the nemesis and the heal
        "timeline": (SCENARIO, 59.0),
        "catching up": (LOADER, 10.0),
        "settle": (KIT, 4.0),
        "stop_loader": (LOADER, 2.0),
        "read back": (KIT, 10.0),
        "checks": (KIT, 0.5),
        "teardown": (KIT, 3.5),  # to the run's end, past the last event
    }
    assert sum(p.seconds for p in split.parts) == pytest.approx(90.0)
    assert split.kit_s == pytest.approx(19.0)
    assert split.beyond_timeline_s == pytest.approx(31.0)
    assert split.loader_starts_s == pytest.approx(16.0)
    assert split.faults_s == pytest.approx(8.0)
    assert "kit 19.0 s (21%)" in split.line()


def test_a_drain_is_the_kits_and_leaves_the_settle_what_follows_it() -> None:
    split = spent(_run(drain=True), total_s=105.0)
    assert split is not None
    parts = {p.name: round(p.seconds, 1) for p in split.parts}
    assert parts["catching up"] == 10.0
    assert parts["drain"] == 15.0
    assert parts["settle"] == 4.0


def test_a_history_with_no_step_is_not_divided() -> None:
    assert spent(History.of([(0.0, "info", "info", "run", {})])) is None
