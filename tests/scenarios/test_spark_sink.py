"""Spark's own streaming sink (``--loader spark-sink``) under scenario 01, as the kit reads it:
its commits found by their own summary key (``spark.sql.streaming.epochId``), its committed
position read from its Spark checkpoint, and exactly-once judged from those alone.

What it asserts is the kit's reading, not the sink's merit: every check of exactly-once,
liveness and storage compared something (no verdict is unknown), the position was read from
the checkpoint and covers the topic's partitions, and its commits were seen. The verdicts
themselves are the finding (docs/conformance.md), printed with the report's path.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.loaders.capabilities import needs, not_applicable
from harness.loaders.kinds import resolve
from harness.scenarios.model import find
from harness.scenarios.reports import report
from harness.scenarios.runner import RunOptions, run_scenario

pytestmark = pytest.mark.scenario

# Half of 01's messages at 30/s still outlast its five kills (each waits for a commit) and keep
# the CI leg within its hour.
VARIABLES = {"count": 1500, "rate": 30}
JUDGED = ("exactly_once", "liveness", "no_file_added_twice", "files_exist")


def test_spark_sink_is_judged_by_its_own_commits_and_checkpoint(stack: Any) -> None:
    kind = resolve("spark-sink")
    scenario = find("01_exactly_once_kill9", variables=VARIABLES)
    assert not_applicable(needs(scenario), kind.capabilities) == []
    result = run_scenario(scenario, stack, RunOptions(reports_dir=Path("reports"), loader=kind))
    path = report.write_markdown(result)
    details = "\n".join(report.summary_lines([result]))
    print(f"{details}\nreport: {path}")
    verdicts = {c.check: c.verdict for c in result.checks}
    judged = {check: verdicts.get(check) for check in JUDGED}
    assert "unknown" not in judged.values() and None not in judged.values(), (
        f"{judged}\n{details}\nreport: {path}"
    )
    assert result.history is not None
    events = result.history.events
    reads = [e for e in events if (e.kind, e.phase, e.name) == ("read", "ok", "positions")]
    assert reads and all(e.data.get("source") == "checkpoint" for e in reads), details
    final = reads[-1].data
    assert final.get("final") and len(final["values"].get(result.names["topic"], {})) == 2, final
    assert isinstance(final.get("batch"), int), final
