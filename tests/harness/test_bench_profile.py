"""The loader's profile: its batch lines read back on a clock from its process start."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

from icefloe.harness.bench.figures import ENGINE, LOADER, LOADER_LOCAL, Throughput
from icefloe.harness.bench.profile import steps_from_log
from icefloe.harness.bench.report import Report

START = dt.datetime(2026, 11, 28, 2, 55, 19, 500000).timestamp()
LOG = """--- icefloe: starting loader at Sat Nov 28 02:55:19 2026 ---
2026-11-28 02:54:00,000 INFO icefloe.loader: batch 7: committed 9 rows, 0 dead letters (table state 0.01 s, decode 0.01 s, write and publish 0.01 s, total 0.03 s)
2026-11-28 02:55:22,348 INFO icefloe.loader: took over t as loader b (process p)
2026-11-28 02:55:27,187 INFO icefloe.loader: batch -1: committed 5000 rows, 0 dead letters in one pass (table state 0.18 s, decode, write and publish 3.12 s, total 3.31 s)
2026-11-28 02:55:36,530 INFO icefloe.loader: batch 0: committed 500000 rows, 0 dead letters in one pass (table state 0.13 s, decode, write and publish 8.93 s, total 9.06 s)
2026-11-28 02:55:36,600 INFO icefloe.loader: batch 1: committed 495000 rows, 3 dead letters (table state 0.09 s, decode 4.00 s, write and publish 5.00 s, total 9.10 s)
"""  # noqa: E501


def test_batches_gaps_start_up_and_tail_come_from_the_log() -> None:
    steps = steps_from_log(LOG, START, 47.0)
    names = [s.name for s in steps]
    assert names == [
        "start-up",
        "batch -1 (first slice)",
        "between batches",
        "batch 0",
        "batch 1",  # it began 9.03 s before its end, within the 0.05 s gap: no step between
        "to every row visible",
    ]
    start_up, first, gap, zero, one, tail = steps
    assert start_up.start_s == 0 and start_up.end_s == pytest.approx(7.687 - 3.31, abs=1e-3)
    assert first.rows == 5000 and first.end_s == pytest.approx(7.687, abs=1e-3)
    assert first.detail == "table state 0.18 s, decode, write and publish 3.12 s (one pass)"
    assert gap.seconds == pytest.approx(17.03 - 9.06 - 7.687, abs=1e-3)
    assert zero.rows == 500_000 and zero.seconds == pytest.approx(9.06)
    assert one.detail.endswith("(decode, then write)")
    assert tail.start_s == pytest.approx(17.1, abs=1e-3) and tail.end_s == 47.0


def test_a_log_without_batches_gives_no_profile() -> None:
    assert steps_from_log("--- icefloe: starting loader ---\n", START, 10.0) == ()


def test_the_report_shows_the_median_runs_steps_beside_the_engine_bound() -> None:
    report = Report("icefloe bench", "2026-11-28T02:55:00Z", (1.0, 1.0, 1.0))
    steps = steps_from_log(LOG, START, 47.0)
    loader = Throughput(LOADER_LOCAL, "loader, local[2]", LOADER, 1_000_000, 47.0, 7.7, 5000)
    report.throughputs += [
        Throughput(ENGINE, "bound: engine", "bound", 1_000_000, 23.6, 5.0, 500),
        dataclasses.replace(loader, steps=steps),
    ]
    text = report.to_markdown()
    assert (
        "Where the time went: loader, local[2], its median run, every row visible after 47.0 s;"
        " the engine bound: 23.6 s"
    ) in text
    assert "| batch 0 | 8.0 s | 17.0 s | 9.06 | 500,000 |" in text
    assert report.to_json()["throughput"][1]["steps"][1]["rows"] == 5000
