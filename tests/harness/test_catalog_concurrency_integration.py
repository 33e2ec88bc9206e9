"""Concurrent commits through the REST catalog: SQLite's single writer must not fail them.

Without a busy timeout the catalog answered SQLITE_BUSY ("database is locked") to concurrent
commits, which failed Trino's INSERTs and the loader's appends at once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

pytestmark = pytest.mark.integration


def test_concurrent_commits_all_succeed(stack: Any, schema_factory: Callable[..., str]) -> None:
    schema = schema_factory()
    writers, inserts = 6, 5
    errors: list[str] = []

    def write(i: int) -> None:
        cur = stack.trino_connection().cursor()
        try:
            cur.execute(f"CREATE TABLE lake.{schema}.t{i} (a BIGINT)")
            cur.fetchall()
            for j in range(inserts):
                cur.execute(f"INSERT INTO lake.{schema}.t{i} VALUES ({j})")
                cur.fetchall()
        except Exception as exc:  # collected and asserted below
            errors.append(f"writer {i}: {exc}")

    threads = [threading.Thread(target=write, args=(i,)) for i in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    assert errors == []
    cur = stack.trino_connection().cursor()
    for i in range(writers):
        cur.execute(f"SELECT count(*) FROM lake.{schema}.t{i}")
        assert cur.fetchall() == [[inserts]]
