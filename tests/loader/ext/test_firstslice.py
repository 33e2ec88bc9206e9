"""The first slice of a backlog waiting at start: which records, and when none."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from icefloe.loader.ext.firstslice import Slice, plan_slice

TOPIC = "events"

Watermarks = dict[tuple[str, int], tuple[int, int]]
Committed = dict[str, dict[int, int]]


def test_each_partition_gives_its_share_of_the_slice() -> None:
    watermarks = {(TOPIC, 0): (0, 800), (TOPIC, 1): (100, 800)}
    plan = plan_slice(watermarks, {TOPIC: {1: 100}}, 300, from_earliest=True)
    assert plan == Slice({TOPIC: {0: 0, 1: 100}}, {TOPIC: {0: 160, 1: 240}}, 1500)
    assert plan.records == 300


def test_the_table_offsets_are_where_the_slice_starts() -> None:
    watermarks = {(TOPIC, 0): (0, 10_000), (TOPIC, 1): (0, 10_000)}
    plan = plan_slice(watermarks, {TOPIC: {0: 9_000, 1: 4_000}}, 700, from_earliest=False)
    assert plan is not None
    assert plan.start == {TOPIC: {0: 9_000, 1: 4_000}}
    assert plan.end == {TOPIC: {0: 9_100, 1: 4_600}}


def test_no_slice_for_a_backlog_no_bigger_than_the_slice() -> None:
    watermarks = {(TOPIC, 0): (0, 150), (TOPIC, 1): (0, 150)}
    assert plan_slice(watermarks, {}, 300, from_earliest=True) is None
    assert plan_slice(watermarks, {}, 299, from_earliest=True) is not None
    assert plan_slice(watermarks, {}, 0, from_earliest=True) is None


def test_no_slice_where_the_start_is_not_certain() -> None:
    watermarks = {(TOPIC, 0): (500, 9_000)}
    # Starting at latest (or at offsets the user named): the stream decides.
    assert plan_slice(watermarks, {}, 100, from_earliest=False) is None
    # Retention removed committed records: the stream reports the gap as before.
    assert plan_slice(watermarks, {TOPIC: {0: 200}}, 100, from_earliest=True) is None
    # Offsets beyond the end: the topic was made again.
    assert plan_slice(watermarks, {TOPIC: {0: 9_001}}, 100, from_earliest=True) is None


def test_a_partition_too_small_for_a_share_is_left_to_the_stream() -> None:
    watermarks = {(TOPIC, 0): (0, 100_000), (TOPIC, 1): (0, 1)}
    plan = plan_slice(watermarks, {}, 1_000, from_earliest=True)
    assert plan is not None
    assert plan.end == {TOPIC: {0: 999}}


def test_the_read_keeps_the_client_settings_and_bounds_the_offsets() -> None:
    plan = Slice({TOPIC: {1: 5, 0: 7}}, {TOPIC: {1: 10, 0: 9}}, 40)
    stream = {
        "kafka.bootstrap.servers": "127.0.0.1:9092",
        "subscribe": TOPIC,
        "startingOffsets": "earliest",
        "maxOffsetsPerTrigger": "200000",
        "includeHeaders": "true",
    }
    options = plan.spark_options(stream)
    assert options["kafka.bootstrap.servers"] == "127.0.0.1:9092"
    assert options["includeHeaders"] == "true"
    assert "subscribe" not in options and "maxOffsetsPerTrigger" not in options
    assert json.loads(options["assign"]) == {TOPIC: [0, 1]}
    assert json.loads(options["startingOffsets"]) == {TOPIC: {"0": 7, "1": 5}}
    assert json.loads(options["endingOffsets"]) == {TOPIC: {"0": 9, "1": 10}}


@st.composite
def backlogs(draw: st.DrawFn) -> tuple[Watermarks, Committed]:
    watermarks: Watermarks = {}
    committed: Committed = {}
    for topic in draw(st.lists(st.sampled_from("abc"), min_size=1, max_size=3, unique=True)):
        for p in range(draw(st.integers(1, 4))):
            low = draw(st.integers(0, 1_000))
            high = low + draw(st.integers(0, 100_000))
            watermarks[(topic, p)] = (low, high)
            if draw(st.booleans()):
                committed.setdefault(topic, {})[p] = draw(st.integers(low, high))
    return watermarks, committed


@given(backlogs(), st.integers(1, 200_000))
def test_a_slice_is_a_bounded_prefix_of_every_backlog(
    backlog: tuple[Watermarks, Committed],
    limit: int,
) -> None:
    watermarks, committed = backlog
    plan = plan_slice(watermarks, committed, limit, from_earliest=True)
    starts = {
        (t, p): committed.get(t, {}).get(p, low) for (t, p), (low, _high) in watermarks.items()
    }
    waiting = sum(watermarks[tp][1] - start for tp, start in starts.items())
    if plan is None:
        assert waiting <= limit or all(
            (high - starts[tp]) * limit // waiting == 0 for tp, (_low, high) in watermarks.items()
        )
        return
    assert plan.backlog == waiting > limit
    assert 0 < plan.records <= limit
    for topic, parts in plan.end.items():
        for p, end in parts.items():
            # Each read starts where the partition's backlog starts and stays inside it.
            assert plan.start[topic][p] == starts[(topic, p)] < end <= watermarks[(topic, p)][1]
