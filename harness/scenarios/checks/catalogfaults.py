"""Catalog faults counted where they landed: what the catalog proxy saw, not what was armed.

A ``catalog_http`` rule armed on the proxy fires only if the loader sends a matching request
while it is armed; a lost answer tests the loader's unknown-outcome path only if the catalog
*applied* the request first. ``catalog_faults_landed`` counts the proxy's own records of each
firing (``catalog_proxy.fired`` events: mode, whether the catalog applied the request, what the
client got) and says ``unknown`` when fewer landed than the run needs to mean anything.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from icefloe.harness.history import History, select
from icefloe.harness.scenarios.checks.checkers import UNKNOWN, VALID, CheckResult, Observed, checker
from icefloe.harness.stack.catalogproxy import EVENT_NAME
from icefloe.publisher.ledger import LedgerEntry

__all__ = ["check_catalog_faults_landed", "landed_counts"]


def landed_counts(history: History, mode: str | None = None) -> dict[str, int]:
    """How many catalog faults fired, and how many of those the catalog applied.

    Args:
        history: The run's history.
        mode: Count only this mode (``drop_after_forward``...); ``None``: every mode.

    Returns:
        ``fired``, ``applied`` (the catalog applied the request: its answer was what was lost
        or replaced), ``not_applied``, ``unknown``, and ``fired.<mode>`` per mode.
    """
    fired = [
        e.data
        for e in select(history, "fault", phase="info")
        if e.name == EVENT_NAME and (mode is None or e.data.get("mode") == mode)
    ]
    by_mode = Counter(str(f.get("mode")) for f in fired)
    return {
        "fired": len(fired),
        "applied": sum(1 for f in fired if f.get("applied") is True),
        "not_applied": sum(1 for f in fired if f.get("applied") is False),
        "unknown": sum(1 for f in fired if f.get("applied") is None),
        **{f"fired.{m}": n for m, n in sorted(by_mode.items())},
    }


@checker("catalog_faults_landed")
def check_catalog_faults_landed(
    history: History, ledger: Sequence[LedgerEntry], observed: Observed, params: Mapping[str, Any]
) -> CheckResult:
    """The catalog faults the run claims to test landed on the loader's requests.

    Params:
        mode: count only this mode (default: every mode).
        min_fired: at least this many firings (default 1).
        min_applied: at least this many firings on requests the catalog applied (default 0).

    Returns:
        ``unknown`` when fewer landed than required (the run proved nothing about them),
        else ``valid`` with the counts.
    """
    mode = params.get("mode")
    counts = landed_counts(history, mode)
    need_fired = int(params.get("min_fired", 1))
    need_applied = int(params.get("min_applied", 0))
    what = f"{mode} " if mode else ""
    summary = (
        f"{counts['fired']} catalog {what}faults landed ({counts['applied']} on commits the "
        f"catalog applied, {counts['not_applied']} not applied, {counts['unknown']} unknown)"
    )
    if counts["fired"] < need_fired or counts["applied"] < need_applied:
        return CheckResult(
            "catalog_faults_landed",
            UNKNOWN,
            f"{summary}; need {need_fired} fired, {need_applied} applied",
            stats=counts,
        )
    return CheckResult("catalog_faults_landed", VALID, summary, stats=counts)
