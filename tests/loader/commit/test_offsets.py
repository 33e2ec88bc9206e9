"""Exactly-once bookkeeping: offsets in snapshot summaries, replays, foreign snapshots, leases."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from icefloe.loader import keys
from icefloe.loader.commit.lease import (
    Lease,
    check_lease,
    check_owner,
    lease_from_properties,
    lease_properties,
    live_foreign_lease,
)
from icefloe.loader.commit.offsets import (
    OffsetRange,
    SnapshotInfo,
    committed_offsets,
    decode_offsets,
    encode_offsets,
    plan_batch,
    summary_properties,
    table_committed,
)
from icefloe.loader.errors import ConcurrentLoader, Fenced, InvalidOffsets


def ours(
    snapshot_id: int, parent: int | None, offsets: dict[str, dict[int, int]], batch: int = 0
) -> SnapshotInfo:
    summary = {"operation": "append", **summary_properties("L1", "p1", offsets, batch)}
    return SnapshotInfo(snapshot_id, parent, snapshot_id * 1000, summary)


def foreign(snapshot_id: int, parent: int | None, operation: str) -> SnapshotInfo:
    return SnapshotInfo(snapshot_id, parent, snapshot_id * 1000, {"operation": operation})


# --- encoding ---------------------------------------------------------------------


def test_encoding_is_compact_and_ordered() -> None:
    text = encode_offsets({"b": {10: 5, 2: 7}, "a": {0: 1}})
    assert text == '{"a":{"0":1},"b":{"2":7,"10":5}}'


@given(
    st.dictionaries(
        st.text(min_size=1), st.dictionaries(st.integers(0, 10_000), st.integers(0, 2**62))
    )
)
def test_encoding_round_trips(offsets: dict[str, dict[int, int]]) -> None:
    assert decode_offsets(encode_offsets(offsets)) == offsets


@pytest.mark.parametrize(
    "text",
    [
        "nope",
        "[]",
        '{"t": []}',
        '{"t": {"x": 1}}',
        '{"t": {"0": -1}}',
        '{"t": {"0": 1.5}}',
        '{"t": {"0": true}}',
    ],
)
def test_decoding_rejects_garbage(text: str) -> None:
    with pytest.raises(InvalidOffsets):
        decode_offsets(text)


def test_encoding_rejects_negative_offsets() -> None:
    with pytest.raises(InvalidOffsets):
        encode_offsets({"t": {0: -1}})


# --- committed offsets ---------------------------------------------------------------


def test_empty_table_has_nothing_committed() -> None:
    committed = committed_offsets([])
    assert (committed.offsets, committed.found, committed.history_truncated) == ({}, False, False)


def test_newest_icefloe_snapshot_wins() -> None:
    history = [
        ours(3, 2, {"t": {0: 30}}, batch=3),
        ours(2, 1, {"t": {0: 20}}),
        ours(1, None, {"t": {0: 10}}),
    ]
    committed = committed_offsets(history)
    assert committed.offsets == {"t": {0: 30}}
    assert (committed.snapshot_id, committed.batch_id, committed.loader_id) == (3, 3, "L1")


def test_foreign_snapshots_are_skipped() -> None:
    history = [
        foreign(6, 5, "replace"),  # compaction
        foreign(5, 4, "delete"),  # retention
        foreign(4, 3, "overwrite"),  # a MERGE / row-level delete
        foreign(3, 2, "append"),  # a human INSERT in Trino
        ours(2, 1, {"t": {0: 20, 1: 4}}),
        ours(1, None, {"t": {0: 10}}),
    ]
    committed = committed_offsets(history)
    assert committed.offsets == {"t": {0: 20, 1: 4}}
    assert committed.snapshot_id == 2


def test_expired_history_before_any_icefloe_snapshot_is_reported() -> None:
    # expire_snapshots removed snapshots 1..4; the oldest survivor still names its parent.
    committed = committed_offsets([foreign(6, 5, "replace"), foreign(5, 4, "delete")])
    assert committed.found is False
    assert committed.history_truncated is True


def test_expired_history_after_our_snapshot_is_fine() -> None:
    committed = committed_offsets([foreign(9, 8, "replace"), ours(8, 7, {"t": {0: 80}})])
    assert committed.offsets == {"t": {0: 80}}
    assert committed.history_truncated is False


def test_root_without_icefloe_snapshots_is_not_truncated() -> None:
    committed = committed_offsets([foreign(2, 1, "append"), foreign(1, None, "append")])
    assert (committed.found, committed.history_truncated) == (False, False)


def test_lineage_is_followed_not_list_order() -> None:
    # After a rollback to 2, snapshot 3 is no longer in the current lineage.
    snapshots = [
        foreign(4, 2, "replace"),
        ours(3, 2, {"t": {0: 30}}),
        ours(2, 1, {"t": {0: 20}}),
        ours(1, None, {"t": {0: 10}}),
    ]
    assert committed_offsets(snapshots).offsets == {"t": {0: 20}}


def test_plain_tuples_are_accepted() -> None:
    summary = {keys.OFFSETS: '{"t":{"0":5}}'}
    assert committed_offsets([(1, None, 0, summary)]).offsets == {"t": {0: 5}}


def test_corrupt_offsets_are_not_skipped() -> None:
    with pytest.raises(InvalidOffsets):
        committed_offsets(
            [SnapshotInfo(2, 1, 0, {keys.OFFSETS: "{"}), ours(1, None, {"t": {0: 1}})]
        )


def test_parent_cycle_terminates() -> None:
    assert committed_offsets([foreign(1, 2, "append"), foreign(2, 1, "append")]).found is False


# --- planning a batch -------------------------------------------------------------------


def test_fresh_batch_keeps_everything() -> None:
    plan = plan_batch({}, [OffsetRange("t", 0, 0, 10), OffsetRange("t", 1, 5, 6)])
    assert not plan.skip
    assert plan.next_offsets == {"t": {0: 10, 1: 6}}
    assert plan.keeps("t", 0, 0) and plan.keeps("t", 1, 5)
    assert (plan.replayed, plan.gaps) == (0, ())


def test_replayed_batch_after_crash_is_skipped() -> None:
    # The snapshot was committed, the checkpoint was not: Spark replays 10..20.
    plan = plan_batch({"t": {0: 20}}, [("t", 0, 10, 20)])
    assert plan.skip
    assert plan.replayed == 10
    assert plan.next_offsets == {"t": {0: 20}}
    assert not plan.keeps("t", 0, 15)


def test_partially_replayed_batch_drops_only_committed_records() -> None:
    plan = plan_batch({"t": {0: 15, 1: 3}}, [("t", 0, 10, 20), ("t", 1, 3, 4)])
    assert not plan.skip
    assert not plan.keeps("t", 0, 14)
    assert plan.keeps("t", 0, 15)
    assert plan.keeps("t", 1, 3)
    assert plan.replayed == 5
    assert plan.next_offsets == {"t": {0: 20, 1: 4}}


def test_untouched_partitions_and_topics_are_carried_forward() -> None:
    plan = plan_batch({"t": {0: 5, 1: 9}, "u": {0: 1}}, [("t", 0, 5, 6)])
    assert plan.next_offsets == {"t": {0: 6, 1: 9}, "u": {0: 1}}


def test_gap_is_reported() -> None:
    plan = plan_batch({"t": {0: 5}}, [("t", 0, 8, 9)])
    assert [(g.committed, g.start) for g in plan.gaps] == [(5, 8)]
    assert plan.keeps("t", 0, 8)


def test_empty_batch_is_skipped() -> None:
    plan = plan_batch({"t": {0: 5}}, [("t", 0, 7, 7)])
    assert plan.skip
    assert plan.next_offsets == {"t": {0: 5}}


def test_records_outside_the_plan_are_not_kept() -> None:
    assert not plan_batch({}, [("t", 0, 0, 1)]).keeps("other", 0, 0)


@given(
    st.dictionaries(st.integers(0, 3), st.integers(0, 100)),
    st.lists(
        st.tuples(st.integers(0, 3), st.integers(0, 100), st.integers(0, 50)),
        unique_by=lambda r: r[0],
    ),
)
def test_plan_never_moves_offsets_backwards_and_keeps_exactly_the_new_records(
    committed: dict[int, int], ranges: list[tuple[int, int, int]]
) -> None:
    batch = [OffsetRange("t", p, start, start + n) for p, start, n in ranges]
    plan = plan_batch({"t": committed}, batch)
    for p, offset in committed.items():
        assert plan.next_offsets["t"][p] >= offset
    for r in batch:
        for offset in range(r.start, r.end):
            assert plan.keeps("t", r.partition, offset) == (offset >= committed.get(r.partition, 0))


# --- leases -----------------------------------------------------------------------------


def test_lease_round_trips_through_properties() -> None:
    props = lease_properties("L1", "p1", 1_000, 60_000)
    assert lease_from_properties(props) == Lease("L1", 61_000, "p1")


def test_summary_names_the_loader_and_its_process_but_carries_no_lease() -> None:
    summary = summary_properties("L1", "p1", {"t": {0: 1}}, 7, records=3)
    assert summary[keys.LOADER_ID] == "L1"
    assert summary[keys.INSTANCE] == "p1"
    assert summary[keys.BATCH_ID] == "7"
    assert summary[keys.RECORDS] == "3"
    # A commit renews the lease in the table properties, in the same catalog commit; a lease
    # read from summaries let a fenced loader look alive to its successor.
    assert lease_from_properties(summary) is None


@pytest.mark.parametrize(
    "props",
    [{}, {keys.TABLE_OWNER: "L1"}, {keys.TABLE_OWNER: "L1", keys.TABLE_LEASE_EXPIRES_MS: "soon"}],
)
def test_missing_or_broken_leases_are_none(props: dict[str, str]) -> None:
    assert lease_from_properties(props) is None


def test_own_lease_never_blocks() -> None:
    check_lease("lake.s.t", "L1", 0, [Lease("L1", 10_000)])


def test_expired_foreign_lease_does_not_block() -> None:
    check_lease("lake.s.t", "L1", 10_001, [Lease("L2", 10_000), None])


def test_live_foreign_lease_blocks() -> None:
    with pytest.raises(ConcurrentLoader) as info:
        check_lease("lake.s.t", "L1", 5_000, [Lease("L2", 10_000), Lease("L3", 20_000)])
    assert (info.value.owner, info.value.lease_expires_ms) == ("L3", 20_000)
    assert "L3" in str(info.value) and "lake.s.t" in str(info.value)


def test_skew_extends_foreign_leases() -> None:
    assert live_foreign_lease("L1", 10_500, [Lease("L2", 10_000)], skew_ms=1_000) == Lease(
        "L2", 10_000
    )
    assert live_foreign_lease("L1", 10_500, [Lease("L2", 10_000)]) is None


def test_released_lease_frees_the_table() -> None:
    released = lease_from_properties(lease_properties("L2", "p2", 5_000, 0))
    check_lease("lake.s.t", "L1", 5_000, [released])


def test_the_holder_of_the_lease_is_its_owner() -> None:
    check_owner("lake.s.t", "L1", "p1", Lease("L1", 0, "p1"))  # expired, but nobody took over


@pytest.mark.parametrize(
    "lease",
    [
        Lease("L2", 10_000, "p2"),  # another loader took over
        Lease("L1", 10_000, "p9"),  # a newer process of the same loader took over
        Lease("L1", 10_000, ""),  # a lease without a process
        None,  # released or never written
    ],
)
def test_anyone_else_holding_the_lease_fences_this_process(lease: Lease | None) -> None:
    with pytest.raises(Fenced) as info:
        check_owner("lake.s.t", "L1", "p1", lease)
    assert isinstance(info.value, ConcurrentLoader)
    assert "fenced" in str(info.value) and "lake.s.t" in str(info.value)
    if lease is not None:
        assert repr(lease.owner) in str(info.value)


def test_fenced_survives_pickling() -> None:
    import pickle

    error = Fenced("lake.s.t", "L1", Lease("L2", 5, "p2"))
    again = pickle.loads(pickle.dumps(error))
    assert (again.owner, again.me, str(again)) == ("L2", "L1", str(error))


# --- offsets that outlive snapshot expiry ------------------------------------------------


def test_expired_lineage_takes_the_offsets_property() -> None:
    # Compaction then expiry: main's only snapshot is a rewrite whose parent is gone.
    properties = {keys.TABLE_OFFSETS: encode_offsets({"t": {0: 70, 1: 12}})}
    committed = table_committed([foreign(9, 8, "replace")], properties)
    assert committed.offsets == {"t": {0: 70, 1: 12}}
    assert (committed.found, committed.from_properties, committed.history_truncated) == (
        True,
        True,
        False,
    )


def test_the_lineage_wins_over_the_property_when_it_reaches_a_loader_snapshot() -> None:
    # After a rollback of main the lineage is older than the property, and right.
    properties = {keys.TABLE_OFFSETS: encode_offsets({"t": {0: 90}})}
    committed = table_committed([foreign(9, 8, "replace"), ours(8, 7, {"t": {0: 80}})], properties)
    assert (committed.offsets, committed.from_properties) == ({"t": {0: 80}}, False)


def test_without_the_property_an_expired_lineage_stays_truncated() -> None:
    committed = table_committed([foreign(9, 8, "replace")], {})
    assert (committed.found, committed.history_truncated) == (False, True)


def test_an_unreadable_offsets_property_stops_the_loader() -> None:
    with pytest.raises(InvalidOffsets):
        table_committed([foreign(9, 8, "replace")], {keys.TABLE_OFFSETS: '{"t": {"0": -1}}'})
