"""Console output for the CLI and provisioning: messages, progress bars, tables."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TransferSpeedColumn,
)
from rich.table import Table

PIPE_WIDTH = 160
"""The width written to a pipe or a file (a CI log, ``| grep``) when ``COLUMNS`` does not say:
rich's own 80 would cut table cells and wrap paths. A terminal keeps its width."""


def _width(stream: Any) -> int | None:
    if os.environ.get("COLUMNS") or (hasattr(stream, "isatty") and stream.isatty()):
        return None
    return PIPE_WIDTH


console = Console(stderr=True, highlight=False, width=_width(sys.stderr))
out = Console(highlight=False, width=_width(sys.stdout))


def say(message: str) -> None:
    """Print a progress message on stderr."""
    console.print(message)


@contextmanager
def progress_bar(label: str, total: int) -> Iterator[Callable[[int], None]]:
    """Show a byte progress bar while the body runs; yields an `advance(n)` callable.

    Without a terminal (CI logs) it prints one line at the start and one at the end instead.
    """
    if not sys.stderr.isatty():
        console.print(f"{label} ({total / 1e6:.0f} MB)" if total else label)
        yield lambda _n: None
        return
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task(label, total=total or None)
        yield lambda n: progress.advance(task, n)
    console.print(f"{label}: done")


def shared_prefix(values: Sequence[str], keep: int = 4) -> str:
    """The prefix all ``values`` share, less the last ``keep`` characters of it.

    Tables of ids that share a long prefix (the publisher's event ids share 24 characters per
    seed) show the prefix once and each id from where they differ: the part a reader needs.

    Args:
        values: the texts (two or more to share anything).
        keep: characters of the shared part left on each value, for context.

    Returns:
        The prefix to cut ("" when cutting would not help).
    """
    if len(values) < 2:
        return ""
    prefix = values[0]
    for value in values[1:]:
        while not value.startswith(prefix):
            prefix = prefix[:-1]
    cut = max(0, len(prefix) - keep)
    return prefix[:cut] if cut >= 8 else ""


def print_table(columns: Sequence[str], rows: Sequence[Sequence[Any]], title: str = "") -> None:
    """Print rows as a table on stdout."""
    table = Table(title=title or None)
    for column in columns:
        table.add_column(str(column))
    for row in rows:
        table.add_row(*("NULL" if value is None else str(value) for value in row))
    out.print(table)
