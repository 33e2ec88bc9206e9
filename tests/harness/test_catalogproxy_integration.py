"""pyiceberg against the real REST catalog through the fault proxy: what a client is told, and
what the catalog did.

Each test commits one append through the proxy with a fault on the commit request, then reads
the table directly (not through the proxy) to see whether the commit landed. A second rule
behind the fault, a zero delay on every commit, counts the commit requests the fault let
through: the client's own retries. The exceptions named here are the rows of docs/faults.md.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from icefloe.harness.stack import keys
from icefloe.harness.stack.catalogproxy import CatalogProxy, Rule

pytestmark = pytest.mark.integration


@pytest.fixture
def proxy(stack: Any) -> Iterator[CatalogProxy]:
    with CatalogProxy(stack.catalog_uri, seed=1) as running:
        yield running


def _catalog(stack: Any, uri: str, **extra: str) -> Any:
    from pyiceberg.catalog import load_catalog

    return load_catalog(
        keys.TRINO_CATALOG,
        **{
            "type": "rest",
            keys.PYICEBERG_URI: uri,
            keys.PYICEBERG_S3_ENDPOINT: stack.s3_endpoint,
            keys.PYICEBERG_S3_ACCESS_KEY: stack.credentials.access_key,
            keys.PYICEBERG_S3_SECRET_KEY: stack.credentials.secret_key.reveal(),
            keys.PYICEBERG_S3_REGION: keys.S3_REGION,
            **extra,
        },
    )


class Table:
    """One table, written through the proxy and read directly."""

    def __init__(self, stack: Any, proxy: CatalogProxy, namespace: str) -> None:
        import pyarrow as pa

        self.direct = _catalog(stack, stack.catalog_uri)
        self.proxied = _catalog(stack, proxy.url)
        self.proxy = proxy
        self.ident = (namespace, "commits")
        self.schema = pa.schema([pa.field("id", pa.int64(), nullable=False)])
        self.direct.create_table(self.ident, schema=self.schema)
        self.rows = 0

    def snapshots(self) -> int:
        return len(self.direct.load_table(self.ident).metadata.snapshots)

    def append(self) -> BaseException | None:
        """Append one row through the proxy; the exception the client raised, if any."""
        import pyarrow as pa

        table = self.proxied.load_table(self.ident)
        self.rows += 1
        try:
            table.append(pa.table({"id": [self.rows]}, schema=self.schema))
        except Exception as exc:  # the client's answer is what the test looks at
            return exc
        return None

    def fault(self, rule: Rule) -> tuple[BaseException | None, int, int]:
        """Commit once under ``rule``: the client's exception, the snapshots the commit added
        right after, and the commit requests the client sent after the faulted one."""
        fault = self.proxy.add(rule)
        counter = self.proxy.add(Rule("delay", times=None, name=f"count-{fault.name}"))
        before = self.snapshots()
        error = self.append()
        added = self.snapshots() - before
        self.proxy.remove(fault.name)
        self.proxy.remove(counter.name)
        return error, added, len(self.proxy.fired_by(counter.name))


@pytest.fixture
def table(stack: Any, proxy: CatalogProxy, schema_factory: Callable[..., str]) -> Table:
    return Table(stack, proxy, schema_factory("cp"))


def _name(error: BaseException | None) -> str:
    return "none" if error is None else type(error).__name__


def test_a_plain_commit_passes_through(table: Table) -> None:
    assert table.append() is None
    assert table.snapshots() == 1
    assert table.proxy.fired == ()


def test_drop_after_forward_lands_although_the_client_got_an_error(table: Table) -> None:
    import requests

    error, added, retries = table.fault(Rule("drop_after_forward"))
    assert isinstance(error, requests.exceptions.ConnectionError), _name(error)
    assert (added, retries) == (1, 0)
    (fired,) = [f for f in table.proxy.fired if f.mode == "drop_after_forward"]
    assert (fired.applied, fired.status, fired.answered) == (True, 200, None)


@pytest.mark.parametrize("status", [500, 502, 504])
def test_5xx_after_forward_lands_although_the_client_was_told_unknown(
    table: Table, status: int
) -> None:
    from pyiceberg.exceptions import CommitStateUnknownException

    error, added, retries = table.fault(Rule("status_after_forward", status=status))
    assert isinstance(error, CommitStateUnknownException), _name(error)
    assert (added, retries) == (1, 0)
    (fired,) = [f for f in table.proxy.fired if f.mode == "status_after_forward"]
    assert (fired.applied, fired.status, fired.answered) == (True, 200, status)


@pytest.mark.parametrize("retry_after_s", [None, 1])
def test_refuse_503_does_not_apply(table: Table, retry_after_s: int | None) -> None:
    from pyiceberg.exceptions import ServiceUnavailableError

    error, added, retries = table.fault(Rule("refuse", retry_after_s=retry_after_s))
    assert isinstance(error, ServiceUnavailableError), _name(error)
    assert (added, retries) == (0, 0)
    (fired,) = [f for f in table.proxy.fired if f.mode == "refuse"]
    assert (fired.applied, fired.answered) == (False, 503)


def test_refuse_by_dropping_does_not_apply(table: Table) -> None:
    import requests

    error, added, retries = table.fault(Rule("refuse", drop=True))
    assert isinstance(error, requests.exceptions.ConnectionError), _name(error)
    assert (added, retries) == (0, 0)


def test_a_delayed_commit_lands_and_the_client_waits(table: Table) -> None:
    began = time.monotonic()
    error, added, _ = table.fault(Rule("delay", delay_ms=800, answer_delay_ms=700))
    assert error is None and added == 1
    assert time.monotonic() - began >= 1.5


def test_a_black_hole_holds_the_client_until_the_proxy_lets_go(table: Table) -> None:
    import requests

    began = time.monotonic()
    error, added, retries = table.fault(Rule("black_hole", hold_s=3.0))
    held = time.monotonic() - began
    # pyiceberg sets no timeout of its own: it waits as long as the connection stays open.
    assert isinstance(error, requests.exceptions.ConnectionError), _name(error)
    assert held >= 3.0
    assert (added, retries) == (0, 0)


def test_deliver_late_answers_504_and_the_commit_lands_seconds_later(table: Table) -> None:
    from pyiceberg.exceptions import CommitStateUnknownException

    rule = table.proxy.add(Rule("deliver_late", late_s=3.0))
    before = table.snapshots()
    began = time.monotonic()
    error = table.append()
    assert time.monotonic() - began < 2.5
    assert isinstance(error, CommitStateUnknownException), _name(error)
    assert table.snapshots() == before  # not yet
    (fired,) = table.proxy.wait_fired(1, timeout_s=30, rule=rule.name)
    assert (fired.applied, fired.status, fired.answered) == (True, 200, 504)
    assert table.snapshots() == before + 1
    assert fired.seconds >= 3.0


@pytest.mark.parametrize(
    ("rule", "error"),
    [
        (Rule("refuse", method="GET", drop=True), "ConnectionError"),
        (Rule("status_after_forward", method="GET", status=502), "ServerError"),
        (Rule("refuse", method="GET", retry_after_s=1), "ServiceUnavailableError"),
    ],
    ids=["dropped", "502", "503"],
)
def test_a_failed_table_load_is_not_retried_by_pyiceberg(
    table: Table, rule: Rule, error: str
) -> None:
    fault = table.proxy.add(rule)
    counter = table.proxy.add(Rule("delay", method="GET", times=None, name="count"))
    with pytest.raises(Exception) as caught:  # the class is the finding
        table.proxied.load_table(table.ident)
    assert type(caught.value).__name__ == error
    assert len(table.proxy.fired_by(fault.name)) == 1
    assert table.proxy.fired_by(counter.name) == []  # not sent again


def test_pyiceberg_has_no_timeout_setting(stack: Any, table: Table, proxy: CatalogProxy) -> None:
    import pyarrow as pa
    import requests

    # pyiceberg 0.12 passes no timeout to its requests session and reads no property for one:
    # a ``timeout`` property changes nothing, the commit waits for as long as the proxy holds.
    timed = _catalog(stack, proxy.url, timeout="1")
    proxy.add(Rule("black_hole", hold_s=4.0))
    writer = timed.load_table(table.ident)
    began = time.monotonic()
    with pytest.raises(requests.exceptions.ConnectionError):
        writer.append(pa.table({"id": [1]}, schema=table.schema))
    assert time.monotonic() - began >= 4.0
    assert table.snapshots() == 0
