"""The reference design's Flink job as a loader kind: its job (``job.py``) and the description
the kit runs it by (``flink.toml``, a command-loader file). Its runtime is provisioned on
demand (``harness.provision.flink``) the first time a description asks for it."""

from pathlib import Path

from icefloe.harness.loaders.base import LoaderKind, loader_kind

SPEC = Path(__file__).with_name("flink.toml")


@loader_kind("flink")
def _flink() -> LoaderKind:
    from icefloe.harness.loaders import command
    from icefloe.harness.provision import versions

    runs_on = f"Flink {versions.FLINK}, Iceberg {versions.ICEBERG_FLINK}"
    return command.CommandKind(command.load_spec(SPEC), "flink", runs_on)
