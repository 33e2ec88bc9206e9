"""Break demonstrations: each scenario run with its property broken must be caught.

A break (``[breaks.NAME]`` in the scenario file) changes the loader (e.g. ``exactly_once =
false``), adds steps or mutates what was read back; the named check must then turn invalid
with the named anomaly. These runs double the scenario time, so they are marked ``slow``:
``pytest -m slow tests/scenarios/test_breaks.py`` or ``icefloe scenario run --all --breaks``.
The negative controls every CI run must prove run in their cheapest form, with fewer messages,
in ``test_breaks_ci.py`` (not ``slow``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from icefloe.harness.scenarios.model import discover
from icefloe.harness.scenarios.reports import report
from icefloe.harness.scenarios.runner import RunOptions, run_scenario

CASES = [(s, b) for s in discover(profile="ci") for b in sorted(s.breaks)]

pytestmark = [pytest.mark.scenario, pytest.mark.slow]


@pytest.mark.parametrize(("scenario", "brk"), CASES, ids=[f"{s.name}-{b}" for s, b in CASES])
def test_break_is_caught(scenario: Any, brk: str, stack: Any) -> None:
    result = run_scenario(scenario, stack, RunOptions(break_name=brk, reports_dir=Path("reports")))
    path = report.write_markdown(result)
    expected = scenario.breaks[brk]
    details = "\n".join(report.summary_lines([result]))
    assert result.error is None, f"{result.error}\nreport: {path}"
    assert result.break_demonstrated, (
        f"{expected.expected} not reported\n{details}\nreplay: {report.replay_command(result)}"
    )
