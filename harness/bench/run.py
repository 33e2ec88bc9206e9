"""One `icefloe bench` run: every part in turn on one stack, for each backlog shape; a report.

For each backlog shape (``--window-days``: event times within 1 day, over 30 days) a backlog of
``--rows`` reference rows is published once to a two-partition topic; the bounds (raw consume,
the engine's own cost), the baselines, icefloe's loader (local, then cluster) and the Kafka
Connect sink (at each of ``--sink-intervals``) each read all of it, into tables of their own.
With ``--repeat N`` each figure is measured N times, and the headline's systems (the loader in
local mode, the sink at each interval) at least ``--headline-repeat`` times, the systems taking
turns (so a slow minute of the machine does not fall on one of them alone); the median is
reported with the spread, and every run with the load average at its start and end. The
freshness settings follow,
each with its own topic, table and loader. A part that fails is noted in the report and the run
goes on: the bench prints numbers, it asserts nothing.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from icefloe.harness.bench import engine, freshness, loaders, peers, stages
from icefloe.harness.bench.baseline import run_baseline
from icefloe.harness.bench.figures import LoadAverage, Run, Throughput, median_run
from icefloe.harness.bench.options import (
    AUTO,
    BACKLOG_PARTS,
    BASELINE,
    CLUSTER,
    ENGINE,
    FRESHNESS,
    LOCAL,
    PARQUET,
    PARTS,
    RAW,
    BenchOptions,
    as_dict,
    command_line,
)
from icefloe.harness.bench.report import Report
from icefloe.harness.bench.workload import (
    BenchSchema,
    create_topic,
    publish_alternating,
    reference_values,
)
from icefloe.harness.console import say
from icefloe.harness.machine import Slowdown, probe_s
from icefloe.harness.resources import commit

PARTITIONS = 2


def output_folder(stack: Any, options: BenchOptions, started: dt.datetime) -> Path:
    """``--out``, else ``<run directory>/bench/<start time>``."""
    if options.out is not None:
        return options.out
    return Path(stack.config.run_dir) / "bench" / started.strftime("%Y%m%dT%H%M%SZ")


def _load() -> LoadAverage:
    one, five, fifteen = os.getloadavg()
    return (round(one, 2), round(five, 2), round(fifteen, 2))


def project_commit() -> str | None:
    """The kit's commit (``git describe --always --dirty``), or None outside a checkout."""
    return commit()


def run_each_quota(stack: Any, options: BenchOptions) -> list[tuple[Report, Path]]:
    """``run`` once per ``options.cpu_quotas``, each with every CPU left to the machine for that
    share of its time (``harness.machine.Slowdown``) and its report in ``quota-<F>/`` of the
    run's folder (with one quota, the folder itself); with no quota, ``run`` once, the machine
    as it is.

    Raises:
        SlowdownUnavailable: the machine cannot be slowed (found before anything is measured).
    """
    if not options.cpu_quotas:
        return [run(stack, options)]
    with Slowdown(min(options.cpu_quotas)):
        pass  # can it be slowed at all: asked now, not after an hour of measuring
    started = dt.datetime.now(dt.UTC).replace(microsecond=0)
    top = output_folder(stack, options, started)
    nested = len(options.cpu_quotas) > 1
    done = []
    for quota in options.cpu_quotas:
        # Its report's command runs this quota alone, into this folder again.
        out = top / f"quota-{quota:g}" if nested else top
        one = dataclasses.replace(options, out=out, cpu_quotas=(quota,))
        with Slowdown(quota) as slowdown:
            say(slowdown.describe())
            done.append(run(stack, one))
    return done


