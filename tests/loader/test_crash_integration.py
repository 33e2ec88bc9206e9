"""kill -9 of a loader subprocess: exactly-once holds with the guard, and breaks without it.

The loader runs as ``python -m icefloe.loader --config FILE``.  The fault hook
``ICEFLOE_TEST_KILL_AFTER_COMMIT=N`` makes it SIGKILL itself right after its
N-th Iceberg commit, before Spark records the batch in its checkpoint: the
moment where a naive loader duplicates the batch on restart.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

import pytest

from icefloe.harness.stack.tables import EVENT_ID_COLUMN
from icefloe.loader import keys
from icefloe.loader.commit.offsets import decode_offsets
from icefloe.loader.testing.faultpoints import DISABLE_ENV, KILL_AFTER_COMMIT_ENV
from tests.loader.conftest import reference_values, wait_until
from tests.loader.processes import LoaderProcess, counts, load_all_then_stop, loader_snapshots

pytestmark = pytest.mark.integration


def test_kill_9_at_any_moment_gives_no_duplicates_and_no_gaps(
    stack: Any,
    table_factory: Any,
    topic_factory: Any,
    produce: Any,
    loader_config: Any,
    tmp_path: Path,
) -> None:
    table, topic = table_factory(extra_columns=EVENT_ID_COLUMN), topic_factory(partitions=2)
    rows = [v for _, v in reference_values(3000, seed=7)]
    produce(topic, rows[:800], partition=0)
    produce(topic, rows[800:1500], partition=1)
    path, _ = loader_config(table, [topic], kafka={"max_offsets_per_trigger": 250})
    log = tmp_path / "loader.log"

    # 1. Dies right after its first commit, before the checkpoint's commit log.
    first = LoaderProcess(path, log, {KILL_AFTER_COMMIT_ENV: "1"})
    assert first.wait(180) == -signal.SIGKILL, first.tail()
    committed = counts(stack, table)[0]
    assert 0 < committed < 1500

    # 2. Restarted; killed from outside at an arbitrary moment mid-stream.
    second = LoaderProcess(path, log)
    try:
        wait_until(lambda: counts(stack, table)[0] > committed, 120, "the restart to commit")
        time.sleep(1.3)
    finally:
        second.kill()
    produce(topic, rows[1500:2200], partition=0)
    produce(topic, rows[2200:], partition=1)

    # 3. Restarted again; runs until everything is in, then stops on SIGTERM.
    load_all_then_stop(stack, table, path, log, 3000)
    assert counts(stack, table) == (3000, 3000), first.tail()


def test_a_kill_right_after_the_first_slice_loses_nothing(
    stack: Any,
    iceberg_catalog: Any,
    table_factory: Any,
    topic_factory: Any,
    produce: Any,
    loader_config: Any,
    tmp_path: Path,
) -> None:
    table, topic = table_factory(extra_columns=EVENT_ID_COLUMN), topic_factory(partitions=2)
    rows = [v for _, v in reference_values(1500, seed=9)]
    produce(topic, rows[:800], partition=0)
    produce(topic, rows[800:], partition=1)
    path, _ = loader_config(
        table, [topic], kafka={"max_offsets_per_trigger": 500, "first_slice_records": 300}
    )
    log = tmp_path / "loader.log"

    # 1. Dies right after its first commit: the slice, each partition's share of 300 records.
    first = LoaderProcess(path, log, {KILL_AFTER_COMMIT_ENV: "1"})
    assert first.wait(180) == -signal.SIGKILL, first.tail()
    assert counts(stack, table) == (300, 300), first.tail()
    (sliced,) = loader_snapshots(iceberg_catalog, table)
    assert sliced[keys.BATCH_ID] == "-1"
    assert decode_offsets(sliced[keys.OFFSETS]) == {topic: {0: 160, 1: 140}}

    # 2. Restarted: 1,200 records still wait, so it slices again, then streams the rest.
    load_all_then_stop(stack, table, path, log, 1500)
    assert counts(stack, table) == (1500, 1500), first.tail()
    batches = [s[keys.BATCH_ID] for s in loader_snapshots(iceberg_catalog, table)]
    assert batches[:2] == ["-1", "-1"] and len(batches) > 2


@pytest.mark.slow  # a break: proves the check can fail; `pytest -m slow`
def test_with_the_guard_disabled_the_same_crash_duplicates_rows(
    stack: Any,
    table_factory: Any,
    topic_factory: Any,
    produce: Any,
    loader_config: Any,
    tmp_path: Path,
) -> None:
    table, topic = table_factory(extra_columns=EVENT_ID_COLUMN), topic_factory()
    produce(topic, [v for _, v in reference_values(600, seed=8)])
    path, _ = loader_config(table, [topic], kafka={"max_offsets_per_trigger": 200})
    log = tmp_path / "loader.log"
    no_guard = {DISABLE_ENV: "exactly_once"}  # the test kit's hook: the guard switched off
    first = LoaderProcess(path, log, {**no_guard, KILL_AFTER_COMMIT_ENV: "1"})
    assert first.wait(180) == -signal.SIGKILL, first.tail()

    second = LoaderProcess(path, log, no_guard)
    try:
        wait_until(lambda: counts(stack, table)[1] >= 600, 300, "all 600 distinct rows")
        time.sleep(2)
    finally:
        second.kill()
    total, distinct = counts(stack, table)
    assert distinct == 600
    assert total == 800, "the replayed first batch (200 rows) should be written twice"
