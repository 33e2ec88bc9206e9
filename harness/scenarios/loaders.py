"""The run's loaders: the one that loads now, its successors, and those it replaced.

A run has one current loader, of the kind the run was given (``--loader``: icefloe's own, the
Kafka Connect sink, a command line; ``harness.loaders``), driven through the loader interface
(``harness.loaders.base.Loader``) only. It is started, stopped and killed through
:class:`LoaderControl`; a zombie-writer fault starts a *successor* (another loader id, its own
state), which becomes the current loader, and keeps the frozen one aside until it is thawed and
steps down.

The scenario's ``[loader]`` table is :class:`LoaderOptions`, read by :meth:`LoaderOptions.read`
when the file is read. It holds two kinds of keys:

- the test kit's own (:data:`KIT_OPTIONS`): ``dead_letter``, ``kill_after_commit``,
  ``self_kills``, ``pause_at``, ``pause_after_commits``, ``disable``, ``restart_on_exit``,
  ``via``. ``disable`` names parts of icefloe's protocol its loaders run without (a break:
  ``disable = ["fencing"]``), given to each of its processes as a test hook
  (``ICEFLOE_TEST_DISABLE``, ``loader/testing/faultpoints.py``), not as a setting;
- icefloe's loader settings, by the loader's own dotted keys (``loader/config.py``), written
  straight into the table: ``trigger_interval = 2.0``, ``lease_ttl = "8s"``,
  ``kafka.max_offsets_per_trigger = 300``, ``catalog.read_timeout = "4s"``,
  ``transform = { unnest = "/data" }``. A TOML dotted key is a nested table; a section's table
  and a quoted dotted key (``"kafka.max_offsets_per_trigger" = 300``) are read the same. A
  break or a ``configure_loader`` step changes only the keys it names; an empty section's
  table (``transform = {}``) drops that section's settings, back to the loader's defaults.

Each loader setting is checked by the loader's own codec when the file is read, so a typo or a
bad value fails at load, naming the scenario and the key; an old spelling
(``trigger_interval_s``, ``fencing = false``...) fails naming what to write now
(:data:`RENAMED`). One left out is not given at all: the loader's own default applies
(``loader/config.py``), or the harness's where it means something else
(``harness.loaders.icefloe.HARNESS_SETTINGS``).
"""

from __future__ import annotations

import dataclasses
import random
import re
import shutil
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from icefloe.harness.history import History
from icefloe.harness.loaders.base import Capability, Loader, LoaderKind, LoaderTarget, TestHooks
from icefloe.harness.loaders.icefloe import IcefloeKind
from icefloe.harness.loaders.process import LoaderProcess
from icefloe.harness.observer import Observer, batch_in_flight
from icefloe.harness.scenarios.params import ParamError, parse_params
from icefloe.harness.scenarios.world import Names
from icefloe.loader import settings as loader_settings
from icefloe.loader.config import LoaderConfig
from icefloe.loader.errors import ConfigError
from icefloe.loader.testing.faultpoints import PAUSE_POINTS, SWITCHES

__all__ = ["KIT_OPTIONS", "RENAMED", "TUNING", "LoaderControl", "LoaderOptions"]

PausePoint = Literal["planned", "write", "publish", "random"]


ROUTES = ("catalog_proxy", "toxiproxy")
"""The fault points a scenario's loader can be put behind (``LoaderOptions.via``)."""

_SETTING_KEYS = frozenset(k.key for k in loader_settings.keys(LoaderConfig))
"""Every loader setting, by its dotted key."""

RENAMED = {
    "trigger_interval_s": "trigger_interval",
    "lease_ttl_s": "lease_ttl",
    "max_offsets_per_trigger": "kafka.max_offsets_per_trigger",
    "settings": 'its keys in [loader] itself (catalog.read_timeout = "4s")',
    **{part: f'disable = ["{part}"] (a test hook, no loader setting)' for part in SWITCHES},
}
"""Old ``[loader]`` keys -> what a scenario writes now."""

