"""Every scenario in scenarios/ as a pytest test, on the session's stack.

The profile comes from ICEFLOE_SCENARIO_PROFILE (``ci`` by default, ``full`` for longer runs)
and a seed from ICEFLOE_SCENARIO_SEED (else each run draws one and prints it). Reports land in
``reports/`` like the CLI's.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from icefloe.harness.scenarios.model import discover
from icefloe.harness.scenarios.reports import report
from icefloe.harness.scenarios.runner import RunOptions, run_scenario
from tests.scenarios import recorded_runs
from tests.scenarios.break_forms import PLAIN, PLAIN_RUNS

PROFILE = os.environ.get("ICEFLOE_SCENARIO_PROFILE", "ci")
RECORD = os.environ.get("ICEFLOE_RECORD_BREAKS") == "1"  # make record-breaks: tests/scenarios
SEED = os.environ.get("ICEFLOE_SCENARIO_SEED")
SCENARIOS = discover(profile=PROFILE)

pytestmark = pytest.mark.scenario


@pytest.mark.parametrize(
    "scenario",
    [
        pytest.param(s, marks=[pytest.mark.exclusive] if s.needs_the_stack_alone() else [])
        for s in SCENARIOS
    ],
    ids=[s.name for s in SCENARIOS],
)
def test_scenario(scenario: Any, stack: Any) -> None:
    options = RunOptions(seed=int(SEED) if SEED else None, reports_dir=Path("reports"))
    result = run_scenario(scenario, stack, options)
    path = report.write_markdown(result)
    print(f"{scenario.name}: seed {result.seed}; report {path}")
    if not stack.healthy():  # an outage scenario that failed must not sink the next ones
        stack.up()
    details = "\n".join(report.summary_lines([result]))
    assert result.passed, f"{details}\nreplay: {report.replay_command(result)}\nreport: {path}"
    if RECORD and scenario.name in PLAIN_RUNS and PROFILE == "ci":
        print(f"recorded: {recorded_runs.save(result.run_dir, scenario.name, PLAIN, {})}")
