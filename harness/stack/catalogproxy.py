"""An HTTP-aware fault point in front of an Iceberg catalog (the REST server, or Glue's API).

A TCP proxy (Toxiproxy) can delay, cut or reset a connection, but it cannot answer an HTTP
status, nor forward a commit and then lose the answer. :class:`CatalogProxy` is a small
HTTP/1.1 reverse proxy (asyncio streams, in a background thread with its own event loop) that
forwards every request unchanged (keep-alive, ``Content-Length`` and chunked bodies, bytes as
they came) unless a :class:`Rule` matches it. A rule matches on method, path and operation
(regular expressions, the whole path without its query string must match; the operation is what
an AWS JSON API names in ``X-Amz-Target``, e.g. ``AWSGlue.UpdateTable``, empty elsewhere),
fires for the next ``times`` matches or with a ``probability`` drawn from the proxy's seeded
random source, and can be added and removed while the proxy runs. Its mode says what happens to
a request it fires on:

- ``drop_after_forward``: forward, let the catalog apply it, read the answer, then close the
  client's connection without answering;
- ``status_after_forward``: forward, then answer ``status`` (500, 502, 504) instead of the real
  answer;
- ``refuse``: do not forward; answer ``status`` (503) with or without ``Retry-After``, or with
  ``drop`` close the connection without answering;
- ``delay``: wait ``delay_ms`` before forwarding and ``answer_delay_ms`` before answering;
- ``black_hole``: hold the request, never answer, until the rule is removed (healed),
  ``hold_s`` passed or the client gave up, then close the connection; nothing is forwarded;
- ``deliver_late``: answer 504 at once, forward the request ``late_s`` later (it applies late);
- ``ack_unapplied``: do not forward; answer success as the catalog would have: Glue's ``{}``,
  or for the REST API the table as it stands (a load of the same path, forwarded in its stead).
  A catalog that acknowledges a commit it drops: the break the catalog checks must catch.

Every firing is kept as a :class:`Fired` record (when, which rule, method, path, mode, whether
the catalog applied the request and its real status, what the client got) in memory and, when
the proxy has a history, as a ``fault``/``info`` event named ``catalog_proxy.fired``. "Applied"
means the catalog received the request and answered 2xx; a request never forwarded is not
applied; one whose forwarding failed half-way is unknown (``None``).

Run on its own: ``python -m icefloe.harness.stack.catalogproxy --port 8182 --upstream
http://127.0.0.1:8181 [--rule JSON ...]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import random
import re
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args
from urllib.parse import urlsplit

from icefloe.harness.history import PROXY_FIRED

__all__ = [
    "COMMIT_PATH",
    "GLUE_COMMIT_OPERATION",
    "GLUE_LOAD_OPERATION",
    "LOAD_PATH",
    "MODES",
    "TRANSACTION_PATH",
    "CatalogProxy",
    "Fired",
    "Mode",
    "Rule",
    "main",
]

Mode = Literal[
    "drop_after_forward",
    "status_after_forward",
    "refuse",
    "delay",
    "black_hole",
    "deliver_late",
    "ack_unapplied",
]
MODES: tuple[str, ...] = get_args(Mode)

# Paths of the Iceberg REST API (an optional base path before /v1, as Nessie's /iceberg; an
# optional catalog prefix after it). A commit to one table is a POST to the table's path; a
# multi-table commit a POST to transactions/commit; a table load a GET of the table's path. The
# whole path must match, so a table's /metrics reports (which the Java client POSTs after
# commits and scans) are not commits.
COMMIT_PATH = r"(?:/[^/]+)*?/v1/(?:[^/]+/)?namespaces/[^/]+/tables/[^/]+"
TRANSACTION_PATH = r"(?:/[^/]+)*?/v1/(?:[^/]+/)?transactions/commit"
LOAD_PATH = COMMIT_PATH

# Glue's API (AWS JSON 1.1): every request a POST to "/", the operation in X-Amz-Target. A
# commit is UpdateTable (pyiceberg's and Java's GlueCatalog alike), a table load GetTable.
GLUE_COMMIT_OPERATION = r"AWSGlue\.UpdateTable"
GLUE_LOAD_OPERATION = r"AWSGlue\.GetTable"

HEAD_LIMIT = 1 << 20
UPSTREAM_CONNECT_TIMEOUT_S = 10.0
_REASONS = {
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}
_NO_BODY_STATUSES = (204, 304)


@dataclass(frozen=True)
class Firing:
    """What a fault rule does to a request it fires on, and how often it fires.

    Attributes:
        mode: What happens to a request it fires on (see the module docstring).
        times: Fire for this many matching requests, then no more (``None``: every match).
        probability: Chance that a matching request is fired on (seeded by the proxy).
        status: The status answered (``status_after_forward``: 500/502/504, ``refuse``: 503).
        retry_after_s: ``refuse``: the ``Retry-After`` header's seconds (``None``: no header).
        drop: ``refuse``: close the connection instead of answering.
        delay_ms: ``delay``: wait this long before forwarding.
        answer_delay_ms: ``delay``: wait this long after the answer came, before passing it on.
        hold_s: ``black_hole``: close after this long (``None``: hold until healed).
        late_s: ``deliver_late``: forward the request this long after answering 504.
        on_retries: Also fire on a client's own resending of a request (an AWS SDK's, which
            numbers each try in its ``amz-sdk-request: attempt=N`` header; a request without
            the header counts as a first try). Off, the rule spares them and fires on first
            tries only: after a lost answer Spark's Glue client resends the commit by itself,
            and the catalog refuses the copy, so a firing on it is not on an applied commit.
    """

    mode: Mode
    times: int | None = 1
    probability: float = 1.0
    status: int | None = None
    retry_after_s: int | None = None
    drop: bool = False
    delay_ms: int = 0
    answer_delay_ms: int = 0
    hold_s: float | None = None
    late_s: float = 5.0
    on_retries: bool = True


@dataclass(frozen=True)
class Rule(Firing):
    """A fault rule: which requests it fires on, and its :class:`Firing`.

    Attributes:
        method: Regular expression the request method must match in full.
        path: Regular expression the request path (no query string) must match in full.
        operation: Regular expression the request's operation (its ``X-Amz-Target``, empty
            when it has none) must match in full.
        name: The rule's name, unique in a proxy (empty: the proxy names it).
    """

    method: str = "POST"
    path: str = COMMIT_PATH
    operation: str = ".*"
    name: str = ""

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"unknown mode {self.mode!r}; one of {MODES}")
        if self.times is not None and self.times < 0:
            raise ValueError("times must be >= 0")
        if not 0.0 <= self.probability <= 1.0:
            raise ValueError("probability must be in [0, 1]")
        if self.status is not None and not 100 <= self.status <= 599:
            raise ValueError(f"status {self.status} is not an HTTP status")
        if min(self.delay_ms, self.answer_delay_ms) < 0 or self.late_s < 0:
            raise ValueError("delays must be >= 0")
        re.compile(self.method)
        re.compile(self.path)
        re.compile(self.operation)

    @property
    def answer_status(self) -> int:
        """The status this rule answers in place of the catalog (where it answers one)."""
        if self.status is not None:
            return self.status
        return {"refuse": 503, "deliver_late": 504}.get(self.mode, 502)

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Rule:
        """A rule from a JSON object of its fields.

        Args:
            doc: Field names to values (``mode`` required).

        Returns:
            The rule.

        Raises:
            TypeError: An unknown field.
            ValueError: A bad value.
        """
        return cls(**doc)


@dataclass(frozen=True)
class Fired:
    """One firing of a rule, recorded once its outcome is known.

    Attributes:
        time: Wall-clock seconds when the request arrived and the rule fired.
        rule: The rule's name.
        method: The request's method.
        path: The request's path (with its query string).
        mode: The rule's mode.
        applied: The catalog received the request and answered 2xx (``None``: unknown).
        status: The catalog's real status (``None``: not forwarded, or no answer).
        answered: The status the client got (``None``: no answer, its connection closed).
        seconds: From arrival to the outcome (for ``deliver_late``, the late forward's end).
        operation: The request's operation (``X-Amz-Target``; empty when it has none).
        attempt: The client's try of it (its ``amz-sdk-request`` header; 1 without one).
    """

    time: float
    rule: str
    method: str
    path: str
    mode: str
    applied: bool | None
    status: int | None
    answered: int | None
    seconds: float
    operation: str = ""
    attempt: int = 1

    def to_json(self) -> dict[str, Any]:
        """The record as a JSON-ready dict."""
        return dataclasses.asdict(self)


@dataclass
class _Request:
    method: str
    target: str
    version: str
    head: bytes
    body: bytes
    close: bool
    operation: str = ""
    attempt: int = 1
    arrived: float = field(default_factory=time.time)

    @property
    def path(self) -> str:
        return self.target.split("?", 1)[0]

    @property
    def raw(self) -> bytes:
        return self.head + self.body


@dataclass
class _Response:
    status: int
    raw: bytes
    close: bool


class _Gone(Exception):
    """The upstream connection failed; ``sent`` says whether the request reached it."""

    def __init__(self, message: str, sent: bool) -> None:
        super().__init__(message)
        self.sent = sent


@dataclass
class _Armed:
    rule: Rule
    remaining: int | None
    method: re.Pattern[str]
    path: re.Pattern[str]
    operation: re.Pattern[str]
    released: asyncio.Event | None = None
    fired: int = 0


def _headers(head: bytes) -> tuple[str, list[tuple[str, str]]]:
    lines = head.decode("latin-1").split("\r\n")
    pairs = []
    for line in lines[1:]:
        if ":" in line:
            name, value = line.split(":", 1)
            pairs.append((name.strip().lower(), value.strip()))
    return lines[0], pairs


def _get(pairs: list[tuple[str, str]], name: str) -> str | None:
    for key, value in pairs:
        if key == name:
            return value
    return None


def _tokens(pairs: list[tuple[str, str]], name: str) -> set[str]:
    return {t.strip().lower() for key, value in pairs if key == name for t in value.split(",") if t}


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    """A chunked body as it came (sizes, extensions, trailers and all)."""
    parts = []
    while True:
        line = await reader.readuntil(b"\r\n")
        parts.append(line)
        size = int(line.split(b";", 1)[0].strip(), 16)
        if size == 0:
            while True:
                trailer = await reader.readuntil(b"\r\n")
                parts.append(trailer)
                if trailer == b"\r\n":
                    return b"".join(parts)
        parts.append(await reader.readexactly(size + 2))


async def _read_body(reader: asyncio.StreamReader, pairs: list[tuple[str, str]]) -> bytes | None:
    """A message body by its framing; ``None`` when none is framed (read to the end instead)."""
    if "chunked" in _tokens(pairs, "transfer-encoding"):
        return await _read_chunked(reader)
    length = _get(pairs, "content-length")
    if length is not None:
        return await reader.readexactly(int(length))
    return None


async def _read_request(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> _Request | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    start, pairs = _headers(head)
    method, target, version = start.split(" ", 2)
    if "100-continue" in _tokens(pairs, "expect"):
        # The proxy reads the whole body before it decides, so it invites the body itself
        # and does not pass the expectation on.
        writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        await writer.drain()
        kept = [
            line
            for line in head.decode("latin-1").split("\r\n")
            if not line.lower().startswith("expect:")
        ]
        head = "\r\n".join(kept).encode("latin-1")
    body = await _read_body(reader, pairs) or b""
    connection = _tokens(pairs, "connection")
    close = "close" in connection or (version == "HTTP/1.0" and "keep-alive" not in connection)
    operation = _get(pairs, "x-amz-target") or ""
    tries = re.search(r"attempt=(\d+)", _get(pairs, "amz-sdk-request") or "")
    attempt = int(tries.group(1)) if tries else 1
    return _Request(method, target, version, head, body, close, operation, attempt)


async def _read_response(reader: asyncio.StreamReader, method: str) -> _Response:
    while True:
        head = await reader.readuntil(b"\r\n\r\n")
        start, pairs = _headers(head)
        status = int(start.split(" ", 2)[1])
        if not 100 <= status < 200 or status == 101:
            break
    close = "close" in _tokens(pairs, "connection")
    if method == "HEAD" or status in _NO_BODY_STATUSES or 100 <= status < 200:
        return _Response(status, head, close)
    body = await _read_body(reader, pairs)
    if body is None:
        return _Response(status, head + await reader.read(), True)
    return _Response(status, head + body, close)


def _answer(status: int, retry_after_s: int | None = None, *, close: bool = False) -> bytes:
    reason = _REASONS.get(status, "Error")
    body = f"{status} {reason} (icefloe catalog proxy)\n".encode()
    lines = [
        f"HTTP/1.1 {status} {reason}",
        "Content-Type: text/plain; charset=utf-8",
        f"Content-Length: {len(body)}",
    ]
    if retry_after_s is not None:
        lines.append(f"Retry-After: {retry_after_s}")
    lines.append("Connection: close" if close else "Connection: keep-alive")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def _body(raw: bytes) -> bytes:
    """The body of a whole message as it came, its chunked framing (if any) taken off."""
    head, _, body = raw.partition(b"\r\n\r\n")
    if "chunked" not in _tokens(_headers(head + b"\r\n\r\n")[1], "transfer-encoding"):
        return body
    out: list[bytes] = []
    rest = body
    while True:
        line, _, rest = rest.partition(b"\r\n")
        size = int(line.split(b";", 1)[0].strip(), 16)
        if size == 0:
            return b"".join(out)
        out.append(rest[:size])
        rest = rest[size + 2 :]


def _loaded_table(response: _Response | None) -> dict[str, Any] | None:
    """A REST table load's answer (its metadata and where it lives), if it is one."""
    if response is None or response.status != 200:
        return None
    try:
        table = json.loads(_body(response.raw))
    except ValueError:
        return None
    if not isinstance(table, dict) or not {"metadata-location", "metadata"} <= table.keys():
        return None
    return table


def _ok(body: bytes, content_type: str) -> bytes:
    lines = [
        "HTTP/1.1 200 OK",
        f"Content-Type: {content_type}",
        f"Content-Length: {len(body)}",
        "Connection: keep-alive",
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def _load_instead(request: _Request) -> _Request:
    """A GET of ``request``'s path with its headers, its body dropped: a REST table load."""
    _, *lines = request.head.decode("latin-1").split("\r\n")
    # Its answer is read here, so it is asked for uncompressed.
    dropped = (
        "content-length:", "transfer-encoding:", "content-type:", "content-encoding:",
        "accept-encoding:",
    )  # fmt: skip
    kept = [line for line in lines if not line.lower().startswith(dropped)]
    head = "\r\n".join([f"GET {request.target} {request.version}", *kept])
    return _Request("GET", request.target, request.version, head.encode("latin-1"), b"", False)


class _Upstream:
    """One client connection's connection to the catalog (opened when first needed)."""

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.used = False

    async def _open(self) -> None:
        self.close()
        try:
            self.reader, self.writer = await asyncio.wait_for(
                asyncio.open_connection(self.host, self.port, limit=HEAD_LIMIT),
                UPSTREAM_CONNECT_TIMEOUT_S,
            )
        except (TimeoutError, OSError) as exc:
            raise _Gone(f"cannot connect to {self.host}:{self.port}: {exc}", sent=False) from exc
        self.used = False

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None

    async def exchange(self, request: _Request) -> _Response:
        """Send ``request`` and read its response (once more on a fresh connection when a
        reused one turns out closed before answering a byte, as an idle keep-alive may)."""
        for attempt in (1, 2):
            if self.reader is None or self.reader.at_eof():
                await self._open()
            reused = self.used
            assert self.reader is not None and self.writer is not None
            try:
                self.writer.write(request.raw)
                await self.writer.drain()
                self.used = True
                response = await _read_response(self.reader, request.method)
            except asyncio.IncompleteReadError as exc:
                self.close()
                if reused and not exc.partial and attempt == 1:
                    continue
                raise _Gone(f"the catalog closed the connection: {exc}", sent=True) from exc
            except (OSError, asyncio.LimitOverrunError, ValueError) as exc:
                self.close()
                if reused and attempt == 1 and isinstance(exc, ConnectionResetError):
                    continue
                raise _Gone(f"the catalog connection failed: {exc!r}", sent=True) from exc
            if response.close or request.close:
                self.close()
            return response
        raise AssertionError("unreachable")


class CatalogProxy:
    """An HTTP/1.1 reverse proxy in front of the REST catalog, with fault rules.

    Args:
        upstream: The catalog's base URL (``http://127.0.0.1:8181``).
        host: Where to listen (loopback).
        port: Port to listen on (0: any free one; :attr:`port` tells which after start).
        history: A ``harness.history.History`` to record firings in (or None).
        seed: Seed of the random source that decides probabilistic firings.
        catalog: The kind of catalog behind it (``rest``, ``glue``): which requests are its
            commits and loads (``harness.scenarios.faults.commits.TARGETS``).
    """

    def __init__(
        self,
        upstream: str,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        history: Any = None,
        seed: int = 0,
        catalog: str = "rest",
    ) -> None:
        parts = urlsplit(upstream)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"upstream must be an http:// URL, not {upstream!r}")
        self.upstream = upstream.rstrip("/")
        self.catalog = catalog
        self._up_host = parts.hostname
        self._up_port = parts.port or 80
        self.host = host
        self._port = port
        self.history = history
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._rules: dict[str, _Armed] = {}
        self._fired: list[Fired] = []
        self._named = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.AbstractServer | None = None
        self._writers: set[asyncio.StreamWriter] = set()  # the open client connections
        self._late: set[asyncio.Task[Any]] = set()
        self._fired_cond = threading.Condition(self._lock)

    # -- life ------------------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The port it listens on (the one chosen, once started with port 0)."""
        return self._port

    @property
    def url(self) -> str:
        """The proxy's base URL, to give a catalog client instead of the catalog's."""
        return f"http://{self.host}:{self._port}"

    def start(self) -> CatalogProxy:
        """Start listening (in a background thread with its own event loop).

        Returns:
            The proxy.

        Raises:
            OSError: The port cannot be bound.
        """
        if self._thread is not None:
            return self
        ready: dict[str, Any] = {}
        started = threading.Event()

        def serve() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            try:
                self._server = loop.run_until_complete(
                    asyncio.start_server(self._serve, self.host, self._port, limit=HEAD_LIMIT)
                )
            except OSError as exc:
                ready["error"] = exc
                started.set()
                loop.close()
                return
            self._port = self._server.sockets[0].getsockname()[1]
            started.set()
            try:
                loop.run_forever()
            finally:
                loop.run_until_complete(self._shutdown())
                loop.close()

        self._thread = threading.Thread(target=serve, name="catalog-proxy", daemon=True)
        self._thread.start()
        started.wait()
        if "error" in ready:
            self._thread = None
            raise ready["error"]
        return self

    def stop(self) -> None:
        """Stop listening, close every connection, cancel late deliveries (recorded)."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=30)
        self._thread = self._loop = None

    async def _shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
        # A client that reads nothing (a frozen loader) would hold a closing connection, and
        # the stop, until it reads: its connection is cut instead, as a stopped proxy's would be.
        for writer in list(self._writers):
            writer.transport.abort()
        # Every task of the loop: connections, late deliveries, and a connection accepted
        # a moment ago whose task has not run yet.
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    def __enter__(self) -> CatalogProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def health(self) -> bool:
        """Whether it is running."""
        return self._thread is not None and self._thread.is_alive()

    # -- rules -----------------------------------------------------------------------------

    def add(self, rule: Rule) -> Rule:
        """Arm a rule (it applies to requests arriving from now on).

        Args:
            rule: The rule; a rule with no name gets one (``<mode>-<n>``).

        Returns:
            The rule as armed (with its name).

        Raises:
            ValueError: A rule of that name is armed already.
        """
        with self._lock:
            if not rule.name:
                self._named += 1
                rule = dataclasses.replace(rule, name=f"{rule.mode}-{self._named}")
            if rule.name in self._rules:
                raise ValueError(f"a rule named {rule.name!r} is armed already")
            self._rules[rule.name] = _Armed(
                rule,
                rule.times,
                re.compile(rule.method),
                re.compile(rule.path),
                re.compile(rule.operation),
            )
        return rule

    def remove(self, name: str) -> bool:
        """Disarm a rule and release the requests its black hole holds.

        Args:
            name: The rule's name.

        Returns:
            Whether such a rule was armed.
        """
        with self._lock:
            armed = self._rules.pop(name, None)
        if armed is None:
            return False
        self._release(armed)
        return True

    def heal(self) -> int:
        """Disarm every rule and release every black hole (late deliveries still go out).

        Returns:
            How many rules were armed.
        """
        with self._lock:
            armed = list(self._rules.values())
            self._rules.clear()
        for one in armed:
            self._release(one)
        return len(armed)

    def _release(self, armed: _Armed) -> None:
        loop = self._loop
        if loop is not None and not loop.is_closed():
            # The event is made on first use by the loop's thread; set it there too.
            def release() -> None:
                if armed.released is None:
                    armed.released = asyncio.Event()
                armed.released.set()

            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(release)

    @property
    def rules(self) -> tuple[tuple[Rule, int | None], ...]:
        """The armed rules and how many more firings each has (``None``: unlimited)."""
        with self._lock:
            return tuple((a.rule, a.remaining) for a in self._rules.values())

    @property
    def fired(self) -> tuple[Fired, ...]:
        """Every firing whose outcome is known, in the order the outcomes came."""
        with self._lock:
            return tuple(self._fired)

    def firings(self, rule: str) -> int:
        """How many requests an armed rule has fired on, outcomes known or not.

        Args:
            rule: The rule's name.

        Returns:
            The count (0 for a rule not armed).
        """
        with self._lock:
            armed = self._rules.get(rule)
            return 0 if armed is None else armed.fired

    def fired_by(self, rule: str) -> list[Fired]:
        """The firings of one rule.

        Args:
            rule: The rule's name.

        Returns:
            Its recorded firings.
        """
        return [f for f in self.fired if f.rule == rule]

    def wait_fired(self, count: int, timeout_s: float, rule: str | None = None) -> list[Fired]:
        """Wait until ``count`` firings (of ``rule``, or of any) are recorded.

        Args:
            count: How many.
            timeout_s: How long to wait at most.
            rule: Only this rule's.

        Returns:
            The firings recorded by then (fewer than ``count`` after a timeout).
        """
        deadline = time.monotonic() + timeout_s
        with self._fired_cond:
            while True:
                got = [f for f in self._fired if rule is None or f.rule == rule]
                left = deadline - time.monotonic()
                if len(got) >= count or left <= 0:
                    return got
                self._fired_cond.wait(left)

    def _match(self, request: _Request) -> _Armed | None:
        with self._lock:
            for armed in self._rules.values():
                if armed.remaining == 0:
                    continue
                if not armed.method.fullmatch(request.method):
                    continue
                if not armed.path.fullmatch(request.path):
                    continue
                if not armed.operation.fullmatch(request.operation):
                    continue
                if request.attempt > 1 and not armed.rule.on_retries:
                    continue
                if armed.rule.probability < 1.0 and self._rng.random() >= armed.rule.probability:
                    continue
                if armed.remaining is not None:
                    armed.remaining -= 1
                armed.fired += 1
                return armed
        return None

    def _record(
        self,
        rule: Rule,
        request: _Request,
        applied: bool | None,
        status: int | None,
        answered: int | None,
    ) -> Fired:
        fired = Fired(
            time=request.arrived,
            rule=rule.name,
            method=request.method,
            path=request.target,
            mode=rule.mode,
            applied=applied,
            status=status,
            answered=answered,
            seconds=round(time.time() - request.arrived, 3),
            operation=request.operation,
            attempt=request.attempt,
        )
        with self._fired_cond:
            self._fired.append(fired)
            self._fired_cond.notify_all()
        if self.history is not None:
            self.history.record("fault", "info", PROXY_FIRED, **fired.to_json())
        return fired

    # -- serving ---------------------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        # A connection cancelled at stop ends quietly: asyncio's stream server (3.11) would
        # otherwise report its cancellation as an error.
        self._writers.add(writer)
        try:
            with contextlib.suppress(asyncio.CancelledError):
                await self._connection(reader, writer)
        finally:
            self._writers.discard(writer)

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream = _Upstream(self._up_host, self._up_port)
        try:
            while True:
                request = await _read_request(reader, writer)
                if request is None:
                    break
                keep = await self._one(request, upstream, reader, writer)
                if not keep or request.close:
                    break
        except (ConnectionError, asyncio.IncompleteReadError, ValueError):
            pass  # the client went away or spoke no HTTP; nothing to answer
        finally:
            upstream.close()
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _forward(
        self, request: _Request, upstream: _Upstream
    ) -> tuple[_Response | None, bool | None]:
        """Forward; the response (None if none came) and whether the request was applied."""
        try:
            response = await upstream.exchange(request)
        except _Gone as exc:
            return None, (None if exc.sent else False)
        return response, 200 <= response.status < 300

    async def _one(
        self,
        request: _Request,
        upstream: _Upstream,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> bool:
        """Handle one request; whether the client connection stays open."""
        armed = self._match(request)
        if armed is None:
            response, _ = await self._forward(request, upstream)
            if response is None:
                return False  # as a TCP proxy would: the client sees its connection closed
            writer.write(response.raw)
            await writer.drain()
            return not response.close
        rule = armed.rule
        mode = rule.mode
        if mode == "refuse":
            if rule.drop:
                self._record(rule, request, False, None, None)
                return False
            self._record(rule, request, False, None, rule.answer_status)
            writer.write(_answer(rule.answer_status, rule.retry_after_s))
            await writer.drain()
            return True
        if mode == "black_hole":
            if armed.released is None:
                armed.released = asyncio.Event()
            # Held until healed or hold_s passed, or until the client gives up (a timeout of
            # its own closes its end: the record then says when).
            waits = [
                asyncio.ensure_future(armed.released.wait()),
                asyncio.ensure_future(reader.read(1)),
            ]
            try:
                await asyncio.wait(waits, timeout=rule.hold_s, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for wait in waits:
                    wait.cancel()
                await asyncio.gather(*waits, return_exceptions=True)
            self._record(rule, request, False, None, None)
            return False
        if mode == "deliver_late":
            writer.write(_answer(rule.answer_status))
            await writer.drain()
            late = asyncio.ensure_future(self._deliver_late(rule, request))
            self._late.add(late)
            late.add_done_callback(self._late.discard)
            return True
        if mode == "ack_unapplied":
            return await self._ack_unapplied(rule, request, upstream, writer)
        if mode == "delay":
            await asyncio.sleep(rule.delay_ms / 1000)
        response, applied = await self._forward(request, upstream)
        status = None if response is None else response.status
        if mode == "drop_after_forward" or response is None:
            self._record(rule, request, applied, status, None)
            return False
        if mode == "status_after_forward":
            self._record(rule, request, applied, status, rule.answer_status)
            writer.write(_answer(rule.answer_status))
            await writer.drain()
            return True
        await asyncio.sleep(rule.answer_delay_ms / 1000)
        self._record(rule, request, applied, status, status)
        writer.write(response.raw)
        await writer.drain()
        return not response.close

    async def _ack_unapplied(
        self, rule: Rule, request: _Request, upstream: _Upstream, writer: asyncio.StreamWriter
    ) -> bool:
        """Answer a commit as applied without forwarding it (a REST one: with the table as it
        stands, which a load of its path fetches)."""
        if request.operation:  # an AWS JSON API: UpdateTable answers an empty object
            answer = _ok(b"{}", "application/x-amz-json-1.1")
        else:
            response, _ = await self._forward(_load_instead(request), upstream)
            table = _loaded_table(response)
            if table is None:  # no table to answer with
                status = None if response is None else response.status
                self._record(rule, request, False, status, None)
                return False
            body = {"metadata-location": table["metadata-location"], "metadata": table["metadata"]}
            answer = _ok(json.dumps(body).encode(), "application/json")
        self._record(rule, request, False, None, 200)
        writer.write(answer)
        await writer.drain()
        return True

    async def _deliver_late(self, rule: Rule, request: _Request) -> None:
        upstream = _Upstream(self._up_host, self._up_port)
        applied: bool | None = False
        status: int | None = None
        forwarding = False
        try:
            await asyncio.sleep(rule.late_s)
            forwarding = True
            response, applied = await self._forward(request, upstream)
            status = None if response is None else response.status
        except asyncio.CancelledError:
            # Stopped before the late delivery went out (not applied) or while it was out.
            applied = None if forwarding else False
            raise
        finally:
            upstream.close()
            self._record(rule, request, applied, status, rule.answer_status)


def main(argv: Sequence[str] | None = None, *, started: Callable[[str], None] | None = None) -> int:
    """Run a catalog proxy as its own process until SIGINT or SIGTERM.

    Args:
        argv: ``--port N --upstream URL [--host H] [--seed S] [--rule JSON ...]``.
        started: Called with the proxy's URL once it listens (default: print it).

    Returns:
        The exit code (0).

    Raises:
        SystemExit: Bad arguments.
    """
    parser = argparse.ArgumentParser(
        prog="python -m icefloe.harness.stack.catalogproxy", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--upstream", required=True, help="the catalog's URL")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--rule",
        action="append",
        default=[],
        help='a rule as JSON, e.g. \'{"mode": "status_after_forward", "status": 504}\'',
    )
    args = parser.parse_args(argv)
    try:
        rules = [Rule.from_json(json.loads(text)) for text in args.rule]
    except (TypeError, ValueError) as exc:
        parser.error(f"--rule: {exc}")
    proxy = CatalogProxy(args.upstream, host=args.host, port=args.port, seed=args.seed)
    for rule in rules:
        proxy.add(rule)
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    with proxy:
        (started or (lambda url: print(f"catalog proxy on {url}", flush=True)))(proxy.url)
        done.wait()
        for fired in proxy.fired:
            print(json.dumps(fired.to_json()), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
