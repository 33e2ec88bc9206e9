"""The Kafka Connect sink's settings, properties, status and provisioning, without a stack."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from icefloe.harness.loaders.kafka_connect import (
    DEFAULT_COMMIT_INTERVAL_MS,
    ENV_S3_SECRET_KEY,
    KafkaConnectSettings,
    connector_properties,
    parse_status,
    worker_properties,
)
from icefloe.harness.provision import ivy, versions
from icefloe.harness.provision.kafka_connect import PLUGIN_NAME, KafkaConnectJars
from icefloe.harness.provision.layout import Layout

TABLE = "lake.demo.events"


def _settings(**overrides: object) -> KafkaConnectSettings:
    values: dict[str, object] = {"name": "kc", "table": TABLE, "topics": ("events",)}
    values.update(overrides)
    return KafkaConnectSettings(**values)  # type: ignore[arg-type]


def _connector(settings: KafkaConnectSettings) -> dict[str, object]:
    return connector_properties(
        settings,
        tasks_max=2,
        catalog={"type": "rest", "uri": "http://127.0.0.1:8181"},
        s3_endpoint="http://s3",
    )


def test_where_the_sink_keeps_its_progress_and_what_it_loads() -> None:
    settings = _settings()
    assert settings.consumer_group == "connect-kc"
    assert settings.control == "kc-control"
    assert _settings(control_topic="ctl").control == "ctl"
    assert settings.iceberg_table == "demo.events"


@pytest.mark.parametrize(
    "bad",
    [
        {"topics": ()},
        {"table": "demo.events"},
        {"tasks_max": 0},
        {"commit_interval_ms": 0},
        {"offset_flush_interval_ms": 0},
    ],
)
def test_settings_refuse_what_cannot_run(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        _settings(**bad)


def test_the_connector_names_its_keys_only_as_environment_references() -> None:
    props = _connector(_settings())
    assert props["iceberg.catalog.s3.secret-access-key"] == "${env:" + ENV_S3_SECRET_KEY + "}"
    assert props["tasks.max"] == 2
    assert props["iceberg.tables"] == "demo.events"
    assert props["iceberg.control.topic"] == "kc-control"
    assert props["iceberg.control.commit.interval-ms"] == DEFAULT_COMMIT_INTERVAL_MS
    assert props["value.converter.schemas.enable"] == "false"
    assert props["iceberg.catalog.s3.path-style-access"] == "true"
    assert "iceberg.control.commit.timeout-ms" not in props  # the sink's own default


def test_without_a_dead_letter_topic_the_first_unreadable_record_stops_the_task() -> None:
    props = _connector(_settings())
    assert props["errors.tolerance"] == "none"
    assert not any(k.startswith("errors.deadletterqueue") for k in props)


def test_with_a_dead_letter_topic_unreadable_records_go_there() -> None:
    props = _connector(_settings(dead_letter_topic="events.dlq"))
    assert props["errors.tolerance"] == "all"
    assert props["errors.deadletterqueue.topic.name"] == "events.dlq"
    assert props["errors.deadletterqueue.context.headers.enable"] == "true"


def test_extra_properties_win() -> None:
    props = _connector(_settings(extra={"errors.tolerance": "all", "tasks.max": "1"}))
    assert props["errors.tolerance"] == "all" and props["tasks.max"] == "1"


def test_the_worker_listens_on_loopback_and_flushes_often(tmp_path: Path) -> None:
    props = worker_properties(
        _settings(offset_flush_interval_ms=500),
        bootstrap="127.0.0.1:9092",
        rest_port=18083,
        plugin_path=tmp_path,
        offsets_file=tmp_path / "offsets",
    )
    assert props["listeners"] == "http://127.0.0.1:18083"
    assert props["offset.flush.interval.ms"] == 500
    assert props["plugin.path"] == tmp_path
    assert props["config.providers"] == "env"
    assert all("secret" not in str(v).lower() for v in props.values())


def test_status_of_a_running_connector_is_healthy() -> None:
    doc = {
        "name": "kc",
        "connector": {"state": "RUNNING", "worker_id": "127.0.0.1:8083"},
        "tasks": [{"id": 0, "state": "RUNNING"}, {"id": 1, "state": "RUNNING"}],
    }
    health = parse_status(doc, expected_tasks=2)
    assert health.healthy and not health.failed
    assert dict(health.tasks) == {0: "RUNNING", 1: "RUNNING"}


def test_status_with_a_failed_task_is_failed_with_its_trace() -> None:
    doc = {
        "connector": {"state": "RUNNING"},
        "tasks": [{"id": 0, "state": "RUNNING"}, {"id": 1, "state": "FAILED", "trace": "boom"}],
    }
    health = parse_status(doc, expected_tasks=2)
    assert health.failed and not health.healthy
    assert health.traces == {1: "boom"}


def test_status_with_tasks_not_yet_assigned_is_not_healthy() -> None:
    doc = {"connector": {"state": "RUNNING"}, "tasks": [{"id": 0, "state": "RUNNING"}]}
    assert not parse_status(doc, expected_tasks=2).healthy
    assert not parse_status({"connector": {"state": "RUNNING"}}, expected_tasks=1).healthy


def test_ivy_module_leaves_out_what_the_distribution_excludes() -> None:
    xml = ivy.module_xml(
        "sink",
        versions.KAFKA_CONNECT_SINK_MODULES,
        versions.KAFKA_CONNECT_SINK_OVERRIDES,
        versions.KAFKA_CONNECT_SINK_EXCLUDES,
    )
    deps = ET.fromstring(xml).find("dependencies")
    assert deps is not None
    hadoop = next(d for d in deps.findall("dependency") if d.get("name") == "hadoop-common")
    excluded = {(e.get("org"), e.get("module")) for e in hadoop.findall("exclude")}
    assert ("org.eclipse.jetty", "*") in excluded and ("org.slf4j", "*") in excluded
    assert len(excluded) == len(versions.HADOOP_COMMON_EXCLUDES)
    sink = next(d for d in deps.findall("dependency") if d.get("name") == "iceberg-kafka-connect")
    assert sink.findall("exclude") == []  # the exclusions are hadoop-common's alone
    assert [(e.get("org"), e.get("module")) for e in deps.findall("exclude")] == [
        ("javax.activation", "activation")
    ]
    assert len(deps.findall("override")) == len(versions.KAFKA_CONNECT_SINK_OVERRIDES)


def test_the_sink_is_the_release_that_parses_pythons_timestamps() -> None:
    assert versions.ICEBERG_KAFKA_CONNECT == "1.11.0"
    worker = {a.artifact: a.version for a in versions.KAFKA_CONNECT_WORKER_MODULES}
    assert worker["connect-runtime"] == versions.KAFKA


def test_provisioned_folders_are_versioned_and_not_provisioned_in_an_empty_cache(
    tmp_path: Path,
) -> None:
    jars = KafkaConnectJars.of(Layout(tmp_path))
    assert versions.KAFKA in jars.root.name and versions.ICEBERG in jars.root.name
    assert jars.plugin_path / PLUGIN_NAME != jars.sink_lib
    assert not jars.is_provisioned()
    assert jars.provision_seconds() is None


def test_connect_dead_letters_are_read_by_the_sinks_observer() -> None:
    """The sink's observer reads a Connect dead letter's source from its context headers and
    its reason from the exception, and names no kit error kind (its words are its own)."""
    from icefloe.harness.loaders.base import LoaderTarget
    from icefloe.harness.loaders.kafka_connect import KafkaConnectKind
    from icefloe.harness.verify import compare_dead_letters
    from icefloe.publisher.ledger import Ledger, LedgerEntry

    observer = KafkaConnectKind().observer(
        LoaderTarget("sink", "lake.s.t", ("events",), "events.dlq", Path("state"))
    )
    letter = {
        "__connect.errors.topic": "events",
        "__connect.errors.partition": "1",
        "__connect.errors.offset": "7",
        "__connect.errors.exception.class.name": "org.apache.kafka.connect.errors.DataException",
        "__connect.errors.exception.message": "Converting byte[] to Kafka Connect data failed",
    }
    read = observer.letter(0, 3, letter)
    assert read.source == ("events", 1, 7) and read.kind is None
    assert read.reason == "Converting byte[] to Kafka Connect data failed"
    entry = LedgerEntry.from_json(
        {"seq": 0, "event_id": "e", "status": "malformed", "kind": "invalid_json",
         "topic": "events", "partition": 1, "offset": 7}
    )  # fmt: skip
    ledger = Ledger(Path("l.jsonl"), {}, (entry,))
    verdict = compare_dead_letters([letter], [ledger], observer)
    assert verdict.complete and verdict.distinct == 1
    # A letter without Connect's headers names no source: the ledger's letter is lost.
    assert compare_dead_letters([{}], [ledger], observer).lost
    # Read as icefloe's loader's letters, Connect's headers name no source either.
    assert compare_dead_letters([letter], [ledger]).lost


def test_the_sinks_observer_reads_the_record_a_failed_task_names() -> None:
    from icefloe.harness.loaders.base import LoaderTarget
    from icefloe.harness.loaders.kafka_connect import KafkaConnectKind

    observer = KafkaConnectKind().observer(
        LoaderTarget("sink", "lake.s.t", ("events",), None, Path("state"))
    )
    trace = (
        "org.apache.kafka.connect.errors.DataException: Exception in task\n"
        "Error encountered in task sink-0. Executing stage 'TASK_PUT' with class "
        "'org.apache.iceberg.connect.IcebergSinkTask', where consumed record is "
        "{topic='events', partition=0, offset=56, timestamp=1, timestampType=CreateTime}.\n"
        "... topic: events, partition, 0, offset: 56"
    )
    assert observer.halted_at(trace) == [("events", 0, 56)]
    assert observer.position == "group" and observer.consumer_group == "connect-sink"
    assert observer.commit_key == "kafka.connect.commit-id"


def test_the_worker_is_given_its_files_by_absolute_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker runs inside its state folder: a relative name (a run under the default
    ``reports/``) would be read from there, and the worker would exit at once."""
    from types import SimpleNamespace

    from icefloe.harness.loaders.kafka_connect import KafkaConnectSink

    monkeypatch.chdir(tmp_path)
    stack = SimpleNamespace(config=SimpleNamespace(cache_dir=tmp_path / "cache"))
    sink = KafkaConnectSink(_settings(), stack, Path("reports/runs/r1/loader"))
    files = [a for a in sink.command() if a.endswith(".properties")]
    assert files and all(Path(a.split("=", 1)[-1]).is_absolute() for a in files)
    assert sink.state_dir == tmp_path / "reports/runs/r1/loader"
