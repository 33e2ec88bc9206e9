"""The loader kinds ``--loader NAME`` chooses from: every registered kind (icefloe's own,
``kafka-connect``, Spark's own streaming sink as ``spark-sink`` and ``spark-sink-failfast``) and
``command:FILE`` (a loader described by a command line and a configuration template).

A kind registers itself in its own module (``harness.loaders.base.loader_kind``); a further
kind is one more module in :data:`MODULES`.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from icefloe.harness.loaders.base import KINDS, LoaderKind

__all__ = ["KINDS", "NAMES", "resolve"]

MODULES = (
    "icefloe.harness.loaders.icefloe",
    "icefloe.harness.loaders.kafka_connect",
    "icefloe.harness.loaders.spark_sink",
    "icefloe.harness.loaders.flink",
)
"""The modules whose kinds ``--loader`` knows by name."""

for _module in MODULES:
    importlib.import_module(_module)

NAMES = (*KINDS, "command:FILE")
"""What ``--loader`` accepts, for help texts."""


def resolve(name: str | None) -> LoaderKind:
    """The loader kind ``name`` names (``None``: icefloe's own).

    Args:
        name: One of :data:`NAMES`, or ``command:<path to its TOML description>``.

    Returns:
        The kind.

    Raises:
        ValueError: an unknown name.
        harness.loaders.command.SpecError: a command loader's description is wrong.
        OSError: its description cannot be read.
    """
    from icefloe.harness.loaders import command, icefloe

    name = name or icefloe.NAME
    if name in KINDS:
        return KINDS[name]()
    if name.startswith(command.PREFIX):
        return command.CommandKind(command.load_spec(Path(name.removeprefix(command.PREFIX))))
    raise ValueError(f"unknown loader {name!r}; one of {', '.join(NAMES)}")
