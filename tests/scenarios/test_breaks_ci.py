"""Negative controls in CI: each break, in its cheapest form, must still be caught.

``test_breaks.py`` runs every break with its scenario's ``ci`` variables (marked ``slow``:
1-3 minutes each). Here the breaks CI must prove on every run - the offset guard off, the
commit fence off, the dead-letter size limit off, retention resurrected, values read back
changed - run with fewer messages (the scenario file read as written, only its ``[vars]`` made
smaller), which is all a break needs to show its anomaly: one batch replayed after a kill, one
batch a thawed zombie appends again, the oversized messages of a few hundred, deleted rows read
again, rows on both sides of an ALTER. Measured on the 2-core machine, one at a time on the
shared stack: 24 s, 44 s (78 s in a later run), 15 s, 34 s and 24 s, about 2.5 minutes in all
(with the ``ci`` variables: 172 s, 78 s, 20 s and 36 s).

A break's run can prove more than the check its scenario file names: ``ALSO`` lists further
checks that must report an anomaly in the same run (the thawed, unfenced zombie's batch is both
rows twice and a commit by a loader that no longer held the table: ``one_owner``), at no extra
cost. Scenario 17's ``no_patience`` (a real exit no fault explains) is not here: with fewer
messages the publish ends before the faults on the wire land, and nothing is caught; the same
check is shown failing here by scenario 01's ``forgotten_kills`` (the kills' causes taken out
of the history), and ``no_patience`` runs with the slow breaks.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from harness.scenarios import report
from harness.scenarios.model import SCENARIO_DIR, parse
from harness.scenarios.runner import RunOptions, run_scenario

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
    # The causes of the exits forgotten: one kill (20 s of publishing at 20 msg/s) is enough.
    ("01_exactly_once_kill9", "forgotten_kills"): {"count": 400, "kills": 1},
}

ALSO: dict[tuple[str, str], tuple[tuple[str, str], ...]] = {
    ("15_zombie_writer", "no_fencing"): (("one_owner", "two_writers"),),
}


def cheap(name: str, variables: dict[str, Any]) -> Any:
    """The scenario ``name`` with its ``[vars]`` overridden, parsed for the ``ci`` profile."""
    path = SCENARIO_DIR / f"{name}.toml"
    doc = tomllib.loads(path.read_text(encoding="utf-8"))
    doc["vars"] = {**doc.get("vars", {}), **variables}
    return parse(doc, profile="ci", name=name, path=path)


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
    verdicts = {r.check: r for r in result.checks}
    for check, anomaly in ALSO.get((name, brk), ()):
        found = verdicts.get(check)
        assert found is not None and anomaly in found.anomalies, (
            f"{check} did not report {anomaly}\n{details}"
        )
