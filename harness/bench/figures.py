"""What the bench measures, as data: one run of a system on a backlog, a figure (the median of a
system's runs, each run kept), a freshness setting, and the kinds and keys that name them.

Every part of the bench returns these; `harness.bench.headline` and `harness.bench.report` read
them. Nothing here measures anything.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from icefloe.harness.bench.profile import Step
from icefloe.harness.bench.stats import median_low, rate

BOUND = "bound"
BASELINE = "baseline"
LOADER = "loader"
PEER = "peer"
RAW_CONSUME = "raw_consume"
ENGINE = "engine"
PARSE_TO_PARQUET = "parse_to_parquet"
KAFKA_CONNECT = "kafka_connect"
LOADER_LOCAL = "loader_local"
BOUND_KEYS = (RAW_CONSUME, ENGINE)
"""The two bounds every backlog figure is a ratio of: raw consume and the engine's own cost."""

LoadAverage = tuple[float, float, float]
"""The load average over 1, 5 and 15 minutes (``os.getloadavg()``)."""


@dataclass(frozen=True)
class Run:
    """One measurement of a system on a backlog, as it happened.

    Attributes:
        seconds: from its start (the process start for a loader) to every row visible.
        first_seconds: from its start to the first rows visible (None: it writes no table).
        first_rows: rows visible at that moment.
        files: data files it left (None: it writes none).
        started: when it started (ISO 8601, UTC); "" when not recorded.
        load_start: the load average as it started (None: not recorded).
        load_end: the load average as it ended (None: not recorded).
        cpu_s: CPU seconds its own processes used from its start to every row visible (None:
            not measured).
    """

    seconds: float
    first_seconds: float | None = None
    first_rows: int = 0
    files: int | None = None
    started: str = ""
    load_start: LoadAverage | None = None
    load_end: LoadAverage | None = None
    cpu_s: float | None = None

    @classmethod
    def of(
        cls,
        figure: Throughput,
        started: str = "",
        load_start: LoadAverage | None = None,
        load_end: LoadAverage | None = None,
    ) -> Run:
        """The run a single measurement ``figure`` is, with when and under what load it ran."""
        return cls(
            figure.seconds,
            figure.first_seconds,
            figure.first_rows,
            figure.files,
            started,
            load_start,
            load_end,
            figure.cpu_s,
        )


@dataclass(frozen=True)
class Throughput:
    """Rows through one stage or system on one backlog, timed (the median of its repetitions).

    Attributes:
        key: a stable name (``raw_consume``, ``engine``, ``loader_local``...); the sink's
            figures share ``kafka_connect`` and differ by ``commit_interval_s``.
        label: what the tables call it.
        kind: ``bound``, ``baseline``, ``loader`` or ``peer``.
        rows: how many rows.
        seconds: from its start (the process start for a loader) to the last row (visible in
            Trino, for everything that writes a table).
        first_seconds: from its start to the first row visible in Trino (None for raw consume
            and the Parquet baseline, which write no table).
        first_rows: rows visible at that moment.
        detail: settings worth knowing.
        files: data files it left (the table's, or the Parquet baseline's one); None: writes none.
        window_days: the backlog's shape: its event times span this many days.
        samples: rows/s from the start of every repetition (one when not repeated).
        samples_from_first: rows/s from the first visible row of every repetition.
        commit_interval_s: how often it commits, for a system the bench runs at several
            intervals (the sink); None otherwise.
        jvm: the Java and JVM flags it ran with ("" when not said).
        runs: every repetition, in the order run (empty for a single measurement not yet
            recorded as a run).
        steps: where its time went, for a loader whose log says so (``harness.bench.profile``):
            the steps of this run (of the median run, for a median).
        cpu_s: CPU seconds its own processes (a loader's Python and JVM, the sink's worker)
            used from its start to every row visible (``cores.lifetime_cpu_s``; None: not
            measured); the machine's other processes (Kafka, MinIO, the catalog, Trino) left
            out.
    """

    key: str
    label: str
    kind: str
    rows: int
    seconds: float
    first_seconds: float | None = None
    first_rows: int = 0
    detail: str = ""
    files: int | None = None
    window_days: float = 1.0
    samples: tuple[float, ...] = ()
    samples_from_first: tuple[float, ...] = ()
    commit_interval_s: float | None = None
    jvm: str = ""
    runs: tuple[Run, ...] = ()
    steps: tuple[Step, ...] = ()
    cpu_s: float | None = None

    @property
    def rows_per_s(self) -> float | None:
        """Rows per second from the start."""
        return rate(self.rows, self.seconds)

    @property
    def cpu_us_per_row(self) -> float | None:
        """CPU microseconds its own processes used a row: the median over its runs that measured
        it (None: none did)."""
        values = [r.cpu_s for r in self.runs if r.cpu_s is not None]
        if not values and self.cpu_s is not None:
            values = [self.cpu_s]
        return us_per_row(median_low(values), self.rows) if values else None

    @property
    def rows_per_s_from_first(self) -> float | None:
        """Rows per second from the first visible row to the last (what it sustains)."""
        if self.first_seconds is None:
            return None
        return rate(self.rows - self.first_rows, self.seconds - self.first_seconds)

    @property
    def spread(self) -> tuple[float, float] | None:
        """The lowest and highest rows/s from the start over its repetitions (None: one run)."""
        return (min(self.samples), max(self.samples)) if len(self.samples) > 1 else None

    @property
    def spread_from_first(self) -> tuple[float, float] | None:
        """The same, from the first visible row."""
        values = self.samples_from_first
        return (min(values), max(values)) if len(values) > 1 else None

    @property
    def repetitions(self) -> int:
        """How many runs the figure is the median of (1 for a single measurement)."""
        return len(self.runs) or 1

    @property
    def seconds_spread(self) -> tuple[float, float] | None:
        """The shortest and longest every-row-visible time over its runs (None: one run)."""
        if len(self.runs) < 2:
            return None
        values = [r.seconds for r in self.runs]
        return (min(values), max(values))


