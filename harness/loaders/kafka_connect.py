"""The Apache Iceberg Kafka Connect sink as a loader the harness runs: one worker, one connector.

A peer of icefloe's loader under the same tests. :class:`KafkaConnectSink` runs one Kafka Connect
worker in **standalone** mode (``ConnectStandalone``) with the Iceberg sink connector for a
topic (or topics) and one Iceberg table of the running stack, as a supervised process
(:class:`~harness.stack.process.ManagedProcess`): start, stop, kill -9, freeze (SIGSTOP) and
thaw, health from the worker's REST API (127.0.0.1, a port of its own), its log in its state
folder.

Why standalone: the sink's own coordination (who commits, which offsets) lives in Kafka, not in
the worker: the tasks' consumer group (``connect-<name>``), the sink's control topic and its
control consumer group. Two standalone workers running the same connector share those, so a
second worker for a zombie check joins the same consumer group and control topic as a
distributed cluster's second worker would, without the worker group's five-minute
``scheduled.rebalance.max.delay.ms`` hold on a dead worker's tasks and with no REST call to
submit the connector after each start. A restart reads the same two properties files.

Where its progress is kept: the consumer group ``connect-<name>`` (offsets the sink's coordinator
commits with each Iceberg commit; the snapshot summaries carry them too) and the control topic
(``<name>-control``, created here: the broker creates no topics). Where its dead letters go:
with a dead-letter topic, ``errors.tolerance=all`` sends what Connect's converter cannot read
there (context headers on); without one, ``errors.tolerance=none`` and the task stops at the
first such record. A value the sink itself cannot convert fails the task either way (the sink
has no dead-letter path of its own).

The S3 keys reach the worker through its environment only; the connector's properties name
them as ``${env:...}`` (Kafka's ``EnvVarConfigProvider``), so neither the files, the command
line nor the REST API shows them.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from icefloe.harness.history import History
from icefloe.harness.loaders.base import (
    Capability,
    ExitWatch,
    Health,
    OneProcessLoader,
    loader_kind,
)
from icefloe.harness.observer import GROUP, Observer
from icefloe.harness.provision import kafka_connect as provisioning
from icefloe.harness.provision.layout import Layout
from icefloe.harness.stack import keys
from icefloe.harness.stack.ports import free_port
from icefloe.harness.stack.process import ManagedProcess
from icefloe.harness.stack.service import console_log4j2, write_properties

CONNECTOR_CLASS = "org.apache.iceberg.connect.IcebergSinkConnector"
STANDALONE_CLASS = "org.apache.kafka.connect.cli.ConnectStandalone"
REST_PORT_FIRST = 8083
"""Kafka Connect's own default REST port; a free one from here is taken when none is given."""
DEFAULT_COMMIT_INTERVAL_MS = 10_000
"""The harness's commit interval (the sink's default is 300,000): see ``KafkaConnectSettings``."""
DEFAULT_OFFSET_FLUSH_INTERVAL_MS = 1_000
"""The worker's ``offset.flush.interval.ms`` (Connect's default is 60,000): see the settings."""
ENV_S3_ACCESS_KEY = "ICEFLOE_CONNECT_S3_ACCESS_KEY"
ENV_S3_SECRET_KEY = "ICEFLOE_CONNECT_S3_SECRET_KEY"
# Connect's launch scripts: -Xms256M -Xmx2G and kafka-run-class.sh's collector settings.
JVM_FLAGS = (
    "-Xms256m",
    "-Xmx2g",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-Djava.awt.headless=true",
)
_LOG4J2 = console_log4j2(
    {
        "clients": ("org.apache.kafka.clients", "warn"),
        "common": ("org.apache.kafka.common", "warn"),
        "reflections": ("org.reflections", "error"),
        "hadoop": ("org.apache.hadoop", "warn"),
        "rest": ("org.apache.kafka.connect.runtime.rest.RestServer", "warn"),
    }
)


class SinkFailed(RuntimeError):
    """The worker exited, or the connector or one of its tasks failed or did not start."""


