"""Ledger: written line by line, read back into objects, with the checkers' views."""

from __future__ import annotations

from pathlib import Path

import pytest

from icefloe.publisher.ledger import Ledger, LedgerWriter


def write(path: Path) -> None:
    writer = LedgerWriter(path, {"topic": "t", "seed": 1})
    writer.message(0, "t", 0, 10, 123, b"k", "e0", None, None, (), 1, None)
    writer.message(1, "t", 1, 4, 124, None, "e1", "tombstone", "$", (), 1, None)
    writer.message(2, "t", 0, 11, 125, b'we"ird\\\xff', "e2", None, None, ("envelope",), 2, None)
    writer.message(3, "t", None, None, None, None, "e3", "map_value_type", 'm["k"]', (), 3, "boom")
    writer.close({"sent": 4, "valid": 2, "malformed": 1, "failed": 1})


def test_round_trip_and_views(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "run.jsonl"
    write(path)
    ledger = Ledger.read(path)
    assert ledger.run["topic"] == "t" and ledger.run["seed"] == 1
    assert ledger.summary is not None and ledger.summary["failed"] == 1
    assert len(ledger) == 4
    assert ledger.valid_event_ids() == {"e0", "e2"}
    assert ledger.malformed_event_ids() == {"e1"}
    assert [e.event_id for e in ledger.malformed("tombstone")] == ["e1"]
    assert ledger.malformed("oversized") == []
    assert ledger.counts() == {"valid": 2, "malformed": 1, "failed": 1}
    assert ledger.kinds() == {"tombstone": 1}
    assert ledger.offsets() == {("t", 0): [10, 11], ("t", 1): [4]}
    failed = ledger.failed()[0]
    assert failed.error == "boom" and failed.partition == -1 and failed.attempts == 3
    assert failed.target == 'm["k"]' and not failed.delivered
    weird = ledger.in_seq_order()[2]
    assert weird.key == 'we"ird\\\\xff' and weird.drift == ("envelope",)


def test_rejects_files_that_are_not_ledgers(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text('{"record":"message"}\n')
    with pytest.raises(ValueError, match="not a ledger"):
        Ledger.read(path)
    path.write_text("not json\n")
    with pytest.raises(ValueError, match="not JSON"):
        Ledger.read(path)
