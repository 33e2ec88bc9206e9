"""The invariants of generated runs over hand-made histories and ledgers, including failures.

Fast, no services: each rule is shown to pass on a good history and to name the anomaly it is
about on a bad one (so none of them can only pass).
"""

from __future__ import annotations

from typing import Any

from icefloe.harness.history import History
from icefloe.harness.scenarios.checks.facts.ledger import LedgerIndex
from icefloe.harness.scenarios.checks.facts.reads import (
    Observed,
    dead_letters,
    first_seen,
    ids_timeline,
    removed_by_retention,
)
from icefloe.harness.scenarios.checks.live import LiveJudge
from icefloe.harness.scenarios.checks.verdict import INVALID, UNKNOWN, VALID, run_check
from icefloe.publisher.ledger import LedgerEntry

TOPIC = "events"
PREFIX = "aaaaaaaa-bbbb-4ccc-addd-"  # a phase's 24-character event-id prefix


def eid(seq: int, prefix: str = PREFIX) -> str:
    return f"{prefix}{seq:012x}"


def entry(
    seq: int, *, malformed: bool = False, delivered: bool = True, prefix: str = PREFIX
) -> LedgerEntry:
    return LedgerEntry(
        seq=seq,
        topic=TOPIC,
        partition=0,
        offset=seq if delivered else None,
        timestamp=None,
        key=None,
        event_id=eid(seq, prefix),
        status="malformed" if malformed else "valid",
        kind="invalid_json" if malformed else None,
        error=None if delivered else "timed out",
    )


def letter(seq: int) -> dict[str, Any]:
    return {
        "partition": 0,
        "offset": seq,
        "headers": {
            "icefloe.source.topic": TOPIC,
            "icefloe.source.partition": "0",
            "icefloe.source.offset": str(seq),
            "icefloe.error.kind": "invalid_json",
            "icefloe.error.reason": "bad",
        },
    }


def hist(*events: tuple[str, str, str, dict[str, Any]]) -> History:
    return History.of([(float(i), k, p, n, d) for i, (k, p, n, d) in enumerate(events)])


LEDGER = [entry(0), entry(1), entry(2), entry(3, malformed=True)]


def table(counts: dict[str, int]) -> tuple[str, str, str, dict[str, Any]]:
    return ("read", "ok", "table", {"values": sorted(counts.items())})


def check(name: str, history: History, ledger: list[LedgerEntry] = LEDGER) -> Any:
    from icefloe.harness.scenarios.checks.facts.reads import table_counts

    observed = Observed(table_counts(history), dead_letters(history))
    return run_check(name, history, ledger, observed)


# -- table_matches_ledger ----------------------------------------------------------


def test_table_matches_ledger_valid() -> None:
    result = check("table_matches_ledger", hist(table({eid(0): 1, eid(1): 1, eid(2): 1})))
    assert result.verdict == VALID, result.summary


def test_table_matches_ledger_names_every_anomaly() -> None:
    counts = {eid(0): 2, eid(3): 1, "zzzzzzzz-0000-4000-a000-000000000009": 1}
    result = check("table_matches_ledger", hist(table(counts)))
    assert result.verdict == INVALID
    assert {"duplicated", "pending", "misrouted", "unexpected"} <= set(result.anomalies)
    # No committed position was read: a missing row is pending, not shown lost.
    assert result.anomalies["pending"].count == 2


def test_what_retention_removed_must_stay_gone() -> None:
    removed = ("read", "ok", "retention_removed", {"values": [eid(1)]})
    good = check("table_matches_ledger", hist(removed, table({eid(0): 1, eid(2): 1})))
    assert good.verdict == VALID and good.stats["removed_by_retention"] == 1
    back = check("table_matches_ledger", hist(removed, table({eid(0): 1, eid(1): 1, eid(2): 1})))
    assert back.verdict == INVALID and "undeleted" in back.anomalies


def test_unconfirmed_delivery_may_be_there_once_never_twice() -> None:
    ledger = [entry(0), entry(1, delivered=False)]
    assert check("table_matches_ledger", hist(table({eid(0): 1})), ledger).verdict == VALID
    assert check("table_matches_ledger", hist(table({eid(0): 1, eid(1): 1})), ledger).ok
    twice = check("table_matches_ledger", hist(table({eid(0): 1, eid(1): 2})), ledger)
    assert "duplicated" in twice.anomalies


