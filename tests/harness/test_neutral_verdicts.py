"""The verdicts a loader of any kind gets from what it writes, not from icefloe's keys.

Each test is a small fake loader's history, as its observer declares it (``harness.observer``):
a loader that commits its position past rows it never wrote (lost), one that never commits
them (pending), one that commits them only in the drain (late), one whose commits carry no
icefloe key (liveness still sees them). Each is the break that shows its verdict can fail.
"""

from __future__ import annotations

import json
from typing import Any

from icefloe.harness.history import History
from icefloe.harness.observer import GROUP, SUMMARY, Observer
from icefloe.harness.scenarios.checks.facts.reads import Observed
from icefloe.harness.scenarios.checks.verdict import INVALID, NOT_APPLICABLE, VALID, run_check
from icefloe.publisher.ledger import LedgerEntry

TOPIC = "events"
KEY = "my.offsets"
SUMMARY_LOADER = Observer(
    kind="command:mine", commit_key=KEY, position=SUMMARY, position_key=KEY, cadence_s=2.0
)
GROUP_LOADER = Observer(kind="sink", position=GROUP, consumer_group="connect-x", cadence_s=10.0)


def entry(offset: int, partition: int = 0) -> LedgerEntry:
    return LedgerEntry(
        seq=offset,
        topic=TOPIC,
        partition=partition,
        offset=offset,
        timestamp=int(1_000_000 + offset) * 1000,
        key=None,
        event_id=f"id-{partition}-{offset}",
        status="valid",
    )


LEDGER = [entry(i) for i in range(5)]


def observer_event(observer: Observer) -> tuple[float, str, str, str, dict[str, Any]]:
    return (0.0, "info", "info", "observer", {"observer": observer.to_json()})


def snapshot(sid: int, when: float, next_offset: int | None, parent: int | None = None) -> dict:
    summary = {"added-records": "1"}
    if next_offset is not None:
        summary[KEY] = json.dumps({TOPIC: {"0": next_offset}})
    return {"snapshot": sid, "time": when, "operation": "append", "parent": parent,
            "records": 1, "summary": summary}  # fmt: skip


def commits(*snaps: dict, when: float = 50.0) -> tuple[float, str, str, str, dict[str, Any]]:
    return (when, "read", "ok", "commits", {"values": list(snaps)})


def positions(
    values: dict[str, dict[str, int]], when: float, **held: Any
) -> tuple[float, str, str, str, dict[str, Any]]:
    return (when, "read", "ok", "positions", {"values": values, "final": True, **held})


def exactly_once(history: History, present: list[str], seen_at: float = 10.0) -> Any:
    observed = Observed(
        {eid: 1 for eid in present}, reads={"first_seen": dict.fromkeys(present, seen_at)}
    )
    return run_check("exactly_once", history, LEDGER, observed)


def test_a_loader_whose_position_passed_rows_it_never_wrote_lost_them_with_evidence() -> None:
    history = History.of(
        [
            observer_event(SUMMARY_LOADER),
            commits(snapshot(11, 20.0, 2), snapshot(12, 30.0, 5, parent=11)),
            positions({TOPIC: {"0": 5}}, 60.0, snapshot=12),
        ]
    )
    result = exactly_once(history, ["id-0-0", "id-0-1"])
    assert result.verdict == INVALID
    lost = result.anomalies["lost"]
    assert lost.count == 3 and "pending" not in result.anomalies
    assert "snapshot 12" in lost.examples[0] and "carries position 5" in lost.examples[0]
    assert lost.keys == {"id-0-2", "id-0-3", "id-0-4"}


def test_a_loader_that_never_committed_past_rows_has_them_pending_not_lost() -> None:
    history = History.of(
        [
            observer_event(SUMMARY_LOADER),
            commits(snapshot(11, 20.0, 2)),
            positions({TOPIC: {"0": 2}}, 60.0, snapshot=11),
        ]
    )
    result = exactly_once(history, ["id-0-0", "id-0-1"])
    assert result.verdict == INVALID
    assert set(result.anomalies) == {"pending"}
    assert result.anomalies["pending"].count == 3
    assert "at offset 2, before it" in result.anomalies["pending"].examples[0]


def test_a_group_position_past_a_row_is_its_evidence_and_no_position_for_a_partition_is_pending(
) -> None:  # fmt: skip
    ledger = [*LEDGER, entry(0, partition=1)]
    history = History.of(
        [
            observer_event(GROUP_LOADER),
            positions({TOPIC: {"0": 3}}, 40.0, group="connect-x"),
            positions({TOPIC: {"0": 5}}, 60.0, group="connect-x"),
        ]
    )
    observed = Observed({"id-0-0": 1, "id-0-1": 1})
    result = run_check("exactly_once", history, ledger, observed)
    lost, pending = result.anomalies["lost"], result.anomalies["pending"]
    assert lost.keys == {"id-0-2", "id-0-3", "id-0-4"}
    # The first read that showed the position past each row names it.
    assert "consumer group connect-x at offset 3" in lost.examples[0]
    assert any("consumer group connect-x at offset 5" in e for e in lost.examples)
    assert pending.keys == {"id-1-0"} and "no position for partition 1" in pending.examples[0]


