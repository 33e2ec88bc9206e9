"""The figures of one bench run, as JSON, as Markdown tables and as a PNG chart.

A `Report` holds what was measured; everything here is a pure function of it except `write`,
which puts the three files into the output folder.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from harness.bench.stats import ceiling_of, rate, ratio

CEILING = "ceiling"
BASELINE = "baseline"
LOADER = "loader"
RAW_CONSUME = "raw_consume"
NONE = "-"  # a figure not measured
PARSE_TO_PARQUET = "parse_to_parquet"


@dataclass(frozen=True)
class Throughput:
    """Rows through one stage or system, timed.

    Attributes:
        key: a stable name (``raw_consume``, ``baseline``, ``loader_local``...).
        label: what the table calls it.
        kind: ``ceiling``, ``baseline`` or ``loader``.
        rows: how many rows.
        seconds: from its start (the process start for a loader) to the last row (visible in
            Trino, for the baseline and the loader).
        first_seconds: from its start to the first row visible in Trino (None for a ceiling).
        first_rows: rows visible at that moment.
        detail: settings worth knowing.
    """

    key: str
    label: str
    kind: str
    rows: int
    seconds: float
    first_seconds: float | None = None
    first_rows: int = 0
    detail: str = ""

    @property
    def rows_per_s(self) -> float | None:
        """Rows per second from the start."""
        return rate(self.rows, self.seconds)

    @property
    def rows_per_s_from_first(self) -> float | None:
        """Rows per second from the first visible row to the last (what it sustains)."""
        if self.first_seconds is None:
            return None
        return rate(self.rows - self.first_rows, self.seconds - self.first_seconds)


@dataclass(frozen=True)
class Freshness:
    """Publish-to-visible latencies at one rate and trigger, and the data files left behind.

    Attributes:
        rate: messages per second published.
        trigger_s: the loader's trigger interval.
        seconds: how long it published.
        published: messages published.
        seen: messages seen in Trino before the end.
        p50, p95, p99, max: publish-to-visible latency, seconds.
        files: data files the setting added to the table (its ``$files``).
        files_per_hour: ``files`` scaled to an hour of the same load.
    """

    rate: int
    trigger_s: float
    seconds: float
    published: int
    seen: int
    p50: float | None
    p95: float | None
    p99: float | None
    max: float | None
    files: int
    files_per_hour: float | None


@dataclass
class Report:
    """Everything one run measured, with how it was run.

    Attributes:
        command: the command line that produced it.
        started: when it started (ISO 8601, UTC).
        load_start, load_end: the load average (1, 5, 15 min) at start and end.
        options: the run's options.
        throughputs: the backlog figures, in the order measured.
        freshness: the freshness settings, in the order measured.
        notes: what the reader should know (skipped parts, failures).
    """

    command: str
    started: str
    load_start: tuple[float, float, float]
    load_end: tuple[float, float, float] | None = None
    options: dict[str, Any] = field(default_factory=dict)
    throughputs: list[Throughput] = field(default_factory=list)
    freshness: list[Freshness] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def find(self, key: str) -> Throughput | None:
        return next((t for t in self.throughputs if t.key == key), None)

    @property
    def ceiling(self) -> float | None:
        """The slower of raw consume and parse-to-Parquet, rows/s."""
        stages = [self.find(RAW_CONSUME), self.find(PARSE_TO_PARQUET)]
        return ceiling_of(*(s.rows_per_s for s in stages if s is not None))

    def to_json(self) -> dict[str, Any]:
        """The report as plain data, with every derived rate and ratio spelled out."""
        base = self.find(BASELINE)
        doc: dict[str, Any] = {
            "command": self.command,
            "started": self.started,
            "load_average_start": list(self.load_start),
            "load_average_end": list(self.load_end) if self.load_end else None,
            "options": self.options,
            "ceiling_rows_per_s": self.ceiling,
            "throughput": [],
            "freshness": [asdict(f) for f in self.freshness],
            "notes": list(self.notes),
        }
        for t in self.throughputs:
            entry = asdict(t)
            entry.update(
                rows_per_s=t.rows_per_s,
                rows_per_s_from_first=t.rows_per_s_from_first,
                to_ceiling=ratio(t.rows_per_s, self.ceiling),
                to_baseline=ratio(t.rows_per_s, base.rows_per_s if base else None),
                from_first_to_ceiling=ratio(t.rows_per_s_from_first, self.ceiling),
                from_first_to_baseline=ratio(
                    t.rows_per_s_from_first, base.rows_per_s_from_first if base else None
                ),
            )
            doc["throughput"].append(entry)
        return doc

    def to_markdown(self) -> str:
        """The throughput and freshness tables, the load average and the command, in Markdown."""
        lines: list[str] = []
        if self.throughputs:
            lines += _throughput_table(self)
        if self.freshness:
            lines += ["", *_freshness_table(self.freshness)]
        load = f"load average (1/5/15 min) at start {_load(self.load_start)}"
        if self.load_end:
            load += f", at end {_load(self.load_end)}"
        lines += ["", f"{load}; started {self.started}.", "", f"`{self.command}`"]
        if self.notes:
            lines += ["", *(f"- {note}" for note in self.notes)]
        return "\n".join(lines).strip() + "\n"

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


def _load(avg: Sequence[float]) -> str:
    return "/".join(f"{x:.1f}" for x in avg)


def _num(value: float | None, digits: int = 0) -> str:
    return NONE if value is None else f"{value:,.{digits}f}"


def _times(value: float | None) -> str:
    return NONE if value is None else f"{value:.2f}x"


def _throughput_table(report: Report) -> list[str]:
    base = report.find(BASELINE)
    ceiling = report.ceiling
    lines = [
        "| measured | rows/s from start | x ceiling | x baseline "
        "| rows/s from first visible row | x ceiling | x baseline "
        "| first visible after | all visible after | settings |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|---|",
    ]
    for t in report.throughputs:
        from_first = t.rows_per_s_from_first
        first = _num(t.first_seconds, 1) + " s" if t.first_seconds is not None else NONE
        cells = [
            t.label,
            _num(t.rows_per_s),
            _times(ratio(t.rows_per_s, ceiling)),
            _times(ratio(t.rows_per_s, base.rows_per_s if base else None)),
            _num(from_first),
            _times(ratio(from_first, ceiling)),
            _times(ratio(from_first, base.rows_per_s_from_first if base else None)),
            first,
            f"{t.seconds:,.1f} s",
            t.detail,
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


def chart(report: Report, path: Path) -> None:
    """A PNG: rows/s of each system beside the ceiling; freshness percentiles per setting."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 5))
    shown = [t for t in report.throughputs if t.rows_per_s is not None]
    names = [t.label for t in shown]
    left.barh(names, [t.rows_per_s or 0 for t in shown], label="from start")
    left.barh(
        names,
        [t.rows_per_s_from_first or 0 for t in shown],
        height=0.3,
        label="from first visible row",
    )
    if report.ceiling:
        left.axvline(report.ceiling, color="black", linestyle="--", label="ceiling")
    left.invert_yaxis()
    left.set_xlabel("rows/s")
    left.set_title("Backlog throughput")
    left.legend(loc="lower right", fontsize="small")
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
