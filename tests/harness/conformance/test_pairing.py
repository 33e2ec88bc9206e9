"""Which scenarios run their loaders side by side in ``icefloe conformance`` (no stack)."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace
from typing import Any

import pytest

from icefloe.harness.cli import conformance
from icefloe.harness.conformance.pairing import must_run_alone
from icefloe.harness.scenarios.model import find, parse
from icefloe.harness.scenarios.reports import report


@pytest.mark.parametrize(
    ("name", "alone"),
    [
        ("01_exactly_once_kill9", None),
        ("08_snapshot_expiry", None),
        ("12_scale_out", None),
        ("09_broker_outage", "kill_service"),
        ("11_catalog_outage", "kill_service"),
        ("13_freshness", "probe"),
        ("16_lost_commit_answers", "catalog_http"),
        ("17_wire_faults", "wire_"),
    ],
)
def test_a_scenario_runs_alone_when_it_faults_a_shared_service_or_judges_seconds(
    name: str, alone: str | None
) -> None:
    reason = must_run_alone(find(name))
    assert (reason is None) if alone is None else (alone in str(reason))


def test_a_nemesis_on_a_service_and_a_freshness_check_each_keep_a_run_alone() -> None:
    steps = [{"do": "nemesis", "fault": "kill_service", "service": "kafka", "times": 2}]
    nemesis = parse({"steps": steps, "checks": [{"check": "exactly_once"}]})
    assert "kill_service" in str(must_run_alone(nemesis))
    fresh = parse({"steps": [{"do": "sleep"}], "checks": [{"check": "freshness"}]})
    assert "freshness" in str(must_run_alone(fresh))
    broken = [{"do": "fault", "fault": "kill_service", "service": "kafka", "only_in_break": "b"}]
    only_in_a_break = parse({
        "steps": [{"do": "sleep"}, *broken], "checks": [{"check": "exactly_once"}],
        "breaks": {"b": {"expect": {"check": "exactly_once", "anomaly": "lost"}}},
    })  # fmt: skip
    assert must_run_alone(only_in_a_break) is None


def test_side_by_side_cells_run_at_once_and_come_back_in_the_loaders_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    running: list[str] = []
    met: list[bool] = []
    both = threading.Event()

    def fake_run(scenario: Any, stack: Any, kind: Any, seed: Any, args: Any, label: str) -> Any:
        running.append(kind.name)
        if len(running) == 2:
            both.set()
        met.append(both.wait(3))  # the first run sees the second start while it runs
        time.sleep(0.1 if kind.name == "first" else 0.0)
        return SimpleNamespace(
            scenario=scenario, checks=[], verdict="valid", error=None, seed=1, elapsed_s=1.0,
            run_dir=kind.name,
        )  # fmt: skip

    monkeypatch.setattr(conformance, "_run", fake_run)
    monkeypatch.setattr(report, "replay_command", lambda result: "replay")
    monkeypatch.setattr(report, "write_markdown", lambda result: None)
    kinds = [SimpleNamespace(name="first"), SimpleNamespace(name="second")]
    scenario = find("02_malformed_dead_letter")
    stack = SimpleNamespace(config=SimpleNamespace(catalog="glue"))
    cells = conformance._cells(scenario, kinds, stack, SimpleNamespace(seed=None), True)
    assert met == [True, True]
    assert [cell.loader for cell, _ in cells] == ["first", "second"]
    assert cells[0][0].replay == "replay --loader first --catalog glue"
