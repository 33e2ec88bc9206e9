"""Generated fault schedules on the real stack: the ``ci`` profile (part of ``make test``).

Hypothesis draws one schedule of at least 40 faults, at least 10 of them loader kills, across
every lane (loader kills, zombie writers, service kills and pauses, maintenance, schema
changes, partitions, bursts and malformed traffic); it is played against one topic, table and
loader with the invariants checked live, then everything is healed and the final checks must
all be valid. A failure writes the schedule as a scenario file (its path is in the message).
``ICEFLOE_GENERATED_SEED`` replays a search.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from icefloe.harness.history import select
from icefloe.harness.scenarios.generative.explore import explore
from icefloe.harness.scenarios.generative.generate import PROFILES
from icefloe.harness.scenarios.reports import report

pytestmark = [pytest.mark.scenario, pytest.mark.exclusive]  # it kills and pauses services

SEED = os.environ.get("ICEFLOE_GENERATED_SEED")


def test_generated_schedule_ci(stack: Any) -> None:
    found = explore(
        stack, PROFILES["ci"], reports_dir=Path("reports"), seed=int(SEED) if SEED else None
    )
    (result,) = found.runs
    details = "\n".join(report.summary_lines([result]))
    assert not found.failed, f"{details}\nwritten: {found.written}\nreport: {result.run_dir}"
    assert result.history is not None
    injected = [
        e for e in select(result.history, "fault", phase="ok") if e.name.endswith(".inject")
    ]
    kills = [e for e in injected if e.name == "kill_loader.inject"]
    print(f"{len(injected)} faults injected, {len(kills)} loader kills, {result.elapsed_s:.0f} s")
    assert len(injected) >= 40 and len(kills) >= 10, details
