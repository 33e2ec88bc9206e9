"""Negative controls on the stack: a loader break in its cheapest form must be caught live.

``break_forms.py`` says which breaks every CI run plays live (``LIVE``: the offset guard and
the fence) and why the others are judged on their recordings (``test_breaks_recorded.py``);
those still run live here with ``pytest -m slow``. ``ICEFLOE_RECORD_BREAKS=1`` (``make
record-breaks``) keeps each caught run as the break's recording (``recorded/``).
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import pytest

from icefloe.harness.scenarios.model import SCENARIO_DIR, discover
from icefloe.harness.scenarios.reports import report
from icefloe.harness.scenarios.runner import RunOptions, judge, run_scenario
from tests.docs.markdown_blocks import ROOT
from tests.scenarios import recorded_runs
from tests.scenarios.break_forms import (
    BREAKS,
    JUDGED_AGAIN,
    LIVE,
    SEEN_FAILING_LIVE,
    cheap,
    judged_again,
    missing_also,
)

pytestmark = pytest.mark.scenario

RECORD = os.environ.get("ICEFLOE_RECORD_BREAKS") == "1"


def test_every_break_of_a_scenario_has_a_form_here() -> None:
    """A break added to a scenario file is run (or judged) in CI from the day it is added."""
    covered = set(BREAKS) | {(n, b) for (n, _), bs in JUDGED_AGAIN.items() for b in bs}
    for path in sorted(SCENARIO_DIR.glob("*.toml")):
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
        for brk in doc.get("breaks", {}):
            assert (path.stem, brk) in covered, f"{path.stem} break {brk} is not run in CI"
    assert set(LIVE) <= set(BREAKS)


@pytest.mark.parametrize(
    ("name", "brk"),
    [
        pytest.param(
            n,
            b,
            marks=[
                *([] if (n, b) in LIVE else [pytest.mark.slow]),
                *([pytest.mark.exclusive] if cheap(n, b).needs_the_stack_alone(b) else []),
            ],
        )
        for n, b in sorted(BREAKS)
    ],
    ids=[f"{n}-{b}" for n, b in sorted(BREAKS)],
)
def test_the_cheapest_form_of_the_break_is_caught(name: str, brk: str, stack: object) -> None:
    scenario = cheap(name, brk)
    result = run_scenario(scenario, stack, RunOptions(break_name=brk, reports_dir=Path("reports")))
    path = report.write_markdown(result)
    expected = scenario.breaks[brk]
    details = "\n".join(report.summary_lines([result]))
    assert result.error is None, f"{result.error}\nreport: {path}"
    assert result.break_demonstrated, f"{expected.expected} not reported\n{details}"
    also = missing_also(name, brk, result.checks)
    assert not also, "\n".join(also) + f"\n{details}"
    assert result.history is not None
    missed = [
        m
        for b in JUDGED_AGAIN.get((name, brk), ())
        if (
            m := judged_again(
                scenario, b, result.checks, judge(scenario, result.history, result.run_dir, b)
            )
        )
    ]
    assert not missed, "\n".join(missed) + f"\nreport: {path}"
    if RECORD:
        kept = recorded_runs.save(result.run_dir, name, brk, BREAKS[(name, brk)])
        print(f"recorded: {kept}")


def test_every_checker_a_scenario_uses_is_seen_failing_in_ci() -> None:
    """By a break of a scenario file (live, or on a recorded run), or by a test of its own on
    the stack (``SEEN_FAILING_LIVE``); docs/scenarios.md lists where."""
    used = {c.check for s in discover(profile="ci") for c in s.checks}
    broken = {b.expect_check for s in discover(profile="ci") for b in s.breaks.values()}
    missing = used - broken - set(SEEN_FAILING_LIVE)
    assert not missing, f"checkers a scenario uses that CI never sees failing: {sorted(missing)}"
    page = (ROOT / "docs" / "scenarios.md").read_text(encoding="utf-8")
    listed = page[page.index("## Every checker, seen failing") :]
    unlisted = sorted(c for c in used if f"`{c}`" not in listed)
    assert not unlisted, f"docs/scenarios.md does not say where these are seen failing: {unlisted}"