TUNING = ("trigger_interval", "kafka.max_offsets_per_trigger")
"""Loader settings that tune icefloe's batches; another kind batches its own way and is given
neither (a scenario setting them still applies to it). The other settings change what icefloe
does (``Capability.SETTINGS``)."""


def _dotted(table: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """``table``'s keys, a loader section's nested tables as dotted keys (``kafka.x``); an
    empty section's table as itself (``transform``, ``{}``)."""
    for name, value in table.items():
        key = prefix + name
        if isinstance(value, Mapping) and value and _is_section(key):
            yield from _dotted(value, key + ".")
        else:
            yield key, value


def _is_section(key: str) -> bool:
    """Whether ``key`` names a section of the loader's settings (``kafka``, ``transform``)."""
    return key not in _SETTING_KEYS and any(k.startswith(key + ".") for k in _SETTING_KEYS)


def _loader_setting(key: str, value: Any, where: str) -> None:
    """Check one loader setting as the loader would read it from its file.

    Raises:
        ParamError: an old name, an unknown key or a bad value.
    """
    if key in RENAMED:
        raise ParamError(f"{where}: {key!r} is an old name: write {RENAMED[key]}")
    try:
        loader_settings.parse(LoaderConfig, key, value, where)
    except KeyError:
        raise ParamError(
            f"{where}: unknown key {key!r}: neither a loader setting (loader/config.py) nor "
            f"one of the test kit's {list(KIT_OPTIONS)}"
        ) from None
    except ConfigError as exc:
        raise ParamError(str(exc)) from None


@dataclass(frozen=True)
class LoaderOptions:
    """A scenario's ``[loader]`` table: the test kit's options and icefloe's loader settings.

    Read it with :meth:`read` (and change it with :meth:`updated`), which check every key.

    Attributes:
        dead_letter: Use the run's dead-letter topic (else halt on a malformed record).
        kill_after_commit: The first starts SIGKILL themselves after this many commits.
        self_kills: How many starts get ``kill_after_commit``.
        pause_at: The first start freezes itself at this point of a batch (``random``: a
            point drawn from the run's seed).
        pause_after_commits: Commits before the pause can fire.
        disable: Parts of icefloe's protocol (``exactly_once``, ``fencing``,
            ``resolve_lost_commits``) every process of the run's loaders runs without: a
            break's test hook.
        restart_on_exit: Supervised: start again after an exit the harness did not cause.
        via: The fault points the loader under test reaches its services through:
            ``catalog_proxy`` (HTTP faults on the catalog, ``catalog_http``), ``toxiproxy``
            (TCP faults on Kafka, S3 and the catalog, ``wire_*``). Trino, the checkers and the
            publisher keep connecting directly.
        settings: icefloe's loader settings by dotted key, as written (a TOML value), each
            checked by the loader's codec; given to the loader as its file would give them.
    """

    dead_letter: bool = True
    kill_after_commit: int | None = None
    self_kills: int = TestHooks.self_kills
    pause_at: PausePoint | None = None
    pause_after_commits: int = 0
    disable: tuple[str, ...] = ()
    restart_on_exit: bool = False
    via: tuple[str, ...] = ()
    settings: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        unknown = sorted(set(self.via) - set(ROUTES))
        if unknown:
            raise ValueError(f"via: unknown {unknown}; known: {list(ROUTES)}")
        unknown = sorted(set(self.disable) - set(SWITCHES))
        if unknown:
            raise ValueError(f"disable: unknown {unknown}; known: {list(SWITCHES)}")

    @classmethod
    def read(cls, table: Mapping[str, Any], where: str) -> LoaderOptions:
        """The options a ``[loader]`` table gives.

        Args:
            table: The table as decoded (variables substituted).
            where: The scenario and table, for messages (``"01_x: [loader]"``).

        Raises:
            ParamError: an unknown key, an old name, or a value of the wrong type or one the
                loader refuses (naming ``where`` and the key).
        """
        return cls().updated(table, where)

    def updated(self, table: Mapping[str, Any], where: str) -> LoaderOptions:
        """These options with those of ``table`` on top (a break's, a ``configure_loader``'s).

        Raises:
            ParamError: as :meth:`read`.
        """
        kit: dict[str, Any] = {}
        settings = dict(self.settings)
        for key, value in _dotted(table):
            if key in KIT_OPTIONS:
                kit[key] = value
            elif _is_section(key) and value == {}:  # the section's settings dropped
                settings = {k: v for k, v in settings.items() if not k.startswith(key + ".")}
            else:
                _loader_setting(key, value, where)
                settings[key] = value
        given = parse_params(LoaderOptions, kit, where)
        try:
            return dataclasses.replace(
                self, **{k: getattr(given, k) for k in kit}, settings=settings
            )
        except ValueError as exc:
            raise ParamError(f"{where}: {exc}") from exc

    def _setting(self, key: str) -> Any:
        """Loader setting ``key`` as the loader reads it (None: not set here)."""
        if key not in self.settings:
            return None
        return loader_settings.parse(LoaderConfig, key, self.settings[key], "[loader]")

    @property
    def trigger_s(self) -> float:
        """The trigger interval icefloe's loader runs with (its own default when unset)."""
        trigger = self._setting("trigger_interval")
        if trigger is None:
            trigger = loader_settings.default(LoaderConfig, "trigger_interval")
        return float(trigger)

    @property
    def max_rate(self) -> float | None:
        """Messages per second the loader takes at most (None: no cap, the harness's own)."""
        cap = self._setting("kafka.max_offsets_per_trigger")
        return None if not cap else cap / self.trigger_s

    def loader_settings(self, *, tuning: bool = True) -> dict[str, Any]:
        """The icefloe loader settings these options set, by the loader's dotted keys.

        Args:
            tuning: Include the batch tuning (``TUNING``); another kind is given none.
        """
        return {k: v for k, v in self.settings.items() if tuning or k not in TUNING}

    def hooks(self) -> TestHooks:
        """The test hooks these options give the first starts."""
        return TestHooks(
            self.kill_after_commit,
            self.self_kills,
            self.pause_at,
            self.pause_after_commits,
            self.disable,
        )

    def needs(self) -> dict[Capability, str]:
        """What a loader needs to run with these options: capability -> why."""
        out: dict[Capability, str] = {}
        changing = sorted(self.loader_settings(tuning=False))
        if changing:
            out[Capability.SETTINGS] = f"icefloe loader settings {', '.join(changing)}"
        if self.kill_after_commit is not None or self.pause_at is not None:
            out[Capability.FAULT_POINTS] = "[loader] kill_after_commit/pause_at (a fault point)"
        elif self.disable:
            out[Capability.FAULT_POINTS] = f"[loader] disable = {list(self.disable)} (a test hook)"
        if self.via:
            out[Capability.ROUTES] = f"[loader] via = {list(self.via)} (fault proxies)"
        if self.restart_on_exit:
            out[Capability.SUPERVISED] = "[loader] restart_on_exit (a supervisor)"
        return out


KIT_OPTIONS = tuple(f.name for f in dataclasses.fields(LoaderOptions) if f.name != "settings")
"""The ``[loader]`` keys that are the test kit's own; every other key is a loader setting."""


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
        first = self.target(f"scen-{names.topic}", run_dir / "loader")
        self.current: Any = self.kind.make(first, stack, history)
        self._observer = self._record_observer(first)

    def target(self, loader_id: str, state_dir: Path, *, hooks: bool = True) -> LoaderTarget:
        """What loader ``loader_id`` loads and how, as the options say.

        Args:
            loader_id: Its id.
            state_dir: Its folder.
            hooks: Give it the options' test hooks (a successor gets only ``disable``: the
                parts of the protocol every loader of the run runs without).
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
            hooks=o.hooks() if hooks else TestHooks(disable=o.disable),
            restart_on_exit=o.restart_on_exit,
        )

    def _record_observer(self, target: LoaderTarget) -> Observer:
        """How the checks read the loader made for ``target``, recorded in the history
        (``info``/``observer``): a saved run is judged again from it alone."""
        observer = self.kind.observer(target)
        self.history.record(
            "info", "info", "observer", loader_id=target.loader_id, observer=observer.to_json()
        )
        return observer

    def observer(self) -> Observer:
        """How the checks read the current loader (``harness.observer``)."""
        return self._observer

    def record_log_facts(self) -> None:
        """Count what each loader's log says of its own state (its observer's ``log_facts``)
        and record it (``info``/``log_facts``): evidence beside the verdicts, with what the
        current loader reports of its own state if its kind says (``evidence()``, recorded as
        ``info``/``evidence``: the sink's control topic). Each failure it
        recovered from inside its process (its ``restart_pattern``) is recorded too
        (``loader``/``restarted``, with the line), a fact ``loader_steady`` judges."""
        self._record_evidence("end")
        patterns = self._observer.log_facts
        restart = self._observer.restart_pattern
        if not patterns and restart is None:
            return
        for loader in [*self.retired, self.current]:
            text = loader.log_since(0)
            if patterns:
                counts = {name: len(re.findall(rx, text)) for name, rx in patterns.items()}
                self.history.record(
                    "info", "info", "log_facts", loader_id=loader.loader_id, counts=counts
                )
            if restart is None:
                continue
            for line in text.splitlines():
                if re.search(restart, line):
                    self.history.record(
                        "loader", "info", "restarted", loader_id=loader.loader_id, line=line[-300:]
                    )

    def _record_evidence(self, moment: str) -> None:
        """What the current loader's kind reads of its own state (``evidence()``: the sink's
        control topic and its groups), recorded as ``info``/``evidence`` for a finding's page,
        at ``moment``: ``start`` (before a start again) or ``end``. Evidence only: a failed
        read is recorded, never raised."""
        evidence = getattr(self.current, "evidence", None)
        if evidence is None:
            return
        try:
            self.history.record("info", "info", "evidence", moment=moment, **evidence())
        except Exception as exc:
            self.history.record("info", "fail", "evidence", moment=moment, error=str(exc)[:400])

    def settle_s(self) -> float:
        """How long to wait after the last expected row is visible (the kind's measure)."""
        return self.kind.settle_s(self.target(self.current.loader_id, self.current.state_dir))

    def in_flight(self) -> bool:
        """Whether the current loader runs with a batch its Spark checkpoint planned and did
        not mark committed (``batch_in_flight``): after a start it runs that batch first, and a
        duplicate it writes shows only once that batch is done."""
        if not self.is_running():
            return False
        folder = self._observer.checkpoint_dir
        if folder is None and isinstance(self.current, LoaderProcess):
            folder = self.current.config().checkpoint_location
        return folder is not None and batch_in_flight(Path(folder))

    def _retarget(self) -> None:
        current = self.current
        self.kind.retarget(current, self.target(current.loader_id, current.state_dir))

    # -- the current loader ------------------------------------------------------

    def arm(self, hooks: Mapping[str, str], expect_codes: tuple[int, ...] = ()) -> None:
        """Fault hooks (``loader.testing.faultpoints`` variables) for the next start only, and
        the exit codes they make expected (``-9`` for a self-kill)."""
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
        if getattr(self.current, "starts", 0):  # a start again: where its own state stood
            self._record_evidence("start")
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
        """Change loader options (``[loader]`` keys) for the next start of the current loader.

        Raises:
            harness.scenarios.params.ParamError: a key or value ``[loader]`` refuses.
        """
        self.options = self.options.updated(changes, "configure_loader")
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

    def all_gone(self) -> bool:
        """No loader of the run (the current one, those it replaced) runs, and none is
        supervised (its supervisor would start it again)."""
        return not any(
            loader.is_running() or loader.restart_on_exit
            for loader in [*self.retired, self.current]
        )

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
        self._observer = self._record_observer(target)
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
