"""The pyiceberg REST catalog with timeouts, and the private pyiceberg names the loader uses.

No stack: a socket that accepts and never answers stands for a half-open catalog. These tests
fail loudly when a pyiceberg upgrade moves a name ``loader.io.icebergclient`` relies on.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest
import requests

from icefloe.loader.config import CatalogConfig
from icefloe.loader.io.icebergclient import commit_transaction_once, rest_catalog


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts connections and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
                held.append(conn)
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    server.close()


def test_a_catalog_that_never_answers_times_out(silent_port: int) -> None:
    cat = CatalogConfig(uri=f"http://127.0.0.1:{silent_port}", read_timeout=0.5)
    started = time.monotonic()
    with pytest.raises(requests.ReadTimeout):
        rest_catalog("lake", cat)  # fetches /v1/config in its constructor
    assert time.monotonic() - started < 5


def test_a_transaction_is_committed_once_with_its_requirements_and_updates() -> None:
    from pyiceberg.io.pyarrow import PyArrowFileIO
    from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC
    from pyiceberg.schema import Schema
    from pyiceberg.table import Table
    from pyiceberg.table.metadata import new_table_metadata
    from pyiceberg.table.sorting import UNSORTED_SORT_ORDER
    from pyiceberg.table.update import AssertRefSnapshotId, SetPropertiesUpdate
    from pyiceberg.types import LongType, NestedField

    schema = Schema(NestedField(1, "id", LongType(), required=False))
    meta = new_table_metadata(
        schema, UNPARTITIONED_PARTITION_SPEC, UNSORTED_SORT_ORDER, "s3://w/t", {}
    )
    table = Table(("s", "t"), meta, "s3://w/t/m.json", PyArrowFileIO(), None)  # type: ignore[arg-type]
    tx = table.transaction()
    tx.set_properties({"k": "v"})
    calls = []

    class Catalog:
        def commit_table(self, t: object, requirements: tuple, updates: tuple) -> str:
            calls.append((t, requirements, updates))
            return "done"

    assert commit_transaction_once(Catalog(), table, tx) == "done"
    [(committed, requirements, updates)] = calls
    assert committed is table
    assert all(isinstance(r, AssertRefSnapshotId) for r in requirements)
    assert updates == (SetPropertiesUpdate(updates={"k": "v"}),)


def test_the_session_pyiceberg_builds_is_where_the_timeout_goes() -> None:
    from pyiceberg.catalog.rest import RestCatalog

    # rest_catalog overrides this method; if pyiceberg renames it, requests run without bounds.
    assert "_create_session" in vars(RestCatalog)
