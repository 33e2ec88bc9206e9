"""Which failures the loader treats as the network's, and how long it keeps trying."""

from __future__ import annotations

import pytest
import requests
from pyiceberg.exceptions import (
    CommitStateUnknownException,
    NoSuchTableError,
    ServerError,
    ServiceUnavailableError,
)

from icefloe.loader.io.retry import (
    CATALOG,
    KAFKA,
    STORAGE,
    Patience,
    Stalled,
    Unanswered,
    unanswered,
)


@pytest.mark.parametrize(
    "exc",
    [
        requests.ConnectionError("('Connection aborted.', RemoteDisconnected())"),
        requests.ReadTimeout("Read timed out. (read timeout=30)"),
        ServiceUnavailableError("503"),
        ServerError("502 Bad Gateway"),
        CommitStateUnknownException("504 Gateway Timeout"),
        requests.exceptions.ChunkedEncodingError(
            "('Connection broken: IncompleteRead(331 bytes read, 2731 more expected)')"
        ),
        ConnectionResetError(104, "Connection reset by peer"),
    ],
)
def test_the_catalog_clients_network_failures_are_the_catalogs(exc: Exception) -> None:
    fault = unanswered(exc)
    assert fault is not None and fault.service == CATALOG


def test_a_wrapped_cause_is_found() -> None:
    try:
        try:
            raise requests.ConnectionError("Connection refused")
        except requests.ConnectionError as inner:
            raise RuntimeError("loading the table failed") from inner
    except RuntimeError as outer:
        fault = unanswered(outer)
    assert fault == Unanswered(CATALOG, "ConnectionError: Connection refused")


def test_pyarrow_s3_network_errors_are_the_storages() -> None:
    exc = OSError("When reading information for key 'm.json': AWS Error NETWORK_CONNECTION")
    fault = unanswered(exc)
    assert fault is not None and fault.service == STORAGE


@pytest.mark.parametrize(
    ("text", "service"),
    [
        ("org.apache.iceberg.exceptions.CommitStateUnknownException: 504", CATALOG),
        (
            "org.apache.iceberg.exceptions.RESTException: Error occurred while processing POST",
            CATALOG,
        ),
        (
            "software.amazon.awssdk.core.exception.SdkClientException: Unable to execute HTTP",
            STORAGE,
        ),
        (
            "org.apache.kafka.common.errors.TimeoutException: ... java.net.SocketTimeoutException",
            KAFKA,
        ),
    ],
)
def test_java_clients_errors_through_py4j(text: str, service: str) -> None:
    fault = unanswered(RuntimeError(f"An error occurred while calling o77.append.\n: {text}"))
    assert fault is not None and fault.service == service


@pytest.mark.parametrize(
    "exc",
    [
        NoSuchTableError("no such table"),
        ValueError("Cannot write extra columns"),
        RuntimeError("An error occurred while calling o1.append.\n: AnalysisException: bad"),
    ],
)
def test_errors_that_are_not_the_networks_are_not_retried(exc: Exception) -> None:
    assert unanswered(exc) is None


class Clock:
    """Monotonic time that moves only when someone sleeps."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_patience_retries_until_the_call_succeeds_and_counts_each_retry() -> None:
    clock, seen = Clock(), []
    patience = Patience(30.0, on_retry=seen.append, clock=clock, sleep=clock.sleep)
    answers = iter([requests.ConnectionError("reset"), requests.ReadTimeout("slow"), "ok"])

    def call() -> str:
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    assert patience.call(call, "reading") == "ok"
    assert seen == [CATALOG, CATALOG]
    assert 0 < clock.now < 5


def test_patience_stops_at_progress_timeout_naming_the_service_and_fault() -> None:
    clock = Clock()
    patience = Patience(
        20.0, endpoints={CATALOG: "http://127.0.0.1:8181"}, clock=clock, sleep=clock.sleep
    )

    def black_hole() -> None:
        raise requests.ReadTimeout("Read timed out. (read timeout=30)")

    with pytest.raises(Stalled) as raised:
        patience.call(black_hole, "planning batch 3")
    message = str(raised.value)
    assert "the catalog at http://127.0.0.1:8181 did not answer while planning batch 3" in message
    assert "ReadTimeout" in message
    assert 20.0 <= clock.now < 26.0


def test_progress_starts_the_bound_again() -> None:
    clock = Clock()
    patience = Patience(10.0, clock=clock, sleep=clock.sleep)
    for _ in range(3):
        patience.failed(Unanswered(CATALOG, "reset"), "x")
    assert patience.failing_for_s > 0
    patience.progressed()
    assert patience.failing_for_s == 0 and patience.last is None


def test_other_errors_pass_through_at_once() -> None:
    clock = Clock()
    patience = Patience(10.0, clock=clock, sleep=clock.sleep)

    def refused() -> None:
        raise NoSuchTableError("gone")

    with pytest.raises(NoSuchTableError):
        patience.call(refused, "reading")
    assert clock.now == 0


def test_a_retry_library_that_gave_up_is_judged_by_its_last_error() -> None:
    import tenacity

    @tenacity.retry(stop=tenacity.stop_after_attempt(2), wait=tenacity.wait_none())
    def flaky() -> None:
        raise requests.ConnectionError("reset")

    with pytest.raises(tenacity.RetryError) as raised:
        flaky()
    fault = unanswered(raised.value)
    assert fault is not None and fault.service == CATALOG


def test_glue_requests_without_an_answer_are_the_catalogs_and_a_refusal_is_not() -> None:
    from botocore.exceptions import ClientError, EndpointConnectionError, ReadTimeoutError

    down = EndpointConnectionError(endpoint_url="http://127.0.0.1:4566")
    assert unanswered(down) == Unanswered(CATALOG, unanswered(down).reason)  # type: ignore[union-attr]
    lost = ReadTimeoutError(endpoint_url="http://127.0.0.1:4566")
    assert unanswered(lost) is not None and unanswered(lost).service == CATALOG  # type: ignore[union-attr]

    def error(code: str, status: int) -> ClientError:
        meta = {"HTTPStatusCode": status}
        return ClientError({"Error": {"Code": code}, "ResponseMetadata": meta}, "UpdateTable")  # type: ignore[typeddict-item]

    assert unanswered(error("InternalServiceException", 500)) is not None
    # Glue's refusal of a raced commit is an answer: the caller reads the table, as after any.
    assert unanswered(error("ConcurrentModificationException", 400)) is None
