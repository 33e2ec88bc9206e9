"""icefloe's own loader as a loader kind: its configuration model built directly, its process.

Every loader the harness starts (a run's, the bench's, the demo's, `icefloe loader start`'s)
gets the loader's own configuration model (``loader.config.LoaderConfig``) with the loader's
own defaults, built by :func:`icefloe_config`: the stack fills in endpoints, credentials and the
Spark runtime (``harness.loaders.config.stack_loader_config``), then the caller's settings are
layered on by their dotted keys through the loader's own codecs, as a file or a flag would be
(``loader.settings.override``). A run's loader differs from the loader's defaults in one
setting only, :data:`HARNESS_SETTINGS`, which says why.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from icefloe.harness.loaders.base import Capability, LoaderTarget, loader_kind
from icefloe.harness.loaders.config import stack_loader_config
from icefloe.harness.loaders.process import LoaderProcess
from icefloe.harness.observer import Observer, icefloe_observer
from icefloe.loader import settings as loader_settings
from icefloe.loader.config import LoaderConfig

__all__ = ["HARNESS_SETTINGS", "NAME", "NO_LIMIT", "IcefloeKind", "icefloe_config"]

NAME = "icefloe"

NO_LIMIT = 0
"""How a file says "no batch limit" (``kafka.max_offsets_per_trigger = 0``)."""

HARNESS_SETTINGS: dict[str, Any] = {"kafka.max_offsets_per_trigger": NO_LIMIT}
"""The settings where a run's loader differs from the loader's defaults, and only these.

``kafka.max_offsets_per_trigger``: no batch cap. The loader's cap (``loader/config.py``) keeps
a backlog of a million rows from exhausting the driver's heap; a scenario publishes at most
tens of thousands, and its ``burst`` fault publishes at the cap over the trigger interval, or
at 1,000 messages a second when there is no cap (the loader's cap would make that 100,000 a
second at its 5 s batches). Everything else is the loader's own default; a scenario's ``[loader]``
table sets more on top.
"""


def _trigger_s(target: LoaderTarget) -> float:
    """The trigger interval a target's loader runs with (its own default when unset)."""
    trigger = target.settings.get("trigger_interval")
    if trigger is None:
        trigger = loader_settings.default(LoaderConfig, "trigger_interval")
    return float(loader_settings.parse(LoaderConfig, "trigger_interval", trigger, "run"))


def icefloe_config(
    stack: Any,
    table: str,
    topics: Sequence[str],
    settings: Mapping[str, Any] | None = None,
    *,
    loader_id: str,
    dead_letter_topic: str | None = None,
    origin: str = "the harness's settings",
) -> LoaderConfig:
    """The loader's own configuration for loading ``topics`` of ``stack`` into ``table``.

    Args:
        stack: A :class:`harness.stack.lakehouse.Stack`.
        table: ``catalog.schema.table``.
        topics: The source topics.
        settings: Further loader settings by dotted key (or a section's table), each a TOML
            value or a flag's text, read by the loader's codecs: e.g. ``{"trigger_interval":
            2.0, "kafka.max_offsets_per_trigger": 0, "spark": {"jit": "quick"}}``. What they
            leave out is the loader's default (``metrics_port``: 0, see
            ``stack_loader_config``).
        loader_id: Its id (its lease on the table).
        dead_letter_topic: Where malformed records go (None: the loader stops at one).
        origin: Where ``settings`` come from, for messages.

    Returns:
        The configuration (its checkpoint is placed when a ``LoaderProcess`` starts it).

    Raises:
        loader.errors.ConfigError: A setting the loader refuses (named, with ``origin``).
    """
    config = stack_loader_config(
        stack, table, topics, loader_id=loader_id, dead_letter_topic=dead_letter_topic
    )
    if not settings:
        return config
    return loader_settings.override(config, settings, origin)


@loader_kind(NAME)
class IcefloeKind:
    """Makes icefloe loader processes (``python -m icefloe.loader run``) for a run.

    Args:
        name: How ``--loader`` names it.
    """

    capabilities = frozenset(Capability)

    def __init__(self, name: str = NAME) -> None:
        self.name = name

    def config(self, target: LoaderTarget, stack: Any) -> LoaderConfig:
        """The loader's configuration for ``target`` (its checkpoint is placed at start).

        Raises:
            loader.errors.ConfigError: a setting the loader refuses (named, with its origin).
        """
        return icefloe_config(
            stack,
            target.table,
            target.topics,
            {**HARNESS_SETTINGS, **target.settings, **target.endpoints},
            loader_id=target.loader_id,
            dead_letter_topic=target.dead_letter_topic,
            origin="the run's [loader] settings",
        )

    def make(self, target: LoaderTarget, stack: Any, history: Any) -> LoaderProcess:
        return LoaderProcess(
            self.config(target, stack),
            stack,
            target.state_dir,
            history,
            restart_on_exit=target.restart_on_exit,
            hooks=target.hooks,
        )

    def retarget(self, loader: Any, target: LoaderTarget) -> None:
        loader.configure(self.config(target, loader.stack))

    def settle_s(self, target: LoaderTarget) -> float:
        return 2 * _trigger_s(target)

    def observer(self, target: LoaderTarget) -> Observer:
        """The loader's keys (``loader.keys``): its commits name their loader id, its position
        is the offsets of its newest commit on main, it commits once per trigger."""
        return icefloe_observer(_trigger_s(target))

    def describe(self) -> dict[str, Any]:
        return {
            "loader": "icefloe (python -m icefloe.loader run)",
            "defaults": "the loader's own (loader/config.py)",
            "harness settings": dict(HARNESS_SETTINGS),
        }
