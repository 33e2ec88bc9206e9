"""Comparing a table and a dead-letter topic with ledgers: pure functions, no services."""

from __future__ import annotations

from pathlib import Path

from icefloe.harness.verify import compare_dead_letters, compare_rows
from icefloe.loader import keys
from icefloe.publisher.ledger import Ledger, LedgerWriter


def test_exactly_once_when_every_id_is_there_once() -> None:
    verdict = compare_rows(["a", "b", "c"], {"a", "b", "c"})
    assert verdict.exactly_once and verdict.rows == verdict.distinct == verdict.expected == 3


def test_lost_duplicated_and_unexpected_are_named() -> None:
    verdict = compare_rows(["a", "a", "x"], {"a", "b"})
    assert verdict.lost == ("b",)
    assert verdict.duplicated == ("a",)
    assert verdict.unexpected == ("x",)
    assert not verdict.exactly_once


def test_ids_allowed_to_be_absent_are_not_lost() -> None:
    assert compare_rows(["a"], {"a", "old"}, may_be_absent={"old"}).exactly_once


def test_a_subset_must_be_there_and_the_rest_of_the_topic_is_not_unexpected() -> None:
    verdict = compare_rows(["a", "b", "c"], {"c"}, published={"a", "b"})
    assert verdict.exactly_once and verdict.expected == 1
    assert compare_rows(["c", "z"], {"c"}, published={"a"}).unexpected == ("z",)


def _ledger(tmp_path: Path) -> Ledger:
    writer = LedgerWriter(tmp_path / "t.jsonl", {"topic": "t"})
    writer.message(0, "t", 0, 10, None, None, "v1", None, None, (), 1, None)
    writer.message(1, "t", 0, 11, None, None, "m1", "invalid_json", "$", (), 1, None)
    writer.message(2, "t", 1, 5, None, None, "m2", "bool_as_string", "bool", (), 1, None)
    writer.close({})
    return Ledger.read(tmp_path / "t.jsonl")


def _letter(partition: int, offset: int, kind: str = "invalid_json") -> dict[str, str]:
    return {
        keys.DLQ_SOURCE_TOPIC: "t",
        keys.DLQ_SOURCE_PARTITION: str(partition),
        keys.DLQ_SOURCE_OFFSET: str(offset),
        keys.DLQ_ERROR_KIND: kind,
    }


def test_dead_letters_complete_even_with_duplicates(tmp_path: Path) -> None:
    letters = [_letter(0, 11), _letter(0, 11), _letter(1, 5, "type_mismatch")]
    verdict = compare_dead_letters(letters, [_ledger(tmp_path)])
    assert verdict.complete and verdict.letters == 3 and verdict.distinct == 2
    assert verdict.kinds == {"invalid_json": 2, "type_mismatch": 1}
    assert verdict.duplicated == ((("t", 0, 11), 2),)  # counted per source, not folded away
    once = compare_dead_letters([_letter(0, 11), _letter(1, 5)], [_ledger(tmp_path)])
    assert once.complete and once.duplicated == ()


def test_missing_and_misrouted_dead_letters_are_named(tmp_path: Path) -> None:
    verdict = compare_dead_letters([_letter(0, 10)], [_ledger(tmp_path)])
    assert verdict.lost == (("t", 0, 11), ("t", 1, 5))
    assert verdict.misrouted == (("t", 0, 10),)
    assert not verdict.complete
