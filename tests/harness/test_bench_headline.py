"""`icefloe bench`'s headline: every row visible from process start, medians of at least three
runs, the loader beside the Kafka Connect sink at the sink's best commit interval, the caveat
under rows/s once rows appear, the JVMs, and every run with its load averages. Fake figures."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from icefloe.harness.bench import headline
from icefloe.harness.bench.figures import (
    ENGINE,
    KAFKA_CONNECT,
    LOADER,
    LOADER_LOCAL,
    PEER,
    Run,
    Throughput,
    median_run,
)
from icefloe.harness.bench.loaders import driver_jvm
from icefloe.harness.bench.options import BenchOptions, command_line, parse
from icefloe.harness.bench.peers import worker_jvm
from icefloe.harness.bench.report import Report
from icefloe.harness.bench.run import schedule
from icefloe.loader.config import SparkConfig

LOADER_JVM = "Java 21: -Xmx1g -XX:+UseG1GC -XX:TieredStopAtLevel=1"
SINK_JVM = "Java 21: -Xms256m -Xmx2g -XX:+UseG1GC"


def figure(
    key: str,
    seconds: Sequence[float],
    *,
    interval: float | None = None,
    shape: float = 1.0,
    first: float = 10.0,
    first_rows: int = 0,
    files: int = 4,
    cpu: Sequence[float] | None = None,
) -> Throughput:
    """The median of runs of 1,000 rows that took ``seconds`` each (and ``cpu`` CPU seconds
    of its processes, when given), as `run.py` makes it."""
    if key == KAFKA_CONNECT:
        label, kind, jvm = f"sink, {interval:g} s commits", PEER, SINK_JVM
    else:
        label, kind, jvm = "loader", LOADER, LOADER_JVM
    runs = [
        Throughput(
            key,
            label,
            kind,
            1000,
            s,
            first,
            first_rows,
            files=files,
            window_days=shape,
            commit_interval_s=interval,
            jvm=jvm,
            runs=(
                Run(
                    s,
                    first,
                    first_rows,
                    files,
                    f"2026-01-01T00:00:0{n}Z",
                    (1.0, 1.5, 2.0),
                    (float(n), 2.5, 3.0),
                    None if cpu is None else cpu[n],
                ),
            ),
            cpu_s=None if cpu is None else cpu[n],
        )
        for n, s in enumerate(seconds)
    ]
    return median_run(runs)


def sinks(shape: float = 1.0) -> list[Throughput]:
    """The sink at 1, 5 and 10 s: 5 s has the lowest median (27 s); 10 s has the fastest single
    run (20 s) and by far the highest rows/s once rows appear (its first commit holds most
    rows); 2 s beats them all but ran twice only."""
    return [
        figure(KAFKA_CONNECT, [30.0, 31.0, 29.0], interval=1, shape=shape),
        figure(KAFKA_CONNECT, [22.0, 21.0], interval=2, shape=shape),
        figure(KAFKA_CONNECT, [27.0, 28.0, 26.5], interval=5, shape=shape),
        figure(KAFKA_CONNECT, [38.0, 39.0, 20.0], interval=10, shape=shape, first_rows=900),
    ]


def report(loader_seconds: Sequence[float] = (28.0, 29.3, 27.7)) -> Report:
    made = Report("icefloe bench", "2026-01-01T00:00:00Z", (1.0, 2.0, 3.0))
    made.throughputs += [
        Throughput(ENGINE, "engine", "bound", 1000, 20.0, 15.0, 500, files=4),
        figure(LOADER_LOCAL, loader_seconds, files=12),
        *sinks(),
    ]
    return made


def test_the_best_interval_is_the_lowest_median_every_row_visible_time() -> None:
    best = headline.best_sink(sinks())
    assert best is not None and best.commit_interval_s == 5  # not 10 (one fast run), not 2
    assert best.seconds == 27.0
    tied = [figure(KAFKA_CONNECT, [25.0] * 3, interval=i) for i in (10, 1, 5)]
    assert headline.best_sink(tied) is tied[1]  # a tie goes to the shorter interval
    assert headline.best_sink(sinks()[1:2]) is None  # two runs: no median, no best
    assert headline.best_sink([]) is None


def test_a_figure_is_the_median_run_and_keeps_every_run_with_its_load() -> None:
    loader = figure(LOADER_LOCAL, [28.0, 29.3, 27.7])
    assert loader.seconds == 28.0 and loader.repetitions == 3
    assert [r.seconds for r in loader.runs] == [28.0, 29.3, 27.7]  # in the order run
    assert loader.seconds_spread == (27.7, 29.3)
    assert [r.load_end for r in loader.runs] == [(0, 2.5, 3.0), (1, 2.5, 3.0), (2, 2.5, 3.0)]
    assert figure(LOADER_LOCAL, [40.0, 10.0, 30.0, 20.0]).seconds == 20.0  # the lower middle
    single = Throughput(LOADER_LOCAL, "loader", LOADER, 1000, 5.0)
    assert single.repetitions == 1 and single.seconds_spread is None
    assert median_run([single]).runs == (Run(5.0),)  # a figure without runs becomes one


def test_the_headline_compares_the_loader_with_the_sinks_best_interval() -> None:
    text = report().to_markdown()
    machine, rest = text.split("\n\n", 1)  # the probe and quota first, then the headline
    assert machine.startswith("Probe (10,000,000 Python additions)")
    assert rest.startswith("**Every row visible, from process start**")
    assert (
        "- event times within 1 day: the loader beside the sink at its best commit interval, "
        "5 s (of 1, 2, 5 and 10 s, chosen by median every-row-visible time): "
        "every row visible after 28.0 s against 27.0 s (1.04x as long); "
        "rows/s once rows appear 0.94x the sink's; "
        "data files 12 against 4 (3.00x); not compared, fewer than 3 runs: 2 s."
    ) in text
    rows = [line for line in text.splitlines() if line.startswith("| event times within 1 day")]
    cells = [[c.strip() for c in row.strip("|").split("|")] for row in rows[:5]]
    assert cells[0][1:5] == ["loader", "28.0 s", "27.7-29.3 s", "3"]
    assert cells[2][1:5] == ["sink, 2 s commits", "no median (2 runs)", "21.0-22.0 s", "2"]
    assert cells[3][1:3] == ["sink, 5 s commits (best interval)", "27.0 s"]
    assert cells[4][1:3] == ["sink, 10 s commits", "38.0 s"]
    assert f"the loader `{LOADER_JVM}`; the sink `{SINK_JVM}`." in text
    alone = report()
    alone.throughputs = [t for t in alone.throughputs if t.key != KAFKA_CONNECT]
    assert f"\nJVM: the loader `{LOADER_JVM}`.\n" in alone.to_markdown()


def test_the_headline_gives_no_median_of_a_single_run_and_compares_nothing() -> None:
    once = report(loader_seconds=(28.0,))
    text = once.to_markdown()
    loader_row = next(line for line in text.splitlines() if "| loader |" in line)
    assert "| no median (1 run) | - | 1 |" in loader_row
    assert "28.0 s" not in loader_row.split("|")[3]
    assert (
        "- event times within 1 day: no comparison: a median needs 3 runs and these had fewer "
        "(loader: 1 run; sink, 2 s commits: 2 runs; `--headline-repeat 3`)."
    ) in text
    assert "best commit interval" not in text
    shape = once.to_json()["headline"]["shapes"]["1"]
    assert shape["loader"]["median_all_seconds"] is None
    assert shape["loader_to_best_sink"] is None
    assert shape["best_sink_interval_s"] == 5  # the sink's own medians still choose


def test_the_caveat_follows_every_table_with_rows_per_s_once_rows_appear() -> None:
    assert "favours a loader that commits often" in headline.CAVEAT
    lines = report().to_markdown().splitlines()
    ends = [i for i, line in enumerate(lines[:-1]) if line.startswith("| ") and not lines[i + 1]]
    assert len(ends) == 3  # the headline, the shape's table, every run (no such column)
    assert [lines[i + 2] for i in ends[:2]] == [headline.CAVEAT] * 2
    assert lines.count(headline.CAVEAT) == 2
    no_peer = Report("icefloe bench", "2026-01-01T00:00:00Z", (0.0, 0.0, 0.0))
    no_peer.throughputs.append(Throughput("raw_consume", "raw", "bound", 1000, 1.0))
    assert headline.CAVEAT not in no_peer.to_markdown()  # no such column to warn about


def test_the_json_carries_every_interval_its_runs_the_medians_and_the_best() -> None:
    doc = json.loads(json.dumps(report().to_json()))
    shape = doc["headline"]["shapes"]["1"]
    assert shape["best_sink_interval_s"] == 5
    assert shape["loader_to_best_sink"] == pytest.approx(28.0 / 27.0)
    assert [s["commit_interval_s"] for s in shape["sink"]] == [1, 2, 5, 10]
    assert [s["median_all_seconds"] for s in shape["sink"]] == [30.0, None, 27.0, 38.0]
    assert shape["sink"][3]["all_seconds"] == [38.0, 39.0, 20.0]
    assert doc["headline"]["caveat"] == headline.CAVEAT
    entry = next(t for t in doc["throughput"] if t["commit_interval_s"] == 10)
    assert [r["load_start"] for r in entry["runs"]] == [[1.0, 1.5, 2.0]] * 3
    assert entry["runs"][2]["load_end"] == [2, 2.5, 3.0] and entry["jvm"] == SINK_JVM


def test_every_run_is_a_row_with_its_load_averages() -> None:
    text = report().to_markdown()
    assert "**Every run**" in text
    assert (
        "| event times within 1 day | sink, 10 s commits | 3 of 3 | 2026-01-01T00:00:02Z "
        "| 20.0 s | 10.0 s | 4 | - | 1.0/1.5/2.0 | 2.0/2.5/3.0 |"
    ) in text


def test_the_cpu_of_each_systems_own_processes_is_compared_a_row_when_both_measured_it() -> None:
    made = report()
    assert "CPU of its own processes" not in made.to_markdown().split("**Every run**")[0]
    made.throughputs = [
        figure(LOADER_LOCAL, (28.0, 29.3, 27.7), files=12, cpu=(61.0, 65.0, 59.0)),
        *[t for t in sinks() if t.commit_interval_s != 5],
        figure(KAFKA_CONNECT, [27.0, 28.0, 26.5], interval=5, cpu=(40.0, 41.0, 39.0)),
    ]
    text = made.to_markdown()
    # the median of each system's runs, a row of 1,000
    assert "; CPU of its own processes 61,000 µs a row against 40,000 (1.52x);" in text
    assert (
        "| event times within 1 day | loader | 3 of 3 | 2026-01-01T00:00:02Z | 27.7 s | 10.0 s "
        "| 12 | 59.0 s, 59,000 µs a row | 1.0/1.5/2.0 | 2.0/2.5/3.0 |"
    ) in text
    entry = next(t for t in made.to_json()["throughput"] if t["key"] == LOADER_LOCAL)
    assert [r["cpu_s"] for r in entry["runs"]] == [61.0, 65.0, 59.0]


def test_the_sink_runs_at_each_interval_the_headline_three_times_by_default() -> None:
    options = parse([])
    assert options.sink_intervals == (1.0, 5.0, 10.0) and options.headline_repeat == 3
    assert options.repeats(headline=True) == 3 and options.repeats(headline=False) == 1
    assert parse(["--repeat", "5"]).repeats(headline=True) == 5
    once = parse(["--headline-repeat", "1", "--sink-intervals", "2,0.5,2"])
    assert once.repeats(headline=True) == 1 and once.sink_intervals == (2.0, 0.5)
    line = command_line(once)
    assert line == "icefloe bench --headline-repeat 1 --sink-intervals 2,0.5"
    assert parse(line.split()[2:]) == once
    assert command_line(BenchOptions()) == "icefloe bench"


@pytest.mark.parametrize(
    "argv",
    [["--sink-intervals", "0"], ["--sink-intervals", "0.0001"], ["--headline-repeat", "0"]],
)
def test_intervals_and_repeats_refuse_bad_values(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        parse(argv)
    assert "icefloe bench: error" in capsys.readouterr().err


def test_parts_take_turns_round_by_round_until_each_has_its_count() -> None:
    # the engine once, the loader and two sink intervals three times
    assert schedule([1, 3, 3, 3]) == [
        (0, 0), (1, 0), (2, 0), (3, 0),
        (1, 1), (2, 1), (3, 1),
        (1, 2), (2, 2), (3, 2),
    ]  # fmt: skip
    assert schedule([]) == [] and schedule([2]) == [(0, 0), (0, 1)]


def _jdk(home: Path, version: str) -> Path:
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "java").write_text("")
    (home / "release").write_text(f'JAVA_VERSION="{version}"\n')
    return home


def test_the_jvms_are_read_from_the_loaders_settings_and_the_workers_command(
    tmp_path: Path,
) -> None:
    home = _jdk(tmp_path / "jdk17", "17.0.12")
    archive = tmp_path / "loader.jsa"
    spark = SparkConfig(java_home=str(home), class_data=str(archive), driver_memory="2g")
    making = "Java 17: -Xmx2g -XX:+UseG1GC -XX:TieredStopAtLevel=1 -XX:ArchiveClassesAtExit"
    assert driver_jvm(spark) == f"{making} (makes loader.jsa)"
    archive.write_bytes(b"")
    tiered = SparkConfig(java_home=str(home), class_data=str(archive), jit="tiered", gc="parallel")
    assert (
        driver_jvm(tiered) == "Java 17: -Xmx1g -XX:+UseParallelGC -XX:SharedArchiveFile=loader.jsa"
    )
    java = str(_jdk(tmp_path / "jdk21", "21.0.4") / "bin" / "java")
    command = [java, "-Xms256m", "-Xmx2g", "-Dlog4j2.configurationFile=x", "-cp", "a.jar", "Main"]
    assert worker_jvm(command) == "Java 21: -Xms256m -Xmx2g"


def test_another_peer_is_a_headline_row_at_its_own_cadence_and_named_on_the_command_line() -> None:
    made = report()
    runs = [
        Throughput("spark_sink", "peer: spark-sink", PEER, 1000, s, s, 1000, files=2)
        for s in (31.0, 29.5, 30.1)
    ]
    made.throughputs.append(median_run(runs))
    text = made.to_markdown()
    assert "| event times within 1 day | peer: spark-sink | 30.1 s | 29.5-31.0 s | 3 |" in text
    options = parse(["--loader", "icefloe,spark-sink"])
    assert options.shipped() == ("spark-sink",) and not options.kafka_connect(provisioned=False)
    assert parse([]).shipped() == ()  # measured only when named
