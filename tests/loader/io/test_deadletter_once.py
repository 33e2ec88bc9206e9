"""Dead letters sent once: which letters of the topic's tail count as sent, and the positions a
table property records (no Kafka: the headers as Kafka returns them)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from icefloe.loader import keys
from icefloe.loader.config import KafkaConfig
from icefloe.loader.io.deadletter import (
    DeadLetterProducer,
    pending_letters,
    positions_from_json,
    positions_to_json,
)


def letter(loader: str, topic: str, partition: int, offset: int) -> list[tuple[str, bytes]]:
    return [
        ("trace", b"x"),
        (keys.DLQ_SOURCE_TOPIC, topic.encode()),
        (keys.DLQ_SOURCE_PARTITION, str(partition).encode()),
        (keys.DLQ_SOURCE_OFFSET, str(offset).encode()),
        (keys.DLQ_LOADER_ID, loader.encode()),
    ]


def test_only_this_loaders_letters_for_records_not_committed_count() -> None:
    committed = {"events": {0: 100, 1: 50}}
    letters = [
        letter("me", "events", 0, 99),  # committed already: its record is in the past
        letter("me", "events", 0, 100),
        letter("me", "events", 1, 70),
        letter("me", "events", 2, 3),  # a partition the table has not seen
        letter("other", "events", 0, 120),  # another loader's letter
    ]
    assert pending_letters(letters, "me", committed) == {
        ("events", 0, 100),
        ("events", 1, 70),
        ("events", 2, 3),
    }


def test_the_loaders_own_stamp_wins_over_a_source_header_of_the_same_name() -> None:
    forged = [(keys.DLQ_LOADER_ID, b"me"), *letter("other", "events", 0, 5)]
    assert pending_letters([forged], "me", {}) == set()


def test_letters_without_coordinates_are_ignored() -> None:
    assert pending_letters([[(keys.DLQ_LOADER_ID, b"me")]], "me", {}) == set()


@given(st.dictionaries(st.integers(0, 64), st.integers(0, 2**62)), st.text(min_size=1))
def test_positions_round_trip(positions: dict[int, int], topic: str) -> None:
    assert positions_from_json(topic, positions_to_json(topic, positions)) == positions


def test_positions_of_another_topic_or_unreadable_are_none() -> None:
    assert positions_from_json("b", positions_to_json("a", {0: 1})) is None
    assert positions_from_json("a", "not json") is None
    assert positions_from_json("a", None) is None


def table_letter(table: str, loader: str, offset: int) -> list[tuple[str, bytes]]:
    return [*letter(loader, "events", 0, offset), (keys.DLQ_TABLE, table.encode())]


def test_letters_for_the_same_table_count_whichever_loader_sent_them() -> None:
    letters = [
        table_letter("lake.s.t", "predecessor", 10),  # another loader id, the same table
        table_letter("lake.s.other", "me", 11),  # this loader id, another table
        letter("me", "events", 0, 12),  # an older letter without a table: by loader id
    ]
    found = pending_letters(letters, "me", {}, table="lake.s.t")
    assert found == {("events", 0, 10), ("events", 0, 12)}


def test_a_commit_records_no_position_past_a_letter_whose_record_it_does_not_cover() -> None:
    # A killed process sent letters for records up to offset 80 of partition 1 (dead-letter
    # offsets 10-12); its successor planned a smaller batch and commits up to 70 only. The
    # position it records must stay at the letter of record 75, or the next start skips it
    # and sends that letter again.
    producer = DeadLetterProducer(
        KafkaConfig(bootstrap="127.0.0.1:1", topics=("events",)), "dlq", "me"
    )
    producer.positions = {0: 13, 1: 4}
    producer.placed = {
        ("events", 1, 60): (0, 10),
        ("events", 1, 75): (0, 11),
        ("events", 1, 80): (0, 12),
    }
    assert producer.positions_for({"events": {1: 70}}) == {0: 11, 1: 4}
    assert producer.positions_for({"events": {1: 81}}) == {0: 13, 1: 4}
    producer.forget({"events": {1: 70}})
    assert set(producer.placed) == {("events", 1, 75), ("events", 1, 80)}
    assert producer.positions_for({}) == {0: 11, 1: 4}
