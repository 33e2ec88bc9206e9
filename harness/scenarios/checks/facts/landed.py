"""Where a run's faults landed, counted from its history alone.

A fault is counted where it landed, from what the system under test recorded, not where it
was aimed. For a loader fault at a fault point that is the loader's own trace, which the
harness records when the start ends (``loader``/``fault_landed``: the point armed, the point
landed and the action; ``loader``/``fault_not_landed``: armed, never fired, not counted). It
is counted at the point it landed: a kill armed at ``commit_sent`` whose timer ran out once
the commit had landed is a kill after a commit (a history without ``landed`` is counted at its
``point``). Faults aimed from outside (a kill ``now``, during a start-up, when a commit starts;
a zombie frozen ``now``) have no trace: they are counted apart, by how they were aimed.

Every other injection (``fault``/``ok``/``<name>.inject``) is a fault of its kind (the
registered kind, so a kill of Kafka and a kill of MinIO are one kind, ``kill_service``) and of
the service it hit; traffic (bursts, malformed fractions) is load, counted apart.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from icefloe.harness.history import History, select
from icefloe.loader.testing.faultpoints import POINTS, where_landed

__all__ = ["BANDS", "FaultCounts", "band", "fault_counts"]

LOAD_LANES = ("traffic",)
"""Lanes whose events are load, not faults."""

BANDS = {
    "take_over": "start-up",
    "planned": "inside a batch",
    "decoded": "inside a batch",
    "dead_lettered": "inside a batch",
    "write": "inside a batch",
    "publish": "inside a batch",
    "commit_sent": "during the commit request",
    "committed": "after a commit",
}
"""Where in a loader's life each fault point is (``loader.testing.faultpoints.POINTS``)."""

_LOADER_KINDS = ("kill_loader", "zombie_loader")


def band(point: str) -> str:
    """The part of a loader's life a fault point belongs to (``inside a batch``...).

    Args:
        point: A fault point.

    Returns:
        Its band, or ``unknown point`` for a name ``loader.testing.faultpoints`` does not have.
    """
    return BANDS.get(point, "unknown point")


@dataclass
class FaultCounts:
    """A run's faults, counted by where they landed.

    Attributes:
        by_kind: Faults injected per registered kind (traffic left out).
        by_service: Faults per service they hit (``loader``, ``kafka``, ``minio``,
            ``catalog``, ``trino``); faults on the table or topic (maintenance, schema,
            partitions) have none.
        landed: Loader faults that fired, per ``(action, point landed at)`` (``kill`` or
            ``freeze``), from the loader's traces.
        not_landed: Starts armed with a fault whose point never fired, per
            ``(action, point)`` armed.
        outside: Loader faults aimed from outside (no trace), per ``(kind, how aimed)``.
        load: Traffic events (load, not faults).
    """

    by_kind: Counter[str] = field(default_factory=Counter)
    by_service: Counter[str] = field(default_factory=Counter)
    landed: Counter[tuple[str, str]] = field(default_factory=Counter)
    not_landed: Counter[tuple[str, str]] = field(default_factory=Counter)
    outside: Counter[tuple[str, str]] = field(default_factory=Counter)
    load: int = 0

    @property
    def total(self) -> int:
        """Faults injected (traffic left out)."""
        return sum(self.by_kind.values())

    def bands(self, action: str) -> Counter[str]:
        """Landed faults of ``action`` (``kill`` or ``freeze``) per band."""
        out: Counter[str] = Counter()
        for (act, point), n in self.landed.items():
            if act == action:
                out[band(point)] += n
        return out


def _service(kind: str, lane: str, params: Mapping[str, Any]) -> str | None:
    if lane == "loader":
        return "loader"
    if lane != "infra":
        return None
    named = params.get("service") or params.get("target")
    if named:
        return str(named)
    return "catalog" if kind == "catalog_http" else None


def _aimed(kind: str, data: Mapping[str, Any]) -> str | None:
    """How a loader fault was aimed from outside (None: at a point, the loader's trace says)."""
    if kind == "kill_loader":
        at = str(data.get("at"))
        if at in POINTS or at == "after_commit":
            return None
        return "start, running" if at == "start" and data.get("had_started") else at
    fallback = data.get("freeze_fallback")
    freeze = str(data.get("freeze"))
    if fallback:
        return str(fallback)
    if freeze in POINTS or freeze == "hook":
        return None
    return "start, running" if freeze == "start" and data.get("had_started") else freeze


def fault_counts(history: History) -> FaultCounts:
    """Count a run's faults by kind, service and where they landed.

    Args:
        history: The run's history.

    Returns:
        The counts (a fault that was skipped or whose injection failed is not counted).
    """
    counts = FaultCounts()
    invoked: dict[str, tuple[str, str, Mapping[str, Any]]] = {}
    for e in select(history, "fault"):
        base, _, what = e.name.rpartition(".")
        if what != "inject":
            continue
        if e.phase == "invoke":
            params = e.data.get("params") or {}
            invoked[base] = (str(e.data.get("kind", base)), str(e.data.get("lane", "")), params)
            continue
        if e.phase != "ok":
            continue
        kind, lane, params = invoked.get(base, (base, "", {}))
        if lane in LOAD_LANES:
            counts.load += 1
            continue
        counts.by_kind[kind] += 1
        service = _service(kind, lane, params)
        if service is not None:
            counts.by_service[service] += 1
        if kind in _LOADER_KINDS:
            aimed = _aimed(kind, e.data)
            if aimed is not None:
                counts.outside[(kind, aimed)] += 1
    for e in select(history, "loader", "fault_landed"):
        counts.landed[(str(e.data.get("action")), str(where_landed(e.data)))] += 1
    for e in select(history, "loader", "fault_not_landed"):
        armed = e.data.get("armed") or {}
        counts.not_landed[(str(armed.get("action")), str(armed.get("point")))] += 1
    return counts