FLINK_KEY = "flink.max-committed-checkpoint-id"
HELD_LOADER = Observer(
    kind="flink",
    commit_key=FLINK_KEY,
    position=GROUP,
    consumer_group="job-x",
    held_checkpoints="/state/checkpoint",
    cadence_s=2.0,
)


def checkpoint_commit(sid: int, checkpoint: int) -> dict:
    return {"snapshot": sid, "time": 30.0 + sid, "operation": "append", "parent": None,
            "records": 1, "summary": {FLINK_KEY: str(checkpoint)}}  # fmt: skip


def test_rows_behind_the_group_in_a_checkpoint_newer_than_the_tables_are_pending() -> None:
    """A Flink job's source commits the group when checkpoint 7 completes; killed before its
    sink committed 7's files, it holds the rows in 7 (its restore commits them): pending. With
    the table at checkpoint 7, the same rows are lost."""
    observed = Observed({"id-0-0": 1, "id-0-1": 1})

    def judged(table_at: int, held: int | None) -> Any:
        history = History.of(
            [
                observer_event(HELD_LOADER),
                commits(checkpoint_commit(1, 6), checkpoint_commit(2, table_at)),
                positions({TOPIC: {"0": 5}}, 60.0, group="job-x", held_checkpoint=held),
            ]
        )
        return run_check("exactly_once", history, LEDGER, observed)

    held = judged(table_at=6, held=7)
    assert set(held.anomalies) == {"pending"}  # still not in the table; lost to no one
    assert held.anomalies["pending"].keys == {"id-0-2", "id-0-3", "id-0-4"}
    assert "in its checkpoint 7, newer than checkpoint 6" in held.anomalies["pending"].examples[0]
    for table_at, checkpoint in ((7, 7), (8, 7), (6, None)):
        result = judged(table_at=table_at, held=checkpoint)
        assert result.verdict == INVALID, (table_at, checkpoint)
        assert result.anomalies["lost"].keys == {"id-0-2", "id-0-3", "id-0-4"}


def test_the_newest_complete_flink_checkpoint_is_read_from_its_folder(tmp_path: Any) -> None:
    from icefloe.harness.observer import newest_held_checkpoint

    assert newest_held_checkpoint(tmp_path) is None
    for job, number, complete in (("a1", 3, True), ("b2", 9, True), ("b2", 10, False)):
        folder = tmp_path / job / f"chk-{number}"
        folder.mkdir(parents=True)
        if complete:
            (folder / "_metadata").write_bytes(b"")
    (tmp_path / "b2" / "shared").mkdir()
    assert newest_held_checkpoint(tmp_path) == 9


def test_held_checkpoints_needs_the_checkpoint_number_as_commit_key() -> None:
    import pytest

    with pytest.raises(ValueError, match="held_checkpoints needs commit_key"):
        Observer(kind="flink", position=GROUP, consumer_group="g", held_checkpoints="/x")


def test_a_loader_that_declares_no_position_has_missing_rows_pending() -> None:
    history = History.of([observer_event(Observer(kind="command:bare"))])
    result = exactly_once(history, ["id-0-0"])
    assert set(result.anomalies) == {"pending"}
    assert "declares no committed position" in result.anomalies["pending"].examples[0]


def test_rows_that_arrive_only_in_the_drain_are_late_not_lost() -> None:
    history = History.of(
        [
            observer_event(SUMMARY_LOADER),
            (100.0, "info", "invoke", "drain", {"missing": 2}),
            commits(snapshot(11, 20.0, 3), snapshot(12, 110.0, 5, parent=11), when=120.0),
            positions({TOPIC: {"0": 5}}, 120.0, snapshot=12),
        ]
    )
    observed = Observed(
        dict.fromkeys((e.event_id for e in LEDGER), 1),
        reads={"first_seen": {"id-0-0": 10.0, "id-0-1": 10.0, "id-0-2": 10.0,
                              "id-0-3": 111.0, "id-0-4": 111.0}},
    )  # fmt: skip
    result = run_check("exactly_once", history, LEDGER, observed)
    assert result.verdict == VALID
    assert result.stats["late"] == 2 and "2 late" in result.summary
    # Without a drain there is nothing late: the same rows seen at the same times.
    no_drain = History.of([e for e in map(_tuple, history.events) if e[3] != "drain"])
    assert run_check("exactly_once", no_drain, LEDGER, observed).stats["late"] == 0


