"""`icefloe bench`'s pure parts: percentiles, ratios, options, and the JSON/Markdown/PNG report."""

from __future__ import annotations

import datetime
import json
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from icefloe.harness.bench.cores import MACHINE, CoreMeter, lifetime_cpu_s, tree_cpu_s
from icefloe.harness.bench.figures import (
    BASELINE,
    BOUND,
    ENGINE,
    KAFKA_CONNECT,
    LOADER,
    PARSE_TO_PARQUET,
    PEER,
    RAW_CONSUME,
    Freshness,
    Throughput,
    median_run,
)
from icefloe.harness.bench.freshness import (
    batch_times,
    committed_at,
    latencies,
    p99_by_window,
    summarize,
)
from icefloe.harness.bench.options import BenchOptions, as_dict, command_line, parse
from icefloe.harness.bench.report import Report
from icefloe.harness.bench.stats import median_low, per_hour, rate, ratio
from icefloe.harness.scenarios.checks.facts.numbers import percentile
from icefloe.harness.waiting import poll


def test_percentile_is_an_observed_value_by_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]  # 1..100
    assert percentile(values, 50) == 50
    assert percentile(values, 99) == 99
    assert percentile(values, 100) == 100
    assert percentile(values, 0) == 1
    assert percentile([3.0, 1.0, 2.0], 50) == 2  # order does not matter
    assert percentile([7.0], 99) == 7


def test_percentile_refuses_nothing_and_out_of_range() -> None:
    with pytest.raises(ValueError, match="no values"):
        percentile([], 50)
    with pytest.raises(ValueError, match="outside"):
        percentile([1.0], 101)


def test_rates_ratios_and_the_median() -> None:
    assert rate(100, 4) == 25
    assert rate(100, 0) is None
    assert ratio(50, 100) == 0.5
    assert ratio(None, 100) is None
    assert ratio(50, None) is None
    assert ratio(50, 0) is None
    assert median_low([3.0, 1.0, 2.0]) == 2.0
    assert median_low([4.0, 1.0, 3.0, 2.0]) == 2.0  # an observed value, the lower middle
    with pytest.raises(ValueError, match="no values"):
        median_low([])
    assert per_hour(10, 60) == 600
    assert per_hour(10, 0) is None


def test_options_parse_with_defaults_and_skips() -> None:
    assert parse([]) == BenchOptions()
    options = parse(
        ["--rows", "20_000", "--freshness-seconds", "10", "--skip", "cluster,freshness"]
    )
    assert options.rows == 20_000
    assert options.freshness_seconds == 10
    assert not options.runs("cluster") and not options.runs("freshness")
    assert options.runs("raw") and options.runs("engine")
    assert options.window_days == (1.0, 30.0) and options.repeat == 1
    assert parse(["--window-days", "30"]).window_days == (30.0,)
    assert parse(["--repeat", "3"]).repeat == 3


def test_the_sink_is_measured_when_asked_or_by_default_when_provisioned() -> None:
    auto = parse([])
    assert auto.kafka_connect(provisioned=True) and not auto.kafka_connect(provisioned=False)
    asked = parse(["--loader", "kafka-connect"])
    assert asked.kafka_connect(provisioned=False)
    assert not parse(["--loader", "icefloe"]).kafka_connect(provisioned=True)
    assert parse(["--rates", "500,2000", "--triggers", "0.5,2"]).rates == (500, 2000)
    assert parse(["--triggers", "0.5,2"]).triggers == (0.5, 2.0)


