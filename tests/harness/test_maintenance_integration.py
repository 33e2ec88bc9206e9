"""`icefloe maintain` while a loader loads: nothing lost, nothing doubled, files and snapshots down.

The loader freezes itself (its pause hook) with a batch written and staged but not yet
published; compaction, snapshot expiry, a retention DELETE and orphan-file removal run while it
is frozen and a publisher keeps sending; then it is thawed. Its publish must be refused (main
moved) and the batch planned again, so the interleaving the loader's re-planning exists for
happens every run, not by luck of timing. Afterwards the table must hold every valid message
exactly once, less the rows the retention DELETE removed, and each operation's printed
footprint must show what it is for. `icefloe maintain ... --every` then runs from the command
line while the stream goes on.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from icefloe.harness import maintenance, verify
from icefloe.harness.history import History
from icefloe.harness.loaders.base import TestHooks
from icefloe.harness.loaders.icefloe import icefloe_config
from icefloe.harness.loaders.process import LoaderProcess
from icefloe.harness.stack.tables import EVENT_ID_COLUMN
from icefloe.publisher.clock import ClockConfig
from icefloe.publisher.messages import GenerationConfig
from icefloe.publisher.producer import Publisher, PublisherConfig

pytestmark = pytest.mark.integration


def _publish(stack: Any, topic: str, work: Path, seed: int, count: int, rate: float | None) -> Path:
    generation = GenerationConfig(
        seed=seed, clock=ClockConfig(anchor=dt.datetime.now(dt.UTC), window_days=3)
    )
    config = PublisherConfig(generation=generation, ledger_dir=work, progress=False)
    ledger = work / f"{topic}-{seed}.jsonl"
    Publisher(stack.bootstrap_servers, topic, config).publish(count, rate=rate, ledger_path=ledger)
    return ledger


def _wait(check: Any, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(0.5)


def test_maintenance_while_loading_loses_and_doubles_nothing(
    stack: Any, table_factory: Any, topic_factory: Any, tmp_path: Path
) -> None:
    table, topic = table_factory(extra_columns=EVENT_ID_COLUMN), topic_factory(partitions=3)
    first = _publish(stack, topic, tmp_path, seed=11, count=1500, rate=None)
    config = icefloe_config(
        stack,
        table,
        (topic,),
        {"trigger_interval": 1.0, "kafka.max_offsets_per_trigger": 300},
        loader_id="maintenance-test",
    )
    hooks = TestHooks(pause_at="publish", pause_after_commits=3)
    loader = LoaderProcess(config, stack, tmp_path / "loader", History(None), hooks=hooks)
    ledgers = [first]
    try:
        loader.start()
        _wait(loader.frozen, 300, "the loader to freeze with a batch staged")
        stream = threading.Thread(
            target=lambda: ledgers.append(_publish(stack, topic, tmp_path, 12, 600, 60.0))
        )
        stream.start()

        compacted = maintenance.optimize(stack.query, table)
        expired = maintenance.expire_snapshots(stack.query, table, retention=dt.timedelta(0))
        cutoff = (dt.datetime.now(dt.UTC) - dt.timedelta(days=2)).strftime("%Y-%m-%d")
        old = f"WHERE \"timestamp\" < TIMESTAMP '{cutoff} 00:00:00 UTC'"
        deleted = {row[0] for row in stack.query(f"SELECT event_id FROM {table} {old}")}
        retained = maintenance.retention_delete(
            stack.query, table, older_than=dt.timedelta(days=2), whole_days=True
        )
        orphans = maintenance.remove_orphan_files(
            stack.query, table, retention=dt.timedelta(hours=1)
        )
        for result in (compacted, expired, retained, orphans):
            print(result.statement, result.before, result.after, sep="\n  ")

        loader.process.resume()
        stream.join(timeout=120)
        from icefloe.harness.cli.main import main

        every = main(["maintain", "optimize", table, "--every", "2s", "--times", "2"])

        expected = set().union(*(x.valid_event_ids() for x in verify.read_ledgers(ledgers)))
        _wait(
            lambda: (
                not verify.compare_rows(
                    verify.table_event_ids(stack.query, table), expected, may_be_absent=deleted
                ).lost
            ),
            300,
            "every valid row",
        )
        log = loader.log_tail(400)
        assert loader.is_running(), log[-3000:]
    finally:
        loader.close()

    verdict = verify.compare_rows(
        verify.table_event_ids(stack.query, table), expected, may_be_absent=deleted
    )
    assert verdict.exactly_once, verdict
    assert deleted and not deleted & set(verify.table_event_ids(stack.query, table))
    assert compacted.after.data_files < compacted.before.data_files, compacted
    assert compacted.after.rows == compacted.before.rows, compacted
    assert expired.after.snapshots < expired.before.snapshots, expired
    assert retained.after.rows == retained.before.rows - len(deleted), retained
    assert retained.after.delete_files == 0, "whole day partitions go without delete files"
    assert every == 0
    # The frozen batch was planned before the compaction: its publish had to be refused.
    assert "the table moved on" in log, log[-3000:]
