"""One `icefloe bench` run: every part in turn on one stack and one backlog, then the report.

The backlog (``--rows`` reference rows on a two-partition topic) is published once; the
ceiling, the baseline and the loader (local, then cluster) each read all of it, into tables of
their own. The freshness settings follow, each with its own topic, table and loader. A part that
fails is noted in the report and the run goes on: the bench prints numbers, it asserts nothing.
"""

from __future__ import annotations

import datetime as dt
import os
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from harness.bench import ceiling, freshness, loaders
from harness.bench.baseline import run_baseline
from harness.bench.options import (
    BASELINE,
    CEILING,
    CLUSTER,
    FRESHNESS,
    LOCAL,
    BenchOptions,
    as_dict,
    command_line,
)
from harness.bench.report import Report, Throughput
from harness.bench.workload import BenchSchema, create_topic, publish_alternating, reference_values
from harness.console import say

PARTITIONS = 2


def output_folder(stack: Any, options: BenchOptions, started: dt.datetime) -> Path:
    """``--out``, else ``<run directory>/bench/<start time>``."""
    if options.out is not None:
        return options.out
    return Path(stack.config.run_dir) / "bench" / started.strftime("%Y%m%dT%H%M%SZ")


def _load() -> tuple[float, float, float]:
    one, five, fifteen = os.getloadavg()
    return (round(one, 2), round(five, 2), round(fifteen, 2))


def run(stack: Any, options: BenchOptions) -> tuple[Report, Path]:
    """Measure what ``options`` asks on ``stack``; write the report; return it and its folder."""
    started = dt.datetime.now(dt.UTC).replace(microsecond=0)
    folder = output_folder(stack, options, started)
    folder.mkdir(parents=True, exist_ok=True)
    report = Report(
        command=command_line(options),
        started=started.isoformat().replace("+00:00", "Z"),
        load_start=_load(),
        options=as_dict(options),
    )
    say(f"load average at start {report.load_start}; output in {folder}")
    if options.skip:
        report.notes.append(f"skipped: {', '.join(sorted(options.skip))}")
    schema = BenchSchema.create(stack)
    try:
        if any(options.runs(p) for p in (CEILING, BASELINE, LOCAL, CLUSTER)):
            _backlog(stack, options, schema, folder, report)
        if options.runs(FRESHNESS):
            _freshness(stack, options, schema, folder, report)
    finally:
        schema.drop()
        report.load_end = _load()
    say(f"load average at end {report.load_end}")
    report.write(folder)
    return report, folder


def _measure(report: Report, part: str, measure: Callable[[], Throughput]) -> None:
    say(f"measuring {part}")
    try:
        figure = measure()
    except Exception as exc:  # noted in the report; the other parts still run
        report.notes.append(f"{part} failed: {type(exc).__name__}: {str(exc)[:500]}")
        say(f"[red]{part} failed[/]: {exc}")
        return
    report.throughputs.append(figure)
    from_first = figure.rows_per_s_from_first
    extra = f", {from_first:,.0f} rows/s from the first visible row" if from_first else ""
    say(f"  {figure.label}: {figure.rows_per_s or 0:,.0f} rows/s ({figure.seconds:.1f} s){extra}")


def _backlog(
    stack: Any, options: BenchOptions, schema: BenchSchema, folder: Path, report: Report
) -> None:
    rows = options.rows
    say(f"generating {rows:,} reference rows (event times within {options.window_days:g} days)")
    values = reference_values(rows, options.window_days)
    topic = create_topic(stack, PARTITIONS)
    began = time.monotonic()
    publish_alternating(stack, topic, values)
    say(f"published the backlog to {topic} in {time.monotonic() - began:.1f} s")
    if options.runs(CEILING):
        _measure(report, "raw consume", lambda: ceiling.raw_consume(stack, topic, rows, PARTITIONS))
        _measure(report, "parse to Parquet", lambda: ceiling.parse_to_parquet(values, folder))
    values.clear()  # the messages are in Kafka now; free the memory before the loaders run
    every = options.baseline_every_s
    if options.runs(BASELINE):
        table = schema.table("baseline")
        log = folder / "baseline.log"
        _measure(report, "baseline", lambda: run_baseline(stack, table, topic, rows, every, log))
    per_trigger = options.per_trigger
    for part, mode, measure in (
        (LOCAL, "local", loaders.run_local),
        (CLUSTER, "cluster", loaders.run_cluster),
    ):
        if options.runs(part):
            table, where = schema.table(mode), folder / f"loader-{mode}"
            tuning = options.tuning(local=part == LOCAL)
            run_loader = partial(measure, stack, where, table, topic, rows, per_trigger, tuning)
            _measure(report, f"loader ({mode})", run_loader)


def _freshness(
    stack: Any, options: BenchOptions, schema: BenchSchema, folder: Path, report: Report
) -> None:
    for rate in options.rates:
        for trigger in options.triggers:
            name = f"freshness {rate} msg/s, {trigger:g} s trigger"
            say(f"measuring {name} for {options.freshness_seconds:g} s")
            try:
                figure = freshness.run_setting(
                    stack,
                    folder / f"freshness-{rate}-{trigger:g}s",
                    schema,
                    rate,
                    trigger,
                    options.freshness_seconds,
                    options.window_days,
                    options.tuning(),
                )
            except Exception as exc:  # noted; the other settings still run
                report.notes.append(f"{name} failed: {type(exc).__name__}: {str(exc)[:500]}")
                say(f"[red]{name} failed[/]: {exc}")
                continue
            report.freshness.append(figure)
            say(
                f"  p50 {figure.p50 or 0:.2f} s, p95 {figure.p95 or 0:.2f} s, "
                f"p99 {figure.p99 or 0:.2f} s; {figure.seen:,}/{figure.published:,} seen; "
                f"{figure.files} data files"
            )
