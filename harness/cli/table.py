"""`icefloe table create|drop|show`: Iceberg tables through Trino, on the local stack.

`create` makes a table of the reference shape (the publisher's rows, partitioned by day of
`timestamp`, with the publisher's `event_id` so a table can be checked against a ledger),
creating its schema when needed; `show` prints its columns and its footprint (data files,
delete files, snapshots, bytes, rows).
"""

from __future__ import annotations

import argparse
from typing import Any

from icefloe.harness.console import print_table, say


def _stack(args: argparse.Namespace) -> Any:
    from icefloe.harness.cli.stack import open_stack

    return open_stack(args)


def _create(args: argparse.Namespace) -> int:
    from icefloe.harness.stack.tables import EVENT_ID_COLUMN, create_table_sql

    stack = _stack(args)
    catalog, schema, _name = _parts(args.table)
    statements = [
        f"CREATE SCHEMA IF NOT EXISTS {catalog}.{schema}",
        create_table_sql(
            args.table, () if args.no_event_id else EVENT_ID_COLUMN, if_not_exists=True
        ),
    ]
    for statement in statements:
        say(statement)
        stack.query(statement)
    say(f"table {args.table} ready")
    return 0


def _drop(args: argparse.Namespace) -> int:
    statement = f"DROP TABLE IF EXISTS {args.table}"
    say(statement)
    _stack(args).query(statement)
    return 0


def _show(args: argparse.Namespace) -> int:
    from icefloe.harness.maintenance import footprint

    stack = _stack(args)
    catalog, schema, name = _parts(args.table)
    columns = stack.query(
        f"SELECT column_name, data_type FROM {catalog}.information_schema.columns "
        f"WHERE table_schema = '{schema}' AND table_name = '{name}' ORDER BY ordinal_position"
    )
    print_table(("column", "type"), columns)
    seen = footprint(stack.query, args.table)
    print_table(
        ("data files", "delete files", "snapshots", "bytes", "rows"),
        [(seen.data_files, seen.delete_files, seen.snapshots, f"{seen.bytes:,}", seen.rows)],
    )
    return 0


def _parts(table: str) -> tuple[str, str, str]:
    parts = table.split(".")
    if len(parts) != 3 or not all(parts):
        raise ValueError(f"table {table!r} must be catalog.schema.table, e.g. lake.demo.events")
    return parts[0], parts[1], parts[2]


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``table`` and its sub-commands on the entry point's sub-parsers."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "table", help="create, drop and show Iceberg tables (through Trino)", description=__doc__
    )
    verbs = parser.add_subparsers(dest="verb", required=True)
    create = verbs.add_parser("create", help="a table of the reference shape (and its schema)")
    create.add_argument("table", help="catalog.schema.table, e.g. lake.demo.events")
    create.add_argument(
        "--no-event-id", action="store_true", help="without the publisher's event_id column"
    )
    create.set_defaults(func=_create)
    drop = verbs.add_parser("drop", help="drop a table and its data")
    drop.add_argument("table")
    drop.set_defaults(func=_drop)
    show = verbs.add_parser("show", help="columns, files, snapshots, bytes and rows")
    show.add_argument("table")
    show.set_defaults(func=_show)
    return parser
