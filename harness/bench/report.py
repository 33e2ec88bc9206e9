"""The figures of one bench run, as JSON, as Markdown tables and as a PNG chart.

A `Report` holds what was measured (`harness.bench.figures`); everything here is a pure function
of it except `write`, which puts the three files into the output folder. The Markdown opens with
the headline (`harness.bench.headline`), then one table per backlog shape with every figure and
its ratios to the bounds, then every run with the load average at its start and end.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from icefloe.harness.bench import headline
from icefloe.harness.bench.cores import MACHINE
from icefloe.harness.bench.figures import (
    BOUND_KEYS,
    ENGINE,
    LOADER,
    LOADER_LOCAL,
    PEER,
    Freshness,
    LoadAverage,
    Throughput,
    shape_name,
    us_per_row,
)
from icefloe.harness.bench.freshness import WINDOW_S
from icefloe.harness.bench.profile import profile_lines
from icefloe.harness.bench.stats import ratio

NONE = "-"  # a figure not measured


@dataclass
class Report:
    """Everything one run measured, with how it was run.

    Attributes:
        command: the command line that produced it.
        started: when it started (ISO 8601, UTC).
        load_start, load_end: the load average (1, 5, 15 min) at start and end.
        options: the run's options.
        throughputs: the backlog figures, in the order measured (each shape in turn).
        freshness: the freshness settings, in the order measured.
        notes: what the reader should know (skipped parts, failures).
        commit: the project's commit the run measured (``git describe``), if known.
        probe_start_s, probe_end_s: the probe (10M Python additions, ``harness.machine``) at
            the run's start and end, seconds.
        cpu_quota: the share of each CPU the run had (``--cpu-quota``), None: the machine as
            it was.
    """

    command: str
    started: str
    load_start: LoadAverage
    load_end: LoadAverage | None = None
    options: dict[str, Any] = field(default_factory=dict)
    throughputs: list[Throughput] = field(default_factory=list)
    freshness: list[Freshness] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    commit: str | None = None
    probe_start_s: float | None = None
    probe_end_s: float | None = None
    cpu_quota: float | None = None

    def find(self, key: str, window_days: float | None = None) -> Throughput | None:
        """The figure ``key`` (of the backlog shape ``window_days``, when given)."""
        return next(
            (
                t
                for t in self.throughputs
                if t.key == key and (window_days is None or t.window_days == window_days)
            ),
            None,
        )

    @property
    def shapes(self) -> list[float]:
        """The backlog shapes measured (their event-time windows, days), in order."""
        return list(dict.fromkeys(t.window_days for t in self.throughputs))

    def bound(self, key: str, window_days: float) -> Throughput | None:
        """The bound ``key`` (``raw_consume`` or ``engine``) of a shape."""
        return self.find(key, window_days)

    def slower_bounds(self) -> list[str]:
        """A sentence for each bound a loader or peer beat in this run (so not a bound then)."""
        found = []
        for shape in self.shapes:
            for key in BOUND_KEYS:
                bound = self.bound(key, shape)
                if bound is None or bound.rows_per_s is None:
                    continue
                for t in self.throughputs:
                    if t.window_days != shape or t.kind not in (LOADER, PEER):
                        continue
                    if (t.rows_per_s or 0) > bound.rows_per_s:
                        found.append(
                            f"{shape_name(shape)}: {t.label} ({t.rows_per_s:,.0f} rows/s) beat "
                            f"{bound.label} ({bound.rows_per_s:,.0f} rows/s): no bound this run"
                        )
        return found

    def to_json(self) -> dict[str, Any]:
        """The report as plain data, with every derived rate and ratio spelled out."""
        doc: dict[str, Any] = {
            "command": self.command,
            "commit": self.commit,
            "started": self.started,
            "load_average_start": list(self.load_start),
            "load_average_end": list(self.load_end) if self.load_end else None,
            "probe_start_s": self.probe_start_s,
            "probe_end_s": self.probe_end_s,
            "cpu_quota": self.cpu_quota,
            "options": self.options,
            "bounds_rows_per_s": {
                f"{shape:g}": {
                    key: (b.rows_per_s if (b := self.bound(key, shape)) else None)
                    for key in BOUND_KEYS
                }
                for shape in self.shapes
            },
            "headline": headline.as_json(self.throughputs),
            "throughput": [],
            "freshness": [asdict(f) for f in self.freshness],
            "notes": [*self.notes, *self.slower_bounds()],
        }
        for t in self.throughputs:
            raw, engine = (self.bound(k, t.window_days) for k in BOUND_KEYS)
            entry = asdict(t)
            entry.update(
                rows_per_s=t.rows_per_s,
                rows_per_s_from_first=t.rows_per_s_from_first,
                spread=t.spread,
                spread_from_first=t.spread_from_first,
                to_raw_consume=ratio(t.rows_per_s, raw.rows_per_s if raw else None),
                to_engine=ratio(t.rows_per_s, engine.rows_per_s if engine else None),
                from_first_to_engine=ratio(
                    t.rows_per_s_from_first, engine.rows_per_s_from_first if engine else None
                ),
            )
            doc["throughput"].append(entry)
        return doc

    def to_markdown(self) -> str:
        """The headline (every row visible, the loader beside the sink at its best interval),
        the throughput tables (one per backlog shape), every run, the freshness table, the load
        average, the commit and the command, in Markdown."""
        lines = [self.machine_line(), "", *headline.lines(self.throughputs)]
        for shape in self.shapes:
            lines += ["", f"**{shape_name(shape)}**", "", *_throughput_table(self, shape)]
            shown = (t for t in self.throughputs if t.window_days == shape)
            if any(t.rows_per_s_from_first is not None for t in shown):
                lines += ["", headline.CAVEAT]
            lines += _profile(self, shape)
        if any(t.runs for t in self.throughputs):
            lines += ["", "**Every run**", "", *_runs_table(self.throughputs)]
        if self.freshness:
            lines += ["", *_freshness_table(self.freshness), "", *_freshness_notes(self.freshness)]
        load = f"load average (1/5/15 min) at start {_load(self.load_start)}"
        if self.load_end:
            load += f", at end {_load(self.load_end)}"
        commit = f" at commit {self.commit}" if self.commit else ""
        lines += ["", f"{load}; started {self.started}{commit}.", "", f"`{self.command}`"]
        notes = [*self.notes, *self.slower_bounds()]
        if notes:
            lines += ["", *(f"- {note}" for note in notes)]
        return "\n".join(lines).strip() + "\n"

    def machine_line(self) -> str:
        """The machine the figures were measured on: the probe at the start and end, the quota."""
        probes = " and ".join(
            f"{p:.2f} s at the {when}"
            for p, when in ((self.probe_start_s, "start"), (self.probe_end_s, "end"))
            if p is not None
        )
        quota = (
            "the machine as it was"
            if self.cpu_quota is None or self.cpu_quota >= 1
            else f"CPU quota {self.cpu_quota:g} (each CPU left for {self.cpu_quota:.0%} of its "
            "time, `harness/machine.py`)"
        )
        return f"Probe (10,000,000 Python additions): {probes or NONE}; {quota}."

    def write(self, folder: Path) -> dict[str, Path]:
        """Write ``bench.json``, ``bench.md`` and ``bench.png`` into ``folder``.

        Returns:
            Each file by its kind (json, md, png).
        """
        folder.mkdir(parents=True, exist_ok=True)
        paths = {k: folder / f"bench.{k}" for k in ("json", "md", "png")}
        paths["json"].write_text(json.dumps(self.to_json(), indent=1) + "\n")
        paths["md"].write_text(self.to_markdown())
        chart(self, paths["png"])
        return paths


def _load(avg: Sequence[float] | None) -> str:
    if avg is None:
        return NONE
    return "/".join(f"{x:.1f}" for x in avg)


def _num(value: float | None, digits: int = 0) -> str:
    return NONE if value is None else f"{value:,.{digits}f}"


def _with_spread(value: float | None, spread: tuple[float, float] | None) -> str:
    text = _num(value)
    if spread is not None and value is not None:
        text += f" ({spread[0]:,.0f}-{spread[1]:,.0f})"
    return text


def _times(value: float | None) -> str:
    return NONE if value is None else f"{value:.2f}x"


def _profile(report: Report, shape: float) -> list[str]:
    """The loader's steps in its median run on a shape, beside the same run's engine bound."""
    loader = report.find(LOADER_LOCAL, shape)
    if loader is None or not loader.steps:
        return []
    engine = report.bound(ENGINE, shape)
    against = f"; the engine bound: {engine.seconds:.1f} s" if engine else ""
    label = f"{loader.label}, its median run, every row visible after {loader.seconds:.1f} s"
    return ["", *profile_lines(label + against, loader.steps)]


def _throughput_table(report: Report, shape: float) -> list[str]:
    raw, engine = (report.bound(k, shape) for k in BOUND_KEYS)
    raw_rate = raw.rows_per_s if raw else None
    engine_rate = engine.rows_per_s if engine else None
    engine_first = engine.rows_per_s_from_first if engine else None
    lines = [
        "| measured | rows/s from start | x raw consume | x engine "
        "| rows/s once rows appear | x engine | first visible after | all visible after "
        "| data files | settings |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|---|",
    ]
    for t in report.throughputs:
        if t.window_days != shape:
            continue
        from_first = t.rows_per_s_from_first
        first = _num(t.first_seconds, 1) + " s" if t.first_seconds is not None else NONE
        cells = [
            t.label,
            _with_spread(t.rows_per_s, t.spread),
            _times(ratio(t.rows_per_s, raw_rate)),
            _times(ratio(t.rows_per_s, engine_rate)),
            _with_spread(from_first, t.spread_from_first),
            _times(ratio(from_first, engine_first)),
            first,
            f"{t.seconds:,.1f} s",
            NONE if t.files is None else f"{t.files:,}",
            t.detail,
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _cpu(cpu_s: float | None, rows: int) -> str:
    """CPU seconds, and per row: ``61.3 s, 61 µs a row``."""
    per_row = us_per_row(cpu_s, rows)
    if cpu_s is None or per_row is None:
        return NONE
    return f"{cpu_s:,.1f} s, {per_row:,.0f} µs a row"


def _runs_table(figures: Sequence[Throughput]) -> list[str]:
    """Every run of every figure, by shape and system, with the load average at its start and
    end: what each median was taken from."""
    lines = [
        "| backlog | measured | run | started | all visible after | first visible after "
        "| data files | CPU of its own processes | load average at start | at end |",
        "|---|---|--:|---|--:|--:|--:|--:|--:|--:|",
    ]
    for t in figures:
        for n, run in enumerate(t.runs, 1):
            first = NONE if run.first_seconds is None else f"{run.first_seconds:.1f} s"
            cells = [
                shape_name(t.window_days),
                t.label,
                f"{n} of {len(t.runs)}",
                run.started or NONE,
                f"{run.seconds:,.1f} s",
                first,
                NONE if run.files is None else f"{run.files:,}",
                _cpu(run.cpu_s, t.rows),
                _load(run.load_start),
                _load(run.load_end),
            ]
            lines.append("| " + " | ".join(cells) + " |")
    return lines


def _freshness_table(rows: Sequence[Freshness]) -> list[str]:
    lines = [
        "| publish rate | trigger | p50 | p95 | p99 | max | seen / published "
        "| data files | files per hour |",
        "|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for f in rows:
        cells = [
            f"{f.rate:,} msg/s",
            f"{f.trigger_s:g} s",
            *(_num(v, 2) + " s" if v is not None else NONE for v in (f.p50, f.p95, f.p99, f.max)),
            f"{f.seen:,} / {f.published:,}",
            f"{f.files:,}",
            _num(f.files_per_hour),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


_CORE_LABELS = {"trino": "trino (answering the bench's polls)"}
"""How a process is named in the cores used, where its role alone would mislead."""


def _freshness_notes(rows: Sequence[Freshness]) -> list[str]:
    """Per setting: the p99 of each window of publishing, the loader's batches, the cores, and
    how long Trino took to answer the polls."""
    lines = []
    for f in rows:
        parts = []
        if f.p99_by_window:
            windows = ", ".join(NONE if v is None else f"{v:.2f}" for v in f.p99_by_window)
            parts.append(f"p99 by {WINDOW_S:g} s of publishing {windows} s")
        if f.batches is not None:
            median = "" if f.batch_median_s is None else f", {f.batch_median_s:.2f} s at the median"
            parts.append(f"the loader's batches meanwhile {f.batches}{median}")
        if f.cores:
            named = sorted(
                ((k, v) for k, v in f.cores.items() if k != MACHINE), key=lambda kv: -kv[1]
            )
            used = ", ".join(f"{_CORE_LABELS.get(k, k)} {v:.2f}" for k, v in named)
            if MACHINE in f.cores:
                used += f"; the machine, every process, {f.cores[MACHINE]:.2f}"
            parts.append(f"cores used meanwhile: {used}")
        if f.poll_median_s is not None and f.poll_p99_s is not None:
            parts.append(
                f"Trino answered the polls in {f.poll_median_s:.2f} s at the median, "
                f"{f.poll_p99_s:.2f} s at p99 (in every latency)"
            )
        if f.committed_p50 is not None and f.committed_p99 is not None:
            parts.append(
                "the table's own history, no poll in it: main held a message "
                f"{f.committed_p50:.2f} s after its publish at the median, "
                f"{f.committed_p99:.2f} s at p99"
            )
        if parts:
            lines.append(f"- {f.rate:,} msg/s, {f.trigger_s:g} s trigger: " + "; ".join(parts))
    return lines


def chart(report: Report, path: Path) -> None:
    """A PNG: rows/s of each system beside the bounds; freshness percentiles per setting."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(14, 6))
    shown = [t for t in report.throughputs if t.rows_per_s is not None]
    several = len(report.shapes) > 1
    names = [f"{t.label} ({t.window_days:g} d)" if several else t.label for t in shown]
    left.barh(names, [t.rows_per_s or 0 for t in shown], label="from start")
    left.barh(
        names,
        [t.rows_per_s_from_first or 0 for t in shown],
        height=0.3,
        label="once rows appear",
    )
    left.invert_yaxis()
    left.set_xlabel("rows/s")
    left.set_title("Backlog throughput (bounds first)")
    left.legend(loc="lower right", fontsize="small")
    left.tick_params(axis="y", labelsize="x-small")
    settings = [f"{f.rate} msg/s\n{f.trigger_s:g} s trigger" for f in report.freshness]
    width = 0.25
    for n, (name, values) in enumerate(
        (q, [getattr(f, q) or 0 for f in report.freshness]) for q in ("p50", "p95", "p99")
    ):
        right.bar([i + (n - 1) * width for i in range(len(settings))], values, width, label=name)
    right.set_xticks(range(len(settings)), settings)
    right.set_ylabel("publish to visible in Trino, s")
    right.set_title("Freshness")
    right.legend(fontsize="small")
    fig.suptitle(f"icefloe bench, {report.started}, load {_load(report.load_start)}")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
