"""The storage-level checkers over hand-made reads: valid, invalid and unknown for each.

Fast, no services. The same checks on a real table, with their breaks, are in
``test_storage_checks_integration.py``.
"""

from __future__ import annotations

from typing import Any

from icefloe.harness.history import History
from icefloe.harness.scenarios.checks.facts.reads import Observed
from icefloe.harness.scenarios.checks.facts.storage import (
    SnapshotFact,
    absent_files,
    files_added_twice,
    listed_twice,
    main_lineage,
    unpublished_staged,
)
from icefloe.harness.scenarios.checks.verdict import INVALID, UNKNOWN, VALID, run_check

A, B, C = "s3://warehouse/t/data/a.parquet", "s3://warehouse/t/data/b.parquet", "s3://w/c.parquet"


def reads(**values: Any) -> History:
    return History.of(
        [
            (float(i), "read", "ok", name, {"values": v})
            for i, (name, v) in enumerate(values.items())
        ]
    )


def check(name: str, history: History, params: dict[str, Any] | None = None) -> Any:
    return run_check(name, history, [], Observed(), params)


def snap(i: int, parent: int | None, wap: str | None = None, **kw: Any) -> dict[str, Any]:
    return SnapshotFact(i, parent, float(i), "append", wap, kw.get("pub")).to_json()


# -- pure helpers ---------------------------------------------------------------------------


def test_files_added_twice_counts_snapshots_not_manifest_copies() -> None:
    entries = [(A, 1), (A, 1), (B, 2), (A, 3)]  # (A, 1) seen through two manifest lists
    assert files_added_twice(entries) == {A: [1, 3]}
    assert files_added_twice(entries, leave_out=[3]) == {}


def test_listed_twice_and_absent_files() -> None:
    assert listed_twice([A, B, A, A]) == {A: 3}
    assert listed_twice([A, B]) == {}
    assert absent_files([(A, "data", True), (B, "manifest", False)]) == [(B, "manifest")]


def test_staged_snapshots_published_by_main_or_by_cherry_pick() -> None:
    snapshots = [
        SnapshotFact.from_json(s)
        for s in (
            snap(1, None, "w1"),  # staged, then main moved to it: published
            snap(2, 1, "w2"),  # staged on 1, never published
            snap(3, 1, "w3"),  # staged on 1, published by cherry-pick as 4
            snap(4, 1, None, pub="w3"),
            snap(5, 4, None),
        )
    ]
    assert main_lineage(snapshots, 5) == {5, 4, 1}
    assert [s.snapshot for s in unpublished_staged(snapshots, 5)] == [2]
    assert [s.snapshot for s in unpublished_staged(snapshots, None)] == [1, 2, 3]


# -- no_file_added_twice ---------------------------------------------------------------------


def test_no_file_added_twice_valid_invalid_unknown() -> None:
    good = reads(storage_entries=[[A, 1, 0], [B, 2, 0]], storage_files=[[A, 0], [B, 0]])
    assert check("no_file_added_twice", good).verdict == VALID
    bad = reads(
        storage_entries=[[A, 1, 0], [B, 2, 0], [A, 3, 0]], storage_files=[[A, 0], [B, 0], [A, 0]]
    )
    result = check("no_file_added_twice", bad)
    assert result.verdict == INVALID
    assert result.anomalies["added_twice"].examples == [f"{A} added by snapshots 1, 3"]
    assert result.anomalies["listed_twice"].count == 1
    assert check("no_file_added_twice", History()).verdict == UNKNOWN
    empty = check("no_file_added_twice", reads(storage_entries=[], storage_files=[]))
    assert empty.verdict == UNKNOWN and "no file" in empty.summary


def test_no_file_added_twice_leaves_out_snapshots_off_main() -> None:
    """A staged snapshot that a cherry-pick published adds its files again: not a duplicate.
    Two snapshots of main's lineage adding one file are."""
    picked = [snap(1, None), snap(3, 1, "w3"), snap(4, 1, None, pub="w3")]
    history = reads(
        storage_snapshots={"main": 4, "snapshots": picked},
        storage_entries=[[A, 1, 0], [B, 3, 0], [B, 4, 0]],
        storage_files=[[A, 0], [B, 0]],
    )
    result = check("no_file_added_twice", history)
    assert result.verdict == VALID and result.stats["left_out_off_main"] == 1
    chained = [snap(1, None), snap(3, 1, "w3"), snap(4, 3, None)]
    history = reads(
        storage_snapshots={"main": 4, "snapshots": chained},
        storage_entries=[[A, 1, 0], [B, 3, 0], [B, 4, 0]],
        storage_files=[[A, 0], [B, 0], [B, 0]],
    )
    result = check("no_file_added_twice", history)
    assert result.anomalies["added_twice"].examples == [f"{B} added by snapshots 3, 4"]


# -- files_exist ----------------------------------------------------------------------------------


def test_files_exist_valid_invalid_unknown() -> None:
    present = [[A, "data", True], [C, "manifest", True]]
    result = check("files_exist", reads(storage_presence=present))
    assert result.verdict == VALID and result.stats["checked"] == 2
    gone = check("files_exist", reads(storage_presence=[[A, "data", False], *present[1:]]))
    assert gone.verdict == INVALID and gone.anomalies["missing_file"].examples == [f"data {A}"]
    assert check("files_exist", History()).verdict == UNKNOWN
    assert check("files_exist", reads(storage_presence=[])).verdict == UNKNOWN


# -- staged_snapshots_bounded -------------------------------------------------------------------


def test_staged_snapshots_bounded_valid_invalid_unknown() -> None:
    published = [snap(1, None, "w1"), snap(2, 1, "w2")]
    orphans = [snap(10 + i, 2, f"x{i}") for i in range(4)]
    history = reads(storage_snapshots={"main": 2, "snapshots": published + orphans})
    ok = check("staged_snapshots_bounded", history, {"max_staged": 4})
    assert ok.verdict == VALID and ok.stats["unpublished"] == 4
    piled = check("staged_snapshots_bounded", history, {"max_staged": 2})
    assert piled.verdict == INVALID
    anomaly = piled.anomalies["staged_piled_up"]
    assert anomaly.count == 2 and anomaly.examples[0].startswith("10 (wap.id x0")
    assert "11 (wap.id x1" in anomaly.examples[1]
    plain = reads(storage_snapshots={"main": 2, "snapshots": [snap(1, None), snap(2, 1)]})
    assert check("staged_snapshots_bounded", plain).verdict == UNKNOWN
    assert check("staged_snapshots_bounded", History()).verdict == UNKNOWN


def test_storage_checks_are_registered_for_scenario_files() -> None:
    from icefloe.harness.scenarios.checks import storage
    from icefloe.harness.scenarios.checks.verdict import CHECKERS

    assert {*storage.CHECKS, "liveness"} <= set(CHECKERS)
