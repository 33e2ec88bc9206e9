"""Negative controls in CI: every break of the scenarios must still be caught.

``test_breaks.py`` runs each break with its scenario's ``ci`` variables, one run each (marked
``slow``). Here every break runs on each CI run, as cheaply as it can show its anomaly:

- A break that changes the loader runs its scenario file as written, with only its ``[vars]``
  made smaller where fewer messages still show the anomaly: one batch replayed after a kill,
  one batch a thawed zombie appends again, the oversized messages of a few hundred, deleted
  rows read again, rows on both sides of an ALTER. The wire-fault scenarios (16, 17) keep
  their ``ci`` variables: with fewer messages the publish ends before their faults land.
- A break that mutates what a run read back or recorded (``mutate``) needs no run of its
  own: it is judged again on the history of its scenario's loader break
  (``runner.judge``, no service asked), and must report its anomaly more often than that
  run's own verdict did, so what it shows is the mutation's doing and not the other break's.

A break's run can prove more than the check its scenario file names: ``ALSO`` lists further
checks that must report an anomaly in the same run (the thawed, unfenced zombie's batch is both
rows twice and a commit by a loader that no longer held the table: ``one_owner``), at no extra
cost. Scenario 14's ``no_unnest`` (envelopes read as rows) shows itself as rows that never
come: its ``await_loaded`` is cut to ``await_s`` and the rows it did write with no event id
(``unexpected``) show the loader ran. Scenario 17's ``no_patience`` ends the loader at the
first fault on the wire: its wait for the rows after it is cut the same way.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from icefloe.harness.scenarios.model import SCENARIO_DIR, find
from icefloe.harness.scenarios.reports import report
from icefloe.harness.scenarios.runner import RunOptions, RunResult, judge, run_scenario

pytestmark = pytest.mark.scenario

BREAKS: dict[tuple[str, str], dict[str, Any]] = {
    # One commit, a self-kill right after it, a restart: 300 messages are a batch or two.
    ("01_exactly_once_kill9", "no_guard"): {"count": 300, "rate": 100},
    # The zombie freezes after its first commit, so the publish must outlast the loader's
    # start and first batch (30 s at 100 msg/s).
    ("15_zombie_writer", "no_fencing"): {"count": 3000},
    # A fifth malformed, every kind of the catalog among them, oversized ones included.
    ("02_malformed_dead_letter", "size_limit"): {"count": 600},
    # Two phases of 300 over 30 days of event time: the DELETE takes whole days.
    ("06_retention", "resurrect"): {"count": 300},
    # Values read back changed: two phases of 100 give the check rows on both sides of the ALTER.
    ("04_add_column", "wrong_values"): {"count": 100},
    # 100 envelopes; the rows never come, so the wait for them is cut to a minute.
    ("14_json_tweaks", "no_unnest"): {"count": 100, "await_s": 60},
    # A commit's answer lost while it applied: the publish must outlast the faults.
    ("16_lost_commit_answers", "blind_retry"): {},
    # The first reset on the wire ends an impatient loader; the rows after it never come, so
    # the wait for them is cut to 20 s (150 s in the scenario).
    ("17_wire_faults", "no_patience"): {"await_s": 20},
}

JUDGED_AGAIN: dict[tuple[str, str], tuple[str, ...]] = {
    ("01_exactly_once_kill9", "no_guard"): ("forgotten_kills",),
    ("02_malformed_dead_letter", "size_limit"): ("lost_letters", "twice_sent"),
    ("15_zombie_writer", "no_fencing"): ("taken_back",),
}
"""The mutation breaks judged again on the history of a loader break of their scenario."""

ALSO: dict[tuple[str, str], tuple[tuple[str, str], ...]] = {
    ("15_zombie_writer", "no_fencing"): (("one_owner", "two_writers"),),
    ("14_json_tweaks", "no_unnest"): (("exactly_once", "unexpected"),),
}


def cheap(name: str, variables: dict[str, Any]) -> Any:
    """The scenario ``name`` with its ``[vars]`` overridden, parsed for the ``ci`` profile."""
    return find(name, variables=variables)


def _count(checks: list[Any], check: str, anomaly: str) -> int:
    found = next((r for r in checks if r.check == check), None)
    return found.anomalies[anomaly].count if found and anomaly in found.anomalies else 0


def _judged_again(result: RunResult, brk: str) -> str | None:
    """Judge ``result``'s history under mutation break ``brk``; what is wrong, if anything."""
    expected = result.scenario.breaks[brk]
    assert expected.mutate, f"{brk} is not a mutation"
    assert result.history is not None
    checks = judge(result.scenario, result.history, result.run_dir, brk)
    before = _count(result.checks, expected.expect_check, expected.expect_anomaly)
    after = _count(checks, expected.expect_check, expected.expect_anomaly)
    if after > before:
        return None
    return (
        f"{brk}: {expected.expect_check} reported {after} {expected.expect_anomaly} "
        f"(the run itself: {before})"
    )


def test_every_break_of_a_scenario_has_a_form_here() -> None:
    """A break added to a scenario file is run (or judged) in CI from the day it is added."""
    covered = set(BREAKS) | {(n, b) for (n, _), bs in JUDGED_AGAIN.items() for b in bs}
    for path in sorted(SCENARIO_DIR.glob("*.toml")):
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
        for brk in doc.get("breaks", {}):
            assert (path.stem, brk) in covered, f"{path.stem} break {brk} is not run in CI"


@pytest.mark.parametrize(
    ("name", "brk"), sorted(BREAKS), ids=[f"{n}-{b}" for n, b in sorted(BREAKS)]
)
def test_the_cheapest_form_of_the_break_is_caught(name: str, brk: str, stack: Any) -> None:
    scenario = cheap(name, BREAKS[(name, brk)])
    result = run_scenario(scenario, stack, RunOptions(break_name=brk, reports_dir=Path("reports")))
    path = report.write_markdown(result)
    expected = scenario.breaks[brk]
    details = "\n".join(report.summary_lines([result]))
    assert result.error is None, f"{result.error}\nreport: {path}"
    assert result.break_demonstrated, (
        f"{expected.expect_check} did not report {expected.expect_anomaly}\n{details}"
    )
    for check, anomaly in ALSO.get((name, brk), ()):
        assert _count(result.checks, check, anomaly), f"{check} did not report {anomaly}\n{details}"
    missed = [m for b in JUDGED_AGAIN.get((name, brk), ()) if (m := _judged_again(result, b))]
    assert not missed, "\n".join(missed) + f"\nreport: {path}"
