"""Running SQL on the stack's Trino and printing what comes back."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from icefloe.harness.console import print_table


def split_statements(text: str) -> list[str]:
    """Split a script on semicolons outside quotes; empty statements are dropped."""
    statements: list[str] = []
    current: list[str] = []
    quote: str | None = None
    for ch in text:
        if quote:
            if ch == quote:
                quote = None
        elif ch in ("'", '"'):
            quote = ch
        elif ch == ";":
            statements.append("".join(current))
            current = []
            continue
        current.append(ch)
    statements.append("".join(current))
    return [s.strip() for s in statements if s.strip()]


def run(connection: Any, script: str) -> list[tuple[Sequence[str], list[Sequence[Any]]]]:
    """Run each statement of `script`; return (column names, rows) for each."""
    results: list[tuple[Sequence[str], list[Sequence[Any]]]] = []
    cursor = connection.cursor()
    for statement in split_statements(script):
        cursor.execute(statement)
        rows = cursor.fetchall()
        columns = [d[0] for d in cursor.description or []]
        results.append((columns, rows))
    return results


def run_and_print(connection: Any, script: str) -> None:
    """Run `script` and print every result as a table."""
    for columns, rows in run(connection, script):
        print_table(columns, rows)
