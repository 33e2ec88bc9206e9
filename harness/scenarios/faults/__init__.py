"""Faults: things that go wrong on purpose, each with ``inject`` and ``heal``, each recorded.

Every fault kind is registered here with the dataclass of its parameters, so a scenario file's
``fault`` step, a generated schedule and the state machine all build faults the same way and
a wrong parameter is refused when the file is read. A fault acts on a run only through the
run's public API (``harness.scenarios.engine.Run``); the run records each injection and heal
(``fault`` events ``<name>.inject`` / ``<name>.heal``, with what the fault returns) and keeps
the injected faults in a set that is healed in ``finally`` and at teardown, whatever failed.

Kinds, by lane (a lane is what a generated schedule plays one event at a time):

- loader: ``kill_loader`` (now, at the start of a commit, right after a commit before Spark's
  checkpoint), ``zombie_loader`` (frozen past its lease, a successor, thawed);
- infra: ``kill_service`` (kill -9 then restart: kafka, minio, catalog, trino),
  ``pause_service`` (SIGSTOP, then SIGCONT); on the wire through Toxiproxy (``wire``):
  ``wire_latency``, ``wire_bandwidth``, ``wire_reset_peer``, ``wire_timeout``, ``wire_slicer``,
  ``wire_limit_data``, ``wire_down``;
  HTTP faults on the loader's catalog requests through the run's catalog proxy (``commits``):
  ``catalog_http`` (the answer lost after the commit applied, 5xx after it, a refusal, a
  delay, a black hole, 504 now and the commit later);
- maintenance: ``optimize``, ``expire_snapshots``, ``remove_orphan_files``,
  ``retention_delete`` (through ``harness.maintenance``);
- schema: ``add_column``, ``drop_column``, ``widen_column``, ``rename_column``;
- topic: ``add_partitions``;
- traffic: ``burst`` (idle to the loader's maximum rate), ``malformed_traffic`` (0-50 %).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from icefloe.harness.scenarios.params import parse_params

__all__ = [
    "FAULTS",
    "Fault",
    "FaultKind",
    "FaultSkipped",
    "Over",
    "build_fault",
    "fault_kind",
    "parse_fault",
]


class Over:
    """Healing a fault that is over once injected (maintenance, a schema change): it records
    that it is."""

    def heal(self, run: Any) -> Mapping[str, Any]:
        return {"note": "over once done"}


class FaultSkipped(Exception):
    """The fault could not apply now (e.g. a column to widen is not there); nothing was done."""


class Fault(Protocol):
    """A fault: ``inject`` breaks something, ``heal`` repairs it; both return recorded facts.

    Attributes:
        kind: The registered kind (``kill_service``).
        name: The name in the history (``kill_kafka``).
        lane: Which lane of a schedule it belongs to.
    """

    kind: str
    name: str
    lane: str

    def inject(self, run: Any) -> Mapping[str, Any]: ...

    def heal(self, run: Any) -> Mapping[str, Any]: ...


@dataclass(frozen=True)
class FaultKind:
    """A registered fault kind.

    Attributes:
        name: The kind's name in files and schedules.
        lane: Its lane.
        params: The dataclass of its parameters.
        build: Makes the fault from its parameters and the run's random source.
        doc: One line for listings.
        shared: It strikes what every run on the stack shares (a service, Toxiproxy's
            proxies), not only the run's own loader, topic and table: a run that injects it
            must have the stack to itself.
    """

    name: str
    lane: str
    params: type
    build: Callable[[Any, random.Random], Fault]
    doc: str
    shared: bool = False


FAULTS: dict[str, FaultKind] = {}


def fault_kind(
    name: str, lane: str, params: type, *, shared: bool = False
) -> Callable[[type], type]:
    """Register a fault class under ``name`` (its constructor takes ``(params, rng)``);
    ``shared``: see :class:`FaultKind`."""

    def register(cls: type) -> type:
        doc = (cls.__doc__ or "").strip().splitlines()[0] if cls.__doc__ else name
        FAULTS[name] = FaultKind(name, lane, params, cls, doc, shared)
        return cls

    return register


def parse_fault(raw: Mapping[str, Any], where: str) -> tuple[str, Any]:
    """Read ``{"fault": KIND, ...params}`` into the kind and its typed parameters.

    Raises:
        harness.scenarios.params.ParamError: Unknown kind or bad parameters.
    """
    from icefloe.harness.scenarios.params import ParamError

    load_kinds()
    fields = dict(raw)
    kind = fields.pop("fault", None)
    if kind not in FAULTS:
        raise ParamError(f"{where}: unknown fault {kind!r}; one of {sorted(FAULTS)}")
    return str(kind), parse_params(FAULTS[kind].params, fields, f"{where} ({kind})")


def build_fault(kind: str, params: Any, rng: random.Random) -> Fault:
    """The fault of ``kind`` with ``params`` (see :func:`parse_fault`)."""
    load_kinds()
    return FAULTS[kind].build(params, rng)


def load_kinds() -> None:
    # The kinds register themselves when their modules are imported.
    from icefloe.harness.scenarios.faults import (  # noqa: F401
        commits,
        loader,
        maintenance,
        schema,
        services,
        topic,
        traffic,
        wire,
    )
