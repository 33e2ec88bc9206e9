"""`icefloe bench` end to end on the real stack, at a tiny size. The default test runs every part
but the cluster, the hand-written baseline and the Kafka Connect sink, each once (so it costs
what it did before the engine run joined); the slow one adds both, on both backlog shapes,
repeated, the sink at one commit interval. They check that figures exist and add up, never how
fast they are."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from icefloe.harness.bench.cores import MACHINE
from icefloe.harness.bench.options import parse
from icefloe.harness.bench.run import run

pytestmark = pytest.mark.integration


def test_a_small_bench_measures_every_part_and_writes_its_report(
    stack: Any, tmp_path: Path
) -> None:
    small = ["--rows", "20000", "--freshness-seconds", "10", "--rates", "1000", "--triggers", "1"]
    argv = [*small, "--window-days", "1", "--loader", "icefloe", "--skip", "baseline,cluster"]
    options = parse([*argv, "--headline-repeat", "1", "--out", str(tmp_path)])
    report, folder = run(stack, options)

    assert report.notes == ["skipped: baseline, cluster"]  # no part failed
    figures = {t.key: t for t in report.throughputs}
    assert set(figures) == {"raw_consume", "engine", "parse_to_parquet", "loader_local"}
    assert all(t.rows == 20_000 and t.seconds > 0 for t in figures.values())
    for figure in figures.values():
        (one,) = figure.runs
        assert one.seconds == figure.seconds and one.started
        assert one.load_start is not None and one.load_end is not None
    for key in ("engine", "loader_local"):
        first = figures[key].first_seconds
        assert first is not None and 0 < first <= figures[key].seconds
        assert (figures[key].files or 0) > 0
    (fresh,) = report.freshness
    assert fresh.published == 10_000 and fresh.seen == 10_000
    assert fresh.p50 is not None and fresh.p99 is not None and 0 < fresh.p50 <= fresh.p99
    assert fresh.files > 0
    assert fresh.p99_by_window and fresh.p99_by_window[0] is not None  # 10 s: one window
    assert fresh.batches and fresh.batch_median_s is not None and fresh.batch_median_s > 0
    assert {"loader", "trino", "kafka", MACHINE} <= set(fresh.cores) and fresh.cores["loader"] > 0
    assert fresh.poll_median_s is not None and fresh.poll_p99_s is not None
    assert 0 < fresh.poll_median_s <= fresh.poll_p99_s and fresh.poll_median_s < fresh.p50
    # the table's own history: every message committed, each before a poll saw it
    assert fresh.committed_p50 is not None and fresh.committed_p99 is not None
    assert 0 < fresh.committed_p50 <= fresh.p50 and fresh.committed_p99 <= fresh.p99
    doc = json.loads((folder / "bench.json").read_text())
    raw, engine = figures["raw_consume"].rows_per_s, figures["engine"].rows_per_s
    assert doc["bounds_rows_per_s"] == {"1": {"raw_consume": raw, "engine": engine}}
    assert doc["headline"]["shapes"]["1"]["loader"]["runs"] == 1
    markdown = (folder / "bench.md").read_text()
    assert "| loader, local[2] | no median (1 run) |" in markdown
    steps = figures["loader_local"].steps  # its profile, read from its log
    assert steps[0].name == "start-up" and steps[-1].name == "to every row visible"
    assert sum(s.rows or 0 for s in steps) == 20_000
    assert "Where the time went: loader, local[2]" in markdown
    # its Python and its JVM, Spark's launcher included: a JVM's start alone takes seconds
    loader_cpu = figures["loader_local"].cpu_s
    assert loader_cpu is not None and loader_cpu > 1.0
    assert [r.cpu_s for r in figures["loader_local"].runs] == [loader_cpu]
    assert f"| {loader_cpu:,.1f} s, " in markdown
    assert (folder / "bench.png").stat().st_size > 0


@pytest.mark.slow
def test_the_sink_the_baseline_and_two_shapes_repeated_give_medians_beside_the_loader(
    stack: Any, tmp_path: Path
) -> None:
    argv = [
        "--rows",
        "20000",
        "--window-days",
        "1,30",
        "--repeat",
        "3",
        "--loader",
        "kafka-connect",
        "--sink-intervals",
        "10",
    ]
    skip = ["--skip", "raw,parquet,cluster,freshness", "--out", str(tmp_path)]
    report, _ = run(stack, parse([*argv, *skip]))

    assert not [note for note in report.notes if "failed" in note]
    for shape in (1.0, 30.0):
        for key in ("engine", "baseline", "loader_local", "kafka_connect"):
            figure = report.find(key, shape)
            assert figure is not None and len(figure.samples) == 3, (key, shape)
            assert figure.spread is not None and (figure.files or 0) > 0
    text = report.to_markdown()
    assert "the loader beside the sink at its best commit interval, 10 s (of 10 s" in text
    assert "; CPU of its own processes " in text  # the sink's worker measured too
    assert report.to_json()["headline"]["shapes"]["30"]["best_sink_interval_s"] == 10
