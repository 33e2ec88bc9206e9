"""The reference design's Flink runtime, provisioned on demand: PyFlink in a virtualenv of its
own and the jars its job needs, in the cache.

Nothing here is part of `make up`: the first start of ``--loader flink`` (its description's
``${flink_python}`` placeholder) provisions it. ``apache-flink`` pins packages the kit's own
virtualenv holds at other versions, so it gets its own (about 825 MB, 46 s cold on two cores).
Layout, under ``<cache>/flink/<flink>-<iceberg>/``:

- ``venv/``: PyFlink (``versions.FLINK``);
- ``jars/``: the Iceberg Flink runtime, Iceberg's AWS bundle and Flink's Kafka connector, given
  to the job as ``pipeline.jars``;
- ``hadoop/``: Hadoop's shaded client, on the JVM's own class path (``HADOOP_CLASSPATH``).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from icefloe.harness.console import say
from icefloe.harness.provision import jdk, pyvenv, versions
from icefloe.harness.provision.download import download
from icefloe.harness.provision.layout import Layout

_TIMING_FILE = "provisioned.json"


@dataclass(frozen=True)
class FlinkRuntime:
    """Where the provisioned Flink runtime lives.

    Attributes:
        root: The folder of this Flink and Iceberg version pair.
    """

    root: Path

    @classmethod
    def of(cls, layout: Layout) -> FlinkRuntime:
        """The folders for the pinned versions in ``layout``'s cache."""
        return cls(layout.cache / "flink" / f"{versions.FLINK}-{versions.ICEBERG_FLINK}")

    @property
    def venv(self) -> Path:
        return self.root / "venv"

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    @property
    def jars(self) -> Path:
        return self.root / "jars"

    @property
    def hadoop(self) -> Path:
        return self.root / "hadoop"

    def pipeline_jars(self) -> list[Path]:
        """The job's ``pipeline.jars``, in the pinned order."""
        return [self.jars / a.filename for a in versions.FLINK_PIPELINE_JARS]

    def hadoop_classpath(self) -> str:
        """``HADOOP_CLASSPATH``: Hadoop's client jars, for the JVM's own class path."""
        return os.pathsep.join(str(self.hadoop / a.filename) for a in versions.FLINK_HADOOP_JARS)

    def is_provisioned(self) -> bool:
        return (
            (self.root / _TIMING_FILE).is_file()
            and self.python.is_file()
            and all(p.is_file() for p in self.pipeline_jars())
        )


def java_home(layout: Layout) -> Path:
    """The Java home the job runs on (``versions.JAVA_RANGES["flink"]``).

    Raises:
        harness.provision.jdk.NoJdk: none fits and none could be installed.
    """
    return jdk.choose("flink", layout.cache, install=True).home


def provision(layout: Layout) -> FlinkRuntime:
    """Install PyFlink and fetch the job's jars into the cache unless they are there already.

    Raises:
        harness.provision.download.DownloadError: a jar could not be fetched.
        subprocess.CalledProcessError: the virtualenv or pip failed (its output is shown).
    """
    runtime = FlinkRuntime.of(layout)
    if runtime.is_provisioned():
        return runtime
    started = time.monotonic()
    for artifact in versions.FLINK_PIPELINE_JARS:
        download(artifact.url, runtime.jars / artifact.filename, sha1_url=artifact.url + ".sha1")
    for artifact in versions.FLINK_HADOOP_JARS:
        download(artifact.url, runtime.hadoop / artifact.filename, sha1_url=artifact.url + ".sha1")
    if not runtime.python.is_file():
        pyvenv.install(runtime.venv, f"apache-flink=={versions.FLINK}")
    took = time.monotonic() - started
    (runtime.root / _TIMING_FILE).write_text(json.dumps({"seconds": round(took, 1)}))
    say(f"flink {versions.FLINK} + iceberg {versions.ICEBERG_FLINK} for flink: {took:.0f} s")
    return runtime
