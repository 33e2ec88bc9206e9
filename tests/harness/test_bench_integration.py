"""`icefloe bench` end to end on the real stack, at a tiny size: every part but the cluster runs
and yields its figures. It checks that figures exist and add up, never how fast they are."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.bench.options import parse
from harness.bench.run import run

pytestmark = pytest.mark.integration


def test_a_small_bench_measures_every_part_and_writes_its_report(
    stack: Any, tmp_path: Path
) -> None:
    small = ["--rows", "20000", "--freshness-seconds", "10", "--rates", "1000", "--triggers", "1"]
    options = parse([*small, "--skip", "cluster", "--out", str(tmp_path)])
    report, folder = run(stack, options)

    assert report.notes == ["skipped: cluster"]  # no part failed
    figures = {t.key: t for t in report.throughputs}
    assert set(figures) == {"raw_consume", "parse_to_parquet", "baseline", "loader_local"}
    assert all(t.rows == 20_000 and t.seconds > 0 for t in figures.values())
    for key in ("baseline", "loader_local"):
        first = figures[key].first_seconds
        assert first is not None and 0 < first <= figures[key].seconds
    (fresh,) = report.freshness
    assert fresh.published == 10_000 and fresh.seen == 10_000
    assert fresh.p50 is not None and fresh.p99 is not None and 0 < fresh.p50 <= fresh.p99
    assert fresh.files > 0
    doc = json.loads((folder / "bench.json").read_text())
    assert doc["ceiling_rows_per_s"] == report.ceiling
    assert "| loader, local[2] |" in (folder / "bench.md").read_text()
    assert (folder / "bench.png").stat().st_size > 0