@dataclass(frozen=True)
class KafkaConnectSettings:
    """What a run decides about the sink; the stack supplies endpoints and keys.

    Attributes:
        name: The connector's name; its consumer group is ``connect-<name>`` and, unless
            ``control_topic`` says otherwise, its control topic ``<name>-control``. Keep it
            across restarts (it is where the sink finds its progress).
        table: ``catalog.schema.table`` as Trino names it; the sink gets ``schema.table``.
        topics: Source topics.
        tasks_max: Sink tasks; ``None`` gives one per partition of the topics (one task per
            partition is as parallel as a sink task can be).
        commit_interval_ms: ``iceberg.control.commit.interval-ms``: how often the coordinator
            asks the tasks for their files and commits one snapshot. The sink's default is
            300,000 (5 minutes, tuned for few, large files); 10 s here makes a run's rows
            visible within seconds, as a user who wants freshness would set it, and is the
            interval the project's measurements of the sink used. Lower gives more, smaller
            files and more catalog commits.
        commit_timeout_ms: ``iceberg.control.commit.timeout-ms``: how long the coordinator
            waits for every task's answer before it commits what it has; ``None`` keeps the
            sink's 30,000.
        offset_flush_interval_ms: The worker's ``offset.flush.interval.ms``. A task answers the
            coordinator's commit request only from ``put()``, and the worker's consumer polls
            with a timeout that runs until the next offset flush: once a topic is drained the
            next (empty) ``put()`` comes only then, so with Connect's default (60,000) the last
            rows of a run wait up to a minute after the coordinator asked. 1,000 bounds that
            wait to a second; the flush itself does nothing for this sink (its ``preCommit``
            returns no offsets: it commits them itself with each Iceberg commit), so the cost
            is one empty poll a second.
        dead_letter_topic: With a topic, ``errors.tolerance=all`` and Connect's dead-letter
            queue (what the converter cannot read goes there, with context headers); ``None``
            keeps ``errors.tolerance=none`` (the task stops at the first such record).
        control_topic: ``iceberg.control.topic``; ``None`` gives ``<name>-control``.
        rest_port: The worker's REST port on 127.0.0.1; ``None`` takes a free one from 8083
            at the first start and keeps it.
        extra: Further connector properties (win over the ones made here).
        worker_extra: Further worker properties (win over the ones made here).
    """

    name: str
    table: str
    topics: tuple[str, ...]
    tasks_max: int | None = None
    commit_interval_ms: int = DEFAULT_COMMIT_INTERVAL_MS
    commit_timeout_ms: int | None = None
    offset_flush_interval_ms: int = DEFAULT_OFFSET_FLUSH_INTERVAL_MS
    dead_letter_topic: str | None = None
    control_topic: str | None = None
    rest_port: int | None = None
    extra: Mapping[str, str] = field(default_factory=dict)
    worker_extra: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.topics:
            raise ValueError("the sink needs at least one topic")
        if self.table.count(".") != 2:
            raise ValueError(f"table must be catalog.schema.table, got {self.table!r}")
        if self.tasks_max is not None and self.tasks_max < 1:
            raise ValueError("tasks_max must be >= 1")
        if self.commit_interval_ms < 1 or self.offset_flush_interval_ms < 1:
            raise ValueError("commit_interval_ms and offset_flush_interval_ms must be >= 1")

    @property
    def consumer_group(self) -> str:
        """The tasks' consumer group, where the sink's committed offsets are."""
        return f"connect-{self.name}"

    @property
    def control(self) -> str:
        """The sink's control topic."""
        return self.control_topic or f"{self.name}-control"

    @property
    def iceberg_table(self) -> str:
        """The table as the sink names it in its catalog: ``schema.table``."""
        return self.table.split(".", 1)[1]


@dataclass(frozen=True)
class ConnectorHealth:
    """What the worker's REST API says of the connector and its tasks.

    Attributes:
        reachable: The REST API answered.
        connector: The connector's state (``RUNNING``, ``FAILED``, ``PAUSED``...), or ``""``.
        tasks: Each task's state by task id.
        expected_tasks: How many tasks the connector should have.
        traces: Stack traces of failed tasks (or the connector), by task id (-1: connector).
    """

    reachable: bool
    connector: str = ""
    tasks: Mapping[int, str] = field(default_factory=dict)
    expected_tasks: int = 0
    traces: Mapping[int, str] = field(default_factory=dict)

    @property
    def healthy(self) -> bool:
        """The connector and every expected task are running."""
        return (
            self.reachable
            and self.connector == "RUNNING"
            and len(self.tasks) >= self.expected_tasks
            and all(state == "RUNNING" for state in self.tasks.values())
        )

    @property
    def failed(self) -> bool:
        """The connector or a task has failed (it will not recover without a restart)."""
        return self.connector == "FAILED" or "FAILED" in self.tasks.values()


def parse_status(doc: Mapping[str, Any], expected_tasks: int) -> ConnectorHealth:
    """A :class:`ConnectorHealth` from ``GET /connectors/<name>/status``.

    Args:
        doc: The decoded answer.
        expected_tasks: ``tasks.max``.

    Returns:
        The health.
    """
    connector = doc.get("connector", {})
    tasks = {int(t["id"]): str(t.get("state", "")) for t in doc.get("tasks", [])}
    traces = {int(t["id"]): str(t["trace"]) for t in doc.get("tasks", []) if t.get("trace")}
    if connector.get("trace"):
        traces[-1] = str(connector["trace"])
    return ConnectorHealth(
        reachable=True,
        connector=str(connector.get("state", "")),
        tasks=tasks,
        expected_tasks=expected_tasks,
        traces=traces,
    )


