"""pytest plugin: the running stack as a session fixture, and factories for per-test names.

`stack` starts the stack if it is not already healthy (provisioning first) and stops it
at the end of the session only if it started it, so `make up` followed by `make test` reuses
a running stack. Factories give every test its own topic, schema and table names, so tests
never share state. Set ICEFLOE_KEEP_STACK=1 to leave a stack started by the tests running.

A test that asks for the stack (directly or through another fixture) must be marked
`integration` or `scenario`: an unmarked one fails before its fixtures are set up, so
`make test-unit` never starts a stack behind anyone's back.
`toxiproxy` gives a test the stack's optional Toxiproxy (faults on the loader's wire), reset.
`--backend containers` (or ICEFLOE_BACKEND=containers) runs the same stack as containers; tests
marked `containers` run only then.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from icefloe.harness.stack.keys import TRINO_CATALOG as LAKE
from icefloe.harness.stack.tables import create_table_sql

KEEP_STACK = "ICEFLOE_KEEP_STACK"
STACK_MARKERS = ("integration", "scenario")
MARKERS = {
    "integration": "needs the local stack (Kafka, MinIO, REST catalog, Trino)",
    "scenario": "runs a scenario end to end on the local stack",
    "containers": "needs a container engine (podman or Docker) and the locally built images",
}
"""The markers the plugin reads, registered by it (a user's ``--strict-markers`` knows them)."""


def pytest_configure(config: pytest.Config) -> None:
    for name, meaning in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {meaning}")


def unique_name(prefix: str) -> str:
    """A lower-case identifier unique to this call, valid for Kafka, Trino and Iceberg."""
    return f"{prefix}_{uuid.uuid4().hex[:10]}"


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Fail an unmarked test that asks for the stack, before the stack could start."""
    if "stack" not in getattr(item, "fixturenames", ()):
        return
    if not any(item.get_closest_marker(m) for m in STACK_MARKERS):
        pytest.fail(
            f"{item.nodeid} uses the stack but is not marked "
            f"{' or '.join(STACK_MARKERS)}: mark it (pytestmark = pytest.mark.integration), "
            "so that `make test-unit` does not start a stack",
            pytrace=False,
        )


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--backend",
        choices=("local", "containers"),
        default=None,
        help="run the stack as local processes or as containers ($ICEFLOE_BACKEND, else local)",
    )


def backend_of(config: pytest.Config) -> str:
    """The session's backend: --backend, else $ICEFLOE_BACKEND, else local."""
    from icefloe.harness.stack.backends import ENV_BACKEND

    return str(config.getoption("--backend") or os.environ.get(ENV_BACKEND) or "local")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked `containers` run only on the containers backend."""
    if backend_of(config) == "containers":
        return
    skip = pytest.mark.skip(reason="needs the containers backend (--backend containers)")
    for item in items:
        if item.get_closest_marker("containers") is not None:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def stack(pytestconfig: pytest.Config) -> Iterator[Any]:
    """The stack on the session's backend, started for the session if it was not running."""
    from icefloe.harness.stack.backends import make_stack, prepare
    from icefloe.harness.stack.config import load as load_config

    running = make_stack(load_config(), backend_of(pytestconfig))
    started_here = False
    if not running.healthy():
        prepare(running)
        running.up()
        started_here = True
    yield running
    if started_here and os.environ.get(KEEP_STACK) != "1":
        running.down()


@pytest.fixture(scope="module")
def toxiproxy_service(stack: Any) -> Iterator[Any]:
    """The stack's Toxiproxy (built on first use), started for the test module if it was not
    running, with its three proxies; stopped after the module only if started here (it starts
    in about half a second, and the other modules see the stack's four services alone)."""
    from icefloe.harness.stack.toxiproxy import proxy_specs

    service = getattr(stack, "toxiproxy", None)
    if service is None:
        pytest.skip("Toxiproxy runs on the local backend only")
    started_here = not service.process.is_running()
    service.start()
    service.client().populate(proxy_specs(stack.config))
    yield service
    if started_here and os.environ.get(KEEP_STACK) != "1":
        service.stop()


@pytest.fixture(scope="module")
def glue_service(stack: Any) -> Iterator[Any]:
    """The stack's Glue-compatible catalog (installed on first use), started for the test
    module if it was not running; stopped after the module only if started here."""
    service = getattr(stack, "glue", None)
    if service is None and getattr(stack.catalog, "kind", None) == "glue":
        service = stack.catalog  # the stack's own catalog
    if service is None:
        pytest.skip("the Glue-compatible catalog runs on the local backend only")
    started_here = not service.process.is_running()
    service.start()
    yield service
    if started_here and os.environ.get(KEEP_STACK) != "1":
        service.stop()


@pytest.fixture
def toxiproxy(toxiproxy_service: Any) -> Iterator[Any]:
    """The stack's Toxiproxy with no toxic and every proxy enabled, before and after the test.

    Point the loader under test at ``toxiproxy.proxied_endpoints()``; add faults with
    ``toxiproxy.client()`` or the ``wire_*`` fault kinds.
    """
    client = toxiproxy_service.client()
    client.reset()
    yield toxiproxy_service
    client.reset()


@pytest.fixture
def trino(stack: Any) -> Iterator[Any]:
    """A Trino DB-API connection to the `lake` catalog."""
    conn = stack.trino_connection()
    yield conn
    conn.close()


@pytest.fixture
def iceberg_catalog(stack: Any) -> Any:
    """A pyiceberg catalog on the stack's REST catalog."""
    return stack.pyiceberg_catalog()


@pytest.fixture
def kafka_admin(stack: Any) -> Any:
    """A confluent-kafka AdminClient on the stack's broker."""
    return stack.kafka_admin()


@pytest.fixture
def topic_factory(stack: Any) -> Iterator[Callable[..., str]]:
    """Create topics with fresh names; they are deleted after the test."""
    from confluent_kafka.admin import NewTopic

    admin = stack.kafka_admin()
    created: list[str] = []

    def make(partitions: int = 1, prefix: str = "t") -> str:
        name = unique_name(prefix)
        futures = admin.create_topics([NewTopic(name, partitions, 1)], operation_timeout=30)
        futures[name].result(timeout=30)
        created.append(name)
        return name

    yield make
    if created:
        for future in admin.delete_topics(created, operation_timeout=30).values():
            with contextlib.suppress(Exception):  # a test may have deleted it already
                future.result(timeout=30)


@pytest.fixture
def schema_factory(stack: Any) -> Iterator[Callable[..., str]]:
    """Create Trino schemas in `lake` with fresh names; dropped (with their tables) afterwards."""
    conn = stack.trino_connection()
    cur = conn.cursor()
    created: list[str] = []

    def make(prefix: str = "s") -> str:
        name = unique_name(prefix)
        cur.execute(f"CREATE SCHEMA {LAKE}.{name}")
        cur.fetchall()
        created.append(name)
        return name

    yield make
    for schema in created:
        try:
            cur.execute(f"SHOW TABLES FROM {LAKE}.{schema}")
            for (table,) in cur.fetchall():
                cur.execute(f'DROP TABLE IF EXISTS {LAKE}.{schema}."{table}"')
                cur.fetchall()
            cur.execute(f"DROP SCHEMA IF EXISTS {LAKE}.{schema}")
            cur.fetchall()
        except Exception:  # the stack may be down after a failed fault test
            pass
    conn.close()


@pytest.fixture
def table_factory(stack: Any, schema_factory: Callable[..., str]) -> Callable[..., str]:
    """Create tables of the reference shape (or given DDL columns); returns `lake.schema.table`."""
    conn = stack.trino_connection()

    def make(extra_columns: tuple[tuple[str, str], ...] = (), schema: str | None = None) -> str:
        qualified = f"{LAKE}.{schema or schema_factory()}.{unique_name('tbl')}"
        cur = conn.cursor()
        cur.execute(create_table_sql(qualified, extra_columns))
        cur.fetchall()
        return qualified

    return make
