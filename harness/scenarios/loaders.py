"""The run's loaders: the one that loads now, its successors, and those it replaced.

A run has one current loader, of the kind the run was given (``--loader``: icefloe's own, the
Kafka Connect sink, a command line; ``harness.loaders``), driven through the loader interface
(``harness.loaders.base.Loader``) only. It is started, stopped and killed through
:class:`LoaderControl`; a zombie-writer fault starts a *successor* (another loader id, its own
state), which becomes the current loader, and keeps the frozen one aside until it is thawed and
steps down.

The scenario's ``[loader]`` table is :class:`LoaderOptions`, checked when the file is read. Its
loader settings are icefloe's own, by the loader's keys (:data:`SETTING_KEYS`); one left out
is not given at all, so the loader's own default applies (``loader/config.py``), or the
harness's where it means something else (``harness.loaders.icefloe.HARNESS_SETTINGS``).
"""

from __future__ import annotations

import dataclasses
import random
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from harness.history import History
from harness.loaders.base import Capability, Loader, LoaderKind, LoaderTarget, TestHooks
from harness.loaders.icefloe import IcefloeKind
from harness.scenarios.world import Names
from loader import settings as loader_settings
from loader.config import LoaderConfig
from loader.faultpoints import PAUSE_POINTS

__all__ = ["SETTING_KEYS", "LoaderControl", "LoaderOptions"]

PausePoint = Literal["planned", "write", "publish", "random"]


ROUTES = ("catalog_proxy", "toxiproxy")
"""The fault points a scenario's loader can be put behind (``LoaderOptions.via``)."""

SETTING_KEYS = {
    "trigger_interval_s": "trigger_interval",
    "exactly_once": "exactly_once",
    "fencing": "fencing",
    "max_offsets_per_trigger": "kafka.max_offsets_per_trigger",
    "lease_ttl_s": "lease_ttl",
    "max_record_bytes": "max_record_bytes",
}
"""The loader setting (its dotted key in ``loader/config.py``) each ``[loader]`` key sets."""

TUNING = ("trigger_interval_s", "max_offsets_per_trigger")
"""``[loader]`` settings that tune icefloe's batches; another kind batches its own way and is
given neither (a scenario setting them still applies to it). The other settings change what
icefloe does (``Capability.SETTINGS``)."""


