"""Checkers over hand-made histories and ledgers: fast, no services, including the failures."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from icefloe.harness.history import History
from icefloe.harness.observer import ICEFLOE
from icefloe.harness.scenarios.checks.facts.faults import injections as fault_windows
from icefloe.harness.scenarios.checks.facts.numbers import percentile
from icefloe.harness.scenarios.checks.facts.reads import DeadLetter, Observed
from icefloe.harness.scenarios.checks.verdict import INVALID, UNKNOWN, VALID, run_check, summarize
from icefloe.loader import keys
from icefloe.publisher.ledger import LedgerEntry

TOPIC = "events"


def entry(seq: int, *, kind: str | None = None, target: str | None = None, partition: int = 0,
          offset: int | None = None, timestamp: int | None = None) -> LedgerEntry:  # fmt: skip
    return LedgerEntry(
        seq=seq,
        topic=TOPIC,
        partition=partition,
        offset=seq if offset is None else offset,
        timestamp=timestamp,
        key=None,
        event_id=f"id-{seq}",
        status="valid" if kind is None else "malformed",
        kind=kind,
        target=target,
    )


def letter(e: LedgerEntry, kind: str, path: str = "$", reason: str = "bad") -> DeadLetter:
    return ICEFLOE.letter(
        0,
        e.seq,
        {
            keys.DLQ_SOURCE_TOPIC: e.topic,
            keys.DLQ_SOURCE_PARTITION: str(e.partition),
            keys.DLQ_SOURCE_OFFSET: str(e.offset),
            keys.DLQ_ERROR_KIND: kind,
            keys.DLQ_ERROR_PATH: path,
            keys.DLQ_ERROR_REASON: reason,
        },
    )


def history(*events: tuple[float, str, str, str, dict[str, Any]]) -> History:
    return History.of(events)


EMPTY = History()
VALID_LEDGER = [entry(i) for i in range(5)]


# -- exactly_once ---------------------------------------------------------------


def test_exactly_once_valid_when_every_id_once() -> None:
    observed = Observed({f"id-{i}": 1 for i in range(5)})
    result = run_check("exactly_once", EMPTY, VALID_LEDGER, observed)
    assert result.verdict == VALID
    expected = {"expected": 5, "rows": 5, "distinct": 5, "unconfirmed": 0, "lost": 0}
    assert expected.items() <= result.stats.items()


def test_exactly_once_flags_duplicated_and_a_missing_row_pending_without_a_position() -> None:
    """With no committed position read, a missing row cannot be shown never to be loaded:
    pending, not lost."""
    observed = Observed({"id-0": 1, "id-1": 2, "id-2": 1, "id-3": 1})
    result = run_check("exactly_once", EMPTY, VALID_LEDGER, observed)
    assert result.verdict == INVALID
    assert "lost" not in result.anomalies
    assert result.anomalies["pending"].count == 1
    assert "id-4" in result.anomalies["pending"].examples[0]
    assert result.anomalies["duplicated"].count == 1


def test_exactly_once_flags_malformed_in_table_as_misrouted_and_strangers() -> None:
    ledger = [*VALID_LEDGER, entry(9, kind="truncated_json")]
    observed = Observed({**{f"id-{i}": 1 for i in range(5)}, "id-9": 1, "ghost": 1})
    result = run_check("exactly_once", EMPTY, ledger, observed)
    assert set(result.anomalies) == {"misrouted", "unexpected"}


def test_exactly_once_ignores_failed_deliveries() -> None:
    failed = LedgerEntry(7, TOPIC, 0, None, None, None, "id-7", "valid", error="timed out")
    observed = Observed({f"id-{i}": 1 for i in range(5)})
    assert run_check("exactly_once", EMPTY, [*VALID_LEDGER, failed], observed).ok


def test_exactly_once_unknown_without_valid_messages() -> None:
    assert run_check("exactly_once", EMPTY, [], Observed()).verdict == UNKNOWN


# -- dead_letter ----------------------------------------------------------------


MIXED = [entry(0), entry(1, kind="truncated_json", target="$"), entry(2, kind="tombstone",
         target="$"), entry(3)]  # fmt: skip


def test_dead_letter_valid_with_kind_path_reason_and_source() -> None:
    observed = Observed(
        {"id-0": 1, "id-3": 1},
        [letter(MIXED[1], "invalid_json"), letter(MIXED[2], "empty_payload")],
    )
    result = run_check("dead_letter", EMPTY, MIXED, observed, {"kinds": ["tombstone"]})
    assert result.verdict == VALID, result.summary


def test_dead_letter_sent_twice_is_flagged_with_its_count() -> None:
    letters = [letter(MIXED[1], "invalid_json")] * 3 + [letter(MIXED[2], "empty_payload")]
    result = run_check("dead_letter", EMPTY, MIXED, Observed({"id-0": 1, "id-3": 1}, letters))
    assert result.verdict == INVALID and result.stats["redelivered"] == 2
    anomaly = result.anomalies["duplicated_dead_letter"]
    assert anomaly.count == 1 and anomaly.examples == [f"{TOPIC}/0@1 x3"]
    # A bound lets other loaders send a letter again (a zombie's successor), never one loader.
    same = run_check(
        "dead_letter", EMPTY, MIXED, Observed({"id-0": 1, "id-3": 1}, letters), {"max_copies": 3}
    )
    assert same.anomalies["duplicated_dead_letter"].count == 1
    one = letters[0]
    others = [dataclasses.replace(one, loader=loader) for loader in "abc"] + letters[3:]
    bounded = run_check(
        "dead_letter", EMPTY, MIXED, Observed({"id-0": 1, "id-3": 1}, others), {"max_copies": 3}
    )
    assert bounded.ok


def test_dead_letter_flags_missing_letter_lost_past_the_position_else_pending() -> None:
    observed = Observed({"id-0": 1, "id-3": 1}, [letter(MIXED[1], "invalid_json")])
    result = run_check("dead_letter", EMPTY, MIXED, observed)
    assert result.verdict == INVALID and result.anomalies["pending"].count == 1
    past = history((5.0, "read", "ok", "positions", {"values": {TOPIC: {"0": 4}}, "snapshot": 9}))
    result = run_check("dead_letter", past, MIXED, observed)
    assert result.verdict == INVALID and result.anomalies["lost"].count == 1
    assert "pending" not in result.anomalies


def test_dead_letter_flags_wrong_kind_and_empty_reason() -> None:
    observed = Observed(
        {"id-0": 1, "id-3": 1},
        [letter(MIXED[1], "type_mismatch"), letter(MIXED[2], "empty_payload", reason="")],
    )
    result = run_check("dead_letter", EMPTY, MIXED, observed)
    assert result.anomalies["wrong_value"].count == 2


def test_dead_letter_flags_valid_message_dead_lettered() -> None:
    """A valid message in the dead-letter topic is misrouted; a malformed one in the table is
    ``exactly_once``'s misrouted row, not counted again here."""
    observed = Observed(
        {"id-0": 1, "id-3": 1, "id-1": 1},
        [letter(MIXED[1], "invalid_json"), letter(MIXED[2], "empty_payload"),
         letter(MIXED[0], "invalid_json")],
    )  # fmt: skip
    result = run_check("dead_letter", EMPTY, MIXED, observed)
    assert result.anomalies["misrouted"].count == 1
    assert "valid id-0" in result.anomalies["misrouted"].examples[0]
    rows = run_check("exactly_once", EMPTY, MIXED, observed)
    assert rows.anomalies["misrouted"].count == 1


