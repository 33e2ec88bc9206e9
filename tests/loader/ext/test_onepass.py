"""A batch written in one pass is planned from where it ends in Kafka, not from its records.

``FastPath.commit`` sets the snapshot's offsets before a record is read, from the query's
offset log (``loader.ext.fastpath.onepass.parse_offset_log``). These tests hold that plan to
the one made from the records themselves (``plan_batch`` over each partition's lowest and highest
offset, as the two-job way does) for every batch a stream can hand over.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from icefloe.loader.commit.offsets import kafka_ranges, plan_batch
from icefloe.loader.ext.fastpath.onepass import parse_offset_log

TOPIC = "orders"

OFFSET_LOG = (
    "v1\n"
    '{"batchWatermarkMs":0,"batchTimestampMs":1795605581998,"conf":{"a":"b"}}\n'
    '{"orders":{"1":40,"0":17},"audit":{"0":3}}\n'
)


def test_the_offset_log_gives_every_partition_its_end() -> None:
    assert parse_offset_log(OFFSET_LOG) == {"orders": {0: 17, 1: 40}, "audit": {0: 3}}


def test_an_offset_log_in_another_form_is_unknown() -> None:
    assert parse_offset_log("") is None
    assert parse_offset_log("v2\n{}\n{}") is None
    assert parse_offset_log("v1\n{}") is None  # no source
    assert parse_offset_log("v1\n{}\n{}\n{}") is None  # two sources
    assert parse_offset_log('v1\n{}\n{"orders": {"0": "x"}}') is None
    assert parse_offset_log("v1\n{}\n[1, 2]") is None


Case = tuple[dict[str, dict[int, int]], dict[str, dict[int, int]], list[tuple[int, int, int]]]


@st.composite
def batches(draw: st.DrawFn) -> Case:
    """Committed offsets, the batch's starts where they are numbers, and per partition where
    the batch starts and ends in Kafka."""
    committed: dict[int, int] = {}
    starts: dict[int, int] = {}
    batch = []
    for p in range(draw(st.integers(1, 4))):
        done = draw(st.none() | st.integers(0, 1_000))
        if done is not None:
            committed[p] = done
        # A stream that started at the table's offsets never starts below them; retention
        # can make it start above.
        start = (done or 0) + draw(st.integers(0, 50))
        end = start + draw(st.integers(0, 50))
        if done is not None or draw(st.booleans()):
            starts[p] = start  # a partition read from its earliest has no number to start at
        batch.append((p, start, end))
    return (
        {TOPIC: committed} if committed else {},
        {TOPIC: starts} if starts else {},
        batch,
    )


@given(batches(), st.data())
def test_the_plan_from_the_bounds_commits_what_the_records_would(
    case: Case, data: st.DataObject
) -> None:
    committed, starts, batch = case
    by_records = []
    for p, start, end in batch:
        if end > start:
            # Records from the start (or later: compaction) to the last offset of the range.
            lo = data.draw(st.integers(start, end - 1))
            by_records.append((TOPIC, p, lo, end))
    ends = {TOPIC: {p: end for p, _, end in batch}}
    from_bounds = plan_batch(committed, kafka_ranges(starts, ends, committed))
    from_records = plan_batch(committed, by_records)
    expected = {t: dict(ps) for t, ps in from_records.next_offsets.items()}
    for p, start, end in batch:
        new = p not in committed.get(TOPIC, {}) and p not in starts.get(TOPIC, {})
        if new and end == start and end > 0:
            # A new partition read from its earliest with nothing in it: no record exists below
            # its end, and the plan from the bounds may say so.
            expected.setdefault(TOPIC, {})[p] = end
    assert from_bounds.next_offsets == expected
    # Records lost to retention show as a gap: the batch starts past what the table holds.
    done = committed.get(TOPIC, {})
    assert {(g.partition, g.start) for g in from_bounds.gaps} == {
        (p, start) for p, start, end in batch if end > start and p in done and start > done[p]
    }
