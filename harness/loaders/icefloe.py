"""icefloe's own loader as a loader kind: its configuration model built directly, its process.

A run's icefloe loader gets the loader's own configuration model (``loader.config.LoaderConfig``)
with the loader's own defaults: the stack fills in endpoints, credentials and the Spark runtime
(``harness.loaders.config.stack_loader_config``), then the run's settings are layered on by the
loader's own codecs, as a file or a flag would be (``loader.settings.override``). The harness
means something other than the loader in one setting only, :data:`HARNESS_SETTINGS`, and says
why there.
"""

from __future__ import annotations

from typing import Any

from harness.loaders.base import Capability, LoaderTarget
from harness.loaders.config import stack_loader_config
from harness.loaders.process import NO_BATCH_LIMIT, LoaderProcess
from loader import settings as loader_settings
from loader.config import LoaderConfig

__all__ = ["HARNESS_SETTINGS", "NAME", "IcefloeKind"]

NAME = "icefloe"

NO_LIMIT = 0
"""How a file says "no batch limit" (``kafka.max_offsets_per_trigger = 0``)."""

HARNESS_SETTINGS: dict[str, Any] = {
    "kafka.max_offsets_per_trigger": NO_LIMIT if NO_BATCH_LIMIT is None else NO_BATCH_LIMIT,
}
"""The settings where a run's loader differs from the loader's defaults, and only these.

``kafka.max_offsets_per_trigger``: no batch cap (``harness.loaders.process.NO_BATCH_LIMIT``
says why: a scenario's backlog is small, and the ``burst`` fault's rate is read from the cap).
Everything else is the loader's own default, read from ``loader/config.py``; a scenario's
``[loader]`` table sets more on top.
"""


class IcefloeKind:
    """Makes icefloe loader processes (``python -m loader run``) for a run.

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
        config = stack_loader_config(
            stack,
            target.table,
            target.topics,
            loader_id=target.loader_id,
            dead_letter_topic=target.dead_letter_topic,
        )
        values = {**HARNESS_SETTINGS, **target.settings, **target.endpoints}
        return loader_settings.override(config, values, "the run's [loader] settings")

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
        trigger = target.settings.get("trigger_interval")
        if trigger is None:
            trigger = loader_settings.default(LoaderConfig, "trigger_interval")
        return 2 * float(loader_settings.parse(LoaderConfig, "trigger_interval", trigger, "run"))

    def describe(self) -> dict[str, Any]:
        return {
            "loader": "icefloe (python -m loader run)",
            "defaults": "the loader's own (loader/config.py)",
            "harness settings": dict(HARNESS_SETTINGS),
        }
