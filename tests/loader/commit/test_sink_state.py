"""Where a batch's plan comes from: the catalog's answer to the sink's own last publish, or a
fresh read of the table (fakes, no Spark, no services).

A batch after one this process published plans from that publish's answer, without reading the
table; the publish's requirements (main and the schema unchanged) are what refuse a batch
planned from it when the table changed meanwhile. Any attempt after a refusal or a failure
reads the table.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

from loader.commit import sink as sink_module
from loader.commit.hooks import Hooks
from loader.commit.lease import Lease
from loader.commit.offsets import Committed
from loader.commit.sink import MAX_ATTEMPTS, BatchSink, Planned
from loader.commit.table import MainMoved, TableState
from loader.io.metrics import LoaderMetrics
from loader.io.retry import Patience
from tests.loader.commit.test_sink_retries import offline_config
from tests.loader.io.test_retry import Clock

SCHEMA = Schema(NestedField(1, "integer", LongType(), required=False), schema_id=3)


def table_state(snapshot_id: int) -> TableState:
    return TableState(
        schema=SCHEMA,
        committed=Committed(offsets={"t": {0: snapshot_id}}, snapshot_id=snapshot_id),
        lease=Lease(owner="me", instance="i", expires_ms=2**62),
        max_timestamp_ms=None,
        snapshot_id=snapshot_id,
    )


class View:
    """A table that is read as snapshot 100, 200, ... and answers publishes as ``answers`` say
    (a state, or an exception to raise)."""

    def __init__(self, answers: list[Any]) -> None:
        self.answers = answers
        self.reads = 0
        self.published_from: list[int | None] = []
        clock = Clock()
        self.patience = Patience(60.0, clock=clock, sleep=clock.sleep)

    def state(self) -> TableState:
        self.reads += 1
        return table_state(100 * self.reads)

    def publish(
        self, wap_id: str, planned: TableState, instance: str, ttl_ms: int, properties: Any
    ) -> TableState | None:
        self.published_from.append(planned.snapshot_id)
        answer = self.answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer  # type: ignore[no-any-return]


class Fast:
    """A fast path that writes every batch through ``sink.write`` (its append a no-op)."""

    def __init__(self) -> None:
        self.planned: list[int | None] = []

    def commit(self, sink: BatchSink, kept: Any, planned: Planned) -> bool:
        self.planned.append(planned.state.snapshot_id)
        offsets = {"t": {0: 1}}
        sink.write(kept, {}, planned.state, planned.batch_id, planned.attempt, dict, offsets)
        return True


class NoFilter(Hooks):
    """Every part on but the Spark filter (the records are a stand-in, not a DataFrame)."""

    exactly_once = False


def sink_with(view: View, monkeypatch: Any) -> tuple[BatchSink, Fast]:
    fast = Fast()
    sink = BatchSink(
        offline_config(),
        view,  # type: ignore[arg-type]
        LoaderMetrics("lake.s.t"),
        None,
        "i",
        hooks=NoFilter(),
        fast=fast,  # type: ignore[arg-type]
    )
    monkeypatch.setattr(sink, "_append", lambda rows, props, wap_id: None)
    monkeypatch.setattr(sink_module.time, "sleep", lambda s: None)
    return sink, fast


def batch(sink: BatchSink, batch_id: int) -> None:
    sink(SimpleNamespace(select=lambda *columns: "records"), batch_id)  # type: ignore[arg-type]


def test_a_batch_after_a_publish_plans_from_its_answer_without_reading_the_table(
    monkeypatch: Any,
) -> None:
    view = View([table_state(101), table_state(102), table_state(103)])
    sink, fast = sink_with(view, monkeypatch)
    for batch_id in range(3):
        batch(sink, batch_id)
    assert view.reads == 1  # the first batch only
    assert fast.planned == [100, 101, 102]
    assert view.published_from == [100, 101, 102]


def test_after_a_refused_publish_every_attempt_reads_the_table(monkeypatch: Any) -> None:
    # Batch 1's publish is refused (main moved, or the schema changed, since batch 0's answer).
    refused = MainMoved("requirement failed: current schema changed")
    view = View([table_state(101), refused, table_state(301), table_state(302)])
    sink, fast = sink_with(view, monkeypatch)
    for batch_id in range(3):
        batch(sink, batch_id)
    # Batch 1 planned from batch 0's answer; refused, the table was read to check the lease
    # (read 2) and read again for the new plan (read 3); batch 2 planned from that answer.
    assert fast.planned == [100, 101, 300, 301]
    assert view.reads == 3


def test_a_lost_answer_leaves_nothing_to_plan_from(monkeypatch: Any) -> None:
    # The publish's answer was lost and read back as landed: the next batch reads the table.
    view = View([None, table_state(201)])
    sink, fast = sink_with(view, monkeypatch)
    batch(sink, 0)
    batch(sink, 1)
    assert fast.planned == [100, 200]
    assert view.reads == 2


def test_a_failed_write_leaves_nothing_to_plan_from(monkeypatch: Any) -> None:
    view = View([table_state(101), table_state(201)])
    sink, fast = sink_with(view, monkeypatch)
    batch(sink, 0)

    def append_fails(rows: Any, props: Any, wap_id: Any) -> None:
        raise RuntimeError("Cannot write extra columns `xi2`")

    monkeypatch.setattr(sink, "_append", append_fails)
    with pytest.raises(RuntimeError, match="extra columns"):
        batch(sink, 1)
    # Planned from batch 0's answer, then from a fresh read (a multiple of 100) every time.
    assert fast.planned[1] == 101
    assert len(fast.planned) == 1 + MAX_ATTEMPTS
    assert all((snapshot_id or 1) % 100 == 0 for snapshot_id in fast.planned[2:])