def test_table_matches_ledger_unknown_without_a_read() -> None:
    assert check("table_matches_ledger", hist()).verdict == UNKNOWN


# -- dead_letters_match_ledger ----------------------------------------------------------


def test_dead_letters_counted_per_source() -> None:
    """A letter sent twice is an anomaly with its count, not a statistic."""
    once = ("read", "ok", "dead_letters", {"values": [letter(3)]})
    assert check("dead_letters_match_ledger", hist(once)).verdict == VALID
    twice = ("read", "ok", "dead_letters", {"values": [letter(3), letter(3)]})
    result = check("dead_letters_match_ledger", hist(twice))
    assert result.verdict == INVALID and result.stats["redelivered"] == 1
    assert result.anomalies["duplicated_dead_letter"].examples == [f"{TOPIC}/0@3 x2"]


def test_a_second_dead_letter_copy_only_from_another_loader() -> None:
    """With ``max_copies = 2``, a zombie's letter sent again by its successor passes; the same
    loader sending it twice does not, nor do three copies."""

    def by(seq: int, loader: str) -> dict[str, Any]:
        doc = letter(seq)
        doc["headers"] = {**doc["headers"], "icefloe.loader-id": loader}
        return doc

    def run(*letters: dict[str, Any]) -> Any:
        history = hist(("read", "ok", "dead_letters", {"values": list(letters)}))
        observed = Observed({}, dead_letters(history))
        return run_check("dead_letters_match_ledger", history, LEDGER, observed, {"max_copies": 2})

    assert run(by(3, "a"), by(3, "b")).verdict == VALID
    assert "duplicated_dead_letter" in run(by(3, "a"), by(3, "a")).anomalies
    assert "duplicated_dead_letter" in run(by(3, "a"), by(3, "b"), by(3, "c")).anomalies


def test_dead_letters_lost_pending_and_misrouted() -> None:
    """A malformed message with no letter is lost once the loader's committed position passed
    it (icefloe's: the offsets of its newest commit), pending while it has not."""
    none = ("read", "ok", "dead_letters", {"values": []})
    pending = check("dead_letters_match_ledger", hist(none))
    assert set(pending.anomalies) == {"pending"}
    past = ("read", "ok", "positions", {"values": {TOPIC: {"0": 4}}, "snapshot": 1})
    lost = check("dead_letters_match_ledger", hist(none, past))
    assert set(lost.anomalies) == {"lost"}
    assert "snapshot 1 at offset 4" in lost.anomalies["lost"].examples[0]
    wrong = check(
        "dead_letters_match_ledger",
        hist(("read", "ok", "dead_letters", {"values": [letter(3), letter(1)]})),
    )
    assert wrong.verdict == INVALID and "misrouted" in wrong.anomalies


def test_dead_letters_without_malformed_messages_need_an_empty_topic() -> None:
    """A run that sent nothing malformed compared nothing on an empty topic (unknown), and
    fails on a valid letter."""
    valid_only = LEDGER[:3]
    empty = hist(("read", "ok", "dead_letters", {"values": []}))
    assert check("dead_letters_match_ledger", empty, valid_only).verdict == UNKNOWN
    assert check("dead_letters_match_ledger", hist(), valid_only).verdict == UNKNOWN
    misrouted = hist(("read", "ok", "dead_letters", {"values": [letter(1)]}))
    result = check("dead_letters_match_ledger", misrouted, valid_only)
    assert result.verdict == INVALID and "misrouted" in result.anomalies


# -- faults_healed ---------------------------------------------------------------------


def test_faults_healed_and_unhealed() -> None:
    healed = hist(("fault", "ok", "kill_kafka.inject", {}), ("fault", "ok", "kill_kafka.heal", {}))
    assert check("faults_healed", healed).verdict == VALID
    left = hist(("fault", "ok", "pause_minio.inject", {}))
    assert "unhealed" in check("faults_healed", left).anomalies
    half = hist(("fault", "fail", "zombie_loader.inject", {"error": "x"}))
    assert "unhealed" in check("faults_healed", half).anomalies
    assert check("faults_healed", hist()).verdict == UNKNOWN


# -- the live rules ----------------------------------------------------------------------


def ids(added: list[str], removed: tuple[str, ...] = ()) -> tuple[str, str, str, dict[str, Any]]:
    return ("read", "ok", "ids", {"added": added, "removed": list(removed)})