def test_dead_letter_flags_letter_without_source() -> None:
    bare = ICEFLOE.letter(0, 0, {keys.DLQ_ERROR_KIND: "invalid_json"})
    result = run_check("dead_letter", EMPTY, MIXED, Observed({}, [bare]))
    assert "wrong_value" in result.anomalies


def test_dead_letter_unknown_when_a_required_kind_was_never_sent() -> None:
    observed = Observed(
        {"id-0": 1, "id-3": 1},
        [letter(MIXED[1], "invalid_json"), letter(MIXED[2], "empty_payload")],
    )
    result = run_check("dead_letter", EMPTY, MIXED, observed, {"kinds": ["oversized"]})
    assert result.verdict == UNKNOWN and "oversized" in result.summary


# -- icefloe's policy against what every loader owes -------------------------------------------


def _lenient() -> History:
    """A loader that does not declare it refuses duplicate keys or oversized rows."""
    other = dataclasses.replace(ICEFLOE, kind="command:other.toml", refuses=())
    return history((0.5, "info", "info", "observer", {"observer": other.to_json()}))


POLICY_LEDGER = [*VALID_LEDGER, entry(7, kind="duplicate_key"), entry(8, kind="oversized"),
                 entry(9, kind="truncated_json", target="$")]  # fmt: skip


