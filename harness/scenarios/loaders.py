"""The run's loaders: the one that loads now, its successors, and those it replaced.

A run has one current loader (a supervised ``python -m loader`` process, see
``harness.loaders.process``). It is started, stopped and killed through :class:`LoaderControl`;
a zombie-writer fault starts a *successor* (another loader id, its own checkpoint), which
becomes the current loader, and keeps the frozen one aside until it is thawed and steps down.
The scenario's ``[loader]`` table is :class:`LoaderOptions`, checked when the file is read.
"""

from __future__ import annotations

import dataclasses
import random
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from harness.loaders.process import LoaderProcess, LoaderSettings
from harness.scenarios.history import History
from harness.scenarios.world import Names
from loader.faultpoints import PAUSE_POINTS

__all__ = ["LoaderControl", "LoaderOptions"]

PausePoint = Literal["planned", "write", "publish", "random"]


ROUTES = ("catalog_proxy", "toxiproxy")
"""The fault points a scenario's loader can be put behind (``LoaderOptions.via``)."""


@dataclass(frozen=True)
class LoaderOptions:
    """A scenario's loader settings (``[loader]``); the stack supplies the rest.

    Each default is the harness loader's (``LoaderSettings``), which is the loader's own but
    for the batch cap.

    Attributes:
        trigger_interval_s: Seconds per micro-batch.
        exactly_once: ``False`` turns the loader's offset guard off (a break).
        fencing: ``False`` turns the commit fence off (a break).
        dead_letter: Use the run's dead-letter topic (else halt on a malformed record).
        max_offsets_per_trigger: Cap on records per batch (the loader's maximum rate is this
            over the trigger interval).
        transform: The loader's ``[transform]`` table.
        max_record_bytes: The loader's payload limit (``None``: the loader's).
        kill_after_commit: The first starts SIGKILL themselves after this many commits.
        self_kills: How many starts get ``kill_after_commit``.
        lease_ttl_s: The lease (``None``: the loader's, from the trigger interval).
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

    trigger_interval_s: float = LoaderSettings.trigger_interval_s
    exactly_once: bool = LoaderSettings.exactly_once
    fencing: bool = LoaderSettings.fencing
    dead_letter: bool = True
    max_offsets_per_trigger: int | None = LoaderSettings.max_offsets_per_trigger
    transform: dict[str, Any] = field(default_factory=dict)
    max_record_bytes: int | None = None
    kill_after_commit: int | None = None
    self_kills: int = LoaderSettings.self_kills
    lease_ttl_s: float | None = LoaderSettings.lease_ttl_s
    pause_at: PausePoint | None = None
    pause_after_commits: int = 0
    restart_on_exit: bool = False
    settings: dict[str, Any] = field(default_factory=dict)
    via: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        unknown = sorted(set(self.via) - set(ROUTES))
        if unknown:
            raise ValueError(f"via: unknown {unknown}; known: {list(ROUTES)}")
        if self.trigger_interval_s <= 0 or (self.lease_ttl_s is not None and self.lease_ttl_s <= 0):
            raise ValueError("trigger_interval_s and lease_ttl_s must be > 0")

    @property
    def max_rate(self) -> float | None:
        """Messages per second the loader takes at most (None: no cap)."""
        if self.max_offsets_per_trigger is None:
            return None
        return self.max_offsets_per_trigger / self.trigger_interval_s


class LoaderControl:
    """Starts, stops, kills and replaces the run's loader.

    Args:
        names: The run's topic, dead-letter topic and table.
        stack: The running stack.
        run_dir: The run's folder (``loader/``, ``loader-1/``... go in it).
        history: Where starts, exits, kills and stops are recorded.
        options: The scenario's loader settings.
        rng: The run's seeded random source (draws ``pause_at = "random"``).
    """

    def __init__(
        self,
        names: Names,
        stack: Any,
        run_dir: Path,
        history: History,
        options: LoaderOptions,
        rng: random.Random,
    ) -> None:
        if options.pause_at == "random":
            options = dataclasses.replace(options, pause_at=rng.choice(PAUSE_POINTS))  # type: ignore[arg-type]
        self.names = names
        self.stack = stack
        self.run_dir = run_dir
        self.history = history
        self.options = options
        self.successors = 0
        self.retired: list[LoaderProcess] = []
        self._armed: dict[str, str] = {}
        self._expect: tuple[int, ...] = ()
        self.routes: dict[str, str] = {}
        self.current = LoaderProcess(
            self.settings(),
            stack,
            run_dir / "loader",
            history,
            restart_on_exit=options.restart_on_exit,
        )

    def settings(self, loader_id: str | None = None) -> LoaderSettings:
        """The loader settings the options give (for ``loader_id``, else the first loader's)."""
        o = self.options
        return LoaderSettings(
            loader_id=loader_id or f"scen-{self.names.topic}",
            table=self.names.table,
            topics=(self.names.topic,),
            dead_letter_topic=self.names.dead_letter_topic if o.dead_letter else None,
            trigger_interval_s=o.trigger_interval_s,
            exactly_once=o.exactly_once,
            max_offsets_per_trigger=o.max_offsets_per_trigger,
            transform=dict(o.transform),
            extra={
                **({"max_record_bytes": o.max_record_bytes} if o.max_record_bytes else {}),
                **o.settings,
                **self.routes,
            },
            kill_after_commit=o.kill_after_commit,
            self_kills=o.self_kills,
            lease_ttl_s=o.lease_ttl_s,
            fencing=o.fencing,
            pause_at=o.pause_at,
            pause_after_commits=o.pause_after_commits,
        )

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
        return self.current.start(wait=wait, track=not wait, hooks=hooks, expect_codes=expect)

    def stop(self) -> None:
        """Stop the current loader gracefully."""
        self.current.stop()

    def kill(self) -> int | None:
        """kill -9 the current loader; return the pid killed."""
        return self.current.kill()

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
        self.current.configure(self.settings(self.current.settings.loader_id))
        self.history.record("loader", "info", "configured", **dict(changes))

    def route(self, routes: Mapping[str, str]) -> None:
        """Point the loader's endpoints (``kafka.bootstrap``, ``catalog.uri``,
        ``catalog.s3_endpoint``) at fault proxies, for every start from now on."""
        self.routes = dict(routes)
        self.current.configure(self.settings(self.current.settings.loader_id))
        self.history.record("loader", "info", "routed", **self.routes)

    def is_running(self) -> bool:
        return self.current.is_running()

    # -- successors -----------------------------------------------------------------

    def start_successor(self, *, wait: bool = True) -> tuple[LoaderProcess, float]:
        """Start a second loader (another loader id, its own checkpoint) on the same table.

        The new loader becomes the current one; the one it replaces is returned (to be thawed
        and retired), with the seconds the new one took to start.
        """
        previous = self.current
        self.successors += 1
        settings = dataclasses.replace(
            self.settings(f"scen-{self.names.topic}-{self.successors}"),
            pause_at=None,
            kill_after_commit=None,
        )
        self.current = LoaderProcess(
            settings,
            self.stack,
            self.run_dir / f"loader-{self.successors}",
            self.history,
            restart_on_exit=previous.restart_on_exit,
        )
        previous.restart_on_exit = False  # replaced: its supervisor must not bring it back
        self.retired.append(previous)
        # Hooks armed for the next restart stay armed: a successor starts without any.
        return previous, self.current.start(wait=wait, track=not wait)

    def close(self) -> None:
        """Stop every loader of the run (the current one and those it replaced)."""
        for loader in [*self.retired, self.current]:
            try:
                loader.close()
            except Exception as exc:
                self.history.record("loader", "fail", "close", error=str(exc)[:300])