def test_live_judge_defers_ids_of_a_running_phase() -> None:
    other = "cccccccc-dddd-4eee-afff-"
    history = History()
    judge = LiveJudge()
    history.record("read", "ok", "ids", added=[eid(0), eid(5, other)], removed=[])
    # eid(5, other) belongs to a phase still publishing: not judged yet.
    running = LedgerIndex([entry(0)], frozenset({other}))
    assert judge.update(history, running) == {}
    # Its phase finished and never sent seq 5: now it is an id nobody published.
    done = LedgerIndex([entry(0), entry(0, prefix=other)])
    assert "unexpected" in judge.update(history, done)


def test_live_judge_flags_duplicates_and_valid_dead_letters() -> None:
    history = History()
    history.record("read", "ok", "duplicates", values=[[eid(1), 2]])
    history.record("read", "ok", "dead_letters", values=[letter(1)])
    found = LiveJudge().update(history, LedgerIndex(LEDGER))
    assert found["duplicated"]["count"] == 1 and found["misrouted"]["count"] == 1


def test_live_invariants_replay_the_whole_history() -> None:
    good = hist(ids([eid(0), eid(1)]), ("read", "ok", "duplicates", {"values": []}))
    assert check("live_invariants", good).verdict == VALID
    bad = hist(ids([eid(0), eid(3)]))
    assert check("live_invariants", bad).anomalies["misrouted"].count == 1
    assert check("live_invariants", hist()).verdict == UNKNOWN


# -- observe ----------------------------------------------------------------------------


def test_id_reads_replay_to_the_sets_seen() -> None:
    history = hist(
        ids([eid(0), eid(1)]),
        ids([eid(2)], (eid(0),)),
        ("read", "ok", "retention_removed", {"values": [eid(0)]}),
    )
    sets = [sorted(s) for _, s in ids_timeline(history)]
    assert sets == [[eid(0), eid(1)], [eid(1), eid(2)]]
    assert first_seen(history) == {eid(0): 0.0, eid(1): 0.0, eid(2): 1.0}
    assert removed_by_retention(history) == {eid(0)}


# -- one_owner -----------------------------------------------------------------


def commit(
    snapshot: int,
    instance: str | None,
    *,
    parent: int | None = None,
    claim: bool = False,
    staged: bool = False,
    loader: str = "a",
) -> dict[str, Any]:
    return {
        "snapshot": snapshot,
        "time": float(snapshot),
        "operation": "append",
        "loader": loader if instance else None,
        "records": 0 if claim else 10,
        "parent": snapshot - 1 if parent is None else parent,
        "instance": instance,
        "claim": loader if claim else None,
        "staged": f"{instance}-{snapshot}" if staged else None,
    }


def commits(*values: dict[str, Any]) -> tuple[str, str, str, dict[str, Any]]:
    return ("read", "ok", "commits", {"values": list(values)})


def test_one_owner_valid_through_a_take_over() -> None:
    history = hist(
        commits(commit(1, "p1", claim=True), commit(2, "p1", staged=True)),
        commits(commit(3, "p1", staged=True), commit(4, None)),  # 4: maintenance
        # the zombie's staged batch, never published (no child), then its successor
        commits(commit(5, "p1", parent=4, staged=True), commit(6, "p2", parent=4, claim=True)),
        commits(commit(7, "p2", staged=True), commit(8, "p2", staged=True)),
    )
    result = check("one_owner", history)
    assert result.verdict == VALID, result.summary
    assert result.stats["take_overs"] == 2 and result.stats["processes"] == 2


def test_a_zombie_batch_staged_last_never_reached_main() -> None:
    # p1 staged 4 on 2 after p2 took over (3) and nothing came after: it is not main's head.
    history = hist(
        commits(commit(1, "p1", claim=True), commit(2, "p1", staged=True)),
        commits(commit(3, "p2", claim=True, loader="b"), commit(4, "p1", parent=2, staged=True)),
    )
    result = check("one_owner", history)
    assert result.verdict == VALID, result.anomalies
    assert result.stats["commits"] == 3