def run(stack: Any, options: BenchOptions) -> tuple[Report, Path]:
    """Measure what ``options`` asks on ``stack``; write the report; return it and its folder.
    A single quota in ``options.cpu_quotas`` is recorded as the run's, not applied: the caller
    slows the machine (``run_each_quota``)."""
    started = dt.datetime.now(dt.UTC).replace(microsecond=0)
    folder = output_folder(stack, options, started)
    folder.mkdir(parents=True, exist_ok=True)
    report = Report(
        command=command_line(options),
        started=started.isoformat().replace("+00:00", "Z"),
        load_start=_load(),
        options=as_dict(options),
        commit=project_commit(),
        probe_start_s=probe_s(),
        cpu_quota=options.cpu_quotas[0] if len(options.cpu_quotas) == 1 else None,
    )
    say(
        f"load average at start {report.load_start}, probe {report.probe_start_s:.2f} s; "
        f"output in {folder}"
    )
    if options.skip:
        report.notes.append(f"skipped: {', '.join(p for p in PARTS if p in options.skip)}")
    provisioned = peers.sink_provisioned(stack)
    sink = options.kafka_connect(provisioned)
    if AUTO in options.loaders and not provisioned and not sink:
        report.notes.append(
            "the Kafka Connect sink is not provisioned, so not measured "
            "(`--loader kafka-connect` provisions it)"
        )
    schema = BenchSchema.create(stack)
    try:
        if sink or any(options.runs(p) for p in BACKLOG_PARTS):
            for shape in options.window_days:
                where = folder / f"backlog-{shape:g}d"
                _backlog(stack, options, schema, where, report, shape, sink)
        if options.runs(FRESHNESS):
            _freshness(stack, options, schema, folder, report)
    finally:
        schema.drop()
        report.load_end = _load()
        report.probe_end_s = probe_s()
    say(f"load average at end {report.load_end}, probe {report.probe_end_s:.2f} s")
    report.write(folder)
    return report, folder


def _measure(report: Report, part: str, measure: Callable[[], Throughput]) -> Throughput | None:
    """``measure()``, recorded as one run with when it started and the load average at its
    start and end; None (and a note in the report) when it fails."""
    say(f"measuring {part}")
    started = dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")
    load_start = _load()
    try:
        figure = measure()
    except Exception as exc:  # noted in the report; the other parts still run
        report.notes.append(f"{part} failed: {type(exc).__name__}: {str(exc)[:500]}")
        say(f"[red]{part} failed[/]: {exc}")
        return None
    run = Run.of(figure, started, load_start, _load())
    figure = dataclasses.replace(figure, runs=(run,))
    from_first = figure.rows_per_s_from_first
    extra = f", {from_first:,.0f} rows/s from the first visible row" if from_first else ""
    files = f", {figure.files:,} data files" if figure.files is not None else ""
    say(
        f"  {figure.label}: {figure.rows_per_s or 0:,.0f} rows/s ({figure.seconds:.1f} s)"
        f"{extra}{files}"
    )
    return figure


Measure = Callable[[int], Throughput]
"""One measurement of a part; its argument is the repetition's number (folders, tables)."""


@dataclass(frozen=True)
class Turn:
    """A part that reads the topic into a table, measured in turn with the others.

    Attributes:
        name: what the console and the notes call it.
        measure: one measurement.
        headline: whether the headline compares it (measured at least ``--headline-repeat``
            times).
    """

    name: str
    measure: Measure
    headline: bool = False


def schedule(counts: Sequence[int]) -> list[tuple[int, int]]:
    """The order in which parts measured ``counts[i]`` times each take turns: round by round,
    each part that still has a repetition to go, as ``(part index, repetition)``."""
    return [(i, n) for n in range(max(counts, default=0)) for i, c in enumerate(counts) if n < c]


