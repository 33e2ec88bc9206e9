"""The liveness checker over hand-made histories: resumed, exited, stalled, cut, nothing to do.

Fast, no services. A frozen writer on the real stack is in
``test_storage_checks_integration.py``.
"""

from __future__ import annotations

import json
from typing import Any

from icefloe.harness.history import History
from icefloe.harness.observer import ICEFLOE
from icefloe.harness.scenarios.checks.facts.faults import Heal
from icefloe.harness.scenarios.checks.facts.reads import Observed
from icefloe.harness.scenarios.checks.liveness import (
    CUT,
    EXITED,
    NO_WORK,
    RESUMED,
    STALLED,
    judge_windows,
)
from icefloe.harness.scenarios.checks.verdict import INVALID, UNKNOWN, VALID, run_check
from icefloe.loader import keys
from icefloe.publisher.ledger import LedgerEntry


def published(*times: float) -> list[LedgerEntry]:
    return [
        LedgerEntry(i, "t", 0, i, int(t * 1000), None, f"id-{i}", "valid")
        for i, t in enumerate(times)
    ]


def commits(
    *times: float, loader: str | None = "L", records: int | None = 10
) -> tuple[float, str, str, str, dict]:
    values = [
        {"snapshot": int(t * 10), "time": t, "loader": loader, "records": records} for t in times
    ]
    return (1000.0, "read", "ok", "commits", {"values": values})


def summary_commit(time: float, records: int | None, next_offset: int) -> dict[str, Any]:
    """A loader's snapshot as the recording client reads it: its summary and added rows."""
    summary = {
        keys.LOADER_ID: "L",
        ICEFLOE.position_key: json.dumps({"t": {"0": next_offset}}),
    }
    return {"snapshot": int(time * 10), "time": time, "records": records, "summary": summary}


def fault(inject: float, heal: float, name: str = "kill_minio", lane: str = "infra") -> list:
    return [
        (inject, "fault", "invoke", f"{name}.inject", {"lane": lane}),
        (inject, "fault", "ok", f"{name}.inject", {}),
        (heal, "fault", "invoke", f"{name}.heal", {}),
        (heal, "fault", "ok", f"{name}.heal", {}),
    ]


START = (0.0, "loader", "invoke", "start", {})


def run(events: list, ledger: list[LedgerEntry], **params: Any) -> Any:
    history = History.of(sorted(events, key=lambda e: e[0]))
    return run_check("liveness", history, ledger, Observed(), {"bound_s": 30, **params})


def test_resumed_after_the_heal_is_valid() -> None:
    events = [START, *fault(10, 20), commits(5, 26), (200.0, "info", "info", "end", {})]
    result = run(events, published(8, 12, 15))
    assert result.verdict == VALID, result
    assert result.stats["resumed"] == 1 and result.stats["resume_max_s"] == 6.0


def test_no_commit_and_no_exit_within_the_bound_is_stalled() -> None:
    events = [START, *fault(10, 20), commits(5, 80), (200.0, "info", "info", "end", {})]
    result = run(events, published(8, 12, 15))
    assert result.verdict == INVALID
    assert result.anomalies["stalled"].count == 1
    assert "kill_minio healed at 20.0" in result.anomalies["stalled"].examples[0]


def test_an_exit_non_zero_within_the_bound_is_live() -> None:
    exit_ = (35.0, "loader", "info", "exit", {"code": 1, "expected": False})
    events = [START, *fault(10, 20), commits(5), exit_, (200.0, "info", "info", "end", {})]
    assert run(events, published(8, 12)).verdict == VALID
    # A harness kill (expected, -9) is not the loader giving up: the window is cut.
    killed = [(35.0, "loader", "info", "killed", {}), (35.1, "loader", "info", "exit",
              {"code": -9, "expected": True})]  # fmt: skip
    events = [START, *fault(10, 20), commits(5), *killed, (200.0, "info", "info", "end", {})]
    result = run(events, published(8, 12))
    assert result.verdict == UNKNOWN and result.stats["cut"] == 1