def test_a_policy_malformation_is_misrouted_only_for_a_loader_that_refuses_it() -> None:
    """A row of valid JSON with a name twice, loaded: icefloe's loader (which refuses it) put
    a malformed message in the table; another loader chose to keep the last value."""
    observed = Observed({**{f"id-{i}": 1 for i in range(5)}, "id-7": 1})
    strict = run_check("exactly_once", EMPTY, POLICY_LEDGER, observed)
    assert strict.verdict == INVALID and set(strict.anomalies) == {"misrouted"}
    lenient = run_check("exactly_once", _lenient(), POLICY_LEDGER, observed)
    assert lenient.verdict == VALID, lenient.summary
    assert lenient.stats["policy_loaded"] == {"duplicate_key": 1, "oversized": 0}
    twice = Observed({**{f"id-{i}": 1 for i in range(5)}, "id-7": 2})
    assert "duplicated" in run_check("exactly_once", _lenient(), POLICY_LEDGER, twice).anomalies


def test_a_policy_malformation_is_not_required_in_the_dead_letters_of_another_loader() -> None:
    letters = [letter(POLICY_LEDGER[-1], "invalid_json"), letter(POLICY_LEDGER[-2], "too_large")]
    observed = Observed({**{f"id-{i}": 1 for i in range(5)}, "id-7": 1}, letters)
    params = {"kinds": ["truncated_json", "duplicate_key", "oversized"]}
    lenient = run_check("dead_letter", _lenient(), POLICY_LEDGER, observed, params)
    assert lenient.verdict == VALID, lenient.summary
    assert lenient.stats["policy_dead_lettered"] == {"duplicate_key": 0, "oversized": 1}
    strict = run_check("dead_letter", EMPTY, POLICY_LEDGER, observed, params)
    assert strict.verdict == INVALID and "pending" in strict.anomalies  # id-7 has no letter


def test_a_loader_may_declare_only_policy_malformations() -> None:
    with pytest.raises(ValueError, match="not policy"):
        dataclasses.replace(ICEFLOE, refuses=("truncated_json",))


# -- retention ------------------------------------------------------------------

CUTOFF = 1_000


def retention_history() -> History:
    return history((1.0, "sql", "ok", "delete", {"cutoff_micros": CUTOFF}))


def retention_case(counts: dict[str, int], before: list[str]) -> Any:
    ledger = [entry(i) for i in range(4)]
    times = {"id-0": 10, "id-1": 20, "id-2": 2000, "id-3": 3000}
    observed = Observed(counts, reads={"before_delete": before}, facts={"event_times": times})
    return run_check("retention", retention_history(), ledger, observed)


def test_retention_valid_when_old_gone_and_new_once() -> None:
    result = retention_case({"id-2": 1, "id-3": 1}, ["id-0", "id-2"])
    assert result.verdict == VALID


def test_retention_allows_old_row_loaded_after_the_delete_once() -> None:
    assert retention_case({"id-1": 1, "id-2": 1, "id-3": 1}, ["id-0"]).ok


def test_retention_flags_undeleted_missing_and_duplicated() -> None:
    result = retention_case({"id-0": 1, "id-2": 2}, ["id-0", "id-2"])
    # No committed position was read: the missing retained row is pending, not lost.
    assert set(result.anomalies) == {"undeleted", "pending", "duplicated"}