def _backlog(
    stack: Any,
    options: BenchOptions,
    schema: BenchSchema,
    folder: Path,
    report: Report,
    shape: float,
    sink: bool,
) -> None:
    rows, repeat = options.rows, options.repeat
    folder.mkdir(parents=True, exist_ok=True)
    say(f"generating {rows:,} reference rows (event times within {shape:g} days)")
    values = reference_values(rows, shape)
    topic = create_topic(stack, PARTITIONS)
    began = time.monotonic()
    publish_alternating(stack, topic, values)
    say(f"published the backlog to {topic} in {time.monotonic() - began:.1f} s")
    # Everything that reads the messages from memory runs before they are freed.
    alone: list[tuple[str, Measure]] = []
    if options.runs(RAW):
        alone.append(("raw consume", lambda _: stages.raw_consume(stack, topic, rows, PARTITIONS)))
    if options.runs(PARQUET):
        alone.append(("parse to Parquet", lambda _: stages.parse_to_parquet(values, folder)))
    runs: dict[str, list[Throughput]] = {}
    for name, measure in alone:
        for n in range(repeat):
            _keep(runs, name, _measure(report, _named(name, n, repeat), partial(measure, n)))
    values.clear()  # the messages are in Kafka now; free the memory before the loaders run
    turns = _turns(stack, options, schema, folder, topic, sink)
    counts = [options.repeats(headline=t.headline) for t in turns]
    for i, n in schedule(counts):  # the systems take turns
        name, times = turns[i].name, counts[i]
        _keep(runs, name, _measure(report, _named(name, n, times), partial(turns[i].measure, n)))
    for name in [*(a for a, _ in alone), *(t.name for t in turns)]:
        if runs.get(name):
            figure = median_run(runs[name])
            report.throughputs.append(dataclasses.replace(figure, window_days=shape))


def _turns(
    stack: Any, options: BenchOptions, schema: BenchSchema, folder: Path, topic: str, sink: bool
) -> list[Turn]:
    """The parts that read the topic into a table, each as a measurement of one repetition."""
    rows, per_trigger = options.rows, options.per_trigger
    turns: list[Turn] = []
    if options.runs(ENGINE):

        def the_engine(n: int) -> Throughput:
            table = schema.table("engine")
            where = folder / f"engine-{n}"
            return engine.run_engine(stack, where, table, topic, rows, per_trigger)

        turns.append(Turn("the engine", the_engine))
    if options.runs(BASELINE):
        every = options.baseline_every_s

        def the_baseline(n: int) -> Throughput:
            log = folder / f"baseline-{n}.log"
            return run_baseline(stack, schema.table("baseline"), topic, rows, every, log)

        turns.append(Turn("baseline", the_baseline))
    for part, mode, measure in (
        (LOCAL, "local", loaders.run_local),
        (CLUSTER, "cluster", loaders.run_cluster),
    ):
        if options.runs(part):
            tuning = options.tuning(local=part == LOCAL)

            def the_loader(n: int, mode: str = mode, measure: Any = measure, tuning: Any = tuning):
                table, where = schema.table(mode), folder / f"loader-{mode}-{n}"
                return measure(stack, where, table, topic, rows, per_trigger, tuning)

            turns.append(Turn(f"loader ({mode})", the_loader, headline=part == LOCAL))
    for interval in options.sink_intervals if sink else ():

        def the_sink(n: int, interval: float = interval) -> Throughput:
            table = schema.table("kafka_connect")
            where = folder / f"kafka-connect-{interval:g}s-{n}"
            return peers.run_kafka_connect(stack, where, table, topic, rows, interval)

        turns.append(Turn(f"Kafka Connect sink ({interval:g} s commits)", the_sink, headline=True))
    for name in options.shipped():

        def the_shipped(n: int, name: str = name) -> Throughput:
            table = schema.table(name.replace("-", "_"))
            return peers.run_shipped(stack, name, folder / f"{name}-{n}", table, topic, rows)

        turns.append(Turn(name, the_shipped, headline=True))
    return turns


def _named(name: str, n: int, repeat: int) -> str:
    return f"{name} ({n + 1} of {repeat})" if repeat > 1 else name


def _keep(runs: dict[str, list[Throughput]], name: str, figure: Throughput | None) -> None:
    if figure is not None:
        runs.setdefault(name, []).append(figure)


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
                    options.window_days[0],
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
