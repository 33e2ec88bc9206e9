"""A loader frozen past its lease while a successor takes over: the frozen one must never publish.

Loader A freezes itself (its whole process group, as a GC pause, a frozen VM or a stalled
container would) at a named moment of a batch, through the ``loader.testing.faultpoints`` hook,
after one commit of its own. Once A's lease has run out, loader B (another loader id, its own
checkpoint) takes the table over and loads the topic. Then A is thawed. Whatever A was doing
(planning, writing data files, about to publish), it must step down: exit with
``EXIT_NOT_OWNER`` and a ``Fenced`` error, publish nothing, and leave B loading, with every
row exactly once in Trino. With fencing switched off (``ICEFLOE_TEST_DISABLE=fencing``) the
same freeze duplicates rows, which shows the test can fail.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

import pytest

from icefloe.harness.stack.tables import EVENT_ID_COLUMN
from icefloe.loader import keys
from icefloe.loader.commit.table import CLOCK_SKEW_MS, now_ms
from icefloe.loader.errors import EXIT_NOT_OWNER
from icefloe.loader.testing.faultpoints import (
    DISABLE_ENV,
    PAUSE_AFTER_COMMITS_ENV,
    PAUSE_AT_ENV,
    PAUSE_DELAY_MS_ENV,
)
from tests.loader.conftest import reference_values, wait_until
from tests.loader.processes import LoaderProcess, counts, kill_if_running

pytestmark = pytest.mark.integration

LEASE = 6.0  # seconds
PER_TRIGGER = 4000


def _lease_expiry_ms(catalog: Any, table: str) -> int:
    _, schema, name = table.split(".")
    props = catalog.load_table((schema, name)).properties
    return int(props[keys.TABLE_LEASE_EXPIRES_MS])


def _unpublished_of(catalog: Any, table: str, loader_id: str) -> list[int]:
    """Snapshots ``loader_id`` staged that main's lineage does not contain."""
    _, schema, name = table.split(".")
    meta = catalog.load_table((schema, name)).metadata
    by_id = {s.snapshot_id: s for s in meta.snapshots}
    lineage: set[int] = set()
    current = by_id.get(meta.current_snapshot_id) if meta.current_snapshot_id else None
    while current is not None and current.snapshot_id not in lineage:
        lineage.add(current.snapshot_id)
        current = by_id.get(current.parent_snapshot_id) if current.parent_snapshot_id else None
    return [
        s.snapshot_id
        for s in meta.snapshots
        if s.snapshot_id not in lineage
        and s.summary is not None
        and s.summary.additional_properties.get(keys.LOADER_ID) == loader_id
    ]


def _freeze_a_then_take_over(
    stack: Any,
    catalog: Any,
    table: str,
    topic: str,
    loader_config: Any,
    tmp_path: Path,
    point: str,
    *,
    fencing: bool = True,
) -> tuple[LoaderProcess, LoaderProcess]:
    """Run A until it freezes at ``point`` after one commit, its lease runs out, B takes over."""
    a_path, _ = loader_config(
        table,
        [topic],
        loader_id="loader-a",
        lease_ttl=LEASE,
        kafka={"max_offsets_per_trigger": PER_TRIGGER},
    )
    b_path, _ = loader_config(
        table, [topic], loader_id="loader-b", kafka={"max_offsets_per_trigger": PER_TRIGGER}
    )
    hooks = {PAUSE_AT_ENV: point, PAUSE_AFTER_COMMITS_ENV: "1", PAUSE_DELAY_MS_ENV: "100"}
    if not fencing:
        hooks[DISABLE_ENV] = "fencing"
    a = LoaderProcess(a_path, tmp_path / "a.log", hooks)
    try:
        wait_until(lambda: a.frozen() or a.proc.poll() is not None, 180, f"A to freeze ({point})")
        assert a.frozen(), a.tail()
        # The lease A renewed with its first commit runs out while A is frozen.
        left_s = (_lease_expiry_ms(catalog, table) + CLOCK_SKEW_MS - now_ms()) / 1000
        time.sleep(max(0.0, left_s) + 0.5)
        b = LoaderProcess(b_path, tmp_path / "b.log")
    except BaseException:
        a.kill()
        raise
    return a, b