@pytest.mark.parametrize(
    "argv",
    [
        ["--skip", "cluster,nope"],
        ["--rows", "0"],
        ["--rates", "a,b"],
        ["--triggers", "-1"],
        ["--jit", "c2"],
        ["--first-slice", "-1"],
        ["--loader", "no-such-loader"],
        ["--repeat", "0"],
        ["--window-days", "0"],
        ["--cpu-quota", "1.5"],
        ["--cpu-quota", "0"],
    ],
)
def test_options_refuse_bad_values(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse(argv)
    assert "icefloe bench: error" in capsys.readouterr().err


def test_the_command_line_runs_the_same_options_again() -> None:
    assert command_line(BenchOptions()) == "icefloe bench"
    argv = ["--rows", "500000", "--skip", "freshness,cluster", "--triggers", "1", "--out", "x"]
    options = parse(argv)
    line = command_line(options)
    assert line == "icefloe bench --rows 500000 --triggers 1 --skip cluster,freshness --out x"
    assert parse(line.split()[2:]) == options
    assert as_dict(options)["skip"] == ["cluster", "freshness"]
    tiered = parse(["--jit", "tiered", "--skip", "cluster"])
    assert command_line(tiered) == "icefloe bench --jit tiered --skip cluster"
    assert parse(command_line(tiered).split()[2:]) == tiered
    unsliced = parse(["--first-slice", "0"])
    assert command_line(unsliced) == "icefloe bench --first-slice 0"
    assert as_dict(unsliced)["first_slice"] == 0
    peers = parse(["--loader", "kafka-connect", "--repeat", "3", "--window-days", "30"])
    assert command_line(peers) == "icefloe bench --window-days 30 --loader kafka-connect --repeat 3"
    assert parse(command_line(peers).split()[2:]) == peers
    slowed = parse(["--cpu-quota", "1,0.45"])
    assert slowed.cpu_quotas == (1.0, 0.45)
    assert command_line(slowed) == "icefloe bench --cpu-quota 1,0.45"
    assert parse(command_line(slowed).split()[2:]) == slowed
    assert as_dict(slowed)["cpu_quotas"] == [1.0, 0.45]


def test_the_loaders_get_the_runs_settings_the_cluster_but_its_jit() -> None:
    options = parse(["--jit", "tiered", "--first-slice", "5000"])
    assert options.tuning() == {
        "spark": {"jit": "tiered"},
        "kafka": {"first_slice_records": 5000},
    }
    assert options.tuning(local=False) == {"kafka": {"first_slice_records": 5000}}


def test_freshness_figures_from_publish_and_seen_times() -> None:
    sent = [0.0, 1.0, 2.0, 3.0]
    seen_at = {0: 1.5, 1: 1.5, 2: 4.0}  # message 3 never seen
    assert latencies(sent, seen_at) == [1.5, 0.5, 2.0]
    figure = summarize(1000, 1.0, 60.0, sent, seen_at, files=30)
    assert (figure.published, figure.seen) == (4, 3)
    assert (figure.p50, figure.p99, figure.max) == (1.5, 2.0, 2.0)
    assert figure.files_per_hour == 1800
    empty = summarize(1000, 1.0, 60.0, sent, {}, files=0)
    assert empty.p99 is None and empty.seen == 0


def test_freshness_p99_by_window_batches_and_cores() -> None:
    sent = [0.0, 5.0, 10.0, 25.0]
    seen_at = {0: 3.0, 1: 6.0, 3: 26.5}  # message 2 never seen
    assert p99_by_window(sent, seen_at, 10.0) == (3.0, None, 1.5)
    answers = [0.3, 0.2, 0.25, 0.9]  # Trino's answer to each poll
    figure = summarize(1000, 1.0, 30.0, sent, seen_at, 3, [0.9, 0.5, 0.7], {"trino": 0.75}, answers)
    assert figure.p99_by_window == (3.0, None, 1.5)
    assert (figure.batches, figure.batch_median_s) == (3, 0.7)
    assert figure.cores == {"trino": 0.75}
    assert (figure.poll_median_s, figure.poll_p99_s) == (0.25, 0.9)
    unknown = summarize(1000, 1.0, 30.0, sent, seen_at, 3)
    assert (unknown.batches, unknown.batch_median_s, unknown.cores) == (None, None, {})
    assert unknown.poll_median_s is None and unknown.poll_p99_s is None
    assert unknown.committed_p50 is None and unknown.committed_p99 is None
    assert p99_by_window([], {}) == ()


def test_freshness_from_the_tables_history_is_unknown_unless_it_holds_every_message_seen() -> None:
    sent = [0.0, 1.0, 2.0]
    seen_at = {0: 1.5, 1: 2.5, 2: 3.5}
    committed = {0: 1.0, 1: 1.2, 2: 2.75}
    figure = summarize(1000, 1.0, 3.0, sent, seen_at, 1, committed=committed)
    assert (figure.committed_p50, figure.committed_p99) == (percentile([1.0, 0.2, 0.75], 50), 1.0)
    missing = summarize(1000, 1.0, 3.0, sent, seen_at, 1, committed={0: 1.0, 1: 1.2})
    assert missing.committed_p50 is None and missing.committed_p99 is None


class _History:
    """A stack whose Trino answers the table's history and max(integer) at each snapshot."""

    def __init__(self, snapshots: list[tuple[int, datetime.datetime, int | None]]) -> None:
        self.snapshots = snapshots
        self.asked: list[str] = []

    def query(self, statement: str) -> list[tuple[object, ...]]:
        self.asked.append(statement)
        if '"t$history"' in statement:
            return [(sid, made) for sid, made, _ in self.snapshots]
        (top,) = [top for sid, _, top in self.snapshots if statement.endswith(f"OF {sid}")]
        return [(top,)]


def test_committed_at_gives_each_number_the_moment_main_first_held_it() -> None:
    base = datetime.datetime(2026, 11, 30, 5, 0, 0, tzinfo=datetime.UTC)
    at = [base + datetime.timedelta(seconds=s) for s in (0, 1.5, 2.25, 3.0)]
    # the warm-up row (-1) first, then a snapshot that added nothing visible (maintenance)
    stack = _History([(11, at[0], -1), (12, at[1], 2), (13, at[2], 2), (14, at[3], 4)])
    got = committed_at(stack, "lake.s.t")
    assert sorted(got) == [0, 1, 2, 3, 4]
    assert got[0] == got[1] == got[2] and got[3] == got[4]
    assert got[3] - got[0] == pytest.approx(1.5, abs=1e-3)  # the history's own spacing
    assert abs(got[0] - (time.monotonic() - (time.time() - at[1].timestamp()))) < 1.0
    assert "is_current_ancestor" in stack.asked[0]
    assert committed_at(_History([]), "lake.s.t") == {}


def test_batch_times_are_the_loaders_lines_after_the_window_began() -> None:
    line = (
        "2026-01-01 00:00:{s:02d},000 INFO icefloe.loader: batch {b}: committed 10 rows, "
        "0 dead letters in one pass (table state 0.01 s, decode, write and publish 0.50 s, "
        "total {t} s)"
    )
    lines = [(5, 0, "2.00"), (20, 1, "0.60"), (21, 2, "0.40")]
    log = "\n".join([*(line.format(s=s, b=b, t=t) for s, b, t in lines), "noise"])
    began = datetime.datetime(2026, 1, 1, 0, 0, 10).timestamp()
    assert batch_times(log, began) == pytest.approx([0.6, 0.4])


def test_a_core_meter_counts_a_process_tree_and_leaves_out_one_that_changed() -> None:
    own = psutil.Process()
    meter = CoreMeter({"me": lambda: own, "gone": lambda: None}, own=frozenset({"me"}))
    began = time.monotonic()
    meter.start()
    deadline = time.process_time() + 0.2
    while time.process_time() < deadline:  # burn 0.2 s of CPU
        pass
    cores = meter.cores()
    wall = time.monotonic() - began  # a little longer than the meter's window
    # Cores are CPU seconds over wall seconds: however loaded the machine (the burn then takes
    # longer), they give back the 0.2 s burned.
    assert 0.18 <= cores["me"] * wall <= 0.4 and cores["me"] <= 1.5
    assert "gone" not in cores and cores[MACHINE] >= cores["me"] * 0.9
    with pytest.raises(RuntimeError):
        CoreMeter({}).cores()
    assert tree_cpu_s(None) is None


def test_a_runs_cpu_counts_the_children_that_ended_and_were_waited_for() -> None:
    burn = "import time\nend = time.process_time() + 0.3\nwhile time.process_time() < end: pass"
    # A shell that waits for a child burning 0.3 s of CPU, then sleeps: the child is gone by
    # the reading, as Spark's launcher is before the loader's JVM runs.
    shell = subprocess.Popen(["sh", "-c", f'"{sys.executable}" -c "{burn}"; sleep 30'])

    def sleeping() -> bool:
        return [c.name() for c in psutil.Process(shell.pid).children()] == ["sleep"]

    try:
        assert poll(sleeping, timeout_s=30, every_s=0.05)
        lifetime = lifetime_cpu_s(shell.pid)
        live = tree_cpu_s(psutil.Process(shell.pid))
    finally:
        shell.kill()
        shell.wait()
    assert lifetime is not None and live is not None
    assert lifetime >= 0.25 > live
    assert lifetime_cpu_s(None) is None and lifetime_cpu_s(shell.pid) is None


def _report() -> Report:
    report = Report(
        command="icefloe bench --rows 1000",
        started="2026-01-01T00:00:00Z",
        load_start=(1.0, 2.0, 3.0),
        load_end=(4.0, 5.0, 6.0),
        commit="abc1234",
    )
    report.throughputs += [
        Throughput(RAW_CONSUME, "raw consume", BOUND, 1000, 0.01),  # 100,000 rows/s
        Throughput(ENGINE, "engine", BOUND, 1000, 0.05, 0.04, 500, files=4),  # 20,000; 50,000
        Throughput(PARSE_TO_PARQUET, "parse", BASELINE, 1000, 0.5, files=1),  # 2,000 rows/s
        Throughput(BASELINE, "baseline", BASELINE, 1000, 0.2, 0.1, 500, files=9),  # 5,000
        Throughput("loader_local", "loader", LOADER, 1000, 0.1, 0.05, 0, files=8),  # 10k; 20k
        Throughput(KAFKA_CONNECT, "sink", PEER, 1000, 0.2, 0.15, 500, files=4),  # 5k; 10k
    ]
    report.freshness.append(
        Freshness(
            1000,
            1.0,
            60.0,
            60_000,
            60_000,
            1.2,
            2.5,
            3.25,
            4.0,
            61,
            3660.0,
            p99_by_window=(3.5, None, 1.9),
            batches=58,
            batch_median_s=0.82,
            cores={"loader": 0.9, "trino": 0.75, MACHINE: 1.95},
            poll_median_s=0.27,
            poll_p99_s=0.61,
            committed_p50=0.9,
            committed_p99=1.45,
        )
    )
    report.notes.append("skipped: cluster")
    return report


def test_the_json_spells_out_every_rate_and_the_ratio_to_each_bound() -> None:
    doc = _report().to_json()
    assert doc["bounds_rows_per_s"] == {
        "1": {"raw_consume": pytest.approx(100_000), "engine": pytest.approx(20_000)}
    }
    assert doc["commit"] == "abc1234"
    loader = next(t for t in doc["throughput"] if t["key"] == "loader_local")
    assert loader["rows_per_s"] == pytest.approx(10_000)
    assert loader["rows_per_s_from_first"] == pytest.approx(20_000)
    assert loader["to_raw_consume"] == pytest.approx(0.1)
    assert loader["to_engine"] == pytest.approx(0.5)
    assert loader["from_first_to_engine"] == pytest.approx(0.4)
    assert loader["files"] == 8 and loader["spread"] is None
    assert doc["load_average_end"] == [4.0, 5.0, 6.0]
    assert doc["freshness"][0]["p99"] == 3.25
    json.dumps(doc)  # plain data


def test_the_markdown_tables_carry_figures_ratios_files_load_commit_and_command() -> None:
    text = _report().to_markdown()
    assert "ceiling" not in text
    loader_row = next(line for line in text.splitlines() if line.startswith("| loader |"))
    cells = [c.strip() for c in loader_row.strip("|").split("|")]
    assert cells[:9] == [
        "loader",
        "10,000",
        "0.10x",
        "0.50x",
        "20,000",
        "0.40x",
        "0.1 s",
        "0.1 s",
        "8",
    ]
    assert "| raw consume | 100,000 | 1.00x | 5.00x | - | - | - | 0.0 s | - |" in text
    assert "**event times within 1 day**" in text
    # one run each: the headline names them and compares nothing (test_bench_headline.py)
    assert "no comparison: a median needs 3 runs and these had fewer (loader: 1 run;" in text
    assert "| 1,000 msg/s | 1 s | 1.20 s | 2.50 s | 3.25 s | 4.00 s | 60,000 / 60,000 |" in text
    assert (
        "- 1,000 msg/s, 1 s trigger: p99 by 10 s of publishing 3.50, -, 1.90 s; "
        "the loader's batches meanwhile 58, 0.82 s at the median; "
        "cores used meanwhile: loader 0.90, trino (answering the bench's polls) 0.75; "
        "the machine, every process, 1.95; "
        "Trino answered the polls in 0.27 s at the median, 0.61 s at p99 (in every latency); "
        "the table's own history, no poll in it: main held a message 0.90 s after its publish "
        "at the median, 1.45 s at p99"
    ) in text
    assert "at start 1.0/2.0/3.0, at end 4.0/5.0/6.0" in text
    assert text.startswith("Probe (10,000,000 Python additions): -; the machine as it was.")
    assert "at commit abc1234" in text
    assert "`icefloe bench --rows 1000`" in text
    assert "- skipped: cluster" in text


def test_a_bound_a_loader_beat_is_said_to_be_no_bound() -> None:
    report = _report()
    report.throughputs[1] = Throughput(ENGINE, "engine", BOUND, 1000, 0.2)  # 5,000 rows/s
    (beaten,) = report.slower_bounds()
    assert beaten.startswith("event times within 1 day: loader (10,000 rows/s) beat engine")
    assert f"- {beaten}" in report.to_markdown()
    assert _report().slower_bounds() == []


def test_repetitions_give_the_median_run_and_the_spread() -> None:
    runs = [
        Throughput("loader_local", "loader", LOADER, 1000, s, s / 2, 0, files=f)
        for s, f in ((0.1, 5), (0.4, 7), (0.2, 6))
    ]
    figure = median_run(runs)
    assert figure.seconds == 0.2 and figure.files == 6
    assert figure.rows_per_s == pytest.approx(5000)
    assert figure.spread == (pytest.approx(2500), pytest.approx(10_000))
    assert figure.spread_from_first == (pytest.approx(5000), pytest.approx(20_000))
    report = Report("icefloe bench --repeat 3", "2026-01-01T00:00:00Z", (0.0, 0.0, 0.0))
    report.throughputs.append(figure)
    assert "| loader | 5,000 (2,500-10,000) |" in report.to_markdown()
    assert median_run(runs[:1]).spread is None
    with pytest.raises(ValueError):
        median_run([])


def test_write_puts_json_markdown_and_a_png_in_the_folder(tmp_path: Path) -> None:
    paths = _report().write(tmp_path / "out")
    assert json.loads(paths["json"].read_text())["command"] == "icefloe bench --rows 1000"
    assert paths["md"].read_text() == _report().to_markdown()
    assert paths["png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_icefloe_bench_is_a_command_of_the_cli() -> None:
    from icefloe.harness.cli.main import build_parser

    args = build_parser().parse_args(["bench", "--rows", "5000", "--skip", "cluster"])
    assert args.rows == 5000 and args.skip == frozenset({"cluster"})
    assert args.func.__module__ == "icefloe.harness.cli.bench"


def test_the_probe_and_the_quota_head_the_report() -> None:
    report = _report()
    report.probe_start_s, report.probe_end_s, report.cpu_quota = 1.48, 1.52, 0.45
    assert report.to_markdown().startswith(
        "Probe (10,000,000 Python additions): 1.48 s at the start and 1.52 s at the end; "
        "CPU quota 0.45 (each CPU left for 45% of its time, `harness/machine.py`)."
    )
    doc = report.to_json()
    assert (doc["probe_start_s"], doc["probe_end_s"], doc["cpu_quota"]) == (1.48, 1.52, 0.45)


def test_each_quota_runs_the_whole_bench_slowed_in_a_folder_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from icefloe.harness.bench import run as bench_run

    entered: list[float] = []

    class Slowed:
        def __init__(self, fraction: float) -> None:
            self.fraction = fraction

        def __enter__(self) -> Slowed:
            entered.append(self.fraction)
            return self

        def __exit__(self, *_exc: object) -> None:
            pass

        def describe(self) -> str:
            return f"quota {self.fraction}"

    ran: list[tuple[Path | None, float | None, list[float]]] = []

    def fake_run(stack: object, options: BenchOptions) -> object:
        assert len(options.cpu_quotas) <= 1  # its command: its quota alone
        cpu_quota = options.cpu_quotas[0] if options.cpu_quotas else None
        ran.append((options.out, cpu_quota, list(entered)))
        return _report(), options.out

    monkeypatch.setattr(bench_run, "Slowdown", Slowed)
    monkeypatch.setattr(bench_run, "run", fake_run)
    options = parse(["--cpu-quota", "1,0.45", "--out", str(tmp_path)])
    done = bench_run.run_each_quota(object(), options)
    assert len(done) == 2
    # Asked first whether the machine can be slowed at all, then each quota in turn.
    assert ran == [
        (tmp_path / "quota-1", 1.0, [0.45, 1.0]),
        (tmp_path / "quota-0.45", 0.45, [0.45, 1.0, 0.45]),
    ]
    # One quota: its report in the run's folder itself.
    ran.clear()
    entered.clear()
    bench_run.run_each_quota(object(), parse(["--cpu-quota", "0.45", "--out", str(tmp_path)]))
    assert ran == [(tmp_path, 0.45, [0.45, 0.45])]
    # No quota: one run, the machine as it is, nothing slowed.
    ran.clear()
    entered.clear()
    assert len(bench_run.run_each_quota(object(), parse(["--out", str(tmp_path)]))) == 1
    assert ran == [(tmp_path, None, [])]
