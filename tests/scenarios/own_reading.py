"""A peer loader under scenario 01, as the kit reads it: what the peers' scenario tests
(``test_spark_sink.py``, ``test_flink.py``) each assert of that reading, not of the peer's merit.

Every check of exactly-once, liveness and storage compared something (no verdict is unknown),
the committed position was read the peer's own way and covers the topic's partitions, and the
verdicts themselves, the finding, are printed with the report's path.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from icefloe.harness.loaders.capabilities import needs, not_applicable
from icefloe.harness.loaders.kinds import resolve
from icefloe.harness.scenarios.model import find
from icefloe.harness.scenarios.reports import report
from icefloe.harness.scenarios.runner import RunOptions, run_scenario

JUDGED = ("exactly_once", "liveness", "no_file_added_twice", "files_exist")


def read_its_own_way(
    stack: Any, loader: str, source: str, variables: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Run scenario 01 (with ``variables``) against ``loader``; assert the kit's reading of it.

    Args:
        stack: the running stack.
        loader: a ``--loader`` name.
        source: where its committed position must have been read (``harness.observer``).
        variables: the scenario's variables overridden.

    Returns:
        The final positions read (the history's last ``positions`` event's data).
    """
    kind = resolve(loader)
    scenario = find("01_exactly_once_kill9", variables=dict(variables or {}))
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
    assert reads and all(e.data.get("source") == source for e in reads), details
    final: dict[str, Any] = reads[-1].data
    assert final.get("final") and len(final["values"].get(result.names["topic"], {})) == 2, final
    return final
