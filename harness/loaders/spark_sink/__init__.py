"""Spark's own streaming sink as a loader kind: its job (``job.py``) and the descriptions the
kit runs it by (``spark-sink.toml``, ``spark-sink-failfast.toml``, command-loader files)."""

from collections.abc import Callable
from pathlib import Path

from icefloe.harness.loaders.base import LoaderKind, loader_kind

HERE = Path(__file__).parent
SPECS = {
    "spark-sink": HERE / "spark-sink.toml",
    "spark-sink-failfast": HERE / "spark-sink-failfast.toml",
}
"""``--loader`` name -> its description."""


def _shipped(name: str) -> Callable[[], LoaderKind]:
    """What makes the kind ``name``: its description, read when the kind is asked for."""

    def make() -> LoaderKind:
        from icefloe.harness.loaders import command
        from icefloe.harness.provision import versions

        runs_on = f"Spark {versions.SPARK}, Iceberg {versions.ICEBERG}"
        return command.CommandKind(command.load_spec(SPECS[name]), name, runs_on)

    return make


for _name in SPECS:
    loader_kind(_name)(_shipped(_name))
