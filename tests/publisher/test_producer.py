"""Publisher: ledger from delivery reports, resends, failures, pacing, producer settings."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError

from icefloe.publisher.fakes import FakeProducer
from icefloe.publisher.ledger import Ledger
from icefloe.publisher.messages import GenerationConfig, generate
from icefloe.publisher.producer import Publisher, PublisherConfig, PublishFailed


def publisher(
    tmp_path: Path, fake: dict[str, Any] | None = None, **config: Any
) -> tuple[Publisher, list[FakeProducer]]:
    made: list[FakeProducer] = []

    def factory(conf: dict[str, Any]) -> FakeProducer:
        made.append(FakeProducer(conf, **(fake or {})))
        return made[-1]

    generation = config.pop("generation", GenerationConfig(seed=1, malformed_fraction=0.2))
    cfg = PublisherConfig(generation=generation, ledger_dir=tmp_path, progress=False, **config)
    return Publisher("127.0.0.1:9", "events", cfg, producer_factory=factory), made


def test_ledger_matches_what_the_broker_holds(tmp_path: Path) -> None:
    pub, made = publisher(tmp_path)
    result = pub.publish(3000)
    assert (result.sent, result.failed) == (3000, 0)
    assert result.valid + result.malformed == 3000 and result.malformed > 0
    ledger = Ledger.read(result.ledger_path)
    assert ledger.counts() == {"valid": result.valid, "malformed": result.malformed}
    assert ledger.run["generation"]["seed"] == 1 and ledger.summary is not None
    expected = {
        m.event_id: m for m in generate(GenerationConfig(seed=1, malformed_fraction=0.2), 3000)
    }
    log = made[0].log
    for entry in ledger:
        message = expected[entry.event_id]
        key, value = log[(entry.topic, entry.partition)][entry.offset]  # type: ignore[index]
        assert value == message.value and key == message.key
        assert entry.status == message.status and entry.kind == message.kind
        assert entry.timestamp is not None


def test_resends_then_succeeds(tmp_path: Path) -> None:
    flaky = KafkaError(KafkaError._MSG_TIMED_OUT)
    pub, _ = publisher(
        tmp_path,
        {"failure": lambda i, attempt: flaky if i % 10 == 0 and attempt < 3 else None},
        generation=GenerationConfig(seed=1),
    )
    result = pub.publish(200)
    assert result.failed == 0 and result.resends == 40
    ledger = Ledger.read(result.ledger_path)
    assert sorted(e.attempts for e in ledger).count(3) == 20
    assert len({e.event_id for e in ledger}) == 200


def test_final_failures_raise_and_are_in_the_ledger(tmp_path: Path) -> None:
    dead = KafkaError(KafkaError._MSG_TIMED_OUT)
    pub, _ = publisher(
        tmp_path,
        {"failure": lambda i, attempt: dead if i % 50 == 0 else None},
        max_resends=1,
        generation=GenerationConfig(seed=1),
    )
    with pytest.raises(PublishFailed) as info:
        pub.publish(200)
    result = info.value.result
    assert result.failed == 4 and result.valid == 196
    ledger = Ledger.read(result.ledger_path)
    failed = ledger.failed()
    assert len(failed) == 4 and all(e.attempts == 2 and e.error for e in failed)
    assert ledger.summary is not None and ledger.summary["failed"] == 4


def test_permanent_errors_are_not_resent(tmp_path: Path) -> None:
    fatal = KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED)
    pub, _ = publisher(tmp_path, {"failure": lambda i, attempt: fatal if i == 0 else None})
    with pytest.raises(PublishFailed) as info:
        pub.publish(5)
    assert info.value.result.resends == 0 and info.value.result.failed == 1


def test_synchronous_produce_errors_are_recorded(tmp_path: Path) -> None:
    generation = GenerationConfig(seed=1, malformed_fraction=0.3, malformed_kinds=("oversized",))
    pub, _ = publisher(
        tmp_path,
        {"reject": lambda value: value is not None and len(value) > 1 << 20},
        generation=generation,
    )
    with pytest.raises(PublishFailed) as info:
        pub.publish(100)
    ledger = Ledger.read(info.value.result.ledger_path)
    assert {e.kind for e in ledger.failed()} == {"oversized"}
    assert len(ledger) == 100


def test_full_local_queue_waits_instead_of_dropping(tmp_path: Path) -> None:
    pub, made = publisher(tmp_path, {"queue_limit": 10})
    result = pub.publish(500)
    assert result.sent == 500 and result.failed == 0 and made[0].buffer_errors > 0
    assert len(Ledger.read(result.ledger_path)) == 500


def test_rate_and_duration(tmp_path: Path) -> None:
    pub, _ = publisher(tmp_path)
    start = time.perf_counter()
    result = pub.publish(50, rate=200)
    assert 0.2 <= time.perf_counter() - start < 2.0 and result.sent == 50
    result = pub.publish(rate=100, duration=0.3)
    assert 20 <= result.sent <= 40
    result = pub.publish(duration=0.2)
    assert result.sent > 1000


def test_a_stop_ends_a_paced_publish_before_its_count_with_every_sent_message_in_the_ledger(
    tmp_path: Path,
) -> None:
    pub, _ = publisher(tmp_path)
    stop = threading.Event()
    threading.Timer(0.3, stop.set).start()
    result = pub.publish(10_000, rate=100, stop=stop)
    assert 15 <= result.sent <= 45, result
    ledger = Ledger.read(result.ledger_path)
    assert len(ledger.entries) == result.sent


def test_publish_one_and_explicit_ledger(tmp_path: Path) -> None:
    pub, _ = publisher(tmp_path, generation=GenerationConfig(seed=1))
    result = pub.publish_one(ledger_path=tmp_path / "one.jsonl")
    assert result.sent == result.valid == 1 and result.ledger_path == tmp_path / "one.jsonl"


def test_argument_checks(tmp_path: Path) -> None:
    pub, _ = publisher(tmp_path)
    with pytest.raises(ValueError):
        pub.publish()
    with pytest.raises(ValueError):
        pub.publish(-1)
    with pytest.raises(ValueError):
        pub.publish(1, rate=0)


def test_producer_settings(tmp_path: Path) -> None:
    pub, _ = publisher(tmp_path, producer_overrides={"linger.ms": 5, "security.protocol": "SSL"})
    conf = pub.producer_config()
    assert conf["enable.idempotence"] is True and conf["acks"] == "all"
    assert conf["compression.type"] == "lz4" and conf["linger.ms"] == 5
    assert conf["message.max.bytes"] > (1 << 20) + 1
    assert conf["security.protocol"] == "SSL"


def test_real_producer_reports_unreachable_broker_as_failures(tmp_path: Path) -> None:
    # Port 9 on loopback: nothing listens, so every delivery times out quickly.
    cfg = PublisherConfig(
        generation=GenerationConfig(seed=1),
        ledger_dir=tmp_path,
        delivery_timeout_ms=200,
        max_resends=1,
        progress=False,
        producer_overrides={"log_level": 0},
    )
    with pytest.raises(PublishFailed) as info:
        Publisher("127.0.0.1:9", "events", cfg).publish(3)
    ledger = Ledger.read(info.value.result.ledger_path)
    assert ledger.counts() == {"failed": 3}
    assert all(e.attempts == 2 for e in ledger)
    json.dumps(ledger.run)
