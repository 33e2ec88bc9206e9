"""`make demo`: bring the stack up, create the reference table through Trino, insert and show rows.

Until the loader and publisher take over the walkthrough, the demo shows the lakehouse itself:
Trino DDL on the REST catalog, Parquet files in MinIO, and the same rows read back.
"""

from __future__ import annotations

from harness.console import say
from harness.reference import SAMPLE_ROWS_SQL, create_table_sql
from harness.sql import run_and_print
from harness.stack import Stack

_TABLE = "lake.demo.events"


def run_demo(stack: Stack) -> int:
    """Run the walkthrough on `stack`; returns the process exit code."""
    say("[bold]1. Start Kafka, MinIO, the Iceberg REST catalog and Trino[/]")
    stack.up()
    conn = stack.trino_connection()
    say(f"[bold]2. Create the reference table {_TABLE} through Trino[/]")
    run_and_print(conn, f"CREATE SCHEMA IF NOT EXISTS lake.demo; DROP TABLE IF EXISTS {_TABLE}")
    ddl = create_table_sql(_TABLE)
    say(ddl)
    run_and_print(conn, ddl)
    say("[bold]3. Insert three rows[/]")
    run_and_print(conn, f"INSERT INTO {_TABLE} VALUES {SAMPLE_ROWS_SQL}")
    say("[bold]4. Read them back[/]")
    run_and_print(
        conn,
        f'SELECT "bool", "integer", "string", integers, string_map, nested, "timestamp" '
        f'FROM {_TABLE} ORDER BY "timestamp"',
    )
    say("[bold]5. The Parquet files Trino wrote to MinIO, as the catalog lists them[/]")
    run_and_print(conn, 'SELECT file_path, record_count FROM "lake"."demo"."events$files"')
    say(
        '\nThe stack keeps running. Query it with `icefloe sql "..."`, see it with '
        "`icefloe status`, stop it with `make down` (or `icefloe down`)."
    )
    return 0