def test_retention_unknown_without_delete() -> None:
    observed = Observed({}, facts={"event_times": {}})
    assert run_check("retention", EMPTY, VALID_LEDGER, observed).verdict == UNKNOWN


# -- halted ---------------------------------------------------------------------

HALT_LEDGER = [
    entry(0),
    entry(1),
    entry(2, kind="tombstone"),
    entry(3),
    entry(4, kind="nan_literal"),
]


def halt_history(message: str) -> History:
    return history(
        (1.0, "loader", "info", "exit", {"expected": True, "code": -9}),
        (2.0, "loader", "info", "exit", {"expected": False, "code": 1, "message": message}),
    )


def test_halted_valid_when_the_first_malformed_message_is_named() -> None:
    h = halt_history("PoisonMessage: poison message at topic 'events' partition 0 offset 2 and")
    observed = Observed(reads={"visible_at_halt": ["id-0", "id-1"]})
    assert run_check("halted", h, HALT_LEDGER, observed).verdict == VALID


def test_halted_flags_another_message_named() -> None:
    h = halt_history("poison message at topic 'events' partition 0 offset 4")
    result = run_check("halted", h, HALT_LEDGER, Observed())
    assert "wrong_value" in result.anomalies


def test_halted_flags_rows_loaded_past_the_malformed_message() -> None:
    h = halt_history("poison message at topic 'events' partition 0 offset 2")
    observed = Observed(reads={"visible_at_halt": ["id-0", "id-1", "id-3"]})
    assert run_check("halted", h, HALT_LEDGER, observed).anomalies["not_halted"].count == 1


def test_halted_is_unknown_for_a_loader_that_cannot_say_where_it_stopped() -> None:
    # With no halt_pattern, an exit for any reason (a crash at start, say) looks the same as a
    # stop at the first malformed message: nothing was compared.
    silent = dataclasses.replace(ICEFLOE, kind="command:x.toml", halt_pattern=None)
    h = history(
        (0.5, "info", "info", "observer", {"observer": silent.to_json()}),
        (2.0, "loader", "info", "exit", {"expected": False, "code": 1, "message": "OOM"}),
    )
    result = run_check("halted", h, HALT_LEDGER, Observed(reads={"visible_at_halt": ["id-0"]}))
    assert result.verdict == UNKNOWN and "halt_pattern" in result.summary
    past = Observed(reads={"visible_at_halt": ["id-0", "id-3"]})  # still seen loading past it
    assert "not_halted" in run_check("halted", h, HALT_LEDGER, past).anomalies


def test_halted_flags_a_loader_that_never_stopped() -> None:
    h = history((1.0, "loader", "info", "exit", {"expected": True, "code": 0}))
    assert "not_halted" in run_check("halted", h, HALT_LEDGER, Observed()).anomalies


# -- columns, steadiness, compaction, partitions -----------------------------------------


def test_column_values_null_before_filled_after() -> None:
    ledger = [entry(i) for i in range(4)]
    facts = {"phases": {"before": ["id-0", "id-1"], "after": ["id-2", "id-3"]}}
    params = {"column": "note", "null_phases": ["before"], "filled_phases": ["after"], "value": 7}
    good = {"id-0": None, "id-1": None, "id-2": 7, "id-3": 7}
    bad = {"id-0": None, "id-1": 7, "id-2": None, "id-3": 7}
    ok = run_check(
        "column_values", EMPTY, ledger, Observed(reads={"column:note": good}, facts=facts), params
    )
    broken = run_check(
        "column_values", EMPTY, ledger, Observed(reads={"column:note": bad}, facts=facts), params
    )
    assert ok.ok
    # id-1 holds a value it must not (changed); id-2 holds NULL for the 7 sent (dropped).
    assert broken.anomalies["wrong_value"].count == 1
    assert broken.anomalies["dropped_value"].examples == [
        "id-2 (after): note=NULL, sent 7 (dropped)"
    ]


