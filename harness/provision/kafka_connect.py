"""The Apache Iceberg Kafka Connect sink and a Kafka Connect worker, provisioned on demand.

A peer loader the harness can put under the same tests as icefloe's own. Nothing here is part
of `make up`: the first start of the sink (``harness.loaders.kafka_connect``) or an explicit
call resolves both bundles from Maven Central with the project's Ivy resolver and keeps them in
the cache. Iceberg publishes no runtime zip on Maven Central, so the sink's ``lib/`` is
assembled from its modules as Iceberg's own distribution assembles it (versions.py says which,
and with which exclusions).

Layout, under ``<cache>/kafka-connect/<kafka>-<iceberg>/``:

- ``worker/``: the Connect worker's class path (connect-runtime and friends, log4j2);
- ``sink/``: the sink's jars and their dependencies;
- ``plugins/iceberg-kafka-connect``: a link to ``sink/``; ``plugins/`` is the worker's
  ``plugin.path``, so the sink loads in its own class loader, as in a real deployment.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from icefloe.harness.console import say
from icefloe.harness.provision import ivy, jdk, versions
from icefloe.harness.provision.download import download
from icefloe.harness.provision.layout import Layout
from icefloe.harness.provision.lock import held

PLUGIN_NAME = "iceberg-kafka-connect"
_TIMING_FILE = "provisioned.json"


@dataclass(frozen=True)
class KafkaConnectJars:
    """Where the provisioned worker and sink live.

    Attributes:
        root: The folder of this Kafka and Iceberg version pair.
    """

    root: Path

    @classmethod
    def of(cls, layout: Layout) -> KafkaConnectJars:
        """The folders for the pinned versions in ``layout``'s cache."""
        folder = f"{versions.KAFKA}-{versions.ICEBERG_KAFKA_CONNECT}"
        return cls(layout.cache / "kafka-connect" / folder)

    @property
    def worker_lib(self) -> Path:
        return self.root / "worker"

    @property
    def sink_lib(self) -> Path:
        return self.root / "sink"

    @property
    def plugin_path(self) -> Path:
        """The worker's ``plugin.path``: one folder holding the sink's folder alone."""
        return self.root / "plugins"

    @property
    def classpath(self) -> str:
        """The worker's class path (a wildcard Java expands)."""
        return str(self.worker_lib / "*")

    def is_provisioned(self) -> bool:
        return (
            self.worker_lib.is_dir()
            and self.sink_lib.is_dir()
            and (self.plugin_path / PLUGIN_NAME).is_dir()
        )

    def provision_seconds(self) -> float | None:
        """How long the cold provisioning took, as recorded when it ran (None if unknown)."""
        try:
            return float(json.loads((self.root / _TIMING_FILE).read_text())["seconds"])
        except (FileNotFoundError, ValueError, KeyError):
            return None


def java(layout: Layout) -> Path:
    """The Java the worker runs on: the broker's (the worker is Kafka's own code).

    Raises:
        harness.provision.jdk.NoJdk: none fits and none could be installed.
    """
    return jdk.choose("kafka", layout.cache, install=True).java


def provision(layout: Layout) -> KafkaConnectJars:
    """Resolve the worker and the sink into the cache unless they are there already.

    Args:
        layout: The provisioning cache.

    Returns:
        Where they are.

    Raises:
        harness.provision.ivy.ResolveError: Ivy could not resolve a bundle.
        harness.provision.jdk.NoJdk: no Java for Ivy or the worker.
    """
    jars = KafkaConnectJars.of(layout)
    if jars.is_provisioned():
        return jars
    with held(jars.root.with_name(jars.root.name + ".lock")):  # another process provisioning
        if not jars.is_provisioned():
            _provision(layout, jars)
    return jars


def _provision(layout: Layout, jars: KafkaConnectJars) -> None:
    started = time.monotonic()
    ivy_jar = download(
        versions.IVY_JAR.url,
        layout.downloads / versions.IVY_JAR.filename,
        sha1_url=versions.IVY_JAR.url + ".sha1",
    )
    runtime = java(layout)
    if not jars.worker_lib.is_dir():
        ivy.resolve(
            runtime,
            ivy_jar,
            "kafka-connect-worker",
            versions.KAFKA_CONNECT_WORKER_MODULES,
            jars.worker_lib,
        )
    if not jars.sink_lib.is_dir():
        ivy.resolve(
            runtime,
            ivy_jar,
            "iceberg-kafka-connect",
            versions.KAFKA_CONNECT_SINK_MODULES,
            jars.sink_lib,
            overrides=versions.KAFKA_CONNECT_SINK_OVERRIDES,
            excludes=versions.KAFKA_CONNECT_SINK_EXCLUDES,
        )
    jars.plugin_path.mkdir(parents=True, exist_ok=True)
    link = jars.plugin_path / PLUGIN_NAME
    if not link.exists():
        link.unlink(missing_ok=True)  # a dangling link
        link.symlink_to(Path("..") / jars.sink_lib.name, target_is_directory=True)
    took = time.monotonic() - started
    (jars.root / _TIMING_FILE).write_text(json.dumps({"seconds": round(took, 1)}))
    say(f"kafka connect {versions.KAFKA} + iceberg sink {versions.ICEBERG}: {took:.0f} s")
