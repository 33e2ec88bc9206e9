"""Toxiproxy: TCP proxies before Kafka, MinIO and the catalog that break the wire on demand.

An optional fifth service of the local stack. Only the loader under test connects through its
proxies (`proxied_endpoints`); Trino, the checkers and the publisher keep connecting directly,
so a fault on the wire reaches the loader alone. Each proxy carries toxics (latency and jitter,
bandwidth, reset_peer, timeout, slicer, limit_data, slow_close), added and removed over the
server's plain JSON HTTP API through `ToxiproxyClient`.

Kafka: a client bootstrapped at the proxy learns the broker's advertised listener from the
metadata and connects there. The proxy forwards to the broker's PROXIED listener
(``kafka_proxied_port``), which advertises the proxy's own port (``toxiproxy_kafka_port``), so a
client that starts at the proxy stays on it (`harness.stack.kafka`).

The server is built from source through the Go module proxy (`harness.provision.steps`) only
when it is first needed, so the four-service stack never waits for it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, cast

import requests

from icefloe.harness.stack.config import StackConfig
from icefloe.harness.stack.readiness import HttpOk, Readiness
from icefloe.harness.stack.service import LocalService

__all__ = [
    "PROXIED",
    "FakeToxiproxyApi",
    "ProxiedEndpoints",
    "ProxySpec",
    "Toxic",
    "Toxiproxy",
    "ToxiproxyClient",
    "ToxiproxyError",
    "proxied_endpoints",
    "proxy_specs",
]

Stream = Literal["upstream", "downstream"]
"""Which way a toxic acts: ``upstream`` on what the client sends, ``downstream`` on answers."""

ToxicType = Literal[
    "latency", "bandwidth", "slow_close", "timeout", "reset_peer", "slicer", "limit_data"
]

PROXIED = ("kafka", "minio", "catalog")
"""The services the loader reaches through a proxy; each proxy is named after its service."""


class ToxiproxyError(RuntimeError):
    """The Toxiproxy API refused a request or could not be reached."""


@dataclass(frozen=True)
class ProxySpec:
    """One proxy: its name, where it listens and where it forwards to (``host:port`` each)."""

    name: str
    listen: str
    upstream: str
    enabled: bool = True

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "listen": self.listen,
            "upstream": self.upstream,
            "enabled": self.enabled,
        }


@dataclass(frozen=True)
class Toxic:
    """A toxic on one proxy: its kind, direction, the share of connections it hits, its settings.

    Build one with the constructors (`Toxic.latency`, `Toxic.reset_peer`, ...), which name the
    attributes each kind takes and their units.
    """

    name: str
    type: ToxicType
    stream: Stream = "downstream"
    toxicity: float = 1.0
    attributes: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not 0.0 <= self.toxicity <= 1.0:
            raise ValueError(f"toxicity is a share of connections in [0, 1], not {self.toxicity}")
        negative = {k: v for k, v in self.attributes.items() if v < 0}
        if negative:
            raise ValueError(f"toxic attributes cannot be negative: {negative}")

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type,
            "stream": self.stream,
            "toxicity": self.toxicity,
            "attributes": dict(self.attributes),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Toxic:
        """The toxic the API describes (an answer of `ToxiproxyClient`)."""
        return cls(
            name=str(data["name"]),
            type=data["type"],
            stream=data.get("stream", "downstream"),
            toxicity=float(data.get("toxicity", 1.0)),
            attributes={k: int(v) for k, v in (data.get("attributes") or {}).items()},
        )

    @classmethod
    def latency(
        cls, name: str, latency_ms: int, jitter_ms: int = 0, stream: Stream = "downstream"
    ) -> Toxic:
        """Delay every chunk of data by ``latency_ms`` +- ``jitter_ms``."""
        attrs = {"latency": latency_ms, "jitter": jitter_ms}
        return cls(name, "latency", stream, attributes=attrs)

    @classmethod
    def bandwidth(cls, name: str, rate_kb_s: int, stream: Stream = "downstream") -> Toxic:
        """Pass at most ``rate_kb_s`` kilobytes a second."""
        return cls(name, "bandwidth", stream, attributes={"rate": rate_kb_s})

    @classmethod
    def slow_close(cls, name: str, delay_ms: int, stream: Stream = "downstream") -> Toxic:
        """Hold the close of a connection for ``delay_ms``."""
        return cls(name, "slow_close", stream, attributes={"delay": delay_ms})

    @classmethod
    def timeout(cls, name: str, timeout_ms: int = 0, stream: Stream = "downstream") -> Toxic:
        """A black hole: pass no data, close after ``timeout_ms`` (0: never close)."""
        return cls(name, "timeout", stream, attributes={"timeout": timeout_ms})

    @classmethod
    def reset_peer(cls, name: str, timeout_ms: int = 0, stream: Stream = "downstream") -> Toxic:
        """Reset the connection (TCP RST) after ``timeout_ms`` (0: at once)."""
        return cls(name, "reset_peer", stream, attributes={"timeout": timeout_ms})

    @classmethod
    def slicer(
        cls,
        name: str,
        average_size: int,
        size_variation: int = 0,
        delay_us: int = 0,
        stream: Stream = "downstream",
    ) -> Toxic:
        """Cut data into pieces of ``average_size`` +- ``size_variation`` bytes, ``delay_us``
        microseconds apart."""
        attrs = {"average_size": average_size, "size_variation": size_variation, "delay": delay_us}
        return cls(name, "slicer", stream, attributes=attrs)

    @classmethod
    def limit_data(cls, name: str, bytes_: int, stream: Stream = "downstream") -> Toxic:
        """Close the connection once ``bytes_`` bytes have passed (an answer cut in the middle)."""
        return cls(name, "limit_data", stream, attributes={"bytes": bytes_})


@dataclass(frozen=True)
class ProxyState:
    """A proxy as the server reports it, with its toxics."""

    spec: ProxySpec
    toxics: tuple[Toxic, ...]


class _Response(Protocol):
    status_code: int
    text: str
    content: bytes

    def json(self) -> Any: ...


class _Session(Protocol):
    def request(self, method: str, url: str, *, json: Any, timeout: float) -> _Response: ...


class ToxiproxyClient:
    """A typed client of Toxiproxy's HTTP API.

    Args:
        url: The API's base URL (``http://127.0.0.1:8474``).
        timeout: Seconds each request may take.
        session: A requests session; `FakeToxiproxyApi` in unit tests.
    """

    def __init__(self, url: str, timeout: float = 5.0, session: _Session | None = None) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout
        # requests' own signature is wider than the protocol's (every keyword optional).
        self.session = session if session is not None else cast(_Session, requests.Session())

    def _call(self, method: str, path: str, body: Any = None, ok: Iterable[int] = ()) -> Any:
        try:
            response = self.session.request(
                method, self.url + path, json=body, timeout=self.timeout
            )
        except requests.RequestException as exc:
            raise ToxiproxyError(f"{method} {self.url}{path}: {exc}") from exc
        if response.status_code in set(ok):
            return None
        if response.status_code >= 300:
            raise ToxiproxyError(
                f"{method} {self.url}{path}: {response.status_code} {response.text.strip()[:300]}"
            )
        return response.json() if response.content else None

    def version(self) -> str:
        """The server's version.

        Raises:
            ToxiproxyError: the API did not answer.
        """
        data = self._call("GET", "/version")
        return str(data.get("version") if isinstance(data, Mapping) else data)

    def proxies(self) -> dict[str, ProxyState]:
        """Every proxy by name, with its toxics.

        Raises:
            ToxiproxyError: the API did not answer.
        """
        data = self._call("GET", "/proxies") or {}
        return {name: _proxy_state(p) for name, p in data.items()}

    def populate(self, specs: Iterable[ProxySpec]) -> None:
        """Create the proxies, or bring existing ones of the same name to these addresses.

        Raises:
            ToxiproxyError: a proxy could not be created (its listen port is taken, say).
        """
        self._call("POST", "/populate", [s.to_json() for s in specs])

    def create(self, spec: ProxySpec) -> None:
        """Create one proxy.

        Raises:
            ToxiproxyError: it exists already, or its listen address cannot be bound.
        """
        self._call("POST", "/proxies", spec.to_json())

    def delete(self, proxy: str) -> None:
        """Delete one proxy (its listener closes).

        Raises:
            ToxiproxyError: there is no such proxy.
        """
        self._call("DELETE", f"/proxies/{proxy}")

    def reset(self) -> None:
        """Enable every proxy and remove every toxic.

        Raises:
            ToxiproxyError: the API did not answer.
        """
        self._call("POST", "/reset")

    def set_enabled(self, proxy: str, enabled: bool) -> None:
        """Enable or disable a proxy; a disabled one refuses connections and drops open ones.

        Raises:
            ToxiproxyError: there is no such proxy.
        """
        self._call("POST", f"/proxies/{proxy}", {"enabled": enabled})

    def toxics(self, proxy: str) -> list[Toxic]:
        """The toxics on one proxy.

        Raises:
            ToxiproxyError: there is no such proxy.
        """
        return [Toxic.from_json(t) for t in self._call("GET", f"/proxies/{proxy}/toxics") or []]

    def add_toxic(self, proxy: str, toxic: Toxic) -> Toxic:
        """Add a toxic to a proxy; it acts on open connections and new ones alike.

        Returns:
            The toxic as the server holds it.

        Raises:
            ToxiproxyError: no such proxy, a toxic of that name exists, or bad attributes.
        """
        return Toxic.from_json(self._call("POST", f"/proxies/{proxy}/toxics", toxic.to_json()))

    def remove_toxic(self, proxy: str, name: str) -> bool:
        """Remove a toxic from a proxy.

        Returns:
            False when it was not there (already removed): healing twice is harmless.

        Raises:
            ToxiproxyError: the API did not answer, or there is no such proxy.
        """
        if not any(t.name == name for t in self.toxics(proxy)):
            return False
        self._call("DELETE", f"/proxies/{proxy}/toxics/{name}")
        return True


def _proxy_state(data: Mapping[str, Any]) -> ProxyState:
    spec = ProxySpec(
        name=str(data["name"]),
        listen=str(data["listen"]),
        upstream=str(data["upstream"]),
        enabled=bool(data.get("enabled", True)),
    )
    return ProxyState(spec, tuple(Toxic.from_json(t) for t in data.get("toxics") or ()))


def proxy_specs(config: StackConfig) -> tuple[ProxySpec, ...]:
    """The three proxies of a stack: Kafka (to the PROXIED listener), MinIO, the catalog."""
    h = config.host
    return (
        ProxySpec(
            "kafka", f"{h}:{config.toxiproxy_kafka_port}", f"{h}:{config.kafka_proxied_port}"
        ),
        ProxySpec("minio", f"{h}:{config.toxiproxy_minio_port}", f"{h}:{config.minio_port}"),
        ProxySpec(
            "catalog", f"{h}:{config.toxiproxy_catalog_port}", f"{h}:{config.catalog_service_port}"
        ),
    )


@dataclass(frozen=True)
class ProxiedEndpoints:
    """Where the loader under test connects so that its traffic crosses Toxiproxy."""

    bootstrap_servers: str
    s3_endpoint: str
    catalog_uri: str


def proxied_endpoints(config: StackConfig) -> ProxiedEndpoints:
    """The Kafka bootstrap, S3 endpoint and catalog URI through the proxies of ``config``.

    Args:
        config: The stack's settings (the proxies' listen ports).

    Returns:
        The three endpoints, to put in the loader's configuration in place of the direct ones.
    """
    h = config.host
    return ProxiedEndpoints(
        bootstrap_servers=f"{h}:{config.toxiproxy_kafka_port}",
        s3_endpoint=f"http://{h}:{config.toxiproxy_minio_port}",
        catalog_uri=f"http://{h}:{config.toxiproxy_catalog_port}",
    )


@dataclass
class _FakeResponse:
    status_code: int
    body: Any = None

    @property
    def content(self) -> bytes:
        return b"" if self.body is None else json.dumps(self.body).encode()

    @property
    def text(self) -> str:
        return self.content.decode()

    def json(self) -> Any:
        return self.body


class FakeToxiproxyApi:
    """Toxiproxy's API in memory, as a session for `ToxiproxyClient`: unit tests of the client
    and of wire faults take milliseconds. It keeps proxies and toxics and answers with the
    server's status codes (404 unknown, 409 duplicate); it moves no data.

    Args:
        specs: Proxies that exist from the start.
    """

    def __init__(self, specs: Iterable[ProxySpec] = ()) -> None:
        self.state: dict[str, dict[str, Any]] = {}
        self.calls: list[tuple[str, str]] = []
        for spec in specs:
            self.state[spec.name] = {**spec.to_json(), "toxics": []}

    def request(self, method: str, url: str, *, json: Any, timeout: float) -> _FakeResponse:
        path = "/" + url.split("://", 1)[-1].split("/", 1)[-1]
        self.calls.append((method, path))
        parts = [p for p in path.split("/") if p]
        route = (method, *(p if i % 2 == 0 else "*" for i, p in enumerate(parts)))
        name = parts[1] if len(parts) > 1 else ""
        proxy = self.state.get(name)
        if route == ("GET", "version"):
            return _FakeResponse(200, {"version": "fake"})
        if route == ("GET", "proxies"):
            return _FakeResponse(200, self.state)
        if route == ("POST", "populate"):
            for spec in json:
                old = self.state.get(spec["name"], {"toxics": []})
                self.state[spec["name"]] = {**spec, "toxics": old["toxics"]}
            return _FakeResponse(201, {"proxies": list(self.state.values())})
        if route == ("POST", "reset"):
            for item in self.state.values():
                item.update(enabled=True, toxics=[])
            return _FakeResponse(204)
        if route == ("POST", "proxies"):
            if json["name"] in self.state:
                return _FakeResponse(409, {"error": "proxy already exists"})
            self.state[json["name"]] = {**json, "toxics": []}
            return _FakeResponse(201, self.state[json["name"]])
        if proxy is None:
            return _FakeResponse(404, {"error": "proxy not found"})
        toxics: list[dict[str, Any]] = proxy["toxics"]
        if route == ("DELETE", "proxies", "*"):
            del self.state[name]
            return _FakeResponse(204)
        if route == ("POST", "proxies", "*"):
            proxy.update(json)
            return _FakeResponse(200, proxy)
        if route == ("GET", "proxies", "*", "toxics"):
            return _FakeResponse(200, toxics)
        if route == ("POST", "proxies", "*", "toxics"):
            if any(t["name"] == json["name"] for t in toxics):
                return _FakeResponse(409, {"error": "toxic already exists"})
            toxics.append(dict(json))
            return _FakeResponse(200, json)
        if route == ("DELETE", "proxies", "*", "toxics", "*"):
            kept = [t for t in toxics if t["name"] != parts[3]]
            if len(kept) == len(toxics):
                return _FakeResponse(404, {"error": "toxic not found"})
            proxy["toxics"] = kept
            return _FakeResponse(204)
        return _FakeResponse(404, {"error": f"no route {method} {path}"})


class Toxiproxy(LocalService):
    """The Toxiproxy server, built on first use, with the stack's three proxies created."""

    name = "toxiproxy"

    @property
    def api_url(self) -> str:
        return f"http://{self.config.host}:{self.config.toxiproxy_port}"

    @property
    def ports(self) -> tuple[int, ...]:
        c = self.config
        return (
            c.toxiproxy_port,
            c.toxiproxy_kafka_port,
            c.toxiproxy_minio_port,
            c.toxiproxy_catalog_port,
        )

    def client(self, timeout: float = 5.0) -> ToxiproxyClient:
        """A client of this server's API."""
        return ToxiproxyClient(self.api_url, timeout=timeout)

    def proxied_endpoints(self) -> ProxiedEndpoints:
        """The endpoints through this server's proxies (see `proxied_endpoints`)."""
        return proxied_endpoints(self.config)

    def prepare(self) -> None:
        if not self.layout.toxiproxy_bin.exists():
            from icefloe.harness.provision.steps import build_toxiproxy

            build_toxiproxy(self.layout)

    def command(self) -> list[str]:
        c = self.config
        return [str(self.layout.toxiproxy_bin), "-host", c.host, "-port", str(c.toxiproxy_port)]

    def environment(self) -> dict[str, str]:
        # Its default level traces every chunk of every connection into the log.
        return {"LOG_LEVEL": "info"}

    def readiness(self) -> Readiness:
        return HttpOk(f"{self.api_url}/version")

    def after_start(self) -> None:
        self.client().populate(proxy_specs(self.config))
