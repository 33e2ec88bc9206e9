"""The headline of a bench run: every row visible, from process start, the loader beside the
Kafka Connect sink at the sink's best commit interval, and any other peer measured (Spark's own
streaming sink, ``--loader spark-sink``). Pure functions over a run's figures.

Why this figure leads: a user with a backlog waits for every row, from the moment the loader is
started; that time does not depend on when a system's commits fall. "Rows/s once rows appear"
starts its clock at a system's first visible commit, so a system that commits every 10 s, whose
first commit already holds a third of the backlog, is timed over a short stretch; it stays as a
secondary column with `CAVEAT` under it.

Why several intervals: how often the sink commits is the setting its users tune, and which
short interval finishes a backlog first depends on the machine. The sink runs at each
``--sink-intervals`` value as a system of its own, and the loader is compared with the best of
them per backlog shape, by median, naming which it was.

Why a floor on runs: on a shared machine one run of a system moves by a third; a headline
figure is the median of at least `MEDIAN_RUNS` runs, and a system with fewer is shown with its
count and never called a median or compared.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from icefloe.harness.bench.figures import KAFKA_CONNECT, LOADER_LOCAL, PEER, Throughput, shape_name
from icefloe.harness.bench.stats import MEDIAN_RUNS, ratio

CAVEAT = (
    "Rows/s once rows appear starts its clock at a system's first visible commit, so it favours "
    "a loader that commits often; the headline is every row visible, from process start."
)
HEADLINE_KEYS = (LOADER_LOCAL, KAFKA_CONNECT)
"""The systems the headline compares: the loader in local mode and the sink at each interval."""
_NAMES = {LOADER_LOCAL: "the loader", KAFKA_CONNECT: "the sink"}


def has_median(figure: Throughput) -> bool:
    """Whether ``figure`` is the median of enough runs to be a headline figure."""
    return figure.repetitions >= MEDIAN_RUNS


def best_sink(sinks: Sequence[Throughput]) -> Throughput | None:
    """The sink at its best commit interval: of ``sinks`` (one figure per interval, one backlog
    shape), the lowest median every-row-visible time among those that have a median; a tie goes
    to the shorter interval.

    Returns:
        That figure, or None when no interval has `MEDIAN_RUNS` runs.
    """
    medians = [t for t in sinks if has_median(t)]
    return min(medians, key=lambda t: (t.seconds, t.commit_interval_s or 0.0), default=None)


def shapes(figures: Sequence[Throughput]) -> list[float]:
    """The backlog shapes in which the headline's systems were measured, in order."""
    return list(dict.fromkeys(t.window_days for t in figures if _in_headline(t)))


def _in_headline(figure: Throughput) -> bool:
    return figure.key in HEADLINE_KEYS or figure.kind == PEER


def others_of(figures: Sequence[Throughput], shape: float) -> list[Throughput]:
    """The other peers' figures of a backlog shape (each at its own cadence), as measured."""
    return [
        t for t in figures
        if t.kind == PEER and t.key != KAFKA_CONNECT and t.window_days == shape
    ]  # fmt: skip


def loader_of(figures: Sequence[Throughput], shape: float) -> Throughput | None:
    """The loader's figure (local mode) of a backlog shape."""
    return next((t for t in figures if t.key == LOADER_LOCAL and t.window_days == shape), None)


def sinks_of(figures: Sequence[Throughput], shape: float) -> list[Throughput]:
    """The sink's figures of a backlog shape, one per commit interval, in the order measured."""
    return [t for t in figures if t.key == KAFKA_CONNECT and t.window_days == shape]


def table(figures: Sequence[Throughput]) -> list[str]:
    """The headline table: per shape, the loader, the sink at each interval (the best one
    marked) and the other peers, every row visible after (median and range of the runs), then
    the secondary figures; `CAVEAT` under it. Empty when none was measured."""
    lines = [
        "| backlog | system | every row visible after, median | shortest-longest | runs "
        "| first visible after | rows/s once rows appear | data files |",
        "|---|---|--:|--:|--:|--:|--:|--:|",
    ]
    for shape in shapes(figures):
        loader, sinks = loader_of(figures, shape), sinks_of(figures, shape)
        best = best_sink(sinks)
        for t in [*([loader] if loader else []), *sinks, *others_of(figures, shape)]:
            label = f"{t.label} (best interval)" if t is best else t.label
            spread = t.seconds_spread
            cells = [
                shape_name(shape),
                label,
                median_text(t),
                f"{spread[0]:.1f}-{spread[1]:.1f} s" if spread else "-",
                str(t.repetitions),
                "-" if t.first_seconds is None else f"{t.first_seconds:.1f} s",
                _rate(t),
                "-" if t.files is None else f"{t.files:,}",
            ]
            lines.append("| " + " | ".join(cells) + " |")
    return [*lines, "", CAVEAT] if len(lines) > 2 else []


def median_text(figure: Throughput) -> str:
    """Every row visible after, as the headline gives it: the median, or, with fewer than
    `MEDIAN_RUNS` runs, the count of runs and no figure."""
    if has_median(figure):
        return f"{figure.seconds:.1f} s"
    return f"no median ({runs(figure.repetitions)})"


def runs(count: int) -> str:
    """``1 run``, ``2 runs``."""
    return f"{count} run{'' if count == 1 else 's'}"