def us_per_row(cpu_s: float | None, rows: int) -> float | None:
    """CPU seconds spread over ``rows``, in microseconds a row (None: unknown, or no rows)."""
    if cpu_s is None or rows <= 0:
        return None
    return cpu_s / rows * 1e6


def median_run(runs: Sequence[Throughput]) -> Throughput:
    """One figure from repetitions of the same measure: the run whose all-visible time is the
    median (the lower one of an even count), with every run's rates as its samples and every
    run as its ``runs``.

    Raises:
        ValueError: no runs.
    """
    if not runs:
        raise ValueError("no runs")
    middle = median_low([t.seconds for t in runs])
    chosen = next(t for t in runs if t.seconds == middle)
    firsts = tuple(f for f in (t.rows_per_s_from_first for t in runs) if f is not None)
    return replace(
        chosen,
        samples=tuple(t.rows_per_s or 0.0 for t in runs),
        samples_from_first=firsts,
        runs=tuple(r for t in runs for r in (t.runs or (Run.of(t),))),
    )


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
        p99_by_window: the p99 of the messages published in each ``freshness.WINDOW_S`` of the
            publishing, in order: whether the tail is the loader's first seconds or all of it.
        batches: the loader's batches committed while it was published to (None: unknown).
        batch_median_s: their median time, as the loader logged it (None: no batch).
        cores: cores each process used while it was published to (``harness.bench.cores``):
            the loader, the stack's services (Trino answers the bench's polls), the bench
            itself, and the machine's total.
        poll_median_s, poll_p99_s: how long Trino took to answer the bench's polls, the median
            and the p99 (None: no poll); every latency includes one such answer.
        committed_p50, committed_p99: publish to main moved to a snapshot holding the message,
            from the table's own history (``freshness.committed_at``): no poll in it (None:
            unknown, the history did not hold every message seen).
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
    p99_by_window: tuple[float | None, ...] = ()
    batches: int | None = None
    batch_median_s: float | None = None
    cores: Mapping[str, float] = field(default_factory=dict)
    poll_median_s: float | None = None
    poll_p99_s: float | None = None
    committed_p50: float | None = None
    committed_p99: float | None = None


def shape_name(window_days: float) -> str:
    """A backlog shape in words: ``event times within 1 day``, ``event times over 30 days``."""
    if window_days <= 1:
        return f"event times within {window_days:g} day"
    return f"event times over {window_days:g} days"


def describe_jvm(feature: int | None, flags: Sequence[str]) -> str:
    """A ``Throughput.jvm``: ``Java 21: -Xmx1g -XX:+UseG1GC`` (the Java release when known)."""
    java = f"Java {feature}" if feature is not None else "Java"
    return f"{java}: {' '.join(flags)}" if flags else java
