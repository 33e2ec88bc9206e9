"""What one `icefloe bench` run measures and how big it is.

The parts can be skipped one by one (``--skip cluster,freshness``) so that a quick run fits in a
few minutes; the sizes (``--rows``, ``--freshness-seconds``, ``--window-days 1``) shrink the
rest. ``--loader`` names the loaders measured on the backlog: icefloe's own always (the bounds'
ratios are its), and the Apache Iceberg Kafka Connect sink with ``kafka-connect``, which the
default (``auto``) adds when the sink is provisioned, at each of ``--sink-intervals`` (its
commit interval, seconds: 1, 5 and 10 by default), and Spark's own streaming sink when named
(``spark-sink``). ``--repeat N`` measures every backlog figure N
times and reports the median and the spread; the headline's systems (the loader in local mode and
the sink at each interval) are measured at least ``--headline-repeat`` times (3), so that the
headline's medians are medians. ``--cpu-quota 1,0.45`` runs the whole bench once per quota, each
CPU left to the machine for that share of its time (``harness.machine.Slowdown``; 1: the machine as
it is), each run's report in a folder of its own with the probe at its start and end, so that a
fast day can reproduce a slow one and the systems are compared within each quota's run.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from icefloe.harness.bench.stats import MEDIAN_RUNS
from icefloe.harness.loaders.kinds import KINDS
from icefloe.loader.config import (
    DEFAULT_FIRST_SLICE_RECORDS,
    DEFAULT_JIT,
    DEFAULT_MAX_OFFSETS_PER_TRIGGER,
    JVM_COMPILERS,
)

RAW = "raw"
ENGINE = "engine"
PARQUET = "parquet"
BASELINE = "baseline"
LOCAL = "local"
CLUSTER = "cluster"
FRESHNESS = "freshness"
PARTS: tuple[str, ...] = (RAW, ENGINE, PARQUET, BASELINE, LOCAL, CLUSTER, FRESHNESS)
BACKLOG_PARTS: tuple[str, ...] = (RAW, ENGINE, PARQUET, BASELINE, LOCAL, CLUSTER)

ICEFLOE = "icefloe"
KAFKA_CONNECT = "kafka-connect"
AUTO = "auto"
SHIPPED: tuple[str, ...] = tuple(n for n in KINDS if n not in (ICEFLOE, KAFKA_CONNECT))
"""The further kinds the kit registers (Spark's own streaming sink, the reference design's Flink
job: command descriptions), measured when named."""
LOADERS: tuple[str, ...] = (ICEFLOE, KAFKA_CONNECT, *SHIPPED)
"""What ``--loader`` names: icefloe's loader, the Kafka Connect sink, the shipped command
loaders; ``auto`` is the default."""

DEFAULT_ROWS = 1_000_000
DEFAULT_WINDOWS: tuple[float, ...] = (1.0, 30.0)
"""The two backlog shapes: event times within one day (one table partition), over 30 days."""
DEFAULT_RATES: tuple[int, ...] = (1000, 5000)
DEFAULT_TRIGGERS: tuple[float, ...] = (1.0, 5.0)
DEFAULT_SINK_INTERVALS: tuple[float, ...] = (1.0, 5.0, 10.0)
"""The Kafka Connect sink's commit intervals, seconds, each measured: the sink's own default (5
minutes) is tuned for few large files, and which short one finishes a backlog first depends on
the machine, so the headline takes the best of them."""


@dataclass(frozen=True)
class BenchOptions:
    """One run's settings.

    Attributes:
        rows: reference rows in each backlog.
        per_trigger: the loader's ``max_offsets_per_trigger`` on the backlog (the engine run's
            too): the loader's default unless set.
        baseline_every_s: the baseline appends what it consumed this often.
        freshness_seconds: how long each freshness setting publishes.
        rates: freshness publish rates, messages per second.
        triggers: freshness trigger intervals, seconds.
        window_days: the backlog shapes: for each, a backlog whose event times span this many
            days before now (freshness publishes with the first).
        jit: the local loaders' ``[spark] jit`` (the cluster's JVMs are spark-submit's).
        first_slice: the loaders' ``[kafka] first_slice_records`` (0: no slice).
        skip: parts not to run.
        out: where the JSON, Markdown and PNG go (None: under the run directory).
        loaders: ``("auto",)``, or the loaders named (``icefloe``, ``kafka-connect``,
            ``spark-sink``...).
        repeat: how many times each backlog figure is measured (the median is reported).
        headline_repeat: the fewest times the headline's systems (the loader in local mode, the
            sink at each interval) are measured.
        sink_intervals: the sink's commit intervals, seconds; each is measured as a system of
            its own.
        cpu_quotas: run the whole bench once at each of these shares of every CPU (in (0, 1]:
            ``harness.machine.Slowdown``); empty: once, the machine as it is.
    """

    rows: int = DEFAULT_ROWS
    per_trigger: int = DEFAULT_MAX_OFFSETS_PER_TRIGGER
    baseline_every_s: float = 5.0
    freshness_seconds: float = 60.0
    rates: tuple[int, ...] = DEFAULT_RATES
    triggers: tuple[float, ...] = DEFAULT_TRIGGERS
    window_days: tuple[float, ...] = DEFAULT_WINDOWS
    jit: str = DEFAULT_JIT
    first_slice: int = DEFAULT_FIRST_SLICE_RECORDS
    skip: frozenset[str] = field(default_factory=frozenset)
    out: Path | None = None
    loaders: tuple[str, ...] = (AUTO,)
    repeat: int = 1
    headline_repeat: int = MEDIAN_RUNS
    sink_intervals: tuple[float, ...] = DEFAULT_SINK_INTERVALS
    cpu_quotas: tuple[float, ...] = ()

    def runs(self, part: str) -> bool:
        """Whether ``part`` (one of ``PARTS``) is measured."""
        return part not in self.skip

    def repeats(self, *, headline: bool) -> int:
        """How many times a backlog figure is measured: ``repeat``, and for the headline's
        systems at least ``headline_repeat``."""
        return max(self.repeat, self.headline_repeat) if headline else self.repeat

    def kafka_connect(self, provisioned: bool) -> bool:
        """Whether the Kafka Connect sink is measured, given whether its jars are in the cache."""
        if KAFKA_CONNECT in self.loaders:
            return True
        return AUTO in self.loaders and provisioned

    def shipped(self) -> tuple[str, ...]:
        """The shipped command loaders measured (only those named: none by default)."""
        return tuple(name for name in SHIPPED if name in self.loaders)

    def tuning(self, *, local: bool = True) -> dict[str, Any]:
        """The loader settings this run sets, as sections: ``[spark] jit`` only for a loader
        that starts its own JVM (``local``; under spark-submit the JVMs are the submitter's)."""
        tuning: dict[str, Any] = {"kafka": {"first_slice_records": self.first_slice}}
        if local:
            tuning["spark"] = {"jit": self.jit}
        return tuning


def _whole(text: str, least: int) -> int:
    value = int(text.replace("_", "").replace(",", ""))
    if value < least:
        raise argparse.ArgumentTypeError(f"must be {'positive' if least else '0 or more'}: {text}")
    return value


def _positive_int(text: str) -> int:
    return _whole(text, 1)


def _count(text: str) -> int:
    return _whole(text, 0)


def _positive_float(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {text}")
    return value


def _quota(text: str) -> float:
    value = float(text)
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"a CPU quota is a share of each CPU, in (0, 1]: {text}")
    return value


def _skip(text: str) -> frozenset[str]:
    parts = frozenset(p.strip() for p in text.split(",") if p.strip())
    unknown = sorted(parts - set(PARTS))
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown part(s) {', '.join(unknown)}: choose from {', '.join(PARTS)}"
        )
    return parts