def _tuple(e: Any) -> tuple[float, str, str, str, dict[str, Any]]:
    return (e.time, e.kind, e.phase, e.name, dict(e.data))


def test_liveness_sees_commits_that_carry_no_icefloe_key() -> None:
    """A loader of its own keys commits after the heal: resumed. Read as icefloe's (no
    observer recorded), the same commits are not the loader's, and the window is stalled."""
    published = [entry(i) for i in range(50)]
    events = [
        (1_000_010.0, "fault", "invoke", "kill_loader.inject", {"lane": "loader"}),
        (1_000_011.0, "fault", "ok", "kill_loader.heal", {}),
        commits(snapshot(11, 1_000_005.0, 2), snapshot(12, 1_000_030.0, 40, parent=11),
                when=1_000_200.0),
    ]  # fmt: skip
    seen = run_check("liveness", History.of([observer_event(SUMMARY_LOADER), *events]),
                     published, Observed())  # fmt: skip
    assert seen.verdict == VALID, seen.summary
    assert seen.stats["resumed"] == 1 and seen.stats["resume_s"] == [19.0]
    blind = run_check("liveness", History.of(events), published, Observed())
    assert blind.verdict == INVALID and "stalled" in blind.anomalies


def test_liveness_bound_follows_the_loaders_own_cadence() -> None:
    """A commit 200 s after the heal is in time for a loader that commits every minute
    (6 cadences: 360 s), not for one that says it commits every 2 s (the 120 s bound)."""
    published = [entry(i) for i in range(50)]
    events = [
        (1_000_010.0, "fault", "invoke", "kill_loader.inject", {"lane": "loader"}),
        (1_000_011.0, "fault", "ok", "kill_loader.heal", {}),
        commits(snapshot(11, 1_000_005.0, 2), snapshot(12, 1_000_211.0, 40, parent=11),
                when=1_000_400.0),
    ]  # fmt: skip
    slow = Observer(kind="command:mine", commit_key=KEY, cadence_s=60.0)
    patient = run_check("liveness", History.of([observer_event(slow), *events]), published,
                        Observed(), {"bound_s": 120})  # fmt: skip
    assert patient.verdict == VALID and patient.stats["bound_s"] == 360.0
    quick = run_check("liveness", History.of([observer_event(SUMMARY_LOADER), *events]),
                      published, Observed(), {"bound_s": 120})  # fmt: skip
    assert quick.verdict == INVALID and quick.stats["bound_s"] == 120.0


def test_checks_that_cannot_apply_to_a_loader_say_so() -> None:
    history = History.of([observer_event(GROUP_LOADER)])
    owner = run_check("one_owner", history, LEDGER, Observed())
    assert owner.verdict == NOT_APPLICABLE and "names no process" in owner.summary
    letters = run_check("dead_letter", history, LEDGER, Observed())
    assert letters.verdict == NOT_APPLICABLE
    staged = History.of(
        [observer_event(GROUP_LOADER),
         (5.0, "read", "ok", "storage_snapshots",
          {"values": {"main": 1, "snapshots": [{"snapshot": 1, "parent": None, "time": 1.0}]}})]
    )  # fmt: skip
    assert run_check("staged_snapshots_bounded", staged, LEDGER, Observed()).verdict == (
        NOT_APPLICABLE
    )


def test_every_kinds_observer_survives_its_record_in_a_history(tmp_path: Any) -> None:
    """What a run records of its loader is what a later check reads (``scenario check``)."""
    from icefloe.harness.loaders.base import LoaderTarget
    from icefloe.harness.loaders.icefloe import IcefloeKind
    from icefloe.harness.loaders.kafka_connect import KafkaConnectKind
    from icefloe.harness.observer import observer_of

    target = LoaderTarget("l", "lake.s.t", (TOPIC,), "dlq", tmp_path)
    for kind in (IcefloeKind(), KafkaConnectKind()):
        observer = kind.observer(target)
        history = History.of([observer_event(observer)])
        assert observer_of(history.events) == observer
    sink = KafkaConnectKind().observer(target)
    assert sink.log_facts and sink.discovery_s == 300.0 and sink.cadence_s == 10.0


def test_rows_without_an_id_are_each_unexpected_and_name_no_message() -> None:
    from icefloe.harness.observer import NO_ID

    history = History.of([observer_event(SUMMARY_LOADER)])
    present = [e.event_id for e in LEDGER]
    observed = Observed({**dict.fromkeys(present, 1), NO_ID: 3})
    result = run_check("exactly_once", history, LEDGER, observed)
    unexpected = result.anomalies["unexpected"]
    assert unexpected.count == 3 and unexpected.keyed
    assert "a row with no event_id (3 such)" in unexpected.examples[0]