CONNECT_ERROR_TOPIC = "__connect.errors.topic"
CONNECT_ERROR_PARTITION = "__connect.errors.partition"
CONNECT_ERROR_OFFSET = "__connect.errors.offset"
CONNECT_ERROR_CLASS = "__connect.errors.exception.class.name"
CONNECT_ERROR_MESSAGE = "__connect.errors.exception.message"
"""Context headers Connect puts on a dead letter (``errors.deadletterqueue.context.headers``)."""

CONNECT_LETTERS = {
    "topic": (CONNECT_ERROR_TOPIC,),
    "partition": (CONNECT_ERROR_PARTITION,),
    "offset": (CONNECT_ERROR_OFFSET,),
    "reason": (CONNECT_ERROR_MESSAGE, CONNECT_ERROR_CLASS),
}
"""How the checks read a Connect dead letter (``harness.observer.Observer.letter``): its source
from the context headers, its reason from the exception's message (or class). Connect names
no error kind of the kit's, so a letter's kind and path are not compared."""

COMMIT_ID_KEY = "kafka.connect.commit-id"
"""The summary key the sink's coordinator puts on every snapshot it commits."""

CONNECT_HALT = r"topic: (?P<topic>[^,\s]+), partition,? (?P<partition>\d+), offset: (?P<offset>\d+)"
"""How Connect names the record a task failed at ("... topic: T, partition, 0, offset: 56")."""

COORDINATOR_LOG = {
    "commits started": r"Sending event of type: START_COMMIT",
    "commits completed": r"Sending event of type: COMMIT_COMPLETE",
    "commits to no table": r"committed to 0 table\(s\)",
    "commit timeouts": r"Commit timeout reached",
    "files handed over": r"Sending event of type: DATA_WRITTEN",
}
"""What the sink's coordinator and tasks log of each commit: a run reports the counts beside
its verdicts (a coordinator that commits "to 0 table(s)" every interval while its tasks hand
over files is one that lost them)."""

DEFAULT_METADATA_MAX_AGE_MS = 300_000
"""Kafka's consumer ``metadata.max.age.ms``: how late the sink's tasks may see new partitions."""


def worker_properties(
    settings: KafkaConnectSettings,
    *,
    bootstrap: str,
    rest_port: int,
    plugin_path: Path,
    offsets_file: Path,
) -> dict[str, object]:
    """The standalone worker's properties (no secret among them).

    Args:
        settings: The sink's settings.
        bootstrap: The broker.
        rest_port: The REST API's port on 127.0.0.1.
        plugin_path: The folder holding the sink's plugin folder.
        offsets_file: Standalone's offset store (source connectors only; a sink's offsets
            are in its consumer group).

    Returns:
        Property name to value.
    """
    props: dict[str, object] = {
        "bootstrap.servers": bootstrap,
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false",
        "offset.storage.file.filename": offsets_file,
        "offset.flush.interval.ms": settings.offset_flush_interval_ms,
        "listeners": f"http://127.0.0.1:{rest_port}",
        "rest.advertised.host.name": "127.0.0.1",
        "rest.advertised.port": rest_port,
        "plugin.path": plugin_path,
        # The sink's jars declare their plugins (META-INF/services): no class-path scan.
        "plugin.discovery": "service_load",
        "config.providers": "env",
        "config.providers.env.class": (
            "org.apache.kafka.common.config.provider.EnvVarConfigProvider"
        ),
    }
    props.update(settings.worker_extra)
    return props


