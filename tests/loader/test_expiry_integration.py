"""Snapshot expiry removed every loader snapshot: a new loader must start where the table ends.

Loader A loads a backlog in several batches and stops. Compaction then rewrites the table
into a snapshot that carries no offsets, and ``expire_snapshots`` with a zero threshold
removes every older snapshot: no snapshot in the table says which offsets were loaded.
Loader B, another loader id with a checkpoint of its own that has never run, starts on
the same topic. The offsets A's publishing commits also wrote into a table property
(``keys.TABLE_OFFSETS``) must bring B to the end of what A loaded: B loads only what
follows, every row once. Without that property B reads the topic from the start and
duplicates A's rows (the case a generated fault schedule found).
"""

from __future__ import annotations

import datetime as dt
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from icefloe.harness import maintenance
from icefloe.harness.stack.tables import EVENT_ID_COLUMN
from icefloe.loader import keys
from tests.loader.conftest import reference_values, wait_until
from tests.loader.processes import LoaderProcess, counts, kill_if_running

pytestmark = pytest.mark.integration


def _snapshots_with_offsets(catalog: Any, table: str) -> list[int]:
    _, schema, name = table.split(".")
    meta = catalog.load_table((schema, name)).metadata
    return [
        s.snapshot_id
        for s in meta.snapshots
        if s.summary is not None and keys.OFFSETS in s.summary.additional_properties
    ]


def test_a_new_loader_after_every_loader_snapshot_expired_loads_only_what_follows(
    stack: Any,
    iceberg_catalog: Any,
    table_factory: Any,
    topic_factory: Any,
    produce: Any,
    loader_config: Any,
    tmp_path: Path,
) -> None:
    table, topic = table_factory(extra_columns=EVENT_ID_COLUMN), topic_factory(partitions=2)
    rows = [v for _, v in reference_values(8000, seed=21)]
    a_path, _ = loader_config(table, [topic], loader_id="loader-a")
    b_path, _ = loader_config(table, [topic], loader_id="loader-b")

    a = LoaderProcess(a_path, tmp_path / "a.log")
    b: LoaderProcess | None = None
    try:
        produce(topic, rows[:2000], partition=0)
        produce(topic, rows[2000:3000], partition=1)
        wait_until(lambda: counts(stack, table)[0] >= 3000, 240, "A to load the first rows")
        produce(topic, rows[3000:5000], partition=1)
        produce(topic, rows[5000:6000], partition=0)
        wait_until(lambda: counts(stack, table)[0] >= 6000, 240, "A to load the rest")
        a.proc.send_signal(signal.SIGTERM)
        assert a.wait(90) == 0, a.tail()

        maintenance.optimize(stack.query, table)
        maintenance.expire_snapshots(stack.query, table, retention=dt.timedelta(0))
        # The failure's precondition: no snapshot left says what was loaded.
        assert _snapshots_with_offsets(iceberg_catalog, table) == []
        assert counts(stack, table) == (6000, 6000)

        b = LoaderProcess(b_path, tmp_path / "b.log")
        produce(topic, rows[6000:7000], partition=0)
        produce(topic, rows[7000:], partition=1)
        wait_until(lambda: counts(stack, table)[0] >= 8000, 240, "B to load what follows")
        time.sleep(5)  # a replay of A's rows would land in a later batch
        assert b.proc.poll() is None, b.tail()
        assert counts(stack, table) == (8000, 8000), b.tail(60)
    finally:
        kill_if_running(a, *([b] if b else []))
