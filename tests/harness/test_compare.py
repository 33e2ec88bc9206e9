"""The one comparison of a table, and of a dead-letter topic, with the ledger: pure, no services.

Every caller (the scenario checks, generated runs, ``icefloe verify``, the demo, the workshop)
goes through ``harness.scenarios.checks.compare``; each anomaly it can name is shown here once.
"""

from __future__ import annotations

from icefloe.harness import verify
from icefloe.harness.scenarios.checks import compare
from icefloe.harness.scenarios.checks.compare import (
    compare_dead_letters,
    compare_rows,
    rows_against_ledger,
)
from icefloe.loader import keys
from icefloe.publisher.ledger import LedgerEntry


def entry(seq: int, status: str = "valid", delivered: bool = True) -> LedgerEntry:
    return LedgerEntry(
        seq=seq,
        topic="t",
        partition=0,
        offset=seq if delivered else None,
        timestamp=None,
        key=None,
        event_id=f"id-{seq}",
        status=status,
        kind=None if status == "valid" else "invalid_json",
        error=None if delivered else "timed out",
    )


LEDGER = [entry(0), entry(1), entry(2, "malformed"), entry(3, delivered=False), entry(4)]


def test_every_caller_uses_the_one_implementation() -> None:
    assert verify.compare_rows is compare.compare_rows
    assert verify.RowVerdict is compare.RowVerdict
    assert verify.DeadLetterVerdict is compare.DeadLetterVerdict


def test_rows_against_ledger_names_each_anomaly() -> None:
    good = rows_against_ledger({"id-0": 1, "id-1": 1, "id-4": 1}, LEDGER)
    assert good.exactly_once and good.expected == 3
    # id-3's delivery was unconfirmed: once is fine, twice is not
    assert rows_against_ledger({"id-0": 1, "id-1": 1, "id-3": 1, "id-4": 1}, LEDGER).exactly_once
    bad = rows_against_ledger(
        {"id-0": 2, "id-2": 1, "id-3": 2, "id-4": 1, "zz": 1}, LEDGER, removed={"id-4"}
    )
    assert bad.lost == ("id-1",)
    assert bad.duplicated == ("id-0", "id-3")
    assert bad.misrouted == ("id-2",)
    assert bad.undeleted == ("id-4",)
    assert bad.unexpected == ("zz",)
    assert not bad.exactly_once


def test_compare_rows_takes_ids_or_counts() -> None:
    assert compare_rows(["a", "a"], {"a"}) == compare_rows({"a": 2}, {"a"})


def letter(offset: int, loader: str | None = "l1", topic: str = "t") -> dict[str, str]:
    headers = {
        keys.DLQ_SOURCE_TOPIC: topic,
        keys.DLQ_SOURCE_PARTITION: "0",
        keys.DLQ_SOURCE_OFFSET: str(offset),
        keys.DLQ_ERROR_KIND: "invalid_json",
    }
    if loader:
        headers[keys.DLQ_LOADER_ID] = loader
    return headers


def test_dead_letters_are_counted_per_source_message() -> None:
    once = compare_dead_letters([letter(2)], LEDGER)
    assert once.exactly_once and once.expected == 1
    twice = compare_dead_letters([letter(2), letter(2)], LEDGER)
    assert twice.complete and not twice.exactly_once
    assert twice.duplicated == ((("t", 0, 2), 2),)
    # a successor (another loader id) may send a zombie's letter again when allowed
    assert compare_dead_letters([letter(2), letter(2, "l2")], LEDGER, max_copies=2).exactly_once
    assert compare_dead_letters([letter(2), letter(2)], LEDGER, max_copies=2).duplicated


def test_dead_letters_lost_misrouted_unexpected_unsourced() -> None:
    verdict = compare_dead_letters(
        [letter(0), letter(9, topic="u"), {keys.DLQ_ERROR_KIND: "x"}], LEDGER
    )
    assert verdict.lost == (("t", 0, 2),)
    assert verdict.misrouted == (("t", 0, 0),)
    assert verdict.unexpected == (("u", 0, 9),)
    assert verdict.unsourced == 1
    # a letter from a topic with an unconfirmed delivery may be that message: not unexpected
    assert compare_dead_letters([letter(2), letter(9)], LEDGER).unexpected == ()
