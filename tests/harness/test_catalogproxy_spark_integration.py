"""Spark's Iceberg REST client (Java) through the catalog fault proxy: what it does by itself.

One Spark session (local, the provisioned jars) whose catalog ``px`` is the REST catalog
behind the proxy, with no timeout or retry setting of ours: the client's own behaviour. Each
case runs one ``INSERT`` with a fault on the commit (or on the table loads), then reads the
table directly to see whether the commit landed. A zero delay on every later request of the
same kind counts what the client sent again. The outcomes asserted here are the Java rows of
docs/faults.md.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from icefloe.harness.stack import keys
from icefloe.harness.stack.catalogproxy import CatalogProxy, Rule

# py4j leaves the sockets of its finished callback connections to the garbage collector (as
# in tests/loader/conftest.py): that ResourceWarning is py4j's, not the proxy's.
pytestmark = [
    pytest.mark.integration,
    pytest.mark.filterwarnings(
        "ignore:Exception ignored in. <socket.socket:pytest.PytestUnraisableExceptionWarning"
    ),
]

CATALOG = "px"
TIMED = "pxt"
"""The same catalog with the REST client's timeouts set (2 s to connect, 2 s to read)."""
TIMEOUT_MS = 2000


@pytest.fixture(scope="module")
def proxy(stack: Any) -> Iterator[CatalogProxy]:
    with CatalogProxy(stack.catalog_uri, seed=1) as running:
        yield running


@pytest.fixture(scope="module")
def spark(stack: Any, proxy: CatalogProxy, tmp_path_factory: pytest.TempPathFactory) -> Any:
    from icefloe.harness.loaders.config import provisioned_spark

    runtime = provisioned_spark(stack.config.cache_dir)
    os.environ["JAVA_HOME"] = str(runtime.java_home)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    scratch: Path = tmp_path_factory.mktemp("spark")
    builder: Any = SparkSession.builder.master("local[1]")
    for key, value in {
        "spark.driver.extraClassPath": os.pathsep.join(runtime.jars),
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.local.dir": str(scratch),
        "spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
    }.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("OFF")
    for name, extra in {
        CATALOG: {},
        TIMED: {
            "rest.client.socket-timeout-ms": str(TIMEOUT_MS),
            "rest.client.connection-timeout-ms": str(TIMEOUT_MS),
        },
    }.items():
        _define(session, stack, proxy, name, extra)
    yield session
    session.stop()


def _define(
    session: Any, stack: Any, proxy: CatalogProxy, name: str, extra: dict[str, str]
) -> None:
    base = f"spark.sql.catalog.{name}"
    for key, value in {
        base: "org.apache.iceberg.spark.SparkCatalog",
        f"{base}.type": "rest",
        f"{base}.uri": proxy.url,
        f"{base}.cache-enabled": "false",
        f"{base}.io-impl": "org.apache.iceberg.aws.s3.S3FileIO",
        f"{base}.client.region": keys.S3_REGION,
        f"{base}.s3.path-style-access": "true",
        f"{base}.s3.endpoint": stack.s3_endpoint,
        f"{base}.s3.access-key-id": stack.credentials.access_key,
        f"{base}.s3.secret-access-key": stack.credentials.secret_key.reveal(),
        f"{base}.warehouse": f"s3://{keys.WAREHOUSE_BUCKET}/",
        **{f"{base}.{key}": value for key, value in extra.items()},
    }.items():
        session.conf.set(key, value)


def java_chain(error: BaseException) -> list[str]:
    """The Java exception classes behind a Spark error, outermost first (simple names)."""
    names = []
    throwable = getattr(error, "java_exception", None) or getattr(error, "_origin", None)
    while throwable is not None:
        names.append(str(throwable.getClass().getSimpleName()))
        throwable = throwable.getCause()
    return names


@dataclass
class Outcome:
    """What one faulted INSERT did."""

    errors: list[str]
    landed: int
    resent: int
    seconds: float
    fired: int


class Table:
    """A table created directly, written by Spark through the proxy."""

    def __init__(self, stack: Any, spark: Any, proxy: CatalogProxy, namespace: str) -> None:
        import pyarrow as pa

        self.direct = stack.pyiceberg_catalog()
        self.spark = spark
        self.proxy = proxy
        self.ident = (namespace, "commits")
        schema = pa.schema([pa.field("id", pa.int64(), nullable=False)])
        self.direct.create_table(self.ident, schema=schema)
        self.rows = 0

    def snapshots(self) -> int:
        return len(self.direct.load_table(self.ident).metadata.snapshots)

    def insert(self, rule: Rule, catalog: str = CATALOG) -> Outcome:
        """One INSERT under ``rule`` (and a counter of the requests it sends again)."""
        fault = self.proxy.add(rule)
        counter = self.proxy.add(
            Rule("delay", method=rule.method, path=rule.path, times=None, name=f"n-{fault.name}")
        )
        before = self.snapshots()
        self.rows += 1
        began = time.monotonic()
        errors: list[str] = []
        try:
            self.spark.sql(
                f"INSERT INTO {catalog}.{self.ident[0]}.{self.ident[1]} VALUES ({self.rows})"
            ).collect()
        except Exception as exc:  # what the client raised is the outcome
            errors = java_chain(exc) or [type(exc).__name__]
        took = time.monotonic() - began
        self.proxy.remove(fault.name)
        self.proxy.remove(counter.name)
        resent = len(self.proxy.fired_by(counter.name))
        fired = len(self.proxy.fired_by(fault.name))
        return Outcome(errors, self.snapshots() - before, resent, took, fired)


