"""``loader_exits_explained`` over hand-made histories (no services): every loader exit has a
cause the run recorded, or the run fails with ``unexplained_exit`` and the exit's log tail."""

from __future__ import annotations

from typing import Any

from icefloe.harness.history import History
from icefloe.harness.scenarios.checks.facts.faults import fault_windows
from icefloe.harness.scenarios.checks.facts.reads import Observed
from icefloe.harness.scenarios.checks.verdict import INVALID, UNKNOWN, VALID, run_check
from icefloe.harness.scenarios.mutations import apply

CHECK = "loader_exits_explained"


def _start(t: float = 0.0) -> tuple[float, str, str, str, dict[str, Any]]:
    return (t, "loader", "invoke", "start", {"loader_id": "l"})


def _exit(
    t: float, code: int, *, expected: bool = False, pid: int = 7, message: str = "boom"
) -> tuple[float, str, str, str, dict[str, Any]]:
    data = {"pid": pid, "code": code, "expected": expected, "message": message}
    return (t, "loader", "info", "exit", data)


def _landed(t: float, *, pid: int) -> tuple[float, str, str, str, dict[str, Any]]:
    """The loader's trace: a kill fired in process ``pid`` at a fault point."""
    return (t, "loader", "info", "fault_landed", {"pid": pid, "point": "planned", "action": "kill"})


def _fault(
    name: str, kind: str, lane: str, inject: float, heal: float | None
) -> list[tuple[float, str, str, str, dict[str, Any]]]:
    events = [
        (inject, "fault", "invoke", f"{name}.inject", {"kind": kind, "lane": lane, "params": {}}),
        (inject + 0.5, "fault", "ok", f"{name}.inject", {}),
    ]
    if heal is not None:
        events += [
            (heal - 0.5, "fault", "invoke", f"{name}.heal", {}),
            (heal, "fault", "ok", f"{name}.heal", {}),
        ]
    return events


def check(events: list[tuple[float, str, str, str, dict[str, Any]]], **params: Any) -> Any:
    return run_check(CHECK, History.of(sorted(events, key=lambda e: e[0])), [], Observed(), params)


def test_a_run_without_a_loader_compared_nothing() -> None:
    result = check([*_fault("kill_kafka", "kill_service", "infra", 1.0, 5.0)])
    assert result.verdict == UNKNOWN and "no loader" in result.summary


def test_exits_the_harness_caused_or_a_fault_point_fired_are_explained() -> None:
    result = check(
        [
            _start(),
            _exit(5.0, -9, expected=True),  # a kill by the harness
            _landed(9.0, pid=8),
            _exit(9.5, -9, pid=8),  # the loader's own kill at a point
            _exit(20.0, 0, expected=True, pid=9),  # the final stop
        ]
    )
    assert result.verdict == VALID, result.summary
    assert result.stats["by_harness"] == 2 and result.stats["by_fault_point"] == 1


def test_the_forget_exit_causes_break_leaves_the_same_exits_unexplained() -> None:
    events = [_start(), _exit(5.0, -9, expected=True), _landed(9.0, pid=8), _exit(9.5, -9, pid=8)]
    history = History.of(events)
    assert run_check(CHECK, history, [], Observed(), {}).verdict == VALID
    broken = apply("forget_exit_causes", Observed(), history, [])[1]
    result = run_check(CHECK, broken, [], Observed(), {})
    assert result.verdict == INVALID and result.anomalies["unexplained_exit"].count == 2
    assert apply("change_values", Observed(), history, [])[1] is history


def test_a_crash_no_fault_caused_fails_the_run_and_keeps_its_log() -> None:
    tail = "Traceback (most recent call last):\n  ...\nValueError: a bug of the loader"
    result = check([_start(), _exit(30.0, 1, message=tail)])
    assert result.verdict == INVALID
    (example,) = result.anomalies["unexplained_exit"].examples
    assert "exit code 1" in example and "ValueError: a bug of the loader" in example


def test_a_stalled_exit_during_or_after_a_service_fault_is_the_fault_s_doing() -> None:
    outage = _fault("pause_catalog", "pause_service", "infra", 10.0, 70.0)
    # Exit 4 (no progress for progress_timeout) 250 s after the pause ended: its doing.
    assert check([_start(), *outage, _exit(320.0, 4)]).verdict == VALID
    # Exit 1 shortly after the pause: within the grace.
    assert check([_start(), *outage, _exit(100.0, 1)]).verdict == VALID
    # The break: the same exit 1 long after the pause, or an exit 4 past the stall window,
    # has no cause.
    assert check([_start(), *outage, _exit(200.0, 1)]).verdict == INVALID
    assert check([_start(), *outage, _exit(500.0, 4)]).verdict == INVALID
    assert check([_start(), *outage, _exit(200.0, 1)], grace_s=200.0).verdict == VALID


def test_not_the_owner_is_explained_by_a_zombie_only() -> None:
    zombie = _fault("zombie_loader", "zombie_loader", "loader", 10.0, 60.0)
    assert check([_start(), *zombie, _exit(40.0, 3)]).verdict == VALID
    assert check([_start(), _exit(40.0, 3)]).verdict == INVALID
    # Other loader faults explain nothing by themselves (the harness's kills are ``expected``).
    kill = _fault("kill_loader", "kill_loader", "loader", 10.0, 20.0)
    assert check([_start(), *kill, _exit(15.0, 1)]).verdict == INVALID


def test_a_fault_that_was_skipped_or_never_healed_has_the_right_window() -> None:
    history = History.of(
        [
            (
                1.0,
                "fault",
                "invoke",
                "drop_column.inject",
                {"kind": "drop_column", "lane": "schema"},
            ),
            (1.1, "fault", "info", "drop_column.skipped", {"reason": "no such column"}),
            *_fault("kill_minio", "kill_service", "infra", 2.0, None),
        ]
    )
    (window,) = fault_windows(history)
    assert window.name == "kill_minio" and window.start == 2.0 and window.end == float("inf")
    assert window.near(1000.0, 0.0) and not window.near(1.0, 0.5)
