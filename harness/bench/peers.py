"""Peer loaders on the backlog: the Apache Iceberg Kafka Connect sink and the further kinds the
kit ships (Spark's own streaming sink, the reference design's Flink job) beside icefloe's loader.

The sink reads the same topic into a table of its own and is timed as the loader is: from its
worker's process start to every row visible in Trino, and from the first visible row to the
last. It runs as `harness.loaders.kafka_connect.KafkaConnectSink` runs it (one standalone
worker), in the configuration the project measures it with and documents as fair
(docs/benchmarks.md): two tasks (one per partition of the backlog's topic: as parallel as a
sink task can be), the worker's offset flush every second, no dead-letter topic (the backlog
is all valid rows), and the commit interval the bench gives (``--sink-intervals``: 1, 5 and
10 s by default; the sink's own default is 5 minutes, tuned for few large files, and a user who
wants rows within seconds sets a short one). Each interval is a system of its own in the report;
the headline compares the loader with the best. The worker's JVM runs with Connect's launch
scripts' flags (`harness.loaders.kafka_connect.JVM_FLAGS`), recorded with each figure.

A further kind the kit registers (``spark-sink``, ``flink``: command descriptions) runs as
scenarios run it, from its description, at the cadence it declares, timed from its process
start to every row visible.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from icefloe.harness.bench.cores import lifetime_cpu_s
from icefloe.harness.bench.figures import KAFKA_CONNECT, PEER, Throughput, describe_jvm
from icefloe.harness.bench.workload import data_files, watch_until_visible
from icefloe.harness.loaders.kafka_connect import (
    DEFAULT_OFFSET_FLUSH_INTERVAL_MS,
    KafkaConnectSettings,
    KafkaConnectSink,
)
from icefloe.harness.provision import versions
from icefloe.harness.provision.jdk import read_jdk

TIMEOUT_S = 3600
TASKS = 2
"""One sink task per partition of the backlog's topic: as parallel as a sink task can be."""


def sink_provisioned(stack: Any) -> bool:
    """Whether the sink's jars are in the cache (the default bench then measures it)."""
    from icefloe.harness.provision.kafka_connect import KafkaConnectJars
    from icefloe.harness.provision.layout import Layout

    return KafkaConnectJars.of(Layout(stack.config.cache_dir)).is_provisioned()


def run_kafka_connect(
    stack: Any, folder: Path, table: str, topic: str, rows: int, commit_interval_s: float
) -> Throughput:
    """The Kafka Connect sink, committing every ``commit_interval_s``, on a backlog of ``rows``
    rows of ``topic``, into ``table``.

    The sink's jars are provisioned first if they are not in the cache (not timed).

    Raises:
        RuntimeError: the worker or a task stopped, or not every row was visible within an hour.
    """
    settings = KafkaConnectSettings(
        name=f"bench-{uuid.uuid4().hex[:6]}",
        table=table,
        topics=(topic,),
        tasks_max=TASKS,
        commit_interval_ms=round(commit_interval_s * 1000),
        offset_flush_interval_ms=DEFAULT_OFFSET_FLUSH_INTERVAL_MS,
    )
    sink = KafkaConnectSink(settings, stack, folder)
    sink.prepare()  # jars, control topic, properties: before the clock starts
    try:
        sink.start(wait=False)
        assert sink.started_at is not None

        def alive() -> str | None:
            if not sink.is_running():
                return f"the worker exited:\n{sink.log_tail(20)}"
            health = sink.health()
            if health.failed:
                return f"the sink failed: {dict(health.traces)}"
            return None

        seen = watch_until_visible(stack, table, rows, sink.started_at, TIMEOUT_S, alive)
        cpu_s = lifetime_cpu_s(sink.process.pid)
    finally:
        sink.close()
        with contextlib.suppress(Exception):  # a control topic left behind skews no figure
            sink.delete_created_topics()
    return Throughput(
        KAFKA_CONNECT,
        f"peer: Iceberg Kafka Connect sink {versions.ICEBERG_KAFKA_CONNECT}, "
        f"{commit_interval_s:g} s commits",
        PEER,
        rows,
        seen.all_seconds,
        seen.first_seconds,
        seen.first_rows,
        detail=(
            f"standalone worker, tasks.max {TASKS}, commit interval {commit_interval_s:g} s, "
            f"offset flush {DEFAULT_OFFSET_FLUSH_INTERVAL_MS / 1000:g} s"
        ),
        files=data_files(stack, table),
        commit_interval_s=commit_interval_s,
        jvm=worker_jvm(sink.command()),
        cpu_s=cpu_s,
    )


def worker_jvm(command: Sequence[str]) -> str:
    """The Java and JVM flags of the worker's command line (``KafkaConnectSink.command``): the
    options before its class path, but the log configuration's."""
    end = command.index("-cp") if "-cp" in command else len(command)
    flags = [w for w in command[1:end] if not w.startswith("-Dlog4j2.")]
    found = read_jdk(Path(command[0]).parent.parent)
    return describe_jvm(found.feature if found else None, flags)


def run_shipped(
    stack: Any, name: str, folder: Path, table: str, topic: str, rows: int
) -> Throughput:
    """The shipped command loader ``name`` (``harness.loaders.kinds``) on a backlog of ``rows``
    rows of ``topic``, into ``table``, as its description runs it.

    Raises:
        RuntimeError: it exited, or not every row was visible within an hour.
    """
    from icefloe.harness.history import History
    from icefloe.harness.loaders.base import LoaderTarget
    from icefloe.harness.loaders.kinds import resolve

    kind = resolve(name)
    target = LoaderTarget(f"bench-{uuid.uuid4().hex[:6]}", table, (topic,), None, folder)
    loader: Any = kind.make(target, stack, History.of([]))
    try:
        started = time.monotonic()
        loader.start(wait=False)

        def alive() -> str | None:
            return None if loader.is_running() else f"it exited:\n{loader.log_tail(20)}"

        seen = watch_until_visible(stack, table, rows, started, TIMEOUT_S, alive)
        process = getattr(loader, "process", None)  # a kind run as a local process has one
        cpu_s = lifetime_cpu_s(getattr(process, "pid", None))
    finally:
        loader.close()
    observer = kind.observer(target)
    runs_on = kind.describe().get("runs on")
    return Throughput(
        name.replace("-", "_"),
        f"peer: {name}" + (f" ({runs_on})" if runs_on else ""),
        PEER,
        rows,
        seen.all_seconds,
        seen.first_seconds,
        seen.first_rows,
        detail=f"{kind.describe()['command']}; commits every {observer.cadence_s:g} s",
        files=data_files(stack, table),
        commit_interval_s=observer.cadence_s,
        cpu_s=cpu_s,
    )