@dataclass(frozen=True)
class LoaderOptions:
    """A scenario's loader settings (``[loader]``); the stack supplies the rest.

    A loader setting left unset (``None``) is not given: the loader's own default applies,
    or the harness's (``harness.loaders.icefloe.HARNESS_SETTINGS``: no batch cap).

    Attributes:
        trigger_interval_s: Seconds per micro-batch.
        exactly_once: ``False`` turns the loader's offset guard off (a break).
        fencing: ``False`` turns the commit fence off (a break).
        dead_letter: Use the run's dead-letter topic (else halt on a malformed record).
        max_offsets_per_trigger: Cap on records per batch (the loader's maximum rate is this
            over the trigger interval); ``0``: no cap.
        transform: The loader's ``[transform]`` table.
        max_record_bytes: The loader's payload limit.
        kill_after_commit: The first starts SIGKILL themselves after this many commits.
        self_kills: How many starts get ``kill_after_commit``.
        lease_ttl_s: The lease (the loader's default derives it from the trigger interval).
        pause_at: The first start freezes itself at this point of a batch (``random``: a
            point drawn from the run's seed).
        pause_after_commits: Commits before the pause can fire.
        restart_on_exit: Supervised: start again after an exit the harness did not cause.
        settings: Further loader settings by dotted key (``catalog.read_timeout = "5s"``,
            ``progress_timeout = 60``), read by the loader's own codecs.
        via: The fault points the loader under test reaches its services through:
            ``catalog_proxy`` (HTTP faults on the catalog, ``catalog_http``), ``toxiproxy``
            (TCP faults on Kafka, S3 and the catalog, ``wire_*``). Trino, the checkers and the
            publisher keep connecting directly.
    """

    trigger_interval_s: float | None = None
    exactly_once: bool | None = None
    fencing: bool | None = None
    dead_letter: bool = True
    max_offsets_per_trigger: int | None = None
    transform: dict[str, Any] = field(default_factory=dict)
    max_record_bytes: int | None = None
    kill_after_commit: int | None = None
    self_kills: int = TestHooks.self_kills
    lease_ttl_s: float | None = None
    pause_at: PausePoint | None = None
    pause_after_commits: int = 0
    restart_on_exit: bool = False
    settings: dict[str, Any] = field(default_factory=dict)
    via: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        unknown = sorted(set(self.via) - set(ROUTES))
        if unknown:
            raise ValueError(f"via: unknown {unknown}; known: {list(ROUTES)}")
        for name in ("trigger_interval_s", "lease_ttl_s"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ValueError(f"{name} must be > 0")

    @property
    def trigger_s(self) -> float:
        """The trigger interval icefloe's loader runs with (its own default when unset)."""
        if self.trigger_interval_s is not None:
            return self.trigger_interval_s
        return float(loader_settings.default(LoaderConfig, "trigger_interval"))

    @property
    def max_rate(self) -> float | None:
        """Messages per second the loader takes at most (None: no cap)."""
        if not self.max_offsets_per_trigger:
            return None
        return self.max_offsets_per_trigger / self.trigger_s

    def loader_settings(self, *, tuning: bool = True) -> dict[str, Any]:
        """The icefloe loader settings these options set, by the loader's dotted keys.

        Args:
            tuning: Include the batch tuning (``TUNING``); another kind is given none.
        """
        out: dict[str, Any] = {
            key: getattr(self, name)
            for name, key in SETTING_KEYS.items()
            if getattr(self, name) is not None and (tuning or name not in TUNING)
        }
        if self.transform:
            out["transform"] = dict(self.transform)
        out.update(self.settings)
        return out

    def hooks(self) -> TestHooks:
        """The test hooks these options give the first starts."""
        return TestHooks(
            self.kill_after_commit, self.self_kills, self.pause_at, self.pause_after_commits
        )

    def needs(self) -> dict[Capability, str]:
        """What a loader needs to run with these options: capability -> why."""
        out: dict[Capability, str] = {}
        changing = [n for n in self.loader_settings(tuning=False) if n not in self.settings]
        if changing or self.settings:
            named = sorted({*changing, *self.settings})
            out[Capability.SETTINGS] = f"icefloe loader settings {', '.join(named)}"
        if self.kill_after_commit is not None or self.pause_at is not None:
            out[Capability.FAULT_POINTS] = "[loader] kill_after_commit/pause_at (a fault point)"
        if self.via:
            out[Capability.ROUTES] = f"[loader] via = {list(self.via)} (fault proxies)"
        if self.restart_on_exit:
            out[Capability.SUPERVISED] = "[loader] restart_on_exit (a supervisor)"
        return out


class LoaderControl:
    """Starts, stops, kills and replaces the run's loader.

    Args:
        names: The run's topic, dead-letter topic and table.
        stack: The running stack.
        run_dir: The run's folder (``loader/``, ``loader-1/``... go in it).
        history: Where starts, exits, kills and stops are recorded.
        options: The scenario's loader settings.
        rng: The run's seeded random source (draws ``pause_at = "random"``).
        kind: The kind of loader under test (icefloe's own by default).
    """

    def __init__(
        self,
        names: Names,
        stack: Any,
        run_dir: Path,
        history: History,
        options: LoaderOptions,
        rng: random.Random,
        kind: LoaderKind | None = None,
    ) -> None:
        if options.pause_at == "random":
            options = dataclasses.replace(options, pause_at=rng.choice(PAUSE_POINTS))  # type: ignore[arg-type]
        self.names = names
        self.stack = stack
        self.run_dir = run_dir
        self.history = history
        self.options = options
        self.kind: LoaderKind = kind or IcefloeKind()
        self.successors = 0
        self.retired: list[Loader] = []
        self._armed: dict[str, str] = {}
        self._expect: tuple[int, ...] = ()
        self.routes: dict[str, str] = {}
        self.current: Any = self.kind.make(
            self.target(f"scen-{names.topic}", run_dir / "loader"), stack, history
        )

    def target(self, loader_id: str, state_dir: Path, *, hooks: bool = True) -> LoaderTarget:
        """What loader ``loader_id`` loads and how, as the options say.

        Args:
            loader_id: Its id.
            state_dir: Its folder.
            hooks: Give it the options' test hooks (a successor gets none).
        """
        o = self.options
        own = Capability.SETTINGS in self.kind.capabilities
        return LoaderTarget(
            loader_id=loader_id,
            table=self.names.table,
            topics=(self.names.topic,),
            dead_letter_topic=self.names.dead_letter_topic if o.dead_letter else None,
            state_dir=state_dir,
            endpoints=dict(self.routes),
            settings=o.loader_settings(tuning=own) if own else {},
            hooks=o.hooks() if hooks else TestHooks(),
            restart_on_exit=o.restart_on_exit,
        )

    def settle_s(self) -> float:
        """How long to wait after the last expected row is visible (the kind's measure)."""
        return self.kind.settle_s(self.target(self.current.loader_id, self.current.state_dir))

    def _retarget(self) -> None:
        current = self.current
        self.kind.retarget(current, self.target(current.loader_id, current.state_dir))

    # -- the current loader ------------------------------------------------------

    def arm(self, hooks: Mapping[str, str], expect_codes: tuple[int, ...] = ()) -> None:
        """Fault hooks (``loader.faultpoints`` variables) for the next start only, and the exit
        codes they make expected (``-9`` for a self-kill)."""
        self._armed = dict(hooks)
        self._expect = expect_codes

    @property
    def hooks(self) -> dict[str, str]:
        """The hooks the current loader's last start was given."""
        return dict(self.current.hooks)

    def start(self, *, wait: bool = True) -> float:
        """Start the current loader (with hooks armed for this start, if any).

        Args:
            wait: Wait until its streaming query runs; else start it and record the outcome
                when it is known.

        Returns:
            Seconds until started (0 when not waiting).
        """
        hooks, self._armed = self._armed, {}
        expect, self._expect = self._expect, ()
        return float(
            self.current.start(wait=wait, track=not wait, hooks=hooks, expect_codes=expect)
        )

    def stop(self) -> None:
        """Stop the current loader gracefully."""
        self.current.stop()

    def kill(self) -> int | None:
        """kill -9 the current loader; return the pid killed."""
        return self.current.kill()  # type: ignore[no-any-return]

    def restart(self, *, kill: bool = False, fresh_checkpoint: bool = False) -> float:
        """Stop (or kill) the current loader and start it again.

        Args:
            kill: kill -9 instead of a graceful stop.
            fresh_checkpoint: Delete its Spark checkpoint first.

        Returns:
            Seconds until started.
        """
        if kill:
            self.current.kill()
        else:
            self.current.stop()
        if fresh_checkpoint:
            shutil.rmtree(self.current.state_dir / "checkpoint", ignore_errors=True)
            self.history.record("loader", "info", "checkpoint_deleted")
        return self.start()

    def configure(self, changes: Mapping[str, Any]) -> None:
        """Change loader options for the next start of the current loader."""
        self.options = dataclasses.replace(self.options, **dict(changes))
        self._retarget()
        self.history.record("loader", "info", "configured", **dict(changes))

    def route(self, routes: Mapping[str, str]) -> None:
        """Point the loader's endpoints (``kafka.bootstrap``, ``catalog.uri``,
        ``catalog.s3_endpoint``) at fault proxies, for every start from now on."""
        self.routes = dict(routes)
        self._retarget()
        self.history.record("loader", "info", "routed", **self.routes)

    def is_running(self) -> bool:
        return bool(self.current.is_running())

    # -- successors -----------------------------------------------------------------

    def start_successor(self, *, wait: bool = True) -> tuple[Loader, float]:
        """Start a second loader (another loader id, its own state) on the same table.

        The new loader becomes the current one; the one it replaces is returned (to be thawed
        and retired), with the seconds the new one took to start.
        """
        previous = self.current
        self.successors += 1
        target = self.target(
            f"scen-{self.names.topic}-{self.successors}",
            self.run_dir / f"loader-{self.successors}",
            hooks=False,
        )
        target = dataclasses.replace(target, restart_on_exit=previous.restart_on_exit)
        self.current = self.kind.make(target, self.stack, self.history)
        previous.restart_on_exit = False  # replaced: its supervisor must not bring it back
        self.retired.append(previous)
        # Hooks armed for the next restart stay armed: a successor starts without any.
        return previous, float(self.current.start(wait=wait, track=not wait))

    def close(self) -> None:
        """Stop every loader of the run (the current one and those it replaced)."""
        for loader in [*self.retired, self.current]:
            try:
                loader.close()
            except Exception as exc:
                self.history.record("loader", "fail", "close", error=str(exc)[:300])
