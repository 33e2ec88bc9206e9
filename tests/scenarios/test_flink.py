"""The reference design's Flink job (``--loader flink``) under scenario 01, as the kit reads it:
its commits found by their own summary key (``flink.max-committed-checkpoint-id``), its
committed position read from its consumer group, and exactly-once judged from those alone.

Marked ``slow`` (by hand, not in CI): its first run provisions PyFlink and its jars (about 30 s
to a minute) and the scenario takes about three minutes on two cores, which the CI hour has no
room for. What it asserts is the kit's reading, not Flink's merit: every check of exactly-once,
liveness and storage compared something, the position was read from the group and covers the
topic's partitions, and its commits were seen. The verdicts are the finding (docs/loaders.md).
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

pytestmark = [pytest.mark.scenario, pytest.mark.slow]

JUDGED = ("exactly_once", "liveness", "no_file_added_twice", "files_exist")


def test_the_flink_job_is_judged_by_its_own_commits_and_group(stack: Any) -> None:
    kind = resolve("flink")
    scenario = find("01_exactly_once_kill9")
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
    reads = [
        e for e in result.history.events if (e.kind, e.phase, e.name) == ("read", "ok", "positions")
    ]
    assert reads and all(e.data.get("source") == "group" for e in reads), details
    final = reads[-1].data
    assert final.get("final") and len(final["values"].get(result.names["topic"], {})) == 2, final