@pytest.fixture
def table(stack: Any, spark: Any, proxy: CatalogProxy, schema_factory: Callable[..., str]) -> Table:
    return Table(stack, spark, proxy, schema_factory("cpj"))


def test_a_plain_insert_passes_through(table: Table) -> None:
    outcome = table.insert(Rule("delay"))
    assert (outcome.errors, outcome.landed) == ([], 1)


def test_a_lost_answer_after_the_commit_is_an_error_although_it_landed(table: Table) -> None:
    outcome = table.insert(Rule("drop_after_forward"))
    assert "RESTException" in outcome.errors and "NoHttpResponseException" in outcome.errors
    assert (outcome.landed, outcome.resent) == (1, 0)  # not resent, and it did land


@pytest.mark.parametrize("status", [500, 502, 504])
def test_5xx_after_the_commit_is_reconciled_by_the_client(table: Table, status: int) -> None:
    # Iceberg 1.11 reads the table back after an unknown outcome of a simple append and
    # finds its snapshot: Spark reports success, and the POST was not sent again.
    outcome = table.insert(Rule("status_after_forward", status=status))
    assert (outcome.errors, outcome.landed, outcome.resent) == ([], 1, 0)


def test_503_without_retry_after_is_an_unknown_outcome(table: Table) -> None:
    outcome = table.insert(Rule("refuse"))
    assert "CommitStateUnknownException" in outcome.errors
    assert (outcome.landed, outcome.resent) == (0, 0)


def test_503_with_retry_after_is_resent_by_the_client(table: Table) -> None:
    outcome = table.insert(Rule("refuse", retry_after_s=1))
    assert (outcome.errors, outcome.landed, outcome.resent) == ([], 1, 1)
    assert outcome.seconds >= 1.0


def test_a_refused_connection_on_the_commit_is_an_error_and_not_applied(table: Table) -> None:
    outcome = table.insert(Rule("refuse", drop=True))
    assert "NoHttpResponseException" in outcome.errors
    assert (outcome.landed, outcome.resent) == (0, 0)


def test_a_black_hole_holds_the_commit_until_the_proxy_lets_go(table: Table) -> None:
    # No socket timeout unless configured: the client waits as long as the connection lives.
    outcome = table.insert(Rule("black_hole", hold_s=4.0))
    assert "NoHttpResponseException" in outcome.errors
    assert outcome.seconds >= 4.0
    assert (outcome.landed, outcome.resent) == (0, 0)


def test_a_late_commit_is_unknown_first_and_lands_afterwards(table: Table) -> None:
    rule = Rule("deliver_late", late_s=3.0, name="late")
    outcome = table.insert(rule)
    assert "CommitStateUnknownException" in outcome.errors  # its read-back found nothing yet
    assert outcome.landed == 0
    (fired,) = table.proxy.wait_fired(1, timeout_s=30, rule="late")
    assert (fired.applied, fired.status) == (True, 200)
    assert table.snapshots() == 1


@pytest.mark.parametrize(
    "rule",
    [
        Rule("refuse", method="GET", drop=True),
        Rule("status_after_forward", method="GET", status=502),
        Rule("refuse", method="GET"),
        Rule("black_hole", method="GET", hold_s=3.0),
    ],
    ids=["dropped", "502", "503", "black-hole-3s"],
)
def test_a_failed_table_load_is_retried_by_the_client(table: Table, rule: Rule) -> None:
    outcome = table.insert(rule)
    assert (outcome.errors, outcome.landed, outcome.fired) == ([], 1, 1)
    assert outcome.resent >= 1  # the load again (among the write's other loads)


def test_with_a_read_timeout_a_black_holed_commit_fails_in_time(table: Table) -> None:
    outcome = table.insert(Rule("black_hole", hold_s=30.0), catalog=TIMED)
    assert "SocketTimeoutException" in outcome.errors, outcome.errors
    assert outcome.seconds < 10.0
    assert (outcome.landed, outcome.resent) == (0, 0)


def test_with_a_read_timeout_a_black_holed_load_is_not_retried(table: Table) -> None:
    # A socket timeout is an InterruptedIOException, which the client's retry strategy never
    # retries, even for an idempotent GET: the INSERT fails.
    outcome = table.insert(Rule("black_hole", method="GET", hold_s=30.0), catalog=TIMED)
    assert "SocketTimeoutException" in outcome.errors, outcome.errors
    assert outcome.seconds < 10.0
    assert outcome.landed == 0
