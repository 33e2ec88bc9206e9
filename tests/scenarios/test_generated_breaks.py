"""Generated schedules find a broken loader, shrink it to a few faults, and the file they write
fails again.

For each break (the loader's offset guard off: ``disable = ["exactly_once"]``; its commit
fence off: ``disable = ["fencing"]``) Hypothesis draws small schedules (profile ``break``) until one
fails, shrinks it, and the smallest failing schedule is written as a scenario file. That
file, run as any scenario, must fail again. Each run takes about a minute; a search and its
shrinking (the profile's 15-minute budget) about 20 minutes per break: marked ``slow``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from icefloe.harness.scenarios.generative.explore import explore
from icefloe.harness.scenarios.generative.generate import PROFILES, WorldOptions
from icefloe.harness.scenarios.model import load
from icefloe.harness.scenarios.reports import report
from icefloe.harness.scenarios.runner import RunOptions, run_scenario

pytestmark = [pytest.mark.scenario, pytest.mark.slow]

BREAKS = {"no_guard": {"disable": ["exactly_once"]}, "no_fencing": {"disable": ["fencing"]}}


@pytest.mark.parametrize("name", sorted(BREAKS))
def test_a_broken_loader_is_found_shrunk_and_replayed(
    name: str, stack: Any, tmp_path: Path
) -> None:
    found = explore(
        stack,
        PROFILES["break"],
        world=WorldOptions(loader=BREAKS[name]),
        reports_dir=Path("reports"),
        found_path=tmp_path / f"{name}.toml",
    )
    assert found.failed and found.written is not None and found.smallest_schedule is not None
    assert len(found.smallest_schedule.faults) <= 3, found.smallest_schedule.to_docs()
    replay = run_scenario(load(found.written), stack, RunOptions(reports_dir=Path("reports")))
    report.write_markdown(replay)
    assert not replay.passed, "\n".join(report.summary_lines([replay]))
