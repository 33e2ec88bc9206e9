"""A finding's page: what the loader wrote, how often it came back, and the upstream threads
whose mechanism the evidence matches, cited as the cause only when every part is seen."""

from __future__ import annotations

from pathlib import Path

from icefloe.harness.conformance import findings, upstream
from icefloe.harness.conformance.findings import RunFacts
from tests.scenarios import recorded_runs

LOST_LINE = "t/0@12: not in the table, consumer group connect-x at offset 40 (read 10:00:05)"


def sink_run(**changes: object) -> RunFacts:
    """The Kafka Connect sink's 01 loss as its evidence reads: files handed over, the worker
    killed before any commit adding rows, the coordinator's group with no offset."""
    facts = {
        "run_dir": Path("reports/runs/x-01"),
        "scenario": "01_exactly_once_kill9",
        "seed": 7,
        "loader": "kafka-connect",
        "anomalies": {"exactly_once: lost": 1076},
        "examples": {"lost": (LOST_LINE,)},
        "processes": (
            {"files handed over": 6, "commits to no table": 0},
            {"files handed over": 4, "commits to no table": 8},
        ),
        "struck": (("kill_loader", "loader", 20.0), ("kill_loader", "loader", 31.0)),
        "commits": ((45.0, 120),),
        "evidence": {
            "control_topic": "connect-x-control",
            "control_end": {"0": 60},
            "control_groups": {"connect-x-coord": {"0": 58}, "cg-control-a": {"0": 41}},
        },
        # Read before the worker's first start again: files announced, no coordinator offset.
        "restarts": ((21.0, {"control_end": {"0": 14}, "control_groups": {}}),),
        "began": 0.0,
        "replay": "icefloe scenario run 01_exactly_once_kill9 --seed 7 --loader kafka-connect",
    }
    facts.update(changes)
    return RunFacts(**facts)  # type: ignore[arg-type]


def test_a_thread_matches_only_when_every_part_of_its_mechanism_is_seen() -> None:
    weighed = dict((t.ref, parts) for t, parts in upstream.weigh(sink_run()))
    parts = weighed["apache/iceberg#18006"]
    assert all(line is not None for _, line in parts), parts
    assert str(parts[3][1]) == (
        "before the worker's start again at 21.0 s, the control topic held 14 records and no "
        "*-coord group an offset on it"
    )
    # A zombie and a retention that this run did not show: #17551 matches in part only.
    zombie = weighed["apache/iceberg#17551"]
    assert [line is None for _, line in zombie] == [False, True, False, True]
    # No duplicates: the duplicate threads say nothing of this finding.
    assert "apache/iceberg#16282" not in weighed


def test_with_the_coordinators_group_committed_the_pr_is_not_cited_as_the_cause() -> None:
    committed = sink_run(
        restarts=((21.0, {"control_end": {"0": 14}, "control_groups": {"x-coord": {"0": 9}}}),)
    )
    page = findings.page(committed, [], upstream.weigh(committed))
    assert "apache/iceberg#18006" in page
    assert "It matches in part (3 of 4 parts seen): not cited as this finding's cause" in page
    assert "**not shown** by this run" in page
    # A commit adding rows before the first kill: the coordinator did not change first.
    early = sink_run(commits=((10.0, 50),))
    parts = dict((t.ref, p) for t, p in upstream.weigh(early))["apache/iceberg#18006"]
    assert parts[2][1] is None


def test_the_page_counts_the_runs_made_again_and_their_range() -> None:
    again = [
        sink_run(anomalies={"exactly_once: lost": 887}),
        sink_run(anomalies={"exactly_once: duplicated": 3}, examples={}),
    ]
    line = findings.reproductions(sink_run(), again)
    assert line == "2 of 3 runs with the same file and seed showed lost (lost 887-1,076)"
    page = findings.page(sink_run(), again, upstream.weigh(sink_run()))
    assert "files handed over 6" in page and "kill_loader at 20.0 s" in page
    assert page.index("### apache/iceberg#18006") < page.index("### apache/iceberg#17551")


def test_a_recorded_run_reads_back_as_its_finding(tmp_path: Path) -> None:
    run_dir = recorded_runs.unpack("01_exactly_once_kill9", "no_guard", tmp_path)
    facts = findings.read_run(run_dir)
    assert facts.loader == "icefloe" and facts.scenario == "01_exactly_once_kill9"
    assert "duplicated" in facts.classes()
    assert "--break no_guard" in facts.replay
    page = findings.page(facts, [], upstream.weigh(facts))
    assert "No upstream thread known to the kit has this mechanism." in page
    assert "its committed position at the end: snapshot" in page


def test_icefloe_conformance_finding_writes_the_page_of_runs_on_disk(tmp_path: Path) -> None:
    from icefloe.harness.cli.main import main

    run_dir = recorded_runs.unpack("01_exactly_once_kill9", "no_guard", tmp_path / "runs")
    assert main(["conformance", "--finding", str(run_dir), "--reports", str(tmp_path)]) == 0
    page = (tmp_path / "findings" / "01_exactly_once_kill9--icefloe.md").read_text()
    assert page.startswith("# icefloe on 01_exactly_once_kill9: duplicated")
