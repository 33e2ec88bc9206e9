"""The reference design's Flink job as a loader kind, without a stack or Flink: its description
read as the kit reads it, the checkpoint a start restores from, the statements it runs (the
table's own columns, no credential), and its runtime provisioned only when a description asks
for it."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any

import pytest

from icefloe.harness.bench.options import SHIPPED, parse
from icefloe.harness.history import History
from icefloe.harness.loaders import command
from icefloe.harness.loaders.base import Capability, LoaderTarget
from icefloe.harness.loaders.flink import job
from icefloe.harness.loaders.flink.job import ZONED, newest_checkpoint, statements
from icefloe.harness.loaders.kinds import NAMES, resolve
from icefloe.harness.observer import GROUP, observer_of
from icefloe.harness.provision import versions
from tests.harness.test_neutral_verdicts import TOPIC, observer_event


def _checkpoint(folder: Path, job: str, n: int, complete: bool = True) -> Path:
    chk = folder / job / f"chk-{n}"
    chk.mkdir(parents=True)
    if complete:
        (chk / "_metadata").write_bytes(b"\0")
    return chk


def test_a_start_restores_from_the_newest_complete_checkpoint_of_any_earlier_job(
    tmp_path: Path,
) -> None:
    assert newest_checkpoint(tmp_path) is None
    _checkpoint(tmp_path, "job-a", 20)
    newest = _checkpoint(tmp_path, "job-a", 21)
    (tmp_path / "job-a" / "shared").mkdir()
    assert newest_checkpoint(tmp_path) == newest
    # A later start writes under its own job id, its numbers going on from the one restored.
    time.sleep(0.01)
    later = _checkpoint(tmp_path, "job-b", 24)
    _checkpoint(tmp_path, "job-b", 25, complete=False)  # being written when the job died
    os.utime(newest / "_metadata")  # a newer file time does not beat a higher number
    assert newest_checkpoint(tmp_path) == later


def test_its_statements_take_the_tables_own_columns_and_hold_no_credential() -> None:
    conf = {
        "table": "lake.s.t",
        "catalog_uri": "http://127.0.0.1:8181",
        "warehouse": "s3://warehouse/",
        "s3_endpoint": "http://127.0.0.1:9000",
        "s3_region": "us-east-1",
        "topic": TOPIC,
        "bootstrap_servers": "127.0.0.1:9092",
        "loader_id": "l-1",
    }
    columns = [("event_id", "VARCHAR(2147483647)"), ("timestamp", ZONED), ("n", "ARRAY<BIGINT>")]
    catalog, source, insert = statements(conf, columns)
    assert "CREATE CATALOG `lake`" in catalog and "'catalog-type' = 'rest'" in catalog
    # A zoned timestamp is read as text and turned into its instant by the job's function.
    assert "`event_id` VARCHAR(2147483647),\n  `timestamp` STRING,\n  `n` ARRAY<BIGINT>" in source
    assert f"'topic' = '{TOPIC}'" in source and "'properties.group.id' = 'l-1'" in source
    assert insert == (
        "INSERT INTO `lake`.`s`.`t` SELECT `event_id`, instant(`timestamp`), `n` "
        "FROM `kafka_source`"
    )
    assert all("secret" not in s and "access-key" not in s for s in (catalog, source, insert))
    # On a Glue stack: Iceberg's Glue catalog by class (Flink's catalog-type names no glue).
    glue, _, _ = statements({**conf, "catalog_type": "glue"}, columns)
    assert "'catalog-impl' = 'org.apache.iceberg.aws.glue.GlueCatalog'" in glue
    assert "'glue.endpoint' = 'http://127.0.0.1:8181'" in glue and "'uri'" not in glue


def _target(tmp_path: Path) -> LoaderTarget:
    return LoaderTarget("l-1", "lake.s.t", (TOPIC,), None, tmp_path / "loader")


def test_the_flink_description_is_a_kind_read_by_its_commits_and_its_group(
    tmp_path: Path,
) -> None:
    assert "flink" in NAMES
    kind = resolve("flink")
    assert kind.capabilities == {
        Capability.KILL,
        Capability.FREEZE,
        Capability.SUPERVISED,
        Capability.GLUE,
    }
    observer = kind.observer(_target(tmp_path))
    assert observer.position == GROUP and observer.consumer_group == "l-1"
    assert observer.commit_key == "flink.max-committed-checkpoint-id"
    assert observer.cadence_s == 2.0 and observer.letter_headers is None
    assert observer.discovery_s == 300.0  # Flink's Kafka source looks for new partitions
    # A job restarted inside its process is a failure: job.py prints the line this matches.
    assert observer.restart_pattern is not None
    assert re.search(observer.restart_pattern, f"{job.RESTARTING} (restart 1, from RUNNING)")
    assert not re.search(observer.restart_pattern, "flink: job submitted (no checkpoint yet)")
    assert observer_of(History.of([observer_event(observer)]).events) == observer
    assert kind.describe()["runs on"] == f"Flink {versions.FLINK}, Iceberg {versions.ICEBERG_FLINK}"


def test_the_bench_measures_the_flink_job_when_it_is_named() -> None:
    assert "flink" in SHIPPED
    assert parse(["--loader", "icefloe,flink"]).shipped() == ("flink",)
    assert parse([]).shipped() == ()  # named only: never in the default bench


def test_the_flink_runtime_is_provisioned_only_when_a_description_uses_it(
    tmp_path: Path,
) -> None:
    class NoCache:  # a stack whose cache must not be read
        bootstrap_servers = catalog_uri = s3_endpoint = "x"

        @property
        def config(self) -> Any:
            raise AssertionError("the Flink runtime was looked up")

    mapping = command.values(_target(tmp_path), NoCache(), tmp_path / "c")
    assert "flink_python" not in mapping and "flink_jars" not in mapping
    with pytest.raises(AssertionError, match="Flink runtime"):
        mapping["flink_python"]


class _Status:
    def __init__(self, name: str) -> None:
        self.name = name

    def is_globally_terminal_state(self) -> bool:
        return self.name in {"FAILED", "CANCELED", "FINISHED"}


class _Job:
    """A job's result and client as PyFlink gives them, walking through ``states``."""

    def __init__(self, states: list[str]) -> None:
        self.states = iter(states)
        self.waited = False

    def get_job_client(self) -> _Job:
        return self

    def get_job_status(self) -> Any:
        status = _Status(next(self.states))
        return type("Future", (), {"result": lambda _self: status})()

    def wait(self) -> None:
        self.waited = True


def test_each_restart_of_the_job_inside_its_process_prints_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(job, "POLL_S", 0)
    states = ["CREATED", "RUNNING", "RESTARTING", "RESTARTING", "RUNNING", "RESTARTING"]
    result = _Job([*states, "RUNNING", "FAILED"])
    job.watch(result)
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        f"{job.RESTARTING} (restart 1, from RUNNING; the cause in its flink-log)",
        f"{job.RESTARTING} (restart 2, from RUNNING; the cause in its flink-log)",
    ]
    assert result.waited  # a job failed for good raises from here, ending the process
