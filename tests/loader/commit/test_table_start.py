"""The table at start-up: a catalog that does not answer is waited for; a missing table is named.

No stack: the unreachable catalog is a closed port on loopback (pyiceberg's real client fails
against it), the missing table a catalog object that says so.
"""

from __future__ import annotations

import socket
import threading
import time

import pytest
from pyiceberg.exceptions import NoSuchTableError

from icefloe.loader.commit import table as table_module
from icefloe.loader.commit.table import TableView
from icefloe.loader.config import CatalogConfig, KafkaConfig, LoaderConfig, TableId
from icefloe.loader.errors import CatalogUnavailable, ConcurrentLoader, TableNotFound


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def view(uri: str) -> TableView:
    return TableView(
        LoaderConfig(
            table=TableId.parse("lake.s.t"),
            kafka=KafkaConfig(bootstrap="127.0.0.1:1", topics=("t",)),
            catalog=CatalogConfig(uri=uri),
        )
    )


@pytest.fixture(autouse=True)
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(table_module, "CATALOG_RETRY_S", 0.05)


def test_a_catalog_that_never_answers_stops_the_start_after_the_wait_naming_it() -> None:
    uri = f"http://127.0.0.1:{closed_port()}"
    began = time.monotonic()
    with pytest.raises(CatalogUnavailable) as raised:
        view(uri).take_over("me", 1000, wait_s=0.5)
    assert time.monotonic() - began >= 0.5
    message = str(raised.value)
    assert uri in message and "waited 0.5 s" in message
    assert "Connection refused" in message
    assert "\n" not in message


def test_a_stop_request_ends_the_wait_at_once() -> None:
    stop = threading.Event()
    stop.set()
    began = time.monotonic()
    with pytest.raises(CatalogUnavailable):
        view(f"http://127.0.0.1:{closed_port()}").take_over("me", 1000, wait_s=60, stop=stop)
    assert time.monotonic() - began < 10


def test_the_take_over_goes_on_once_the_catalog_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    import requests

    v = view("http://127.0.0.1:1")
    calls: list[str] = []

    def claim(instance: str, ttl_ms: int) -> None:
        calls.append(instance)
        if len(calls) < 3:
            raise requests.ConnectionError("connection refused")

    monkeypatch.setattr(v, "claim", claim)
    v.take_over("me", 1000, wait_s=30)
    assert calls == ["me", "me", "me"]


def test_storage_that_does_not_answer_is_waited_for_and_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # What pyarrow's S3 client raises when MinIO is down during the take-over's commit.
    down = OSError(
        "When reading information for key 'ns/t/metadata/snap-1.avro' in bucket 'warehouse': "
        "AWS Error NETWORK_CONNECTION during HeadObject operation: curlCode: 7, "
        "Couldn't connect to server"
    )
    denied = OSError("AWS Error ACCESS_DENIED during HeadObject operation")
    v = view("http://127.0.0.1:1")
    calls: list[str] = []

    def claim(instance: str, ttl_ms: int) -> None:
        calls.append(instance)
        raise down if len(calls) < 100 else denied

    monkeypatch.setattr(v, "claim", claim)
    with pytest.raises(CatalogUnavailable, match=r"the table's storage .* NETWORK_CONNECTION"):
        v.take_over("me", 1000, wait_s=1.0)
    assert len(calls) >= 2
    calls[:] = ["x"] * 99  # the next call is refused: not a network error, so not waited out
    with pytest.raises(OSError, match="ACCESS_DENIED"):
        v.take_over("me", 1000, wait_s=30)
    assert len(calls) == 100


def test_other_errors_are_not_waited_out(monkeypatch: pytest.MonkeyPatch) -> None:
    v = view("http://127.0.0.1:1")
    calls: list[str] = []

    def claim(instance: str, ttl_ms: int) -> None:
        calls.append(instance)
        raise ConcurrentLoader("lake.s.t", "other", None)

    monkeypatch.setattr(v, "claim", claim)
    with pytest.raises(ConcurrentLoader):
        v.take_over("me", 1000, wait_s=30)
    assert calls == ["me"]


def test_a_missing_table_is_named_with_what_to_do() -> None:
    class Catalog:
        def load_table(self, identifier: tuple[str, str]) -> None:
            raise NoSuchTableError(f"Table does not exist: {identifier}")

    v = view("http://catalog.example")
    v._catalog = Catalog()
    with pytest.raises(TableNotFound, match=r"lake\.s\.t does not exist .*http://catalog"):
        v.load()


def test_the_state_read_after_the_take_over_waits_for_the_catalog_too(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import requests

    v = view("http://127.0.0.1:1")
    reads: list[int] = []

    def state() -> str:
        reads.append(1)
        if len(reads) < 3:
            raise requests.ConnectionError("Remote end closed connection without response")
        return "the state"

    monkeypatch.setattr(v, "state", state)
    assert v.read_state(wait_s=30) == "the state"
    assert len(reads) == 3
    reads.clear()
    with pytest.raises(CatalogUnavailable, match="Remote end closed"):
        v.read_state(wait_s=0.0)
