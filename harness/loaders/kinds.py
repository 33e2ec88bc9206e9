"""The loader kinds ``--loader NAME`` chooses from: ``icefloe``, ``kafka-connect`` and
``command:FILE`` (a loader described by a command line and a configuration template)."""

from __future__ import annotations

from pathlib import Path

from harness.loaders.base import LoaderKind

__all__ = ["NAMES", "resolve"]

NAMES = ("icefloe", "kafka-connect", "command:FILE")
"""What ``--loader`` accepts, for help texts."""


def resolve(name: str | None) -> LoaderKind:
    """The loader kind ``name`` names (``None``: icefloe's own).

    Args:
        name: ``icefloe``, ``kafka-connect`` or ``command:<path to its TOML description>``.

    Returns:
        The kind.

    Raises:
        ValueError: an unknown name.
        harness.loaders.command.SpecError: a command loader's description is wrong.
        OSError: its description cannot be read.
    """
    from harness.loaders import command, icefloe, kafka_connect

    if name is None or name == icefloe.NAME:
        return icefloe.IcefloeKind()
    if name == kafka_connect.NAME:
        return kafka_connect.KafkaConnectKind()
    if name.startswith(command.PREFIX):
        return command.CommandKind(command.load_spec(Path(name.removeprefix(command.PREFIX))))
    raise ValueError(f"unknown loader {name!r}; one of {', '.join(NAMES)}")
