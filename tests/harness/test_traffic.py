"""A run's traffic: a background phase ended early (``end_publish``) stops at once and
records what it sent; a phase already done is not ended again."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from icefloe.harness.history import History, select
from icefloe.harness.scenarios.traffic import Traffic, Workload
from icefloe.harness.waiting import poll
from icefloe.publisher import producer
from icefloe.publisher.fakes import FakeProducer


@pytest.fixture
def traffic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Traffic:
    real = producer.Publisher

    def fake(bootstrap: str, topic: str, config: Any) -> Any:
        return real(bootstrap, topic, config, producer_factory=FakeProducer)

    monkeypatch.setattr(producer, "Publisher", fake)
    return Traffic("127.0.0.1:9", "events", tmp_path, History(), seed=7)


def test_ending_a_background_phase_stops_it_before_its_count(traffic: Traffic) -> None:
    slow = traffic.publish("steady", Workload(count=100_000, rate=200), background=True)
    quick = traffic.publish("quick", Workload(count=5), background=True)
    poll(lambda: quick.done, timeout_s=30, every_s=0.05)
    time.sleep(2.0)  # 400 of its 100,000 at 200/s, less its generator's start
    ended = traffic.end()
    assert ended == ["steady"], "the phase already done is not ended"
    assert slow.done and quick.done
    (record,) = [e for e in select(traffic.history, "publish", phase="ok") if
                 e.data["phase"] == "steady"]  # fmt: skip
    assert 1 <= record.data["sent"] < 1_000, record.data
    assert len(traffic.entries()) == record.data["sent"] + 5
