"""How the walkthrough speaks: numbered steps, the SQL it runs, tables, progress while it waits.

Every step opens with what it shows and why that matters, so the output read top to bottom
tells the story without the source. Library chatter stays out of it: `quiet_libraries`
sends whatever C libraries (librdkafka's `%6|...` lines) and Python loggers write to stderr
into a log file for the length of the walkthrough, and the narrator writes to the terminal it
was given.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TextIO, TypeVar

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.rule import Rule
from rich.syntax import Syntax
from rich.table import Table

from icefloe.harness.console import shared_prefix

__all__ = ["Narrator", "WaitTimeout", "quiet_libraries"]

T = TypeVar("T")


class WaitTimeout(TimeoutError):
    """A wait ran out of time; the message says what was awaited and how far it got."""


@contextlib.contextmanager
def quiet_libraries(log_file: Path) -> Iterator[TextIO]:
    """Send file descriptor 2 and Python logging to ``log_file`` while the body runs.

    librdkafka writes its log lines straight to file descriptor 2 from C; no Python setting
    reaches every client the walkthrough makes. Yields a text stream on the original stderr
    (the terminal) for the narrator; ``sys.stderr`` points there too, so the harness's own
    messages still show.
    """
    log_file.parent.mkdir(parents=True, exist_ok=True)
    sys.stderr.flush()
    saved = os.dup(2)
    terminal = io.TextIOWrapper(os.fdopen(os.dup(saved), "wb"), line_buffering=True)
    previous_stderr = sys.stderr
    root = logging.getLogger()
    previous = (root.level, list(root.handlers))
    with log_file.open("ab") as sink:
        os.dup2(sink.fileno(), 2)
        handler = logging.FileHandler(log_file)
        root.handlers = [handler]
        root.setLevel(logging.INFO)
        sys.stderr = terminal
        try:
            yield terminal
        finally:
            sys.stderr = previous_stderr
            root.handlers = previous[1]
            root.setLevel(previous[0])
            handler.close()
            terminal.flush()
            os.dup2(saved, 2)
            os.close(saved)
            terminal.close()


class Narrator:
    """Numbered steps with what they show and why, SQL, tables and progress bars.

    Args:
        total: how many steps the story has.
        pause: wait for Enter before every step after the first (a live session).
        file: where to write (default: stdout).
    """

    def __init__(self, total: int, *, pause: bool = False, file: TextIO | None = None) -> None:
        self.total = total
        self.pause = pause
        self.console = Console(file=file, highlight=False, soft_wrap=False)
        self.number = 0
        self._opened: list[tuple[str, float]] = []

    def say(self, text: str) -> None:
        """One line (rich markup allowed)."""
        self.console.print(text)

    def step(self, title: str, shows: str, why: str) -> None:
        """Open the next step: its title, what it shows and why that matters."""
        if self.pause and self.number:
            self.console.input("\n[dim]press Enter for the next step[/] ")
        self.number += 1
        self._opened.append((title, time.monotonic()))
        self.console.print()
        self.console.print(Rule(f"[bold]{self.number}/{self.total}  {title}[/]", align="left"))
        self.console.print(f"[bold]shows[/]  {shows}")
        self.console.print(f"[bold]why[/]    {why}")

    def step_times(self) -> list[tuple[str, float]]:
        """Each step opened so far, with its seconds: until the next opened, the last until now
        (a pause for Enter counts in the step before it)."""
        ends = [t for _, t in self._opened[1:]] + [time.monotonic()]
        return [
            (title, end - began) for (title, began), end in zip(self._opened, ends, strict=True)
        ]

    def sql(self, statement: str) -> None:
        """Print a statement the walkthrough runs."""
        self.code(statement, "sql")

    def code(self, text: str, language: str) -> None:
        """Print a file or a statement, highlighted, as it is (no markup)."""
        self.console.print(Syntax(text.strip(), language, theme="ansi_dark", word_wrap=True))

    def table(
        self,
        columns: Sequence[str],
        rows: Sequence[Sequence[Any]],
        *,
        shorten: Sequence[str] = (),
        title: str = "",
    ) -> None:
        """Print rows. In the ``shorten`` columns (ids), values that share a long prefix are
        shown from where they differ, and the prefix once under the table."""
        texts = [["NULL" if v is None else str(v) for v in row] for row in rows]
        notes = []
        for i, column in enumerate(columns):
            if column not in shorten:
                continue
            prefix = shared_prefix([row[i] for row in texts])
            if prefix:
                notes.append(f"every {column} starts with {prefix}")
                for row in texts:
                    row[i] = "…" + row[i][len(prefix) :]
        table = Table(title=title or None, title_justify="left")
        for column in columns:
            table.add_column(str(column), overflow="fold")
        for row in texts:
            table.add_row(*row)
        self.console.print(table)
        for note in notes:
            self.console.print(f"[dim]({note})[/]")

    def check(self, ok: bool, text: str) -> bool:
        """One verdict line: a green tick or a red cross."""
        mark = "[green]✔[/]" if ok else "[red]✘[/]"
        self.console.print(f"{mark} {text}")
        return ok

    def wait(
        self,
        label: str,
        progress: Callable[[], int | None],
        *,
        total: int | Callable[[], int | None] | None = None,
        timeout_s: float = 180.0,
        poll_s: float = 0.5,
    ) -> float:
        """Show a progress bar until ``progress()`` reaches the total; return the seconds.

        Args:
            label: what is awaited.
            progress: how far it got (None: nothing to show yet).
            total: the goal, or a function that returns it once known (None until then);
                with no total at all the wait ends as soon as ``progress()`` is not None.
            timeout_s: give up after this long.
            poll_s: how often to ask.

        Raises:
            WaitTimeout: not reached within ``timeout_s``.
        """
        columns = [
            TextColumn("  {task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
        ]
        began = time.monotonic()
        goal_of = total if callable(total) else (lambda: total)
        seen: int | None = None
        with Progress(*columns, console=self.console, transient=False) as bar:
            task = bar.add_task(label, total=None)
            while True:
                seen = progress()
                goal = goal_of()
                bar.update(task, total=goal, completed=seen or 0)
                if seen is not None and total is None:
                    bar.update(task, total=max(seen, 1), completed=max(seen, 1))
                    return time.monotonic() - began
                if seen is not None and goal is not None and seen >= goal:
                    return time.monotonic() - began
                if time.monotonic() - began > timeout_s:
                    raise WaitTimeout(f"{label}: {seen} of {goal} after {timeout_s:.0f} s")
                time.sleep(poll_s)

    def run(self, label: str, work: Callable[[], T]) -> tuple[T, float]:
        """Run ``work`` in a thread behind a progress bar; return its result and the seconds.

        Raises:
            Whatever ``work`` raised.
        """
        columns = [TextColumn("  {task.description}"), BarColumn(), TimeElapsedColumn()]
        began = time.monotonic()
        with (
            ThreadPoolExecutor(max_workers=1) as pool,
            Progress(*columns, console=self.console, transient=False) as bar,
        ):
            task = bar.add_task(label, total=None)
            future = pool.submit(work)
            while not future.done():
                time.sleep(0.2)
            bar.update(task, total=1, completed=1)
            return future.result(), time.monotonic() - began
