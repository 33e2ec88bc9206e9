"""Where a loader's backlog time went: its steps on a clock from its process start.

The loader logs one line per committed batch with its stages (``loader.commit.sink`` and the
single-pass path of ``loader.ext.fastpath.onepass``): the table state read (plan, lease), the
decoding, writing and publishing, and the batch's total. Read back against the moment the
bench started the process, they give the run's profile: start-up (JVM, Spark session, the
table's state and take-over) until the first batch begins, each batch, the gaps between
batches (Spark planning the next micro-batch), and the tail from the last commit to every row
visible in Trino. Set beside the engine bound of the same run (``harness.bench.engine``), it
shows how much of a loader's time is the engine's and how much its own.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Step", "profile_lines", "steps_from_log"]

_BATCH = re.compile(
    r"^(?P<time>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) \S+ \S+: batch (?P<batch>-?\d+): "
    r"committed (?P<rows>\d+) rows, (?P<letters>\d+) dead letters(?P<onepass> in one pass)? "
    r"\((?P<stages>.*), total (?P<total>[\d.]+) s\)$",
    re.MULTILINE,
)
GAP_S = 0.05
"""A pause between two batches shorter than this is not shown as a step of its own."""


@dataclass(frozen=True)
class Step:
    """One step of a loader's run, on a clock from its process start.

    Attributes:
        name: what it was (``start-up``, ``batch 0``, ``between batches``...).
        start_s: when it began, seconds from the process start.
        end_s: when it ended.
        rows: rows it committed (None: a step that commits nothing).
        detail: its stages as the loader logged them, or what the step waits for.
    """

    name: str
    start_s: float
    end_s: float
    rows: int | None = None
    detail: str = ""

    @property
    def seconds(self) -> float:
        """How long it took."""
        return self.end_s - self.start_s


def _wall(stamp: str) -> float:
    """A log line's time (the local time ``logging`` writes) as epoch seconds."""
    return dt.datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f").timestamp()


def steps_from_log(text: str, started_wall: float, all_visible_s: float) -> tuple[Step, ...]:
    """The run's steps from a loader's log.

    Args:
        text: the loader's log.
        started_wall: when the bench started its process (epoch seconds).
        all_visible_s: when every row was visible in Trino, seconds from the start.

    Returns:
        Start-up, each batch (its first slice ``batch -1`` included) with the gaps between
        them, and the tail to every row visible; empty when the log has no batch line.
    """
    batches = []
    for m in _BATCH.finditer(text):
        end = _wall(m["time"]) - started_wall
        if end < 0:  # an earlier process's line, in a log appended to
            continue
        start = end - float(m["total"])
        name = f"batch {m['batch']}" + (" (first slice)" if m["batch"] == "-1" else "")
        path = "one pass" if m["onepass"] else "decode, then write"
        batches.append(Step(name, start, end, int(m["rows"]), f"{m['stages']} ({path})"))
    if not batches:
        return ()
    steps = [Step("start-up", 0.0, batches[0].start_s, None, "JVM, Spark session, take-over")]
    for before, step in zip([None, *batches], batches, strict=False):
        if before is not None and step.start_s - before.end_s >= GAP_S:
            wait = "Spark starts the next micro-batch"
            steps.append(Step("between batches", before.end_s, step.start_s, None, wait))
        steps.append(step)
    last = batches[-1].end_s
    steps.append(Step("to every row visible", last, max(last, all_visible_s), None, "Trino"))
    return tuple(steps)


def profile_lines(label: str, steps: Sequence[Step]) -> list[str]:
    """A Markdown table of one run's steps."""
    lines = [
        f"Where the time went: {label}",
        "",
        "| step | from | to | seconds | rows | stages |",
        "|---|--:|--:|--:|--:|---|",
    ]
    for s in steps:
        rows = "" if s.rows is None else f"{s.rows:,}"
        lines.append(
            f"| {s.name} | {s.start_s:.1f} s | {s.end_s:.1f} s | {s.seconds:.2f} | {rows} "
            f"| {s.detail} |"
        )
    return lines