def connector_properties(
    settings: KafkaConnectSettings,
    *,
    tasks_max: int,
    catalog: Mapping[str, str],
    s3_endpoint: str,
) -> dict[str, object]:
    """The connector's properties; the S3 keys appear only as ``${env:...}`` references.

    Args:
        settings: The sink's settings.
        tasks_max: Tasks to run.
        catalog: Iceberg's catalog properties that reach the stack's catalog (its service's
            ``iceberg_properties``: ``type`` and ``uri``, or Glue's ``catalog-impl``).
        s3_endpoint: The object store.

    Returns:
        Property name to value.
    """
    props: dict[str, object] = {
        "name": settings.name,
        "connector.class": CONNECTOR_CLASS,
        "tasks.max": tasks_max,
        "topics": ",".join(settings.topics),
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false",
        "iceberg.tables": settings.iceberg_table,
        "iceberg.control.topic": settings.control,
        "iceberg.control.commit.interval-ms": settings.commit_interval_ms,
        **{f"iceberg.catalog.{key}": value for key, value in catalog.items()},
        "iceberg.catalog.warehouse": f"s3://{keys.WAREHOUSE_BUCKET}/",
        "iceberg.catalog.io-impl": "org.apache.iceberg.aws.s3.S3FileIO",
        "iceberg.catalog.s3.endpoint": s3_endpoint,
        "iceberg.catalog.s3.path-style-access": "true",
        "iceberg.catalog.client.region": keys.S3_REGION,
        "iceberg.catalog.s3.access-key-id": "${env:" + ENV_S3_ACCESS_KEY + "}",
        "iceberg.catalog.s3.secret-access-key": "${env:" + ENV_S3_SECRET_KEY + "}",
    }
    if settings.commit_timeout_ms is not None:
        props["iceberg.control.commit.timeout-ms"] = settings.commit_timeout_ms
    if settings.dead_letter_topic is None:
        props["errors.tolerance"] = "none"
    else:
        props.update(
            {
                "errors.tolerance": "all",
                "errors.log.enable": "true",
                "errors.deadletterqueue.topic.name": settings.dead_letter_topic,
                "errors.deadletterqueue.topic.replication.factor": 1,
                "errors.deadletterqueue.context.headers.enable": "true",
            }
        )
    props.update(settings.extra)
    return props


