"""Catalog faults counted where they landed (hand-made histories, no stack)."""

from __future__ import annotations

from pathlib import Path

from icefloe.harness.history import PROXY_FIRED, History
from icefloe.harness.scenarios.checks.facts.faults import landed_counts
from icefloe.harness.scenarios.checks.facts.reads import Observed
from icefloe.harness.scenarios.checks.verdict import UNKNOWN, VALID, run_check


def history(tmp_path: Path, *firings: tuple[str, bool | None]) -> History:
    h = History(tmp_path / "history.jsonl")
    h.record("fault", "ok", "catalog_http.inject", rule="r1")
    for mode, applied in firings:
        h.record("fault", "info", PROXY_FIRED, mode=mode, applied=applied, rule="r1")
    return h


def test_counts_by_mode_and_outcome(tmp_path: Path) -> None:
    h = history(
        tmp_path,
        ("drop_after_forward", True),
        ("status_after_forward", True),
        ("refuse", False),
        ("black_hole", None),
    )
    assert landed_counts(h) == {
        "fired": 4,
        "applied": 2,
        "not_applied": 1,
        "unknown": 1,
        "fired.black_hole": 1,
        "fired.drop_after_forward": 1,
        "fired.refuse": 1,
        "fired.status_after_forward": 1,
    }
    assert landed_counts(h, "refuse")["fired"] == 1


def test_armed_but_never_fired_is_unknown(tmp_path: Path) -> None:
    result = run_check("catalog_faults_landed", history(tmp_path), [], Observed(), {})
    assert result.verdict == UNKNOWN
    assert "0 catalog faults landed" in result.summary


def test_fired_only_on_refused_requests_is_unknown_when_applied_ones_are_needed(
    tmp_path: Path,
) -> None:
    h = history(tmp_path, ("refuse", False), ("refuse", False))
    assert (
        run_check("catalog_faults_landed", h, [], Observed(), {"min_applied": 1}).verdict == UNKNOWN
    )
    assert run_check("catalog_faults_landed", h, [], Observed(), {"min_fired": 2}).verdict == VALID


def test_enough_landed_is_valid(tmp_path: Path) -> None:
    h = history(tmp_path, ("drop_after_forward", True), ("drop_after_forward", True))
    params = {"mode": "drop_after_forward", "min_fired": 2, "min_applied": 2}
    result = run_check("catalog_faults_landed", h, [], Observed(), params)
    assert result.verdict == VALID, result.summary
