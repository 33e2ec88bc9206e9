"""The soak's tally and console summary, from a made-up history (no services): faults counted
where they landed (the loader's traces), per kind, per service, traffic as load."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from icefloe.harness.history import History
from icefloe.harness.scenarios.checks.facts.landed import fault_counts
from icefloe.harness.scenarios.generative.soak import SoakResult, _tally
from icefloe.harness.scenarios.generative.soakreport import summary


def _fault(history: History, kind: str, lane: str, name: str | None = None, **data: Any) -> None:
    name = name or kind
    params = data.pop("params", {})
    history.record("fault", "invoke", f"{name}.inject", kind=kind, lane=lane, params=params)
    history.record("fault", "ok", f"{name}.inject", **data)
    history.record("fault", "invoke", f"{name}.heal")
    history.record("fault", "ok", f"{name}.heal")


def _start_ended(history: History, pid: int, armed: tuple[str, str], fired: str | None) -> None:
    where = {"loader_id": "l", "pid": pid, "start": pid}
    action, point = armed
    if fired is not None:
        history.record("loader", "info", "fault_landed", **where, point=fired, action=action)
    else:
        history.record(
            "loader", "info", "fault_not_landed", **where, armed={"point": point, "action": action}
        )


def _history() -> History:
    history = History()
    for pid, point in enumerate(["planned", "write", "commit_sent", "committed", "take_over"]):
        _fault(history, "kill_loader", "loader", at=point, landed=point, self_killed=True)
        _start_ended(history, pid, ("kill", point), point)
    _fault(history, "kill_loader", "loader", at="decoded", landed=None, self_killed=False)
    _start_ended(history, 10, ("kill", "decoded"), None)  # never fired: not landed
    _fault(history, "zombie_loader", "loader", freeze="publish", landed="publish")
    _start_ended(history, 11, ("freeze", "publish"), "publish")
    _fault(history, "kill_loader", "loader", at="now", pid=12)  # aimed from outside
    _fault(history, "zombie_loader", "loader", freeze="write", freeze_fallback="now")
    _start_ended(history, 13, ("freeze", "write"), None)
    for service in ("kafka", "minio", "catalog", "trino"):
        _fault(history, "kill_service", "infra", f"kill_{service}", params={"service": service})
        _fault(history, "pause_service", "infra", f"pause_{service}", params={"service": service})
    _fault(history, "wire_latency", "infra", "wire_latency_kafka", params={"target": "kafka"})
    _fault(history, "catalog_http", "infra", "catalog_drop_after", params={"mode": "drop_after"})
    _fault(history, "optimize", "maintenance")
    for _ in range(3):
        _fault(history, "burst", "traffic")
    return history


def test_faults_are_counted_where_they_landed_per_service_and_per_kind() -> None:
    counts = fault_counts(_history())
    assert counts.landed == {
        ("kill", "planned"): 1,
        ("kill", "write"): 1,
        ("kill", "commit_sent"): 1,
        ("kill", "committed"): 1,
        ("kill", "take_over"): 1,
        ("freeze", "publish"): 1,
    }
    assert counts.bands("kill") == {
        "inside a batch": 2,
        "during the commit request": 1,
        "after a commit": 1,
        "start-up": 1,
    }
    assert counts.bands("freeze") == {"inside a batch": 1}
    # Armed and never fired: recorded, not counted as landed.
    assert counts.not_landed == {("kill", "decoded"): 1, ("freeze", "write"): 1}
    assert counts.outside == {("kill_loader", "now"): 1, ("zombie_loader", "now"): 1}
    # Eight faults on four services are two kinds; traffic is load, not faults.
    assert counts.by_kind["kill_service"] == 4 and counts.by_kind["pause_service"] == 4
    assert "burst" not in counts.by_kind and counts.load == 3
    assert counts.by_service == {
        "loader": 9,
        "kafka": 3,
        "minio": 2,
        "catalog": 3,
        "trino": 2,
    }
    assert counts.total == 9 + 8 + 2 + 1


def test_the_summary_prints_the_landed_counts() -> None:
    result = SoakResult(Path("run"), 1.0)
    _tally(result, SimpleNamespace(history=_history()))  # type: ignore[arg-type]
    assert result.faults["kill_loader"] == 7 and "burst" not in result.faults
    lines = summary(result)
    assert (
        "kills landed: 2 inside a batch, 1 during the commit request, 1 after a commit, "
        "1 start-up" in lines
    )
    assert "zombies by point: 1 publish" in lines
    assert "kills by point: 1 take_over, 1 planned, 1 write, 1 commit_sent, 1 committed" in lines
    assert "not landed (armed, never fired): 1 freeze write, 1 kill decoded" in lines
    assert any(line.endswith("load: 3 traffic events") for line in lines)
