"""What a scenario needs of a loader, read from its file, and whether a loader kind has it.

A scenario needs a capability (``harness.loaders.base.Capability``) when its plain timeline,
its ``[loader]`` table or its checks use it: a kill at a fault point needs icefloe's fault
points, a zombie needs fencing, ``[loader] via`` needs endpoints that can be routed through the
fault proxies, a check of dead letters needs a dead-letter path, a stack whose catalog is Glue
needs a loader that commits through Glue. :func:`not_applicable` compares that with what a kind
declares and gives the reasons a scenario cannot run on it; nothing else decides it.
:func:`catalog_limits` says what a scenario asks of the stack's catalog that it does not
promise (a kill -9 of a catalog that keeps its state only on a clean stop). Steps that run only
under a break are not counted: a conformance run plays the plain timeline.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from icefloe.harness.loaders.base import Capability
from icefloe.loader.testing.faultpoints import POINTS

__all__ = [
    "catalog_limits",
    "catalog_needs",
    "fault_needs",
    "needs",
    "not_applicable",
    "why_not",
]

_POINT_KILLS = (*POINTS, "after_commit")
"""``kill_loader`` moments that are icefloe's own hooks (the rest are timed from outside)."""

_READS_DEAD_LETTERS = ("dead_letter",)
"""Checks that read the run's dead-letter topic."""


def fault_needs(kind: str, params: Any) -> dict[Capability, str]:
    """What fault ``kind`` with ``params`` needs of the loader (capability -> why).

    Args:
        kind: A fault kind (``harness.scenarios.faults``).
        params: Its parameters (a dataclass; ``at``, ``freeze`` read when present).

    Returns:
        The capabilities it needs; none for faults on services, traffic or the table.
    """
    if kind == "kill_loader":
        at = getattr(params, "at", "now")
        if at in _POINT_KILLS:
            return {Capability.FAULT_POINTS: f"kill_loader at = {at!r} (icefloe's fault point)"}
        return {Capability.KILL: f"kill_loader at = {at!r}"}
    if kind == "zombie_loader":
        freeze = getattr(params, "freeze", "hook")
        out = {
            Capability.FENCING: "zombie_loader (a successor fences the frozen loader off)",
            Capability.FREEZE: "zombie_loader (SIGSTOP)",
        }
        if freeze == "hook" or freeze in POINTS:
            out[Capability.FAULT_POINTS] = f"zombie_loader freeze = {freeze!r} (a fault point)"
        return out
    return {}


def _step_needs(step: Any) -> dict[Capability, str]:
    params = step.params
    out: dict[Capability, str] = {}
    for kind, fault_params in step.faults():
        out.update(fault_needs(kind, fault_params))
    if step.do == "restart_loader" and getattr(params, "fresh_checkpoint", False):
        out[Capability.SETTINGS] = "restart_loader fresh_checkpoint (icefloe's Spark checkpoint)"
    elif step.do == "configure_loader":
        changes: Mapping[str, Any] = params.changes
        if changes.get("dead_letter"):
            out[Capability.DEAD_LETTERS] = "configure_loader dead_letter = true"
        rest = {k for k in changes if k != "dead_letter"}
        if rest:
            out[Capability.SETTINGS] = f"configure_loader {sorted(rest)}"
    return out


def catalog_needs(catalog: str) -> dict[Capability, str]:
    """What any run on a stack whose catalog is of kind ``catalog`` needs of the loader."""
    if catalog == "glue":
        return {Capability.GLUE: "the stack's catalog is Glue ([stack] catalog = glue)"}
    return {}


def needs(scenario: Any, catalog: str = "rest") -> dict[Capability, str]:
    """What a scenario's plain run needs of the loader under test: capability -> why.

    Args:
        scenario: A ``harness.scenarios.model.Scenario``.
        catalog: The kind of catalog the stack runs (``[stack] catalog``).

    Returns:
        Each capability needed with the first reason found.
    """
    out = catalog_needs(catalog)

    def add(found: Mapping[Capability, str]) -> None:
        for capability, why in found.items():
            out.setdefault(capability, why)

    add(scenario.loader.needs())
    for step in scenario.steps:
        if step.only_in_break is None:
            add(_step_needs(step))
    reads = [c.check for c in scenario.checks if c.check in _READS_DEAD_LETTERS]
    if reads and scenario.loader.dead_letter:
        add({Capability.DEAD_LETTERS: f"check {reads[0]} (reads the dead-letter topic)"})
    return out


def not_applicable(
    required: Mapping[Capability, str], capabilities: Iterable[Capability | str]
) -> list[str]:
    """Why a loader with ``capabilities`` cannot run what ``required`` asks (empty: it can).

    Args:
        required: Capability -> why (``needs``).
        capabilities: What the loader kind declares.

    Returns:
        One line per missing capability: ``"no <capability>: <why>"``.
    """
    have = {str(c) for c in capabilities}
    return [f"no {c.value}: {why}" for c, why in required.items() if c.value not in have]


def why_not(scenario: Any, kind: Any, catalog: Any) -> list[str]:
    """Why ``scenario`` cannot run against loader ``kind`` (icefloe's when None) on the stack's
    ``catalog`` (empty: it can): what the catalog does not promise, then what the loader lacks."""
    missing = catalog_limits(scenario, catalog)
    if kind is not None:
        missing += not_applicable(needs(scenario, catalog.kind), kind.capabilities)
    return missing


def catalog_limits(scenario: Any, catalog: Any) -> list[str]:
    """What a scenario asks of the stack's catalog that the catalog does not promise.

    A kill -9 of a catalog that keeps its state only when it stops cleanly (ministack's Glue)
    loses the commits it acknowledged since: the scenario's checks would blame the loader for
    the catalog's loss. Such a scenario is not applicable on that catalog; the loss itself is
    measured where the catalog is what is under test (docs/catalogs.md).

    Args:
        scenario: A ``harness.scenarios.model.Scenario``.
        catalog: The stack's catalog service (``kind``, ``keeps_state_on_kill``).

    Returns:
        One line per limit (empty: the catalog promises what the scenario asks).
    """
    if getattr(catalog, "keeps_state_on_kill", True):
        return []
    kills = [
        kind
        for step in scenario.steps
        if step.only_in_break is None
        for kind, params in step.faults()
        if kind == "kill_service" and getattr(params, "service", None) == "catalog"
    ]
    if not kills:
        return []
    return [
        f"kill_service of the catalog: the {catalog.kind} catalog keeps its state only when it"
        " stops cleanly, so a kill -9 rolls back commits it acknowledged (docs/catalogs.md)"
    ]