@pytest.mark.parametrize("point", ["planned", "write", "publish"])
def test_a_loader_frozen_past_its_lease_is_fenced_and_the_successor_loads_everything(
    stack: Any,
    iceberg_catalog: Any,
    table_factory: Any,
    topic_factory: Any,
    produce: Any,
    loader_config: Any,
    tmp_path: Path,
    point: str,
) -> None:
    table, topic = table_factory(extra_columns=EVENT_ID_COLUMN), topic_factory(partitions=2)
    rows = [v for _, v in reference_values(12_000, seed=11)]
    produce(topic, rows[:4000], partition=0)
    produce(topic, rows[4000:8000], partition=1)
    a, b = _freeze_a_then_take_over(
        stack, iceberg_catalog, table, topic, loader_config, tmp_path, point
    )
    try:
        wait_until(lambda: counts(stack, table)[0] >= 8000, 240, "B to load the backlog")
        assert b.proc.poll() is None, b.tail()

        a.thaw()
        code = a.wait(180)
        assert code == EXIT_NOT_OWNER, a.tail()
        assert "Fenced" in a.tail(60) and "loader-b" in a.tail(60), a.tail(60)
        # A got as far as staging its batch: the catalog refused to publish it.
        assert _unpublished_of(iceberg_catalog, table, "loader-a"), a.tail(60)

        produce(topic, rows[8000:10_000], partition=0)
        produce(topic, rows[10_000:], partition=1)
        wait_until(lambda: counts(stack, table)[0] >= 12_000, 240, "B to load the rest")
        time.sleep(3)  # a duplicate would come from a batch after the last one
        assert b.proc.poll() is None, "the successor must keep loading: " + b.tail()
        assert counts(stack, table) == (12_000, 12_000)
        _, schema, name = table.split(".")
        props = iceberg_catalog.load_table((schema, name)).properties
        assert props[keys.TABLE_OWNER] == "loader-b"

        b.proc.send_signal(signal.SIGTERM)
        assert b.wait(90) == 0, b.tail()
    finally:
        kill_if_running(a, b)


@pytest.mark.slow  # a break: proves the check can fail; `pytest -m slow`
def test_without_fencing_the_frozen_loader_duplicates_rows(
    stack: Any,
    iceberg_catalog: Any,
    table_factory: Any,
    topic_factory: Any,
    produce: Any,
    loader_config: Any,
    tmp_path: Path,
) -> None:
    table, topic = table_factory(extra_columns=EVENT_ID_COLUMN), topic_factory(partitions=2)
    rows = [v for _, v in reference_values(8000, seed=12)]
    produce(topic, rows[:4000], partition=0)
    produce(topic, rows[4000:], partition=1)
    a, b = _freeze_a_then_take_over(
        stack, iceberg_catalog, table, topic, loader_config, tmp_path, "planned", fencing=False
    )
    try:
        wait_until(lambda: counts(stack, table)[0] >= 8000, 240, "B to load the backlog")
        a.thaw()
        # Unfenced, A appends the batch it planned before B took over; its next batch sees
        # B's lease and stops.
        assert a.wait(180) == EXIT_NOT_OWNER, a.tail()
        time.sleep(2)
        total, distinct = counts(stack, table)
        assert distinct == 8000
        assert total > distinct, "the frozen loader's batch should have been written twice"
    finally:
        kill_if_running(a, b)


def test_the_lease_stays_live_through_a_slow_start_up(
    stack: Any,
    iceberg_catalog: Any,
    table_factory: Any,
    topic_factory: Any,
    produce: Any,
    loader_config: Any,
    tmp_path: Path,
) -> None:
    """From its take-over to its first commit (a warm-up of seconds), a loader keeps its lease.

    The lease here is shorter than that start-up: without renewals during it the lease lapses
    before the first batch commits, and a second loader could take the table from a live one.
    """
    table, topic = table_factory(extra_columns=EVENT_ID_COLUMN), topic_factory()
    produce(topic, [v for _, v in reference_values(2000, seed=17)])
    path, _ = loader_config(table, [topic], lease_ttl=3.0, trigger_interval=1.0)
    log = tmp_path / "loader.log"
    loader = LoaderProcess(path, log)

    def said(words: str) -> bool:
        return log.exists() and words in log.read_text(errors="replace")

    try:
        wait_until(lambda: said("took over") or loader.proc.poll() is not None, 180, "take-over")
        took_over = time.monotonic()
        lapsed: list[float] = []
        while not said(": committed") and loader.proc.poll() is None:
            left_ms = _lease_expiry_ms(iceberg_catalog, table) - now_ms()
            if left_ms < 0:
                lapsed.append(round(time.monotonic() - took_over, 1))
            time.sleep(0.2)
        start_up_s = time.monotonic() - took_over
        assert loader.proc.poll() is None, loader.tail()
        assert not lapsed, (
            f"the lease lapsed {len(lapsed)} times in a start-up of {start_up_s:.1f} s "
            f"(at {lapsed[:5]} s)"
        )
        wait_until(lambda: counts(stack, table)[0] == 2000, 180, "the backlog")
        loader.proc.send_signal(signal.SIGTERM)
        assert loader.wait(90) == 0, loader.tail()
    finally:
        kill_if_running(loader)