def test_nothing_to_load_or_no_heal_is_unknown() -> None:
    events = [START, *fault(10, 20), commits(5), (200.0, "info", "info", "end", {})]
    result = run(events, published(1, 2, 3))  # all published before the last commit
    assert result.verdict == UNKNOWN and result.stats["no_work"] == 1
    assert run([START, commits(5)], published(1)).verdict == UNKNOWN


def test_maintenance_snapshots_do_not_count_as_loader_commits() -> None:
    end = (200.0, "info", "info", "end", {})
    events = [START, *fault(10, 20), commits(5), commits(26, loader=None), end]
    assert run(events, published(8, 12)).verdict == INVALID


def test_a_commit_that_adds_nothing_is_not_the_loader_resuming() -> None:
    # A loader whose source is stuck may still commit empty snapshots (Flink does at every
    # checkpoint): after the heal it commits, adds no row and moves no position.
    end = (200.0, "info", "info", "end", {})
    empty = [summary_commit(5, 10, 3), summary_commit(26, None, 3), summary_commit(27, 0, 3)]
    stuck = [START, *fault(10, 20), (1000.0, "read", "ok", "commits", {"values": empty}), end]
    result = run(stuck, published(8, 12))
    assert result.verdict == INVALID and result.anomalies["stalled"].count == 1
    # Dead letters alone add no row but move the position: that is progress.
    letters = [summary_commit(5, 10, 3), summary_commit(26, None, 5)]
    moved = [START, *fault(10, 20), (1000.0, "read", "ok", "commits", {"values": letters}), end]
    assert run(moved, published(8, 12)).verdict == VALID


def test_judge_windows_outcomes() -> None:
    heals = [Heal("a", 10), Heal("b", 100), Heal("c", 200), Heal("d", 300), Heal("e", 400)]
    windows = judge_windows(
        heals,
        commits=[5.0, 12.0, 340.0],
        exits=[(110.0, 1)],
        states=[(0.0, "up")],
        cuts=[(210.0, "kill_loader injected")],
        published=[8.0, 150.0, 205.0, 320.0],
        end=1000.0,
        bound_s=30.0,
    )
    assert [w.outcome for w in windows] == [RESUMED, EXITED, CUT, STALLED, NO_WORK]
    assert windows[2].detail == "kill_loader injected"


def test_a_loader_that_had_exited_and_was_not_restarted_is_not_stalled() -> None:
    windows = judge_windows(
        [Heal("a", 50)],
        commits=[5.0],
        exits=[(40.0, 1)],
        states=[(0.0, "up"), (40.0, "exited")],
        cuts=[],
        published=[10.0, 45.0],
        end=1000.0,
        bound_s=30.0,
    )
    assert windows[0].outcome == EXITED
    # Restarted by its supervisor in the window and then silent: stalled.
    windows = judge_windows(
        [Heal("a", 50)],
        commits=[5.0],
        exits=[(40.0, 1)],
        states=[(0.0, "up"), (40.0, "exited"), (55.0, "up")],
        cuts=[],
        published=[10.0, 45.0],
        end=1000.0,
        bound_s=30.0,
    )
    assert windows[0].outcome == STALLED


def test_a_schema_or_maintenance_fault_does_not_cut_the_window() -> None:
    """Only faults that may stop a loader (its own, a service's, the wire's) end a window."""
    end = (200.0, "info", "info", "end", {})
    schema = fault(22, 23, "add_column", "schema")
    events = [START, *fault(10, 20), *schema, commits(5, 80), end]
    result = run(events, published(8, 12, 15))
    assert result.anomalies["stalled"].count == 2  # both heals: nothing committed in 30 s
    service = fault(22, 23, "pause_kafka", "infra")
    events = [START, *fault(10, 20), *service, commits(5, 80), end]
    result = run(events, published(8, 12, 15))
    assert result.stats["cut"] == 1 and result.stats["stalled"] == 1