class KafkaConnectSink:
    """One Kafka Connect worker running the Iceberg sink for one table, started by the harness.

    Args:
        settings: What to load and how.
        stack: The running stack (a :class:`harness.stack.lakehouse.Stack`).
        state_dir: Its properties files, offsets file and log (``kafka-connect.log``).
        history: Where starts, kills, stops, freezes and thaws are recorded.
        start_timeout_s: How long a start may take until every task runs.
    """

    def __init__(
        self,
        settings: KafkaConnectSettings,
        stack: Any,
        state_dir: Path,
        history: History | None = None,
        *,
        start_timeout_s: float = 180.0,
    ) -> None:
        self.settings = settings
        self.stack = stack
        # The worker runs in this folder and is given its files by name: a relative name would
        # be read from inside it.
        self.state_dir = state_dir.resolve()
        self.history = history if history is not None else History(None)
        self.start_timeout_s = start_timeout_s
        self.process = ManagedProcess("kafka-connect", self.state_dir)
        self.worker_file = self.state_dir / "worker.properties"
        self.connector_file = self.state_dir / "connector.properties"
        self.rest_port = settings.rest_port
        self.tasks_max = settings.tasks_max or 0
        self.starts = 0
        self.started_at: float | None = None
        self.created_topics: list[str] = []

    # -- where things are ----------------------------------------------------

    @property
    def rest_url(self) -> str:
        """The worker's REST API (valid once started)."""
        return f"http://127.0.0.1:{self.rest_port}"

    @property
    def consumer_group(self) -> str:
        return self.settings.consumer_group

    @property
    def control_topic(self) -> str:
        return self.settings.control

    @property
    def dead_letter_topic(self) -> str | None:
        return self.settings.dead_letter_topic

    @property
    def log_file(self) -> Path:
        return self.process.log_file

    # -- lifecycle -----------------------------------------------------------

    def prepare(self) -> None:
        """Provision the jars if needed, create the control topic, write both properties files.

        Raises:
            harness.provision.ivy.ResolveError: the jars could not be resolved.
            LookupError: a source topic does not exist.
        """
        jars = provisioning.provision(Layout(self.stack.config.cache_dir))
        self._ensure_topics()
        if self.rest_port is None:
            self.rest_port = free_port(REST_PORT_FIRST)
        self.state_dir.mkdir(parents=True, exist_ok=True)
        write_properties(
            self.worker_file,
            worker_properties(
                self.settings,
                bootstrap=self.stack.bootstrap_servers,
                rest_port=self.rest_port,
                plugin_path=jars.plugin_path,
                offsets_file=self.state_dir / "connect.offsets",
            ),
        )
        write_properties(
            self.connector_file,
            connector_properties(
                self.settings,
                tasks_max=self.tasks_max,
                catalog=self.stack.catalog.iceberg_properties(),
                s3_endpoint=self.stack.s3_endpoint,
            ),
        )
        (self.state_dir / "log4j2.properties").write_text(_LOG4J2)

    def command(self) -> list[str]:
        """The worker's command line (no secret in it)."""
        jars = provisioning.KafkaConnectJars.of(Layout(self.stack.config.cache_dir))
        return [
            str(provisioning.java(Layout(self.stack.config.cache_dir))),
            *JVM_FLAGS,
            f"-Dlog4j2.configurationFile={self.state_dir / 'log4j2.properties'}",
            "-cp",
            jars.classpath,
            STANDALONE_CLASS,
            str(self.worker_file),
            str(self.connector_file),
        ]

    def environment(self) -> dict[str, str]:
        """The worker's environment: the caller's, plus the S3 keys."""
        env = dict(os.environ)
        env[ENV_S3_ACCESS_KEY] = self.stack.credentials.access_key
        env[ENV_S3_SECRET_KEY] = self.stack.credentials.secret_key.reveal()
        env["AWS_REGION"] = keys.S3_REGION
        env.update(self.stack.catalog.client_environment())  # how it signs to Glue, if at all
        return env

    def start(self, *, wait: bool = True) -> float:
        """Start the worker; by default wait until the connector and every task run.

        Args:
            wait: Wait for the tasks.

        Returns:
            Seconds from the start until every task ran (0 when not waiting).

        Raises:
            RuntimeError: it is running already.
            SinkFailed: it exited, a task failed, or not every task ran within
                ``start_timeout_s``.
        """
        if self.process.is_running():
            raise RuntimeError(f"kafka connect worker {self.settings.name} runs already")
        self.prepare()
        self.history.record(
            "loader",
            "invoke",
            "start",
            loader="kafka-connect",
            connector=self.settings.name,
            tasks_max=self.tasks_max,
            commit_interval_ms=self.settings.commit_interval_ms,
            # A commit interval is this loader's batch: the freshness check reads it so.
            trigger_interval_s=self.settings.commit_interval_ms / 1000,
            dead_letter_topic=self.settings.dead_letter_topic,
        )
        pid = self.process.start(self.command(), self.environment(), self.state_dir)
        self.started_at = time.monotonic()
        self.starts += 1
        if not wait:
            return 0.0
        try:
            took = self.await_running(self.start_timeout_s)
        except Exception as exc:
            self.history.record("loader", "fail", "start", pid=pid, error=str(exc)[-2000:])
            raise
        self.history.record("loader", "ok", "start", pid=pid, seconds=round(took, 2))
        return took

    def await_running(self, timeout_s: float) -> float:
        """Wait until the connector and every task run.

        Args:
            timeout_s: How long to wait.

        Returns:
            Seconds since the last start.

        Raises:
            SinkFailed: the worker exited, a task or the connector failed, or not every task
                ran within ``timeout_s``; the message has the traces and the log's tail.
        """
        deadline = time.monotonic() + timeout_s
        while True:
            health = self.health()
            if health.healthy:
                return time.monotonic() - (self.started_at or time.monotonic())
            if health.failed:
                raise SinkFailed(
                    f"the sink {self.settings.name} failed: {dict(health.traces)}\n"
                    f"log {self.log_file}:\n{self.log_tail()}"
                )
            if not self.process.is_running():
                raise SinkFailed(
                    f"the worker of {self.settings.name} exited; log {self.log_file}:\n"
                    f"{self.log_tail()}"
                )
            if time.monotonic() > deadline:
                raise SinkFailed(
                    f"the sink {self.settings.name} not running after {timeout_s:.0f} s "
                    f"({health}); log {self.log_file}:\n{self.log_tail()}"
                )
            time.sleep(0.5)

    def stop(self, timeout: float = 60.0) -> None:
        """Stop gracefully (SIGTERM: the worker stops its tasks and leaves the group)."""
        pid = self.process.pid
        self.process.stop(timeout)
        self.history.record("loader", "info", "stopped", pid=pid, loader="kafka-connect")

    def kill(self) -> int | None:
        """kill -9 the worker, as a crash would.

        Returns:
            The killed pid, or None if it was not running.
        """
        pid = self.process.pid
        self.process.kill()
        self.history.record("loader", "info", "killed", pid=pid, loader="kafka-connect")
        return pid

    def freeze(self) -> int | None:
        """SIGSTOP the worker JVM: it holds its sockets and group membership, answers nothing.

        Returns:
            The frozen pid, or None if it was not running.
        """
        pid = self.process.pid
        self.process.pause()
        self.history.record("loader", "info", "frozen", pid=pid, loader="kafka-connect")
        return pid

    def thaw(self) -> None:
        """SIGCONT a frozen worker."""
        pid = self.process.pid
        self.process.resume()
        self.history.record("loader", "info", "thawed", pid=pid, loader="kafka-connect")

    def frozen(self) -> bool:
        return self.process.is_paused()

    def is_running(self) -> bool:
        return self.process.is_running()

    def close(self) -> None:
        """Stop the worker if it runs."""
        if self.process.is_running():
            self.stop()

    def __enter__(self) -> KafkaConnectSink:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- health and progress -------------------------------------------------

    def health(self) -> ConnectorHealth:
        """The connector's and tasks' states from the REST API (unreachable when frozen)."""
        if self.rest_port is None:
            return ConnectorHealth(reachable=False)
        url = f"{self.rest_url}/connectors/{self.settings.name}/status"
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                doc = json.loads(response.read())
        except (OSError, urllib.error.URLError, ValueError):
            return ConnectorHealth(reachable=False, expected_tasks=self.tasks_max)
        return parse_status(doc, self.tasks_max)

    def committed_offsets(self) -> dict[tuple[str, int], int]:
        """The consumer group's committed offsets: (topic, partition) -> next offset to read.

        Raises:
            confluent_kafka.KafkaException: the broker could not answer.
        """
        from confluent_kafka import ConsumerGroupTopicPartitions

        admin = self.stack.kafka_admin()
        futures = admin.list_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(self.consumer_group)], request_timeout=30
        )
        result = futures[self.consumer_group].result(timeout=30)
        return {
            (tp.topic, tp.partition): tp.offset for tp in result.topic_partitions if tp.offset >= 0
        }

    def control_evidence(self) -> dict[str, Any]:
        """Where the sink's control topic stands at the end of a run: its partitions' end
        offsets and each consumer group that committed an offset on it (the coordinator's
        ``-coord`` group and the workers' ``cg-control-*`` groups), for a finding's page.

        Raises:
            confluent_kafka.KafkaException: the broker could not answer.
        """
        from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, TopicPartition

        admin = self.stack.kafka_admin()
        topic = self.settings.control
        consumer = Consumer(
            {"bootstrap.servers": self.stack.bootstrap_servers, "group.id": "icefloe-evidence"}
        )
        try:
            parts = admin.list_topics(topic, timeout=30).topics[topic].partitions
            ends = {
                str(p): consumer.get_watermark_offsets(TopicPartition(topic, p), 30)[1]
                for p in sorted(parts)
            }
        finally:
            consumer.close()
        groups: dict[str, dict[str, int | None]] = {}
        listed = admin.list_consumer_groups(request_timeout=30).result(timeout=30)
        for group in sorted(g.group_id for g in listed.valid):
            if self.settings.name not in group and not group.startswith("cg-control"):
                continue
            future = admin.list_consumer_group_offsets(
                [ConsumerGroupTopicPartitions(group)], request_timeout=30
            )[group]
            offsets = future.result(timeout=30).topic_partitions
            on_control = {
                str(tp.partition): (tp.offset if tp.offset >= 0 else None)
                for tp in offsets
                if tp.topic == topic
            }
            if on_control:
                groups[group] = on_control
        return {"control_topic": topic, "control_end": ends, "control_groups": groups}

    def log_tail(self, lines: int = 40) -> str:
        return self.process.log_tail(lines)

    # -- topics --------------------------------------------------------------

    def _ensure_topics(self) -> None:
        from confluent_kafka.admin import NewTopic

        admin = self.stack.kafka_admin()
        metadata = admin.list_topics(timeout=30).topics
        partitions = 0
        for topic in self.settings.topics:
            found = metadata.get(topic)
            if found is None or found.error is not None:
                raise LookupError(f"no topic {topic!r} on {self.stack.bootstrap_servers}")
            partitions += len(found.partitions)
        if not self.tasks_max:
            self.tasks_max = partitions
        wanted = [self.settings.control]
        if self.settings.dead_letter_topic:
            wanted.append(self.settings.dead_letter_topic)
        missing = [t for t in wanted if t not in metadata]
        if not missing:
            return
        futures = admin.create_topics([NewTopic(t, 1, 1) for t in missing], operation_timeout=30)
        for topic, future in futures.items():
            try:
                future.result(timeout=30)
            except Exception as exc:  # created meanwhile by a second worker: fine
                if "TOPIC_ALREADY_EXISTS" not in str(exc):
                    raise
            self.created_topics.append(topic)
            self.history.record("loader", "info", "topic_created", topic=topic)

    def delete_created_topics(self) -> None:
        """Delete the topics this object created (its control topic, a dead-letter topic).

        Raises:
            confluent_kafka.KafkaException: the broker refused.
        """
        if not self.created_topics:
            return
        admin = self.stack.kafka_admin()
        for future in admin.delete_topics(self.created_topics, operation_timeout=30).values():
            future.result(timeout=30)
        self.created_topics.clear()