def comparison(figures: Sequence[Throughput], shape: float) -> str | None:
    """The loader beside the sink at its best interval on one shape, as a sentence: every row
    visible after (their medians and the ratio), then rows/s once rows appear and data files.
    With too few runs it says so and compares nothing. None when either system is missing."""
    loader, sinks = loader_of(figures, shape), sinks_of(figures, shape)
    if loader is None or not sinks:
        return None
    where = shape_name(shape)
    best = best_sink(sinks)
    if best is None or not has_median(loader):
        few = "; ".join(
            f"{t.label}: {runs(t.repetitions)}" for t in (loader, *sinks) if not has_median(t)
        )
        return (
            f"{where}: no comparison: a median needs {MEDIAN_RUNS} runs and these had fewer "
            f"({few}; `--headline-repeat {MEDIAN_RUNS}`)."
        )
    intervals = _in_words([_interval(t) for t in sinks])
    text = (
        f"{where}: the loader beside the sink at its best commit interval, {_interval(best)} s "
        f"(of {intervals} s, chosen by median every-row-visible time): every row visible after "
        f"{loader.seconds:.1f} s against {best.seconds:.1f} s "
        f"({_times(ratio(loader.seconds, best.seconds))} as long)"
    )
    pace = ratio(loader.rows_per_s_from_first, best.rows_per_s_from_first)
    if pace is not None:
        text += f"; rows/s once rows appear {_times(pace)} the sink's"
    if loader.files is not None and best.files:
        times = _times(ratio(loader.files, best.files))
        text += f"; data files {loader.files:,} against {best.files:,} ({times})"
    cpu = ratio(loader.cpu_us_per_row, best.cpu_us_per_row)
    if cpu is not None:
        text += (
            f"; CPU of its own processes {loader.cpu_us_per_row:,.0f} µs a row against "
            f"{best.cpu_us_per_row:,.0f} ({_times(cpu)})"
        )
    left_out = [_interval(t) for t in sinks if not has_median(t)]
    if left_out:
        text += f"; not compared, fewer than {MEDIAN_RUNS} runs: {_in_words(left_out)} s"
    return text + "."


def jvm_line(figures: Sequence[Throughput]) -> str | None:
    """Which Java and JVM flags each of the headline's systems ran with (None: not recorded).

    Each system keeps its own: the loader its ``[spark]`` settings, the sink Connect's launch
    scripts' flags; the line says so rather than making them alike.
    """
    found: dict[tuple[str, str], None] = {}
    for t in figures:
        if t.key in HEADLINE_KEYS and t.jvm:
            found.setdefault((t.key, t.jvm), None)
    if not found:
        return None
    each = "; ".join(f"{_NAMES[key]} `{jvm}`" for key, jvm in found)
    if len({key for key, _ in found}) == 1:
        return f"JVM: {each}."
    return f"JVMs, each system with its own flags (not made alike): {each}."


def lines(figures: Sequence[Throughput]) -> list[str]:
    """The headline section in Markdown: its title, the table, the caveat, the comparisons and
    the JVM line. Empty when neither system was measured."""
    rows = table(figures)
    if not rows:
        return []
    sink = (
        "; the sink at each commit interval" if any(t.key == KAFKA_CONNECT for t in figures) else ""
    )
    title = (
        f"**Every row visible, from process start** (medians of {MEDIAN_RUNS} or more runs{sink})"
    )
    said = [c for c in (comparison(figures, s) for s in shapes(figures)) if c]
    jvm = jvm_line(figures)
    return [
        title,
        "",
        *rows,
        *(["", *(f"- {c}" for c in said)] if said else []),
        *(["", jvm] if jvm else []),
    ]


def as_json(figures: Sequence[Throughput]) -> dict[str, Any]:
    """The headline as plain data: per shape, each system's runs and median (None with fewer
    than `MEDIAN_RUNS` runs), the sink's best interval and the loader's ratio to it."""
    doc: dict[str, Any] = {
        "measure": "every row visible in Trino, from the process start, seconds",
        "median_runs": MEDIAN_RUNS,
        "caveat": CAVEAT,
        "jvm": {t.label: t.jvm for t in figures if t.key in HEADLINE_KEYS and t.jvm},
        "shapes": {},
    }
    for shape in shapes(figures):
        loader, sinks = loader_of(figures, shape), sinks_of(figures, shape)
        best = best_sink(sinks)
        against = None
        if best is not None and loader is not None and has_median(loader):
            against = ratio(loader.seconds, best.seconds)
        doc["shapes"][f"{shape:g}"] = {
            "loader": _entry(loader) if loader else None,
            "sink": [_entry(t) for t in sinks],
            "best_sink_interval_s": best.commit_interval_s if best else None,
            "loader_to_best_sink": against,
            "comparison": comparison(figures, shape),
        }
    return doc


def _entry(figure: Throughput) -> dict[str, Any]:
    return {
        "label": figure.label,
        "commit_interval_s": figure.commit_interval_s,
        "runs": figure.repetitions,
        "all_seconds": [r.seconds for r in figure.runs] or [figure.seconds],
        "median_all_seconds": figure.seconds if has_median(figure) else None,
    }


def _rate(figure: Throughput) -> str:
    value, spread = figure.rows_per_s_from_first, figure.spread_from_first
    if value is None:
        return "-"
    text = f"{value:,.0f}"
    return f"{text} ({spread[0]:,.0f}-{spread[1]:,.0f})" if spread else text


def _interval(figure: Throughput) -> str:
    return "?" if figure.commit_interval_s is None else f"{figure.commit_interval_s:g}"


def _in_words(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def _times(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"
