"""Splitting SQL scripts into statements."""

from __future__ import annotations

from icefloe.harness.stack.sql import split_statements


def test_split_respects_quotes() -> None:
    script = "SELECT 'a;b'; SELECT \"x;y\" FROM t;; \n"
    assert split_statements(script) == ["SELECT 'a;b'", 'SELECT "x;y" FROM t']


def test_reference_ddl_quotes_keywords() -> None:
    from icefloe.harness.stack.tables import create_table_sql

    ddl = create_table_sql("lake.s.t")
    assert '"timestamp" TIMESTAMP(6) WITH TIME ZONE' in ddl
    assert "partitioning = ARRAY['day(timestamp)']" in ddl
