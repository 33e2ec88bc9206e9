"""Scenarios against the Apache Iceberg Kafka Connect sink (``--loader kafka-connect``), slow.

Freshness (13) is one the sink passes with its harness configuration (10 s commits); the table of
every scenario against both loaders is ``icefloe conformance`` (docs/conformance.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from icefloe.harness.loaders.capabilities import needs, not_applicable
from icefloe.harness.loaders.kinds import resolve
from icefloe.harness.scenarios.model import find
from icefloe.harness.scenarios.reports import report
from icefloe.harness.scenarios.runner import RunOptions, run_scenario

pytestmark = [pytest.mark.scenario, pytest.mark.slow]


def test_the_sink_keeps_rows_fresh_within_its_commit_interval(stack: Any) -> None:
    kind = resolve("kafka-connect")
    scenario = find("13_freshness")
    assert not_applicable(needs(scenario), kind.capabilities) == []
    result = run_scenario(scenario, stack, RunOptions(reports_dir=Path("reports"), loader=kind))
    path = report.write_markdown(result)
    details = "\n".join(report.summary_lines([result]))
    assert result.passed, f"{details}\nreport: {path}"
