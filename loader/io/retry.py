"""Retry: which failures are the network's, and how long the loader keeps trying.

A catalog or storage call can fail because the service is slow, restarting, behind a proxy
that answered 502/504, or because the connection was lost: none of that is the batch's fault,
and the loader tries again. Anything else (a refused schema, a bug) is not retried here.

``unanswered`` names the service that did not answer (the catalog, the table's storage or
Kafka) from an exception of any client the loader uses: pyiceberg and requests on the driver,
pyarrow's S3 file system, and the Java clients inside Spark (their error reaches Python as the
text of a ``Py4JJavaError``).

``Patience`` is the one policy: back-off between tries, and a bound on how long the loader may
go without progress (``progress_timeout``) before it stops with ``Stalled``, an error that
names the service and the last fault, instead of hanging or retrying for ever.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from icefloe.loader.errors import CatalogUnavailable, first_line

__all__ = ["Patience", "Stalled", "Unanswered", "root_cause", "unanswered"]

log = logging.getLogger("icefloe.loader")

T = TypeVar("T")

CATALOG = "catalog"
STORAGE = "storage"
KAFKA = "kafka"

# Text of the Java clients' network failures (HTTP client, AWS SDK, Iceberg's REST client), as
# it reaches Python inside a Py4JJavaError, and of pyarrow's S3 errors.
_JAVA_CATALOG_FAULTS = (
    "CommitStateUnknownException",
    "ServiceFailureException",
    "ServiceUnavailableException",
    "org.apache.iceberg.exceptions.RESTException",
    "NoHttpResponseException",
    "HttpHostConnectException",
    "ConnectTimeoutException",
    # Glue's Java client (a kind of ``loader.catalogs``): its service errors.
    "software.amazon.awssdk.services.glue.model.GlueException",
    "software.amazon.awssdk.services.glue.model.InternalServiceException",
)
_JAVA_STORAGE_FAULTS = (
    "SdkClientException",
    "software.amazon.awssdk.core.exception",
    "S3Exception: We encountered an internal error",
    "Status Code: 500",
    "Status Code: 503",
)
_NETWORK_TEXT = (
    "SocketTimeoutException",
    "Read timed out",
    "Connection reset",
    "Connection refused",
    "Broken pipe",
    "Premature end of",
    "Unexpected end of file",
    "EOFException",
    "connection was closed",
    "NETWORK_CONNECTION",
    "curlCode: 28",
    "Timeout was reached",
)


@dataclass(frozen=True)
class Unanswered:
    """What did not answer and how: ``service`` is ``catalog``, ``storage`` or ``kafka``."""

    service: str
    reason: str

    def __str__(self) -> str:
        return f"{self.service}: {self.reason}"


def unanswered(exc: BaseException) -> Unanswered | None:
    """The service that failed to answer, when ``exc`` says one did; else ``None``.

    Args:
        exc: an exception from any client of the loader (Python or, through py4j, Java).

    Returns:
        The service and the innermost reason, or ``None`` for an error that is not the
        network's (it is not retried as one).
    """
    import http.client

    import requests
    import urllib3.exceptions
    from pyiceberg.exceptions import (
        CommitStateUnknownException,
        ServerError,
        ServiceUnavailableError,
    )

    reason = root_cause(exc)
    for inner in _chain(exc):
        if isinstance(
            inner,
            (
                requests.ConnectionError,
                requests.Timeout,
                # An answer cut in the middle (a body shorter than its Content-Length).
                requests.exceptions.ChunkedEncodingError,
                requests.exceptions.ContentDecodingError,
                http.client.HTTPException,
                urllib3.exceptions.HTTPError,
                ConnectionError,
                ServiceUnavailableError,
                ServerError,
                CommitStateUnknownException,
            ),
        ):
            return Unanswered(CATALOG, reason)
        if _glue_unanswered(inner):
            return Unanswered(CATALOG, reason)
        if isinstance(inner, (OSError, TimeoutError)) and _is_network_text(str(inner)):
            return Unanswered(STORAGE, reason)
    text = _text(exc)
    if any(marker in text for marker in _JAVA_CATALOG_FAULTS):
        return Unanswered(CATALOG, _java_reason(text) or reason)
    if any(marker in text for marker in _JAVA_STORAGE_FAULTS):
        return Unanswered(STORAGE, _java_reason(text) or reason)
    if _is_network_text(text):
        service = KAFKA if "kafka" in text.lower() else CATALOG if "/v1/" in text else STORAGE
        return Unanswered(service, _java_reason(text) or reason)
    return None


def _glue_unanswered(exc: BaseException) -> bool:
    """``exc`` is botocore's (the Glue catalog's client, ``loader.catalogs.glue``) for a request
    that got no answer, or a server error; pyiceberg reads S3 through pyarrow, not botocore."""
    try:
        from botocore.exceptions import ClientError, ConnectionError, HTTPClientError
    except ImportError:  # botocore is only needed for a Glue catalog
        return False
    if isinstance(exc, (ConnectionError, HTTPClientError)):
        return True
    if isinstance(exc, ClientError):
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        return int(status or 0) >= 500
    return False


def root_cause(exc: BaseException) -> str:
    """The innermost cause of ``exc`` in one line (``ConnectionError: [Errno 111] ...``)."""
    inner = list(_chain(exc))[-1]
    name = type(inner).__name__
    return f"{name}: {first_line(inner)}" if str(inner).strip() else name


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and its causes, innermost last; a retry library's "gave up" error counts its
    last attempt's error as its cause (pyiceberg retries some calls with tenacity)."""
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not s for s in seen):
        seen.append(current)
        last = getattr(current, "last_attempt", None)
        failed = last.exception() if last is not None and hasattr(last, "exception") else None
        current = current.__cause__ or current.__context__ or failed
    return seen