def test_column_values_on_an_empty_read_is_unknown() -> None:
    """A read that held none of a phase's rows compared nothing: unknown, never valid."""
    ledger = [entry(i) for i in range(4)]
    facts = {"phases": {"before": ["id-0", "id-1"], "after": ["id-2", "id-3"]}}
    params = {"column": "note", "null_phases": ["before"], "filled_phases": ["after"], "value": 7}
    for read in ({}, {"id-0": None, "id-1": None}):
        result = run_check(
            "column_values", EMPTY, ledger, Observed(reads={"column:note": read}, facts=facts),
            params,
        )  # fmt: skip
        assert result.verdict == UNKNOWN, result
        assert "no row of phase" in result.summary


def test_column_absent() -> None:
    assert run_check(
        "column_absent", EMPTY, [], Observed(reads={"columns": ["a"]}), {"column": "b"}
    ).ok
    gone = run_check(
        "column_absent", EMPTY, [], Observed(reads={"columns": ["b"]}), {"column": "b"}
    )
    assert gone.verdict == INVALID


def test_loader_steady_flags_unplanned_exits_only() -> None:
    started = (0.5, "loader", "ok", "start", {"pid": 1})
    h = history(started, (1.0, "loader", "info", "exit", {"expected": True, "code": -9}))
    assert run_check("loader_steady", h, [], Observed()).ok
    assert run_check("loader_steady", EMPTY, [], Observed()).verdict == UNKNOWN
    h = history((1.0, "loader", "info", "exit", {"expected": False, "code": 1, "message": "boom"}))
    assert run_check("loader_steady", h, [], Observed()).anomalies["loader_error"].count == 1


def test_loader_steady_counts_a_restart_inside_the_process_as_an_exit() -> None:
    """A loader that recovers inside its process (a Flink job's restart) never exits: the line
    its kind declares for it is the failure."""
    started = (0.5, "loader", "ok", "start", {"pid": 1})
    line = "Job insert-into (ab12) switched from state RUNNING to RESTARTING."
    h = history(started, (2.0, "loader", "info", "restarted", {"line": line}))
    result = run_check("loader_steady", h, [], Observed())
    assert result.verdict == INVALID and result.anomalies["loader_error"].count == 1
    assert line in result.anomalies["loader_error"].examples[0]


def test_compaction() -> None:
    def read(files_after: int, rows_after: list[int]) -> Observed:
        before = {"files": 40, "rows": [10, 10]}
        after = {"files": files_after, "rows": rows_after}
        return Observed(reads={"compaction": {"before": before, "after": after}})

    assert run_check("compaction", EMPTY, [], read(3, [10, 10])).ok
    assert set(run_check("compaction", EMPTY, [], read(40, [10, 9])).anomalies) == {
        "not_compacted",
        "wrong_value",
    }
    assert run_check("compaction", EMPTY, [], Observed()).verdict == UNKNOWN
    nothing = {"before": {"files": 40, "rows": []}, "after": {"files": 3, "rows": []}}
    unread = run_check("compaction", EMPTY, [], Observed(reads={"compaction": nothing}))
    assert unread.verdict == UNKNOWN  # two empty reads are not "rows unchanged"


def test_partitions_loaded() -> None:
    ledger = [entry(0, partition=0), entry(1, partition=2), entry(2, partition=3)]
    every = Observed({"id-0": 1, "id-1": 1, "id-2": 1})
    assert run_check("partitions_loaded", EMPTY, ledger, every, {"from_partition": 2}).ok
    unread = run_check("partitions_loaded", EMPTY, ledger, Observed({"id-0": 1, "id-1": 1}),
                       {"from_partition": 2})  # fmt: skip
    # One partition none of whose rows arrived: counted once, as a partition (its rows are
    # exactly_once's to count).
    assert set(unread.anomalies) == {"unread_partition"}
    assert unread.anomalies["unread_partition"].count == 1
    assert "partition 3" in unread.anomalies["unread_partition"].examples[0]
    only_old = run_check("partitions_loaded", EMPTY, ledger[:1], Observed({"id-0": 1}),
                         {"from_partition": 2})  # fmt: skip
    assert only_old.verdict == UNKNOWN


# -- freshness, values, faults ------------------------------------------------------


