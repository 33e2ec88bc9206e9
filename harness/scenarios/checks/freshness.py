"""Freshness: publish-to-visible latency against bounds taken from the loader's cadence."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from icefloe.harness.history import History, select
from icefloe.harness.observer import observer_of
from icefloe.harness.scenarios.checks.facts.ledger import describe, valid_entries
from icefloe.harness.scenarios.checks.facts.numbers import percentile
from icefloe.harness.scenarios.checks.facts.reads import Observed
from icefloe.harness.scenarios.checks.verdict import UNKNOWN, CheckResult, Found, Param, checker
from icefloe.publisher.ledger import LedgerEntry

__all__ = ["check_freshness"]


def _trigger_interval(history: History) -> float | None:
    """How often the loader under test commits while it has rows: its observer's cadence
    (icefloe's trigger interval, the sink's commit interval), else its start's record."""
    cadence = observer_of(history.events).cadence_s
    if cadence is not None and any(
        e.kind == "info" and e.name == "observer" for e in history.events
    ):
        return float(cadence)
    starts = select(history, "loader", "start", "invoke")
    interval = starts[0].data.get("trigger_interval_s") if starts else None
    return float(interval) if interval is not None else None


@checker(
    "freshness",
    Param("p50_triggers", float, "the p50 bound, in trigger intervals (plus slack_s)", 2.0),
    Param("p99_triggers", float, "the p99 bound, in trigger intervals (plus slack_s)", 4.0),
    Param("slack_s", float, "seconds added to each bound", 5.0),
    Param("phase", str, "measure only the messages of this publish phase"),
)
def check_freshness(
    history: History, ledger: Sequence[LedgerEntry], observed: Observed, params: Mapping[str, Any]
) -> CheckResult:
    """Publish-to-visible latency: p50 and p99 against bounds taken from the trigger interval.

    ``reads["first_seen"]`` maps event id to the wall time (epoch seconds) a poll of Trino
    first saw it; the ledger's Kafka timestamp is the publish time. The bound is
    ``triggers * trigger_interval + slack_s`` for each of p50 and p99.

    Returns:
        ``invalid`` with ``stale`` (a percentile over its bound, or a message never seen);
        ``unknown`` without a trigger interval or samples.
    """
    trigger = _trigger_interval(history)
    seen: Mapping[str, float] = observed.reads.get("first_seen", {})
    valid = [e for e in valid_entries(ledger) if e.timestamp is not None]
    if "phase" in params:
        # Only messages published while the probe ran are measured.
        in_phase = set(observed.facts.get("phases", {}).get(params["phase"], ()))
        valid = [e for e in valid if e.event_id in in_phase]
    if trigger is None or not valid:
        return CheckResult("freshness", UNKNOWN, "no loader start or no timestamped messages")
    found = Found()
    latencies = []
    for e in valid:
        if e.event_id not in seen:
            found.add("stale", f"{describe(e)} never seen by the probe")
            continue
        latencies.append(seen[e.event_id] - (e.timestamp or 0) / 1000)
    if not latencies:
        return CheckResult("freshness", UNKNOWN, "the probe saw nothing")
    slack = float(params["slack_s"])
    bounds = {
        "p50": float(params["p50_triggers"]) * trigger + slack,
        "p99": float(params["p99_triggers"]) * trigger + slack,
    }
    stats: dict[str, Any] = {"samples": len(latencies), "trigger_interval_s": trigger}
    for name, q in (("p50", 50), ("p99", 99)):
        value = percentile(latencies, q)
        stats[f"{name}_s"] = round(value, 3)
        stats[f"{name}_bound_s"] = round(bounds[name], 3)
        if value > bounds[name]:
            found.add("stale", f"{name} {value:.2f} s over its bound {bounds[name]:.2f} s")
    stats["max_s"] = round(max(latencies), 3)
    return found.result(
        "freshness",
        f"p50 {stats['p50_s']:.2f} s (bound {bounds['p50']:.1f}), "
        f"p99 {stats['p99_s']:.2f} s (bound {bounds['p99']:.1f})",
        stats,
    )