def _text(exc: BaseException) -> str:
    return "\n".join(str(e) for e in _chain(exc))


def _is_network_text(text: str) -> bool:
    return any(marker in text for marker in _NETWORK_TEXT)


def _java_reason(text: str) -> str | None:
    """The first line of a Java trace that names an exception of the network's."""
    for line in text.splitlines():
        line = line.strip()
        if any(m in line for m in (*_JAVA_CATALOG_FAULTS, *_JAVA_STORAGE_FAULTS, *_NETWORK_TEXT)):
            return line[:300]
    return None


class Stalled(CatalogUnavailable):
    """The loader made no progress for ``progress_timeout``: a service kept failing."""


@dataclass
class Patience:
    """Back-off between tries, and the bound on time without progress.

    Args:
        progress_timeout_s: how long the loader may go without progress before ``Stalled``.
        endpoints: the address of each service (``catalog``, ``storage``, ``kafka``), for the
            message that says which one did not answer.
        on_retry: called with the service for each failure retried (metrics).
        clock: monotonic seconds (a fake in tests).
        sleep: waits (a fake in tests).
    """

    progress_timeout_s: float
    endpoints: dict[str, str] = field(default_factory=dict)
    on_retry: Callable[[str], None] | None = None
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    base_s: float = 0.5
    cap_s: float = 5.0
    _since: float | None = None
    _failures: int = 0
    _last: Unanswered | None = None

    def progressed(self) -> None:
        """Progress was made (a batch committed): the bound starts again at the next failure."""
        self._since = None
        self._failures = 0
        self._last = None

    @property
    def failing_for_s(self) -> float:
        """Seconds since the first failure without progress (0 when nothing is failing)."""
        return 0.0 if self._since is None else self.clock() - self._since

    @property
    def last(self) -> Unanswered | None:
        """The last failure retried since the last progress."""
        return self._last

    def failed(self, what: Unanswered, doing: str) -> None:
        """Count a failure of ``what`` while ``doing``, wait before the next try.

        Raises:
            Stalled: no progress for ``progress_timeout_s``.
        """
        now = self.clock()
        if self._since is None:
            self._since = now
        self._failures += 1
        self._last = what
        if self.on_retry is not None:
            self.on_retry(what.service)
        waited = now - self._since
        if waited >= self.progress_timeout_s:
            raise Stalled(self.describe(doing, waited))
        if self._failures == 1 or self._failures % 10 == 0:
            log.warning(
                "%s did not answer while %s (%s, try %s); trying again",
                self.where(what.service),
                doing,
                what.reason,
                self._failures,
            )
        delay = min(self.cap_s, self.base_s * 2 ** min(self._failures - 1, 10))
        delay *= random.uniform(0.8, 1.2)
        self.sleep(min(delay, max(0.0, self.progress_timeout_s - waited) + 0.01))

    def call(self, fn: Callable[[], T], doing: str) -> T:
        """``fn()``, tried again while the failure is the network's, within the bound.

        Raises:
            Stalled: no progress for ``progress_timeout_s``.
            Exception: any error of ``fn`` that is not the network's, at once.
        """
        while True:
            try:
                return fn()
            except Exception as exc:
                what = unanswered(exc)
                if what is None:
                    raise
                self.failed(what, doing)

    def describe(self, doing: str, waited_s: float) -> str:
        """The message of a stall: the service, its address, the fault, what was being done."""
        what = self._last
        service = what.service if what is not None else CATALOG
        reason = what.reason if what is not None else "no answer"
        return (
            f"no progress for {waited_s:.0f} s (progress_timeout {self.progress_timeout_s:g} s): "
            f"{self.where(service)} did not answer while {doing}; last fault: {reason}"
        )

    def where(self, service: str) -> str:
        """The service's name and address, e.g. ``the catalog at http://127.0.0.1:8181``."""
        names = {CATALOG: "the catalog", STORAGE: "the table's storage", KAFKA: "Kafka"}
        address = self.endpoints.get(service)
        name = names.get(service, service)
        return f"{name} at {address}" if address else name