def test_freshness_within_and_over_bounds() -> None:
    h = history((0.0, "loader", "invoke", "start", {"trigger_interval_s": 2.0}))
    ledger = [entry(i, timestamp=1_000_000 + i * 1000) for i in range(100)]
    quick = {f"id-{i}": 1000 + i + 3.0 for i in range(100)}
    result = run_check("freshness", h, ledger, Observed(reads={"first_seen": quick}))
    assert result.ok and result.stats["p50_s"] == pytest.approx(3.0)
    slow = {f"id-{i}": 1000 + i + (30.0 if i >= 90 else 3.0) for i in range(100)}
    stale = run_check("freshness", h, ledger, Observed(reads={"first_seen": slow}))
    assert stale.verdict == INVALID and "p99" in stale.anomalies["stale"].examples[0]


def test_freshness_flags_never_seen() -> None:
    h = history((0.0, "loader", "invoke", "start", {"trigger_interval_s": 2.0}))
    ledger = [entry(0, timestamp=1000), entry(1, timestamp=1000)]
    result = run_check("freshness", h, ledger, Observed(reads={"first_seen": {"id-0": 2.0}}))
    assert result.anomalies["stale"].count == 1


def test_values_compares_columns_and_kafka_coordinates() -> None:
    ledger = [entry(0, partition=1, offset=5)]
    facts = {"expected_rows": {"id-0": {"string": "a", "floating": 1.5}}}
    good = {"id-0": {"string": "a", "floating": 1.5, "kafka_partition": 1, "kafka_offset": 5}}
    bad = {"id-0": {"string": None, "floating": 1.5, "kafka_partition": 1, "kafka_offset": 6}}
    assert run_check("values", EMPTY, ledger, Observed(reads={"rows": good}, facts=facts)).ok
    broken = run_check("values", EMPTY, ledger, Observed(reads={"rows": bad}, facts=facts))
    assert broken.anomalies["wrong_value"].examples == ["id-0: kafka_offset=6, expected 5"]
    assert broken.anomalies["dropped_value"].examples == ["id-0: string=NULL, sent 'a' (dropped)"]


def test_faults_exercised_counts_injections_commits_and_heals() -> None:
    events = []
    for i in range(5):
        events.append((i * 10.0, "fault", "ok", "kill_loader.inject", {}))
        events.append(
            (i * 10.0 + 1, "fault", "info", "kill_loader.commit", {"during_commit": i == 2})
        )
        events.append((i * 10.0 + 2, "fault", "ok", "kill_loader.heal", {}))
    h = history(*events)
    params = {"fault": "kill_loader", "min_injections": 5, "min_during_commit": 1}
    assert run_check("faults_exercised", h, [], Observed(), params).ok
    assert (
        run_check("faults_exercised", h, [], Observed(), {**params, "min_injections": 6}).verdict
        == UNKNOWN
    )
    assert [w[0] for w in fault_windows(h)] == ["kill_loader"] * 5


def test_a_raising_checker_is_unknown_never_valid() -> None:
    result = run_check("retention", retention_history(), VALID_LEDGER, Observed())
    assert result.verdict == UNKNOWN and "raised" in result.summary


def test_percentile_and_summarize() -> None:
    assert percentile([5, 1, 3, 2, 4], 50) == 3
    assert percentile(list(range(1, 101)), 99) == 99
    with pytest.raises(ValueError):
        percentile([], 50)
    ok = run_check("exactly_once", EMPTY, VALID_LEDGER, Observed({f"id-{i}": 1 for i in range(5)}))
    bad = run_check("exactly_once", EMPTY, VALID_LEDGER, Observed())
    assert summarize([ok]) == VALID and summarize([ok, bad]) == INVALID


def test_snapshots_expired_valid_only_when_expiry_removed_snapshots() -> None:
    history = History()
    history.record("read", "ok", "snapshots", before=1, after=1)
    assert run_check("snapshots_expired", history, [], Observed()).verdict == UNKNOWN
    history.record("read", "ok", "snapshots", before=5, after=1)
    result = run_check("snapshots_expired", history, [], Observed())
    assert result.verdict == VALID
    assert result.stats["before"] == 5
    assert run_check("snapshots_expired", History(), [], Observed()).verdict == UNKNOWN
