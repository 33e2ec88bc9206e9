"""Checks of the run's own premises: the faults it claims to test happened, landed and healed,
and snapshot expiry removed snapshots, so a pass of the other checks means something.

Their failure is ``unknown`` (the run proved nothing), except ``faults_healed``'s ``unhealed``
(the kit left a fault in place). Catalog faults are counted where they landed, from what the
catalog proxy recorded of each firing (``catalog_proxy.fired`` events: mode, whether the
catalog applied the request, what the client got), not from what was armed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from icefloe.harness.history import History, select
from icefloe.harness.scenarios.checks.facts.faults import (
    commits_struck,
    injections,
    landed_counts,
)
from icefloe.harness.scenarios.checks.facts.reads import Observed
from icefloe.harness.scenarios.checks.verdict import (
    REQUIRED,
    UNKNOWN,
    VALID,
    CheckResult,
    Found,
    Param,
    checker,
)
from icefloe.publisher.ledger import LedgerEntry

__all__ = [
    "check_catalog_faults_landed",
    "check_faults_exercised",
    "check_faults_healed",
    "check_snapshots_expired",
]


@checker(
    "faults_exercised",
    Param("fault", str, "the fault name whose injections are counted", REQUIRED),
    Param("min_injections", int, "at least this many injections", 1),
    Param("min_during_commit", int, "at least this many struck inside a commit", 0),
)
def check_faults_exercised(
    history: History, ledger: Sequence[LedgerEntry], observed: Observed, params: Mapping[str, Any]
) -> CheckResult:
    """The run injected the faults it claims to test (so a pass means something).

    Returns:
        ``unknown`` if fewer faults happened than required, else ``valid``.
    """
    name = params["fault"]
    injected = [e for e in select(history, "fault", phase="ok") if e.name == f"{name}.inject"]
    healed = [e for e in select(history, "fault", phase="ok") if e.name == f"{name}.heal"]
    commits = sum(commits_struck(history, name))
    stats = {"injected": len(injected), "healed": len(healed), "during_commit": commits}
    need = int(params["min_injections"])
    need_commit = int(params["min_during_commit"])
    if len(injected) < need or commits < need_commit or len(healed) < len(injected):
        return CheckResult(
            "faults_exercised",
            UNKNOWN,
            f"{name}: {len(injected)} injected (need {need}), {commits} during a commit "
            f"(need {need_commit}), {len(healed)} healed",
            {},
            stats,
        )
    return CheckResult(
        "faults_exercised",
        VALID,
        f"{name}: {len(injected)} injected, {commits} during a commit, all healed",
        {},
        stats,
    )


@checker("snapshots_expired")
def check_snapshots_expired(
    history: History, ledger: Sequence[LedgerEntry], observed: Observed, params: Mapping[str, Any]
) -> CheckResult:
    """Snapshot expiry really removed snapshots (so a pass of the other checks means something).

    Reads the ``read``/``snapshots`` events the runner records around ``expire_snapshots``
    (table snapshot count ``before`` and ``after``).

    Returns:
        ``valid`` when an expiry left fewer snapshots than it found, else ``unknown``.
    """
    reads = [e for e in select(history, "read", phase="ok") if e.name == "snapshots"]
    stats = {"expiries": len(reads)}
    for e in reads:
        before, after = int(e.data.get("before", 0)), int(e.data.get("after", 0))
        if after < before:
            stats.update(before=before, after=after)
            return CheckResult(
                "snapshots_expired", VALID, f"snapshots {before} -> {after}", {}, stats
            )
    counts = ", ".join(f"{e.data.get('before')} -> {e.data.get('after')}" for e in reads)
    return CheckResult(
        "snapshots_expired", UNKNOWN, f"no expiry removed a snapshot ({counts or 'none ran'})",
        {}, stats,
    )  # fmt: skip


@checker("faults_healed")
def check_faults_healed(
    history: History, ledger: Sequence[LedgerEntry], observed: Observed, params: Mapping[str, Any]
) -> CheckResult:
    """Every fault injected (or half-injected) was healed.

    Returns:
        ``invalid`` with ``unhealed``; ``unknown`` when no fault was injected.
    """
    windows = injections(history)
    failed = [e for e in select(history, "fault", phase="fail") if e.name.endswith(".inject")]
    found = Found()
    for name, _inject, heal in windows:
        if heal is None:
            found.add("unhealed", name)
    heals = [e for e in select(history, "fault", phase="ok") if e.name.endswith(".heal")]
    for e in failed:
        base = e.name.rpartition(".")[0]
        if not any(h.name == f"{base}.heal" and h.index > e.index for h in heals):
            found.add("unhealed", f"{base} (its injection failed)")
    if not windows and not failed:
        return CheckResult("faults_healed", UNKNOWN, "no fault was injected")
    stats = {"injected": len(windows), "healed": len(heals), "failed_injections": len(failed)}
    return found.result("faults_healed", f"{len(windows)} faults injected, all healed", stats)


@checker(
    "catalog_faults_landed",
    Param("mode", str, "count only the firings of this mode (none: every mode)"),
    Param("min_fired", int, "at least this many firings", 1),
    Param("min_applied", int, "at least this many on requests the catalog applied", 0),
)
def check_catalog_faults_landed(
    history: History, ledger: Sequence[LedgerEntry], observed: Observed, params: Mapping[str, Any]
) -> CheckResult:
    """The catalog faults the run claims to test landed on the loader's requests.

    Returns:
        ``unknown`` when fewer landed than required (the run proved nothing about them),
        else ``valid`` with the counts.
    """
    mode = params.get("mode")
    counts = landed_counts(history, mode)
    need_fired = int(params["min_fired"])
    need_applied = int(params["min_applied"])
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
