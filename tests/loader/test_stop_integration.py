"""Stopping a loader subprocess: SIGTERM to its Python process, or to its whole process group.

Spark's JVM ignores SIGINT but not SIGTERM. A SIGTERM to the driver alone stops the query after
the batch in progress; a SIGTERM to the group (as ``kill -- -PGID`` or a service manager sends
it) makes the JVM quit under the query. Both must end in exit 0, one line saying what happened,
no Python traceback, and a table that a restart completes exactly once. (As it goes down, Spark's
JVM may log the error of the batch it interrupted, with the callback's trace quoted inside its
own message; that line is Spark's, and the loader cannot reach it once the JVM is quitting.)
"""

from __future__ import annotations

import re
import signal
from pathlib import Path
from typing import Any

import pytest

from icefloe.harness.stack.tables import EVENT_ID_COLUMN
from tests.loader.conftest import reference_values, wait_until
from tests.loader.processes import LoaderProcess, counts, kill_if_running, load_all_then_stop

pytestmark = pytest.mark.integration

PYTHON_TRACE = re.compile(r"^Traceback \(most recent call last\)", re.MULTILINE)
"""A Python traceback as logging or the interpreter prints it: at the start of a line."""


def test_sigterm_to_the_driver_or_the_group_stops_cleanly_and_loses_nothing(
    stack: Any,
    table_factory: Any,
    topic_factory: Any,
    produce: Any,
    loader_config: Any,
    tmp_path: Path,
) -> None:
    table, topic = table_factory(extra_columns=EVENT_ID_COLUMN), topic_factory()
    rows = [v for _, v in reference_values(3000, seed=31)]
    produce(topic, rows)
    path, _ = loader_config(table, [topic], kafka={"max_offsets_per_trigger": 200})
    log = tmp_path / "loader.log"

    # 1. SIGTERM to the driver alone: the query stops after its batch, exit 0.
    first = LoaderProcess(path, log)
    try:
        wait_until(lambda: counts(stack, table)[0] > 0, 180, "a first commit")
        first.proc.send_signal(signal.SIGTERM)
        assert first.wait(120) == 0, first.tail()
    finally:
        kill_if_running(first)
    text = log.read_text(errors="replace")
    assert "stopped loading" in text, first.tail()
    assert not PYTHON_TRACE.search(text), first.tail()
    loaded = counts(stack, table)[0]

    # 2. SIGTERM to the whole group, mid-stream: the JVM quits first; still exit 0, one line.
    second = LoaderProcess(path, log)
    try:
        wait_until(lambda: counts(stack, table)[0] > loaded, 180, "the restart to commit")
        second.terminate_group()
        assert second.wait(120) == 0, second.tail()
    finally:
        kill_if_running(second)
    text = log.read_text(errors="replace")
    assert not PYTHON_TRACE.search(text), second.tail()
    assert "stopped loading" in text.split("took over")[-1] or "JVM quit" in text, second.tail()

    # 3. A restart completes the table exactly once.
    load_all_then_stop(stack, table, path, log, 3000)
    assert counts(stack, table) == (3000, 3000)
