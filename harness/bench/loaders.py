"""The loader on a backlog: sustained rows/s in local mode and on a two-worker Spark cluster.

Local mode runs the loader as `icefloe loader start` does (`harness.loaders.process`: ``python -m
loader run --config FILE``, Spark ``local[2]`` in its JVM). Cluster mode submits the same loader
with spark-submit to a standalone master with two workers of one core each
(`harness.loaders.cluster`), the way `tests/loader/test_cluster_integration.py` does. Both are timed
from the process start (the loader's Python, or spark-submit) to every row visible in Trino,
and from the first visible row to the last.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from icefloe.harness.bench.cores import lifetime_cpu_s
from icefloe.harness.bench.figures import LOADER, LOADER_LOCAL, Throughput, describe_jvm
from icefloe.harness.bench.profile import steps_from_log
from icefloe.harness.bench.workload import Visibility, data_files, watch_until_visible
from icefloe.harness.history import History
from icefloe.harness.loaders.cluster import (
    Daemon,
    python_children,
    spark_env,
    standalone_cluster,
    submit_argv,
)
from icefloe.harness.loaders.config import secret_key_file, stack_loader_config
from icefloe.harness.loaders.icefloe import NO_LIMIT, icefloe_config
from icefloe.harness.loaders.process import LoaderProcess
from icefloe.harness.provision.jdk import read_jdk
from icefloe.loader.config import JVM_COLLECTORS, JVM_COMPILERS, SparkConfig
from icefloe.loader.secret import Secret

TIMEOUT_S = 3600
WORKERS = 2
BACKLOG_TRIGGER_S = 1.0
"""The trigger interval of the backlog runs, not the loader's default: on a backlog a batch
takes ``max_offsets_per_trigger`` records at once, so a short interval only starts the next
batch as soon as the last one is done, which is what a throughput measure wants."""


def local_loader(
    stack: Any,
    folder: Path,
    table: str,
    topic: str,
    trigger_s: float,
    per_trigger: int | None,
    tuning: Mapping[str, Any] | None = None,
) -> LoaderProcess:
    """A loader process (not started) for ``topic`` into ``table``, its state in ``folder``:
    the loader's defaults but for its trigger interval and batch cap (``per_trigger``; None: no
    cap) and ``tuning``, further settings by section or dotted key (``BenchOptions.tuning``).
    Its metrics are off (``metrics_port = 0``, ``stack_loader_config``)."""
    cap = NO_LIMIT if per_trigger is None else per_trigger
    settings = {"trigger_interval": trigger_s, "kafka.max_offsets_per_trigger": cap}
    config = icefloe_config(
        stack,
        table,
        (topic,),
        {**settings, **(tuning or {})},
        loader_id=f"bench-{uuid.uuid4().hex[:6]}",
        origin="the bench's settings",
    )
    folder.mkdir(parents=True, exist_ok=True)
    return LoaderProcess(config, stack, folder, History(folder / "history.jsonl"))


def started_after(loader: LoaderProcess) -> float | None:
    """Seconds from the loader's process start to its "starting" line, if it got there."""
    for event in loader.history.events:
        if event.name == "start" and event.phase == "ok":
            return float(event.data["seconds"])
    return None


def run_local(
    stack: Any,
    folder: Path,
    table: str,
    topic: str,
    rows: int,
    per_trigger: int,
    tuning: Mapping[str, Any] | None = None,
) -> Throughput:
    """The loader in local mode, with the settings of ``tuning``, on a backlog of ``rows`` rows
    of ``topic``.

    Raises:
        RuntimeError: the loader stopped, or not every row was visible within an hour.
    """
    loader = local_loader(stack, folder, table, topic, BACKLOG_TRIGGER_S, per_trigger, tuning)
    jvm = driver_jvm(loader.settings.spark)  # before the start, which may make the archive
    started, started_wall = time.monotonic(), time.time()
    loader.start(wait=False, track=True)
    try:

        def alive() -> str | None:
            return None if loader.is_running() else f"exited:\n{loader.log_tail(20)}"

        seen = watch_until_visible(stack, table, rows, started, TIMEOUT_S, alive)
        cpu_s = lifetime_cpu_s(loader.process.pid)
    finally:
        loader.close()
    ready = started_after(loader)
    ready_text = f', "starting" after {ready:.1f} s' if ready is not None else ""
    ready_text += _tuned(tuning)
    figure = _throughput(
        stack,
        table,
        LOADER_LOCAL,
        "loader, local[2]",
        rows,
        seen,
        f"{BACKLOG_TRIGGER_S:g} s trigger, {per_trigger:,} per batch{ready_text}",
    )
    log = loader.process.log_file.read_text(errors="replace")
    steps = steps_from_log(log, started_wall, seen.all_seconds)
    return dataclasses.replace(figure, jvm=jvm, steps=steps, cpu_s=cpu_s)