def test_one_owner_flags_a_zombie_writing_after_the_take_over() -> None:
    history = hist(
        commits(commit(1, "p1", claim=True), commit(2, "p1")),
        commits(commit(3, "p2", claim=True, loader="b"), commit(4, "p1"), commit(5, "p2")),
    )
    result = check("one_owner", history)
    assert result.verdict == INVALID
    assert result.anomalies["two_writers"].count == 1
    assert "snapshot 4" in result.anomalies["two_writers"].examples[0]


def test_one_owner_flags_a_table_taken_back() -> None:
    history = hist(
        commits(commit(1, "p1", claim=True), commit(2, "p2", claim=True, loader="b")),
        commits(commit(3, "p1", claim=True)),
    )
    assert check("one_owner", history).anomalies["taken_back"].count == 1
    thawed = hist(
        commits(commit(1, "p1", claim=True)), ("loader", "info", "holds_table", {"pid": 7})
    )
    result = check("one_owner", thawed)
    assert result.verdict == INVALID and "pid 7" in result.anomalies["taken_back"].examples[0]


def test_one_owner_takes_an_unseen_claim_as_a_take_over() -> None:
    # p2's claim was expired before a read saw it: its first batch starts its hold.
    history = hist(commits(commit(1, "p1", claim=True), commit(2, "p2"), commit(3, "p2")))
    result = check("one_owner", history)
    assert result.verdict == VALID and result.stats["claims_unseen"] == 1
    late = hist(commits(commit(1, "p1", claim=True), commit(2, "p2"), commit(3, "p1")))
    assert check("one_owner", late).anomalies["two_writers"].count == 1


def test_one_owner_unknown_without_loader_commits() -> None:
    assert check("one_owner", hist()).verdict == UNKNOWN
    assert check("one_owner", hist(commits(commit(1, None)))).verdict == UNKNOWN


# -- read errors of the live monitor --------------------------------------------------


def test_read_errors_are_counted_and_named() -> None:
    from icefloe.harness.scenarios.checks.facts.reads import read_errors

    failed = ("read", "fail", "ids", {"error": "connection refused"})
    ok_read = ("read", "ok", "ids", {"added": [eid(0)]})
    history = hist(failed, failed, ("read", "fail", "dead_letters", {"error": "x"}), ok_read)
    assert read_errors(history) == {"ids": 2, "dead_letters": 1}
    result = check("live_invariants", history)
    assert result.verdict == VALID and result.stats["read_errors"] == 3
    assert "3 reads failed (1 dead_letters, 2 ids)" in result.summary
    never = check("live_invariants", hist(failed))
    assert never.verdict == UNKNOWN and "1 reads failed" in never.summary


# -- the breaks' mutations (``harness.scenarios.mutations``) --------------------------------


def test_the_take_table_back_break_makes_a_valid_history_fail_one_owner() -> None:
    """After a take-over by a second process, the first one's take-over again is ``taken_back``;
    with one process only, nobody's hold ended and the mutation cannot be seen."""
    from icefloe.harness.scenarios.mutations import apply

    def mutate_history(history: Any, mutation: str) -> Any:
        return apply(mutation, Observed(), history, [])[1]

    history = hist(
        commits(commit(1, "p1", claim=True), commit(2, "p1", staged=True)),
        commits(commit(3, "p2", claim=True, loader="b"), commit(4, "p2", staged=True)),
    )
    assert check("one_owner", history).verdict == VALID
    broken = check("one_owner", mutate_history(history, "take_table_back"))
    assert broken.verdict == INVALID and broken.anomalies["taken_back"].count == 1
    alone = hist(commits(commit(1, "p1", claim=True), commit(2, "p1", staged=True)))
    assert check("one_owner", mutate_history(alone, "take_table_back")).verdict == VALID


def test_the_duplicate_dead_letters_break_makes_a_valid_read_fail_both_letter_checks() -> None:
    from icefloe.harness.scenarios.mutations import apply

    def mutate(observed: Observed, mutation: str) -> Observed:
        return apply(mutation, observed, history, LEDGER)[0]

    history = hist(("read", "ok", "dead_letters", {"values": [letter(3)]}))
    observed = Observed({}, dead_letters(history))
    for name in ("dead_letters_match_ledger", "dead_letter"):
        assert run_check(name, history, LEDGER, observed).verdict == VALID
        broken = run_check(name, history, LEDGER, mutate(observed, "duplicate_dead_letters"))
        assert broken.verdict == INVALID
        assert broken.anomalies["duplicated_dead_letter"].examples == [f"{TOPIC}/0@3 x2"]
