"""Which scenarios may run their loaders side by side, and why the others may not.

Each run has a topic, a dead-letter topic, a table and loaders of its own, so two loaders'
runs of one scenario do not touch each other's data. They do share the stack's services and
the machine. A scenario therefore runs its loaders at the same time only when neither run can
disturb the other's verdicts: no fault on a service every run shares (the ``infra`` lane:
a broker, storage or catalog outage, a fault on the wire or on the catalog's answers), and no
verdict in seconds (a freshness probe or check), which the other run's load would move.
"""

from __future__ import annotations

from typing import Any

__all__ = ["must_run_alone"]

SHARED_LANE = "infra"
"""The lane of the fault kinds that act on a service every run uses."""
TIMED_STEPS = ("probe", "schedule")
"""Steps whose outcome is a time (a probe) or that may play any fault (a generated schedule)."""
TIMED_CHECKS = ("freshness",)
"""Checks whose verdict is a time in seconds."""


def must_run_alone(scenario: Any) -> str | None:
    """Why ``scenario``'s runs must not share the machine with another loader's run of it, or
    None when they may run side by side.

    Args:
        scenario: A ``harness.scenarios.model.Scenario``.
    """
    from icefloe.harness.scenarios.faults import FAULTS

    for step in scenario.steps:
        if step.only_in_break is not None:
            continue
        if step.do in TIMED_STEPS:
            return f"its `{step.do}` step"
        if step.do in ("fault", "nemesis"):
            kind = (step.params.fault if step.do == "nemesis" else step.params).kind
            if FAULTS[kind].lane == SHARED_LANE:
                return f"its `{kind}` fault acts on a service every run shares"
    for check in scenario.checks:
        if check.check in TIMED_CHECKS:
            return f"its `{check.check}` check judges seconds"
    return None