def _loaders(text: str) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    unknown = sorted(set(names) - {*LOADERS, AUTO})
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown loader(s) {', '.join(unknown) or text!r}: choose from "
            f"{', '.join((*LOADERS, AUTO))}"
        )
    return names


def _list(kind: Callable[[str], Any]) -> Callable[[str], tuple[Any, ...]]:
    def parse(text: str) -> tuple[Any, ...]:
        try:
            values = tuple(kind(v) for v in text.split(",") if v.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected numbers separated by commas: {text}"
            ) from None
        if not values or any(v <= 0 for v in values):
            raise argparse.ArgumentTypeError(f"expected positive numbers: {text}")
        return values

    return parse


def _intervals(text: str) -> tuple[float, ...]:
    values = _list(float)(text)
    if any(round(v * 1000) < 1 for v in values):
        raise argparse.ArgumentTypeError(f"a commit interval is at least 0.001 s: {text}")
    return tuple(dict.fromkeys(values))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The bench's options on ``parser`` (read back with ``from_args``)."""
    d = BenchOptions()
    parser.add_argument("--rows", type=_positive_int, default=d.rows, help=f"backlog ({d.rows:,})")
    parser.add_argument(
        "--per-trigger",
        type=_positive_int,
        default=d.per_trigger,
        help=f"the loader's max records per batch on the backlog ({d.per_trigger:,})",
    )
    parser.add_argument(
        "--baseline-every",
        type=_positive_float,
        default=d.baseline_every_s,
        help=f"the baseline appends every this many seconds ({d.baseline_every_s:g})",
    )
    parser.add_argument(
        "--freshness-seconds",
        type=_positive_float,
        default=d.freshness_seconds,
        help=f"how long each freshness setting publishes ({d.freshness_seconds:g})",
    )
    parser.add_argument(
        "--rates",
        type=_list(int),
        default=d.rates,
        help="freshness publish rates, msg/s, comma-separated (1000,5000)",
    )
    parser.add_argument(
        "--triggers",
        type=_list(float),
        default=d.triggers,
        help="freshness trigger intervals, seconds, comma-separated (1,5)",
    )
    parser.add_argument(
        "--window-days",
        type=_list(float),
        default=d.window_days,
        help=(
            "backlog shapes: event times span this many days before now, one backlog each, "
            "comma-separated (1,30)"
        ),
    )
    parser.add_argument(
        "--loader",
        type=_loaders,
        default=d.loaders,
        help=(
            "loaders measured on the backlog, comma-separated: icefloe (always measured), "
            "kafka-connect (the Iceberg Kafka Connect sink, provisioned if missing), "
            f"{', '.join(SHIPPED)} (the kit's further kinds, each at its own cadence); auto "
            "(default): kafka-connect too when it is provisioned"
        ),
    )
    parser.add_argument(
        "--repeat",
        type=_positive_int,
        default=d.repeat,
        help="measure every backlog figure this many times; report the median and spread (1)",
    )
    parser.add_argument(
        "--headline-repeat",
        type=_positive_int,
        default=d.headline_repeat,
        help=(
            "measure the headline's systems (the loader in local mode, the sink at each "
            f"interval) at least this many times ({d.headline_repeat}); the headline gives no "
            f"median of fewer than {MEDIAN_RUNS} runs"
        ),
    )
    parser.add_argument(
        "--sink-intervals",
        type=_intervals,
        default=d.sink_intervals,
        help=(
            "the Kafka Connect sink's commit intervals, seconds, comma-separated, each measured; "
            "the headline compares the loader with the best "
            f"({','.join(f'{i:g}' for i in d.sink_intervals)})"
        ),
    )
    parser.add_argument(
        "--jit",
        choices=sorted(JVM_COMPILERS),
        default=d.jit,
        help=f"the local loaders' [spark] jit ({d.jit})",
    )
    parser.add_argument(
        "--first-slice",
        type=_count,
        default=d.first_slice,
        help=f"the loaders' [kafka] first_slice_records ({d.first_slice:,}; 0: no slice)",
    )
    parser.add_argument(
        "--skip",
        type=_skip,
        default=frozenset(),
        help=f"parts not to run, comma-separated: {','.join(PARTS)}",
    )
    parser.add_argument(
        "--cpu-quota",
        type=_list(_quota),
        default=d.cpu_quotas,
        help=(
            "run the whole bench once at each of these shares of every CPU, comma-separated "
            "(1: the machine as it is; 0.45 made a probe of 0.75 s about 1.4 s): a real-time "
            "thread per CPU takes the rest (cgroup v1, root); each run's report in quota-F/"
        ),
    )
    parser.add_argument("--out", type=Path, default=None, help="output folder")


