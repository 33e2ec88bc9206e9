"""Faults on the wire: Toxiproxy's toxics between the loader and Kafka, MinIO or the catalog.

Each kind adds one toxic to one proxy (inject) and removes it (heal); ``wire_down`` disables a
proxy outright (connections refused, open ones cut) and enables it again. Only the loader under
test connects through the proxies (`harness.stack.toxiproxy.proxied_endpoints`), so the
publisher, Trino and the checkers are not touched. What was applied (the proxy, the toxic with
its attributes as the server holds it) is what ``inject`` returns, so it is in the history.

The first wire fault starts Toxiproxy when it is not running (building it on first use).
Healing a toxic that is no longer there (Toxiproxy restarted, or healed twice) records
``removed: false`` rather than failing.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from icefloe.harness.scenarios.faults import fault_kind
from icefloe.harness.stack.toxiproxy import Stream, Toxic, ToxiproxyClient

__all__ = [
    "WireBandwidthParams",
    "WireDownParams",
    "WireLatencyParams",
    "WireLimitDataParams",
    "WireResetPeerParams",
    "WireSlicerParams",
    "WireTimeoutParams",
]

Target = Literal["kafka", "minio", "catalog"]

_SERIAL = itertools.count(1)  # toxic names unique within a process: two faults never collide


def _toxiproxy(run: Any, start: bool = True) -> tuple[ToxiproxyClient | None, bool]:
    """The run's Toxiproxy client, started first if ``start`` (None if it is not running).

    Returns:
        The client (None when not running and not started) and whether this call started it.

    Raises:
        RuntimeError: the run's stack has no Toxiproxy (the container backend).
    """
    service = getattr(run.stack, "toxiproxy", None)
    if service is None:
        raise RuntimeError("faults on the wire need Toxiproxy, which only the local stack runs")
    started = False
    if not service.process.is_running():
        if not start:
            return None, False
        service.start()
        started = True
    return service.client(), started


@dataclass(frozen=True)
class WireParams:
    """Parameters every wire fault has.

    Attributes:
        target: The proxy: in front of ``kafka``, ``minio`` or ``catalog``.
        stream: ``downstream`` acts on the answers, ``upstream`` on the requests.
        toxicity: Share of connections the toxic hits (0-1).
    """

    target: Target
    stream: Stream = "downstream"
    toxicity: float = 1.0

    def __post_init__(self) -> None:
        if not 0.0 <= self.toxicity <= 1.0:
            raise ValueError(f"toxicity is a share in [0, 1], not {self.toxicity}")


class _ToxicFault:
    """A fault that is one toxic on one proxy; subclasses say which toxic."""

    kind = ""
    lane = "infra"

    def __init__(self, params: WireParams, rng: random.Random) -> None:
        self.params = params
        self.name = f"{self.kind}_{params.target}"
        self.toxic_name = f"{self.name}_{params.stream}_{next(_SERIAL)}"

    def toxic(self) -> Toxic:
        raise NotImplementedError

    def inject(self, run: Any) -> Mapping[str, Any]:
        p = self.params
        client, started = _toxiproxy(run)
        assert client is not None
        wanted = self.toxic()
        toxic = Toxic(wanted.name, wanted.type, p.stream, p.toxicity, wanted.attributes)
        applied = client.add_toxic(p.target, toxic)
        return {"proxy": p.target, "toxic": applied.to_json(), "started_toxiproxy": started}

    def heal(self, run: Any) -> Mapping[str, Any]:
        client, _ = _toxiproxy(run, start=False)
        removed = client.remove_toxic(self.params.target, self.toxic_name) if client else False
        return {"proxy": self.params.target, "toxic": self.toxic_name, "removed": removed}


@dataclass(frozen=True)
class WireLatencyParams(WireParams):
    """Parameters of ``wire_latency``: every chunk delayed ``latency_ms`` +- ``jitter_ms``."""

    latency_ms: int = 1000
    jitter_ms: int = 0


@fault_kind("wire_latency", "infra", WireLatencyParams, shared=True)
class WireLatency(_ToxicFault):
    """Delay the data through a proxy (latency and jitter)."""

    kind = "wire_latency"
    params: WireLatencyParams

    def toxic(self) -> Toxic:
        p = self.params
        return Toxic.latency(self.toxic_name, p.latency_ms, p.jitter_ms)


@dataclass(frozen=True)
class WireBandwidthParams(WireParams):
    """Parameters of ``wire_bandwidth``: at most ``rate_kb_s`` kilobytes a second."""

    rate_kb_s: int = 64


@fault_kind("wire_bandwidth", "infra", WireBandwidthParams, shared=True)
class WireBandwidth(_ToxicFault):
    """Throttle the data through a proxy."""

    kind = "wire_bandwidth"
    params: WireBandwidthParams

    def toxic(self) -> Toxic:
        return Toxic.bandwidth(self.toxic_name, self.params.rate_kb_s)


@dataclass(frozen=True)
class WireResetPeerParams(WireParams):
    """Parameters of ``wire_reset_peer``: connections reset ``after_ms`` after data (0: at once)."""

    after_ms: int = 0


@fault_kind("wire_reset_peer", "infra", WireResetPeerParams, shared=True)
class WireResetPeer(_ToxicFault):
    """Reset connections through a proxy (TCP RST), open ones and new ones."""

    kind = "wire_reset_peer"
    params: WireResetPeerParams

    def toxic(self) -> Toxic:
        return Toxic.reset_peer(self.toxic_name, self.params.after_ms)


@dataclass(frozen=True)
class WireTimeoutParams(WireParams):
    """Parameters of ``wire_timeout``: no data passes; closed after ``close_after_ms`` (0:
    held open until healed, a black hole)."""

    close_after_ms: int = 0


@fault_kind("wire_timeout", "infra", WireTimeoutParams, shared=True)
class WireTimeout(_ToxicFault):
    """Black-hole a proxy: requests are accepted and never answered."""

    kind = "wire_timeout"
    params: WireTimeoutParams

    def toxic(self) -> Toxic:
        return Toxic.timeout(self.toxic_name, self.params.close_after_ms)


@dataclass(frozen=True)
class WireSlicerParams(WireParams):
    """Parameters of ``wire_slicer``: data cut into ``average_size`` +- ``size_variation``
    bytes, ``delay_us`` apart."""

    average_size: int = 64
    size_variation: int = 32
    delay_us: int = 100


@fault_kind("wire_slicer", "infra", WireSlicerParams, shared=True)
class WireSlicer(_ToxicFault):
    """Slice the data through a proxy into small, delayed pieces."""

    kind = "wire_slicer"
    params: WireSlicerParams

    def toxic(self) -> Toxic:
        p = self.params
        return Toxic.slicer(self.toxic_name, p.average_size, p.size_variation, p.delay_us)


@dataclass(frozen=True)
class WireLimitDataParams(WireParams):
    """Parameters of ``wire_limit_data``: a connection closed once ``bytes`` have passed."""

    bytes: int = 1024


@fault_kind("wire_limit_data", "infra", WireLimitDataParams, shared=True)
class WireLimitData(_ToxicFault):
    """Cut connections through a proxy after so many bytes (an answer cut in the middle)."""

    kind = "wire_limit_data"
    params: WireLimitDataParams

    def toxic(self) -> Toxic:
        return Toxic.limit_data(self.toxic_name, self.params.bytes)


@dataclass(frozen=True)
class WireDownParams:
    """Parameters of ``wire_down``: which proxy (``kafka``, ``minio`` or ``catalog``)."""

    target: Target


@fault_kind("wire_down", "infra", WireDownParams, shared=True)
class WireDown:
    """Disable a proxy (connections refused, open ones cut) and enable it again."""

    kind = "wire_down"
    lane = "infra"

    def __init__(self, params: WireDownParams, rng: random.Random) -> None:
        self.params = params
        self.name = f"wire_down_{params.target}"

    def inject(self, run: Any) -> Mapping[str, Any]:
        client, started = _toxiproxy(run)
        assert client is not None
        client.set_enabled(self.params.target, False)
        return {"proxy": self.params.target, "enabled": False, "started_toxiproxy": started}

    def heal(self, run: Any) -> Mapping[str, Any]:
        client, _ = _toxiproxy(run, start=False)
        if client is not None:
            client.set_enabled(self.params.target, True)
        return {"proxy": self.params.target, "enabled": client is not None}