def driver_jvm(spark: SparkConfig) -> str:
    """The Java and the JVM flags that bear on speed of a local loader's driver, from its
    ``[spark]`` settings: the heap (Spark's launcher gives ``-Xmx`` from ``driver_memory``),
    the collector, the compilers (no flag for ``tiered``, Java's own default) and the class-data
    archive (mapped when it exists, else made as the JVM exits)."""
    flags = [f"-Xmx{spark.driver_memory}", JVM_COLLECTORS[spark.gc.lower()]]
    compiler = JVM_COMPILERS[spark.jit.lower()]
    if compiler:
        flags.append(compiler)
    if spark.class_data:
        archive = Path(spark.class_data)
        if archive.is_file():
            flags.append(f"-XX:SharedArchiveFile={archive.name}")
        else:
            flags.append(f"-XX:ArchiveClassesAtExit (makes {archive.name})")
    found = read_jdk(Path(spark.java_home)) if spark.java_home else None
    return describe_jvm(found.feature if found else None, flags)


def run_cluster(
    stack: Any,
    folder: Path,
    table: str,
    topic: str,
    rows: int,
    per_trigger: int,
    tuning: Mapping[str, Any] | None = None,
) -> Throughput:
    """The loader submitted to a standalone cluster of two one-core workers, on the backlog.

    The cluster is started first and not timed; the clock starts with spark-submit.

    Raises:
        RuntimeError: the loader stopped, or not every row was visible within an hour.
        TimeoutError: the workers did not register.
    """
    from icefloe import loader

    folder.mkdir(parents=True, exist_ok=True)
    config = stack_loader_config(
        stack,
        table,
        [topic],
        secret=Secret.from_file(secret_key_file(stack)),
        kafka={"max_offsets_per_trigger": per_trigger, **(tuning or {}).get("kafka", {})},
        loader_id=f"bench-cluster-{uuid.uuid4().hex[:6]}",
        trigger_interval=BACKLOG_TRIGGER_S,
        checkpoint_location=str(folder / "checkpoint"),
    )
    config_file = folder / "loader.toml"
    config_file.write_text(config.to_toml())
    # The loader's own entry script, as a file of its own (spark-submit runs a file).
    entry = folder / "run_loader.py"
    entry.write_text((Path(loader.__file__).parent / "__main__.py").read_text())
    base = {k: v for k, v in os.environ.items() if not k.startswith("ICEFLOE_LOADER_")}
    env = spark_env(folder, stack.config.cache_dir, base)
    with standalone_cluster(folder, env, workers=WORKERS, worker_memory="1g") as cluster:
        argv = submit_argv(
            cluster,
            stack.config.cache_dir,
            entry,
            ["run", "--config", str(config_file)],
            executor_memory="768m",
            driver_memory="1g",
        )
        started = time.monotonic()
        submit = Daemon(argv, env, folder / "submit.log", folder)
        try:

            def alive() -> str | None:
                code = submit.proc.poll()
                return None if code is None else f"exited with {code}:\n{submit.tail(20)}"

            seen = watch_until_visible(stack, table, rows, started, TIMEOUT_S, alive)
            # A graceful stop: SIGTERM to the driver's Python, as an operator would.
            for driver in python_children(submit.proc.pid):
                os.kill(driver, signal.SIGTERM)
            submit.proc.wait(120)
        finally:
            submit.stop(signal.SIGKILL, timeout_s=10)
    return _throughput(
        stack,
        table,
        "loader_cluster",
        f"loader, standalone cluster ({WORKERS} workers x 1 core)",
        rows,
        seen,
        f"{BACKLOG_TRIGGER_S:g} s trigger, {per_trigger:,} per batch, "
        f"spark-submit client mode{_tuned(tuning)}",
    )


def _tuned(tuning: Mapping[str, Any] | None) -> str:
    """``tuning``'s settings for the report: ``, jit quick, first slice 20,000``."""
    tuning = tuning or {}
    text = ""
    if "jit" in tuning.get("spark", {}):
        text += f", jit {tuning['spark']['jit']}"
    if "first_slice_records" in tuning.get("kafka", {}):
        text += f", first slice {tuning['kafka']['first_slice_records']:,}"
    return text


def _throughput(
    stack: Any, table: str, key: str, label: str, rows: int, seen: Visibility, detail: str
) -> Throughput:
    return Throughput(
        key,
        label,
        LOADER,
        rows,
        seen.all_seconds,
        seen.first_seconds,
        seen.first_rows,
        detail,
        files=data_files(stack, table),
    )
