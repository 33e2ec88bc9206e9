"""Publishing to the real local broker: the ledger is exactly what Kafka holds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition

from icefloe.publisher.ledger import Ledger
from icefloe.publisher.messages import HEADER_EVENT_ID, GenerationConfig, KeySpec, generate
from icefloe.publisher.producer import Publisher, PublisherConfig

pytestmark = pytest.mark.integration

COUNT = 5000


def read_back(bootstrap: str, ledger: Ledger) -> dict[tuple[str, int, int], Any]:
    """Consume exactly the offsets the ledger names, by assignment (no group offsets)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "icefloe-publisher-check",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "fetch.message.max.bytes": 4 << 20,
        }
    )
    offsets = ledger.offsets()
    try:
        consumer.assign([TopicPartition(t, p, min(o)) for (t, p), o in offsets.items()])
        wanted = {(t, p): max(o) for (t, p), o in offsets.items()}
        done: set[tuple[str, int]] = set()
        got: dict[tuple[str, int, int], Any] = {}
        idle = 0
        while len(done) < len(wanted) and idle < 30:
            msg = consumer.poll(1.0)
            if msg is None:
                idle += 1
                continue
            if msg.error():
                if msg.error().code() == msg.error()._PARTITION_EOF:
                    done.add((msg.topic(), msg.partition()))
                    continue
                raise AssertionError(str(msg.error()))
            got[(msg.topic(), msg.partition(), msg.offset())] = msg
            if msg.offset() >= wanted[(msg.topic(), msg.partition())]:
                done.add((msg.topic(), msg.partition()))
        return got
    finally:
        consumer.close()


def test_ledger_matches_the_broker(stack: Any, topic_factory: Any, tmp_path: Path) -> None:
    topic = topic_factory(partitions=3)
    generation = GenerationConfig(
        seed=20,
        key=KeySpec("random", 100),
        malformed_fraction=0.1,
        headers=True,
    )
    config = PublisherConfig(generation=generation, ledger_dir=tmp_path, progress=False)
    result = Publisher(stack.bootstrap_servers, topic, config).publish(COUNT)
    assert (result.sent, result.failed) == (COUNT, 0)

    ledger = Ledger.read(result.ledger_path)
    assert len(ledger) == COUNT
    assert ledger.counts()["valid"] == result.valid
    assert ledger.counts()["malformed"] == result.malformed > 0
    assert {e.partition for e in ledger} == {0, 1, 2}

    expected = {m.event_id: m for m in generate(generation, COUNT)}
    got = read_back(stack.bootstrap_servers, ledger)
    assert len(got) == COUNT
    for entry in ledger:
        msg = got[(entry.topic, entry.partition, entry.offset)]
        sent = expected[entry.event_id]
        assert msg.value() == sent.value
        assert msg.key() == sent.key
        assert dict(msg.headers() or [])[HEADER_EVENT_ID] == entry.event_id.encode()
        assert msg.timestamp()[1] == entry.timestamp
    # No extra messages beyond what the ledger lists.
    per_partition = ledger.offsets()
    for (t, p), offsets in per_partition.items():
        assert offsets == list(range(offsets[0], offsets[0] + len(offsets))), (t, p)


def test_targeted_partitions_and_one(stack: Any, topic_factory: Any, tmp_path: Path) -> None:
    topic = topic_factory(partitions=3)
    generation = GenerationConfig(seed=21, partitions=(2,))
    config = PublisherConfig(generation=generation, ledger_dir=tmp_path, progress=False)
    publisher = Publisher(stack.bootstrap_servers, topic, config)
    result = publisher.publish(100)
    ledger = Ledger.read(result.ledger_path)
    assert {e.partition for e in ledger} == {2}
    assert sorted(e.offset for e in ledger) == list(range(100))  # type: ignore[type-var]

    one = Ledger.read(publisher.publish_one(tmp_path / "one.jsonl").ledger_path)
    assert len(one) == 1 and one.entries[0].offset == 100


def test_oversized_messages_reach_the_broker(
    stack: Any, topic_factory: Any, tmp_path: Path
) -> None:
    topic = topic_factory(partitions=3)
    generation = GenerationConfig(
        seed=22, malformed_fraction=0.5, malformed_kinds=("oversized", "tombstone")
    )
    config = PublisherConfig(generation=generation, ledger_dir=tmp_path, progress=False)
    result = Publisher(stack.bootstrap_servers, topic, config).publish(20)
    ledger = Ledger.read(result.ledger_path)
    got = read_back(stack.bootstrap_servers, ledger)
    for entry in ledger.malformed("oversized"):
        value = got[(entry.topic, entry.partition, entry.offset)].value()
        assert len(value) == (1 << 20) + 1
    for entry in ledger.malformed("tombstone"):
        assert got[(entry.topic, entry.partition, entry.offset)].value() is None