# -- the sink as a loader kind -----------------------------------------------------------

NAME = "kafka-connect"

SESSION_TIMEOUT_MS = 10_000
"""The sink tasks' consumer ``session.timeout.ms`` (Kafka's default is 45,000): a restarted
worker gets its partitions back only once the killed worker's session has lapsed, so after a
kill -9 the default holds every row back 45 s. 10 s is what a user who restarts workers on
failure would set; the broker's minimum is 6 s."""

KIND_WORKER_SETTINGS = {
    "consumer.session.timeout.ms": str(SESSION_TIMEOUT_MS),
    "consumer.heartbeat.interval.ms": str(SESSION_TIMEOUT_MS // 3),
}
"""Worker properties a run's sink gets beyond ``KafkaConnectSettings``' own (and why above)."""


def _causes(trace: str) -> str:
    """A Java stack trace without its frames: its first line and each ``Caused by:`` line."""
    lines = trace.splitlines()
    kept = lines[:1] + [line for line in lines[1:] if line.startswith("Caused by:")]
    return "\n".join(kept)


class KafkaConnectLoader(OneProcessLoader):
    """The sink as a ``harness.loaders.base.Loader``: a :class:`KafkaConnectSink` whose own
    exits are watched (``ExitWatch``) and restarted when supervised.

    Args:
        sink: The sink (not started).
        restart_on_exit: Start it again after an exit the harness did not cause.
    """

    def __init__(self, sink: KafkaConnectSink, *, restart_on_exit: bool = False) -> None:
        self.sink = sink
        self.state_dir = sink.state_dir
        self.hooks: dict[str, str] = {}
        self._watch = ExitWatch(
            sink.process, sink.history, lambda: self.start(wait=False), sink.log_tail,
            failed=self._failed, stop=lambda: sink.process.stop(60.0),
        )  # fmt: skip
        self._watch.restart_on_exit = restart_on_exit
        self._mark = 0

    def _failed(self) -> str | None:
        """Why the sink stopped loading for good: every task (or the connector) failed."""
        health = self.sink.health()
        tasks = list(health.tasks.values())
        if health.connector == "FAILED" or (tasks and all(t == "FAILED" for t in tasks)):
            # What Connect said of each failure, as it wrote it: the first line of each trace
            # and every cause (the observer reads the record they name); not the frames.
            return "\n".join(_causes(trace) for trace in health.traces.values()) or "FAILED"
        return None

    @property
    def starts(self) -> int:
        return self.sink.starts

    def evidence(self) -> dict[str, Any]:
        """What the sink's own state says at the end of a run (its control topic)."""
        return self.sink.control_evidence()

    @property
    def loader_id(self) -> str:
        return self.sink.settings.name

    @property
    def dead_letter_topic(self) -> str | None:
        return self.sink.dead_letter_topic

    def start(
        self,
        *,
        wait: bool = True,
        track: bool = False,
        hooks: Mapping[str, str] | None = None,
        expect_codes: tuple[int, ...] = (),
    ) -> float:
        """Start the worker (see ``KafkaConnectSink.start``).

        Raises:
            ValueError: fault hooks were given (the sink has no fault points).
            SinkFailed: it did not start (when waiting).
        """
        if hooks:
            raise ValueError(f"the Kafka Connect sink has no fault points: {sorted(hooks)}")
        import threading

        self._mark = self.log_size()
        took = self.sink.start(wait=wait)
        self._watch.started()
        if not wait and track:
            threading.Thread(target=self._track, name="connect-start", daemon=True).start()
        return took

    def _track(self) -> None:
        pid = self.sink.process.pid
        try:
            took = self.sink.await_running(self.sink.start_timeout_s)
        except SinkFailed as exc:
            self.sink.history.record("loader", "fail", "start", pid=pid, error=str(exc)[-2000:])
            return
        self.sink.history.record("loader", "ok", "start", pid=pid, seconds=round(took, 2))

    def stop(self, timeout: float = 60.0) -> None:
        self._watch.expect()
        self.sink.stop(timeout)

    def kill(self) -> int | None:
        self._watch.expect()
        return self.sink.kill()

    def freeze(self) -> int | None:
        return self.sink.freeze()

    def thaw(self) -> None:
        self.sink.thaw()

    def frozen(self) -> bool:
        return self.sink.frozen()

    def is_running(self) -> bool:
        return self.sink.is_running()

    def wait_exit(self, timeout_s: float) -> bool:
        return bool(self.sink.process.wait_exit(timeout_s))

    def health(self) -> Any:
        found = self.sink.health()
        detail = f"connector {found.connector or '?'}, tasks {dict(found.tasks)}"
        return Health(self.is_running(), found.healthy, detail)

    def configuration(self) -> dict[str, Any]:
        """The worker's and the connector's properties (the S3 keys are ``${env:...}``)."""
        out: dict[str, Any] = {}
        for label, path in (
            ("worker", self.sink.worker_file),
            ("connector", self.sink.connector_file),
        ):
            if path.exists():
                lines = path.read_text().splitlines()
                pairs = (line.split("=", 1) for line in lines if "=" in line and line[:1] != "#")
                out[label] = {k.strip(): v.strip() for k, v in pairs}
        return out

    def progress(self) -> str:
        return (
            f"the consumer group {self.sink.consumer_group} (offsets committed with each "
            f"Iceberg commit) and the control topic {self.sink.control_topic}"
        )

    def uptime_s(self) -> float:
        began = self.sink.started_at
        return time.monotonic() - began if began is not None else 0.0

    def has_started(self) -> bool:
        return bool(self.sink.health().healthy)

    def _log_file(self) -> Path:
        return self.sink.log_file

    def log_tail(self, lines: int = 40) -> str:
        return self.sink.log_tail(lines)

    def close(self) -> None:
        self._watch.close()
        self.sink.close()
        try:
            self.sink.delete_created_topics()
        except Exception as exc:  # recorded; a leftover control topic harms no later run
            self.sink.history.record("loader", "fail", "delete_topics", error=str(exc)[:300])


@loader_kind(NAME)
class KafkaConnectKind:
    """Makes Kafka Connect sinks for a run (``--loader kafka-connect``).

    Args:
        settings: Further ``KafkaConnectSettings`` fields for every sink it makes (e.g.
            ``commit_interval_ms``).
    """

    name = NAME

    def __init__(self, **settings: Any) -> None:
        self.settings = settings
        self.capabilities = frozenset(
            {
                Capability.KILL,
                Capability.FREEZE,
                Capability.DEAD_LETTERS,
                Capability.SUPERVISED,
                Capability.GLUE,
            }
        )

    def sink_settings(self, target: Any) -> KafkaConnectSettings:
        """The sink's settings for a ``harness.loaders.base.LoaderTarget``."""
        fields = dict(self.settings)
        worker = {**KIND_WORKER_SETTINGS, **fields.pop("worker_extra", {})}
        return KafkaConnectSettings(
            name=target.loader_id,
            table=target.table,
            topics=tuple(target.topics),
            dead_letter_topic=target.dead_letter_topic,
            worker_extra=worker,
            **fields,
        )

    def make(self, target: Any, stack: Any, history: Any) -> KafkaConnectLoader:
        sink = KafkaConnectSink(self.sink_settings(target), stack, target.state_dir, history)
        return KafkaConnectLoader(sink, restart_on_exit=target.restart_on_exit)

    def retarget(self, loader: Any, target: Any) -> None:
        settings = self.sink_settings(target)
        loader.sink.settings = dataclasses.replace(settings, rest_port=loader.sink.rest_port)

    def settle_s(self, target: Any) -> float:
        return 2 * self.sink_settings(target).commit_interval_ms / 1000

    def observer(self, target: Any) -> Observer:
        """The sink as it documents itself: its coordinator's commits carry
        ``kafka.connect.commit-id``; its position is the tasks' consumer group, whose offsets
        the tasks commit with the files they hand the coordinator; it commits every commit
        interval; it sees a partition added to its topic when its consumers' metadata ages
        out (``metadata.max.age.ms``). Its drain allows a killed worker's session to lapse
        (``SESSION_TIMEOUT_MS``), a worker's start and two commit intervals."""
        settings = self.sink_settings(target)
        interval_s = settings.commit_interval_ms / 1000
        worker = {**KIND_WORKER_SETTINGS, **settings.worker_extra}
        metadata_ms = int(worker.get("consumer.metadata.max.age.ms", DEFAULT_METADATA_MAX_AGE_MS))
        return Observer(
            kind=NAME,
            commit_key=COMMIT_ID_KEY,
            position=GROUP,
            consumer_group=settings.consumer_group,
            cadence_s=interval_s,
            drain_s=30.0 + SESSION_TIMEOUT_MS / 1000 + 2 * interval_s,
            discovery_s=metadata_ms / 1000,
            halt_pattern=CONNECT_HALT,
            letter_headers=CONNECT_LETTERS,
            log_facts=COORDINATOR_LOG,
        )

    def describe(self) -> dict[str, Any]:
        defaults = KafkaConnectSettings("name", "c.s.t", ("t",), **self.settings)
        return {
            "loader": "Apache Iceberg Kafka Connect sink (standalone worker)",
            "iceberg.control.commit.interval-ms": defaults.commit_interval_ms,
            "offset.flush.interval.ms": defaults.offset_flush_interval_ms,
            "tasks.max": "one per partition",
            "errors.tolerance": "all with the run's dead-letter topic, else none",
            **KIND_WORKER_SETTINGS,
        }
