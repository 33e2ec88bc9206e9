"""How the sink retries a batch whose write failed (fakes, no Spark, no services).

A write that failed while the table's schema changed (a column dropped, added or renamed
between the plan and the append) lost a race, as a batch does when maintenance moves main: it
is planned again without using up one of the ``MAX_ATTEMPTS`` kept for real failures.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from icefloe.loader.commit import sink as sink_module
from icefloe.loader.commit.sink import MAX_ATTEMPTS, MAX_REPLANS, BatchSink, _WriteFailed
from icefloe.loader.config import CatalogConfig, KafkaConfig, LoaderConfig, TableId
from icefloe.loader.errors import Fenced
from icefloe.loader.io.metrics import LoaderMetrics
from icefloe.loader.io.retry import Patience, Stalled
from tests.loader.io.test_retry import Clock


def state(schema_id: int, owner: str = "me") -> Any:
    lease = SimpleNamespace(owner=owner, instance="i", expires_ms=2**62)
    return SimpleNamespace(schema=SimpleNamespace(schema_id=schema_id), lease=lease)


class View:
    """The table's schema id as each read finds it."""

    def __init__(self, schema_ids: list[int], owner: str = "me") -> None:
        self.schema_ids = schema_ids
        self.reads = 0
        self.owner = owner
        self.clock = Clock()
        self.patience = Patience(60.0, clock=self.clock, sleep=self.clock.sleep)

    def state(self) -> Any:
        self.reads += 1
        return state(self.schema_ids[min(self.reads, len(self.schema_ids)) - 1], self.owner)


def sink_with(
    view: View,
    outcomes: list[int | None],
    monkeypatch: Any,
    failure: BaseException | None = None,
) -> BatchSink:
    """A sink whose attempt N plans from schema ``outcomes[N]`` and fails (an int) or succeeds.

    A failed attempt raises ``failure`` (by default a write refused for extra columns).
    """
    config = LoaderConfig(
        table=TableId.parse("lake.s.t"),
        kafka=KafkaConfig(bootstrap="127.0.0.1:1", topics=("t",)),
        catalog=CatalogConfig(uri="http://127.0.0.1:1"),
        metrics_port=0,
        loader_id="me",
    )
    sink = BatchSink(config, view, LoaderMetrics("lake.s.t"), None, "i")  # type: ignore[arg-type]
    sink.attempts = []  # type: ignore[attr-defined]

    def attempt(records: Any, batch_id: int, number: int) -> None:
        planned = outcomes[len(sink.attempts)]  # type: ignore[attr-defined]
        sink.attempts.append(number)  # type: ignore[attr-defined]
        if planned is None:
            return
        sink.last_state = state(planned)
        raise _WriteFailed from (failure or RuntimeError("Cannot write extra columns `xi2`"))

    monkeypatch.setattr(sink, "_attempt", attempt)
    monkeypatch.setattr(sink_module.time, "sleep", lambda s: None)
    return sink


def process(sink: BatchSink) -> None:
    sink._process(SimpleNamespace(select=lambda *c: None), 7)  # type: ignore[arg-type]


def test_writes_that_lose_the_race_with_schema_changes_are_planned_again(
    monkeypatch: Any,
) -> None:
    # Every attempt fails because the schema changed under it, more times than MAX_ATTEMPTS.
    races = MAX_ATTEMPTS + 2
    view = View([i + 1 for i in range(races)])
    sink = sink_with(view, [*range(races), None], monkeypatch)
    process(sink)
    assert sink.attempts == list(range(1, races + 2))  # type: ignore[attr-defined]


def test_a_failure_with_the_schema_unchanged_counts_towards_max_attempts(
    monkeypatch: Any,
) -> None:
    sink = sink_with(View([5]), [5] * MAX_ATTEMPTS, monkeypatch)
    with pytest.raises(RuntimeError, match="extra columns"):
        process(sink)
    assert len(sink.attempts) == MAX_ATTEMPTS  # type: ignore[attr-defined]


def test_schema_races_are_bounded_too(monkeypatch: Any) -> None:
    view = View(list(range(1, MAX_REPLANS + 2)))
    sink = sink_with(view, list(range(MAX_REPLANS + 1)), monkeypatch)
    with pytest.raises(RuntimeError, match="extra columns"):
        process(sink)
    assert len(sink.attempts) == MAX_REPLANS  # type: ignore[attr-defined]


def test_a_write_failed_because_the_table_was_taken_over_steps_down(monkeypatch: Any) -> None:
    sink = sink_with(View([2], owner="other"), [1, None], monkeypatch)
    with pytest.raises(Fenced):
        process(sink)


def test_network_failures_are_retried_past_max_attempts_and_do_not_count(monkeypatch: Any) -> None:
    import requests

    # A catalog that drops the connection many more times than MAX_ATTEMPTS, then answers.
    lost = requests.ConnectionError("Connection aborted: RemoteDisconnected")
    drops = MAX_ATTEMPTS * 3
    sink = sink_with(View([5]), [5] * drops + [None], monkeypatch, failure=lost)
    process(sink)
    assert len(sink.attempts) == drops + 1  # type: ignore[attr-defined]
    assert sink.view.patience.failing_for_s == 0  # progress resets the bound


def test_a_java_timeout_inside_the_spark_write_is_the_networks_fault(monkeypatch: Any) -> None:
    java = RuntimeError(
        "An error occurred while calling o123.append.\n: org.apache.iceberg.exceptions."
        "RESTException: Error occurred while processing POST request\n"
        "Caused by: java.net.SocketTimeoutException: Read timed out"
    )
    sink = sink_with(View([5]), [5] * (MAX_ATTEMPTS + 1) + [None], monkeypatch, failure=java)
    process(sink)
    assert len(sink.attempts) == MAX_ATTEMPTS + 2  # type: ignore[attr-defined]


def test_a_network_failure_that_lasts_past_progress_timeout_stops_the_loader(
    monkeypatch: Any,
) -> None:
    import requests

    lost = requests.ReadTimeout("HTTPConnectionPool(host='127.0.0.1', port=1): Read timed out.")
    view = View([5])
    sink = sink_with(view, [5] * 10_000, monkeypatch, failure=lost)
    view.patience.endpoints = {"catalog": "http://127.0.0.1:1"}
    with pytest.raises(
        Stalled, match=r"catalog at http://127.0.0.1:1 did not answer .*ReadTimeout"
    ):
        process(sink)
    assert view.clock.now >= 60.0
    assert view.clock.now < 60.0 + 6.0  # the last back-off does not overshoot by much