def from_args(args: argparse.Namespace) -> BenchOptions:
    """The options ``add_arguments`` parsed."""
    return BenchOptions(
        rows=args.rows,
        per_trigger=args.per_trigger,
        baseline_every_s=args.baseline_every,
        freshness_seconds=args.freshness_seconds,
        rates=tuple(args.rates),
        triggers=tuple(args.triggers),
        window_days=args.window_days,
        jit=args.jit,
        first_slice=args.first_slice,
        skip=args.skip,
        out=args.out,
        loaders=tuple(args.loader),
        repeat=args.repeat,
        headline_repeat=args.headline_repeat,
        sink_intervals=tuple(args.sink_intervals),
        cpu_quotas=tuple(args.cpu_quota),
    )


def parse(argv: Sequence[str]) -> BenchOptions:
    """``argv`` (the bench's own options) parsed: for tests and scripts."""
    parser = argparse.ArgumentParser(prog="icefloe bench")
    add_arguments(parser)
    return from_args(parser.parse_args(list(argv)))


def command_line(options: BenchOptions) -> str:
    """The `icefloe bench` command that runs ``options`` (the defaults left out)."""
    d = BenchOptions()
    words = ["icefloe", "bench"]
    pairs: list[tuple[str, object, object]] = [
        ("--rows", options.rows, d.rows),
        ("--per-trigger", options.per_trigger, d.per_trigger),
        ("--baseline-every", options.baseline_every_s, d.baseline_every_s),
        ("--freshness-seconds", options.freshness_seconds, d.freshness_seconds),
        ("--rates", ",".join(map(str, options.rates)), ",".join(map(str, d.rates))),
        ("--triggers", ",".join(f"{t:g}" for t in options.triggers), "1,5"),
        ("--window-days", ",".join(f"{w:g}" for w in options.window_days), "1,30"),
        ("--jit", options.jit, d.jit),
        ("--first-slice", options.first_slice, d.first_slice),
        ("--skip", ",".join(p for p in PARTS if p in options.skip), ""),
        ("--loader", ",".join(options.loaders), AUTO),
        ("--repeat", options.repeat, d.repeat),
        ("--headline-repeat", options.headline_repeat, d.headline_repeat),
        ("--sink-intervals", _joined(options.sink_intervals), _joined(d.sink_intervals)),
        ("--cpu-quota", _joined(options.cpu_quotas), _joined(d.cpu_quotas)),
    ]
    for flag, value, default in pairs:
        if value != default:
            words += [flag, f"{value:g}" if isinstance(value, float) else str(value)]
    if options.out is not None:
        words += ["--out", str(options.out)]
    return " ".join(words)


def _joined(values: Sequence[float]) -> str:
    return ",".join(f"{v:g}" for v in values)


def as_dict(options: BenchOptions) -> dict[str, Any]:
    """``options`` as plain data for the JSON report."""
    return {
        "rows": options.rows,
        "per_trigger": options.per_trigger,
        "baseline_every_s": options.baseline_every_s,
        "freshness_seconds": options.freshness_seconds,
        "rates": list(options.rates),
        "triggers": list(options.triggers),
        "window_days": list(options.window_days),
        "jit": options.jit,
        "first_slice": options.first_slice,
        "skip": [p for p in PARTS if p in options.skip],
        "loaders": list(options.loaders),
        "repeat": options.repeat,
        "headline_repeat": options.headline_repeat,
        "sink_intervals": list(options.sink_intervals),
        "cpu_quotas": list(options.cpu_quotas),
    }
