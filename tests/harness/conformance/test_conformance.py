"""The conformance table and the hostile-inputs reading, over hand-made results (no stack)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from icefloe.harness.conformance import semantics, table
from icefloe.harness.observer import Letter
from icefloe.harness.scenarios.checks.verdict import Anomaly, CheckResult
from icefloe.publisher.ledger import LedgerEntry


def _result(*checks: CheckResult, error: str | None = None) -> Any:
    verdict = "valid" if all(c.verdict == "valid" for c in checks) else "invalid"
    if any(c.verdict == "unknown" for c in checks) and verdict == "valid":
        verdict = "unknown"
    scenario = SimpleNamespace(name="01_x", path=Path("scenarios/01_x.toml"))
    return SimpleNamespace(
        scenario=scenario, checks=list(checks), verdict=verdict, error=error, seed=7,
        elapsed_s=12.3,
    )  # fmt: skip


def _anomaly(name: str, count: int) -> Anomaly:
    found = Anomaly(name)
    for i in range(count):
        found.add(f"e{i}")
    return found


def test_a_cell_is_pass_anomalies_with_counts_unknown_or_error() -> None:
    ok = CheckResult("exactly_once", "valid", "fine")
    assert table.from_result(_result(ok), "icefloe", "r").outcome == table.PASS
    bad = CheckResult(
        "exactly_once", "invalid", "2 lost",
        anomalies={"lost": _anomaly("lost", 2), "duplicated": _anomaly("duplicated", 3)},
    )  # fmt: skip
    cell = table.from_result(_result(ok, bad), "kafka-connect", "icefloe scenario run x")
    assert cell.outcome == table.ANOMALIES and cell.seed == 7
    assert cell.categories() == {"lost": 2, "duplicated": 3}
    assert "lost 2" in cell.text() and cell.file == "scenarios/01_x.toml"
    unknown = CheckResult("liveness", "unknown", "compared nothing")
    assert table.from_result(_result(ok, unknown), "icefloe", "r").outcome == table.UNKNOWN
    failed = table.from_result(_result(ok, error="boom"), "icefloe", "r")
    assert failed.outcome == table.ERROR and "boom" in failed.text()


def test_the_table_names_each_finding_with_its_seed_file_and_replay() -> None:
    bad = CheckResult("exactly_once", "invalid", "", anomalies={"lost": _anomaly("lost", 4)})
    cells = [
        table.from_result(_result(CheckResult("e", "valid", "")), "icefloe", "r1"),
        table.from_result(_result(bad), "kafka-connect", "icefloe scenario run 01_x --seed 7"),
        table.not_applicable(SimpleNamespace(name="15_z", path=None), "kafka-connect", ["no x"]),
    ]
    text = table.markdown(cells, ["icefloe", "kafka-connect"])
    assert "| 01_x | pass | **lost 4** (seed 7) |" in text
    assert (
        "| 15_z | - | not applicable (no x) |" in text and "- 15_z on kafka-connect: no x" in text
    )
    assert "exactly_once: lost x4" in text and "--seed 7" in text
    assert table.category("duplicated_dead_letter") == "duplicated"
    assert table.category("wrong_value", "values") == "coerced"
    assert table.category("dropped_value", "column_values") == "dropped"
    # A value two checks found changed is one coerced message, not two findings.
    assert table.category("wrong_value", "values_match_ledger") == "coerced"
    both = []
    for name in ("column_values", "values_match_ledger"):
        wrong = Anomaly("wrong_value")
        for i in range(3):
            wrong.add(f"e{i}: note=None, expected 7", key=f"e{i}:note")
        both.append(CheckResult(name, "invalid", "", anomalies={"wrong_value": wrong}))
    assert table.merged(both) == {"coerced": 3}
    assert table.category("wrong_value", "dead_letter") is None
    assert table.category("taken_back") is None


def test_a_missing_file_and_an_unhealed_fault_are_classes_of_their_own() -> None:
    # A file the snapshot lists and storage lacks names no row; a fault the kit failed to heal
    # is the kit's failure: neither is the loader losing rows or stalling.
    assert table.category("missing_file") == "missing_files"
    assert table.category("unhealed") == "unhealed"
    files = Anomaly("missing_file")
    files.add("data s3://lake/t/data/a.parquet")
    healed = Anomaly("unhealed")
    healed.add("broker_outage")
    results = [
        CheckResult("files_exist", "invalid", "", anomalies={"missing_file": files}),
        CheckResult("faults_healed", "invalid", "", anomalies={"unhealed": healed}),
    ]
    assert table.merged(results) == {"missing_files": 1, "unhealed": 1}


def _entry(seq: int, status: str = "valid", kind: str | None = None) -> LedgerEntry:
    return LedgerEntry(seq, "t", 0, seq, None, None, f"id{seq}", status, kind)


def _letter(offset: int) -> Letter:
    return Letter(0, offset, source=("t", 0, offset))


def test_each_kind_is_dead_lettered_coerced_dropped_or_where_the_loader_stopped() -> None:
    ledger = [
        _entry(0),
        _entry(1, "malformed", "invalid_json"),
        _entry(2, "malformed", "bool_as_string"),
        _entry(3, "malformed", "duplicate_key"),
        _entry(4, "malformed", "bad_timestamp"),
        _entry(5, "malformed", "oversized"),
        _entry(6),
    ]
    row = ["id2", False, 1, 0.5, "s", "2024", "[]", "[]", "[]", "[]", "{}", "{}"]
    counts = {"id0": 1, "id2": 1, "id3": 1}
    found = semantics.fates(ledger, counts, [_letter(1)], [row], ["id6"])
    by = {f.kind: f for f in found}
    assert by["invalid_json"].outcome == semantics.DEAD_LETTER
    assert by["bool_as_string"].text() == 'coerced: bool "yes" -> False'
    assert by["duplicate_key"].outcome == semantics.LOADED
    # The valid row after never came, and the loader named no message: it stopped at one of
    # the two kinds that got nowhere, which cannot be told.
    assert by["bad_timestamp"].outcome == by["oversized"].outcome == semantics.STOPPED_AMONG
    assert by["oversized"].text() == "stopped at one of 2 kinds from bad_timestamp"
    # A kind that went nowhere before one that reached the dead-letter topic was passed.
    late = [*ledger[:-1], _entry(7, "malformed", "invalid_utf8"), ledger[-1]]
    passed = {
        f.kind: f for f in semantics.fates(late, counts, [_letter(1), _letter(7)], [row], ["id6"])
    }
    assert passed["bad_timestamp"].outcome == semantics.PASSED
    assert passed["invalid_utf8"].outcome == semantics.DEAD_LETTER
    # The loader named where it stopped: passed up to there, not reached after it.
    named = {
        f.kind: f for f in semantics.fates(ledger, counts, [_letter(1)], [row], ["id6"], (0, 5))
    }
    assert named["bad_timestamp"].outcome == semantics.PASSED
    assert named["oversized"].outcome == semantics.STOPPED
    at_four = semantics.fates(ledger, counts, [_letter(1)], [row], ["id6"], (0, 4))
    assert [f.outcome for f in at_four][-2:] == [semantics.STOPPED, semantics.NOT_REACHED]
    counts["id6"] = 1  # it went on: what went nowhere was dropped
    again = {f.kind: f for f in semantics.fates(ledger, counts, [_letter(1)], [row], ["id6"])}
    assert again["bad_timestamp"].outcome == again["oversized"].outcome == semantics.DROPPED
    text = semantics.markdown({"icefloe": found})
    assert "| invalid_json | dead letter (1) |" in text
    assert "| oversized | stopped at one of 2 kinds from bad_timestamp (1) |" in text
    assert "icefloe stopped naming no message" in text
    named_text = semantics.markdown({"icefloe": list(named.values())})
    assert "| oversized | stopped (1) |" in named_text and "naming no" not in named_text


def test_parts_of_a_run_merge_into_one_table(tmp_path: Path) -> None:
    """A conformance run split into short stack jobs: their JSON files make one table."""
    import json

    from icefloe.harness.cli.conformance import merge

    bad = CheckResult("exactly_once", "invalid", "", anomalies={"lost": _anomaly("lost", 1)})
    first = [table.from_result(_result(CheckResult("e", "valid", "")), "icefloe", "r")]
    second = [table.from_result(_result(bad), "kafka-connect", "r2")]
    fate = semantics.Fate("invalid_json", 2, 0, 2, semantics.DEAD_LETTER)
    for name, cells in (("a", first), ("b", second)):
        doc = {
            "cells": [vars(c) | {"anomalies": dict(c.anomalies)} for c in cells],
            "semantics": {"icefloe": [vars(fate)]} if name == "a" else {},
            "minutes": 2.0, "command": f"icefloe conformance {name}", "commit": "abc",
        }  # fmt: skip
        (tmp_path / f"{name}.json").write_text(json.dumps(doc, default=str))
    out = merge([tmp_path / "a.json", tmp_path / "b.json"], tmp_path)
    text = out.read_text()
    assert "| 01_x | pass | **lost 1** (seed 7) |" in text and "4.0 minutes" in text
    assert "| invalid_json | dead letter (2) |" in text


def test_a_finding_is_reproduced_when_each_of_its_anomalies_shows_again() -> None:
    from icefloe.harness.cli.conformance import reproduced

    found = {"exactly_once: lost": 2400, "liveness: stalled": 1}
    shown, text = reproduced(found, {"exactly_once: lost": 881, "liveness: stalled": 1})
    assert shown and text == "reproduced"  # counts may differ
    shown, text = reproduced(found, {"exactly_once: lost": 3})
    assert not shown and "liveness: stalled" in text
    shown, text = reproduced(found, {**found, "exactly_once: duplicated": 2})
    assert shown and "also exactly_once: duplicated" in text
    assert not reproduced(found, {})[0]


def test_rows_without_an_id_make_a_kind_that_went_nowhere_unattributable() -> None:
    """A permissive loader keeps a row of nulls for what it cannot parse: such rows name no
    message, so a kind nowhere else is *dropped, or a row with no id*, never plainly dropped."""
    from icefloe.harness.observer import NO_ID

    ledger = [
        _entry(0, "malformed", "invalid_json"),
        _entry(1, "malformed", "tombstone"),
        _entry(2),
    ]
    plain = semantics.fates(ledger, {"id2": 1}, [], [], ["id2"])
    assert [f.outcome for f in plain] == [semantics.DROPPED, semantics.DROPPED]
    nameless = semantics.fates(ledger, {"id2": 1, NO_ID: 2}, [], [], ["id2"])
    assert [f.outcome for f in nameless] == [semantics.NAMELESS, semantics.NAMELESS]
    text = semantics.markdown({"permissive": nameless})
    assert "| invalid_json | dropped, or a row with no id (1) |" in text
    assert "permissive's table holds 2 row(s) with no event id" in text
