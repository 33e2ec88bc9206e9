"""The loader interface: what the harness needs of any loader it puts under test.

A *loader kind* (:class:`LoaderKind`) makes loaders for a run: icefloe's own
(``harness.loaders.icefloe``), the Apache Iceberg Kafka Connect sink
(``harness.loaders.kafka_connect``) and any loader a user describes by a command line and a
configuration template (``harness.loaders.command``). A *loader* (:class:`Loader`) is one of
them started for one topic and one table: start, stop, kill -9, freeze and thaw, its
configuration, where it keeps its progress, where its dead letters go (if anywhere), its health
and its log. The scenario engine talks to these two protocols only, and the checks read a kind only
through its observer (``harness.observer``): which snapshots are its commits, where its
committed position is, what its dead letters, halts and exit codes say.

What a kind can do is declared as :class:`Capability` values; what a scenario needs is derived
from its file (``harness.loaders.capabilities``). A scenario needing a capability a kind lacks
is *not applicable* to it, with the reason: the decision is made once, from declarations, not
by name checks in the engine.
"""

from __future__ import annotations

import enum
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from icefloe.harness.observer import Observer

__all__ = [
    "KINDS",
    "Capability",
    "ExitWatch",
    "Health",
    "Loader",
    "LoaderKind",
    "LoaderTarget",
    "TestHooks",
    "loader_kind",
    "log_since",
    "log_size",
    "record_exit",
]


class Capability(enum.StrEnum):
    """What a loader kind can do, as far as the harness's scenarios ask it.

    Members:
        KILL: kill -9 and start again, resuming from the progress it keeps.
        FREEZE: SIGSTOP and SIGCONT of its processes (a GC pause, a frozen VM).
        FAULT_POINTS: kills and freezes at named points inside a batch, and parts of the
            protocol switched off, armed by environment variables
            (``loader.testing.faultpoints``: ``kill_after_commit``, ``pause_at``, ``at =
            "planned"``, ``disable = ["fencing"]``...): icefloe's test hooks.
        FENCING: a successor on the same table fences a frozen loader off, and the frozen one,
            thawed, steps down (``zombie_loader``).
        DEAD_LETTERS: sends what it cannot load to a dead-letter topic it is given.
        ROUTES: its Kafka, S3 and catalog endpoints can be pointed at the fault proxies
            (``[loader] via``).
        SETTINGS: takes icefloe's loader settings by their dotted keys (``lease_ttl``,
            ``max_record_bytes``, ``transform.unnest``, ``catalog.read_timeout``... in
            ``[loader]``).
        SUPERVISED: the harness restarts it when it exits by itself (``restart_on_exit``).
        GLUE: commits through a Glue catalog (a stack with ``[stack] catalog = "glue"``);
            every kind commits through the REST catalog.
    """

    KILL = "kill"
    FREEZE = "freeze"
    FAULT_POINTS = "fault_points"
    FENCING = "fencing"
    DEAD_LETTERS = "dead_letters"
    ROUTES = "routes"
    SETTINGS = "settings"
    SUPERVISED = "supervised"
    GLUE = "glue"


@dataclass(frozen=True)
class TestHooks:
    """icefloe's fault hooks a run gives its first starts (``Capability.FAULT_POINTS``).

    Attributes:
        kill_after_commit: The first ``self_kills`` starts SIGKILL themselves right after their
            N-th commit, so a post-commit, pre-checkpoint crash happens for sure.
        self_kills: How many starts (the first ones) get that hook.
        pause_at: The first start freezes itself (SIGSTOP of its group) at this point of a
            batch (``loader.testing.faultpoints``).
        pause_after_commits: Commits the first start makes before the pause can fire.
        disable: Parts of the protocol every start runs without (``exactly_once``,
            ``fencing``, ``resolve_lost_commits``: ``loader.commit.hooks``): a break.
    """

    __test__ = False  # not a pytest class

    kill_after_commit: int | None = None
    self_kills: int = 1
    pause_at: str | None = None
    pause_after_commits: int = 0
    disable: tuple[str, ...] = ()


@dataclass(frozen=True)
class LoaderTarget:
    """What one loader of a run loads, and where: the same for every kind.

    Attributes:
        loader_id: Unique per table and kept across restarts (icefloe's lease owner, the
            sink's connector name).
        table: ``catalog.schema.table`` as Trino names it.
        topics: Source topics.
        dead_letter_topic: The run's dead-letter topic, or None (a loader then stops, or does
            whatever it does, at a record it cannot load).
        state_dir: Its files: configuration, progress kept locally, log.
        endpoints: Endpoints that replace the stack's for this loader only, by icefloe's keys
            (``kafka.bootstrap``, ``catalog.uri``, ``catalog.s3_endpoint``): the fault proxies.
        settings: icefloe's loader settings by dotted key (``Capability.SETTINGS``), on top of
            the loader's own defaults; other kinds are not given any (a scenario needing them
            is not applicable).
        hooks: icefloe's fault hooks for the first starts.
        restart_on_exit: Supervised: start again after an exit the harness did not cause.
    """

    loader_id: str
    table: str
    topics: tuple[str, ...]
    dead_letter_topic: str | None
    state_dir: Path
    endpoints: Mapping[str, str] = field(default_factory=dict)
    settings: Mapping[str, Any] = field(default_factory=dict)
    hooks: TestHooks = TestHooks()
    restart_on_exit: bool = False


@dataclass(frozen=True)
class Health:
    """Whether a loader is well, as far as it can tell.

    Attributes:
        running: Its process runs (frozen or not).
        healthy: It is loading, by its own measure (a query running, every task running).
        detail: What it said (states, a failed task's first line), for a person.
    """

    running: bool
    healthy: bool
    detail: str = ""


@runtime_checkable
class Loader(Protocol):
    """One loader started for one topic and one table: what the scenario engine drives."""

    hooks: dict[str, str]
    restart_on_exit: bool
    state_dir: Path

    @property
    def starts(self) -> int:
        """How many times it was started."""
        ...

    @property
    def loader_id(self) -> str:
        """Its id (kept across restarts)."""
        ...

    @property
    def dead_letter_topic(self) -> str | None:
        """Where its dead letters go (None: nowhere)."""
        ...

    def start(
        self,
        *,
        wait: bool = True,
        track: bool = False,
        hooks: Mapping[str, str] | None = None,
        expect_codes: tuple[int, ...] = (),
    ) -> float:
        """Start it; by default wait until it runs. Returns the seconds that took."""
        ...

    def stop(self, timeout: float = 60.0) -> None:
        """Stop it gracefully."""
        ...

    def kill(self) -> int | None:
        """kill -9 it; the pid killed."""
        ...

    def freeze(self) -> int | None:
        """SIGSTOP it; the pid frozen."""
        ...

    def thaw(self) -> None:
        """SIGCONT it."""
        ...

    def frozen(self) -> bool: ...

    def is_running(self) -> bool: ...

    def wait_exit(self, timeout_s: float) -> bool:
        """Wait until it has exited; True if it did within ``timeout_s``."""
        ...

    def health(self) -> Health: ...

    def configuration(self) -> dict[str, Any]:
        """What it runs with (no secret): the file or properties it was given."""
        ...

    def progress(self) -> str:
        """Where it keeps its progress (a checkpoint folder, a consumer group...)."""
        ...

    def uptime_s(self) -> float: ...

    def has_started(self) -> bool: ...

    def last_trace(self) -> list[dict[str, Any]]:
        """Fault points its last start fired (empty for a kind without fault points)."""
        ...

    def log_size(self) -> int: ...

    def log_since(self, mark: int) -> str: ...

    def log_tail(self, lines: int = 40) -> str: ...

    def close(self) -> None:
        """Stop it if it runs, and stop watching it."""
        ...


class LoaderKind(Protocol):
    """Makes the loaders of one kind for a run.

    Attributes:
        name: How ``--loader`` names it (``icefloe``, ``kafka-connect``, ``command:FILE``).
        capabilities: What its loaders can do.
    """

    name: str
    capabilities: frozenset[Capability]

    def make(self, target: LoaderTarget, stack: Any, history: Any) -> Loader:
        """A loader (not started) for ``target`` on ``stack``, recording into ``history``."""
        ...

    def retarget(self, loader: Loader, target: LoaderTarget) -> None:
        """Change what ``loader`` runs with from its next start on (a dead-letter topic
        given, the endpoints routed through the fault proxies)."""
        ...

    def settle_s(self, target: LoaderTarget) -> float:
        """How long a run waits once every expected row is visible, so that a late commit
        (a duplicate) shows before the checks read: about two of its commit intervals."""
        ...

    def observer(self, target: LoaderTarget) -> Observer:
        """How the checks read what a loader for ``target`` writes (``harness.observer``):
        its commits, its committed position, its cadence and drain, its dead letters, its
        halts and exit codes. What it leaves out makes a check not applicable."""
        ...

    def describe(self) -> dict[str, Any]:
        """Its configuration, as the conformance report prints it (no secret)."""
        ...


KINDS: dict[str, Callable[[], LoaderKind]] = {}
"""``--loader`` name -> what makes that kind: every module of a kind registers itself
(:func:`loader_kind`); ``harness.loaders.kinds`` imports them all."""


def loader_kind(*names: str) -> Callable[[Callable[[], LoaderKind]], Callable[[], LoaderKind]]:
    """Register a factory of a loader kind under the names ``--loader`` takes."""

    def register(make: Callable[[], LoaderKind]) -> Callable[[], LoaderKind]:
        for name in names:
            KINDS[name] = make
        return make

    return register


def log_size(path: Path) -> int:
    """The size of a loader's log so far (0 before it exists): a mark for ``log_since``."""
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def log_since(path: Path, mark: int) -> str:
    """A loader's log from ``mark`` (a ``log_size``) on."""
    try:
        with path.open("rb") as fh:
            fh.seek(mark)
            return fh.read().decode(errors="replace")
    except FileNotFoundError:
        return ""


class OneProcessLoader:
    """What a loader kind run as one process with one log, and with no fault points or fencing,
    shares: its exit watcher's supervision, its log read from a mark, an empty trace, and
    retirement by thaw and kill."""

    _watch: ExitWatch

    @property
    def restart_on_exit(self) -> bool:
        return self._watch.restart_on_exit

    @restart_on_exit.setter
    def restart_on_exit(self, value: bool) -> None:
        self._watch.restart_on_exit = value

    def _log_file(self) -> Path:
        raise NotImplementedError

    def thaw(self) -> None:
        raise NotImplementedError

    def kill(self) -> int | None:
        raise NotImplementedError

    def last_trace(self) -> list[dict[str, Any]]:
        return []

    def log_size(self) -> int:
        return log_size(self._log_file())

    def log_since(self, mark: int) -> str:
        return log_since(self._log_file(), mark)

    def retire(self, timeout_s: float = 180.0, holds_table: Any = None) -> int | None:
        """Thaw a replaced loader and kill it (it has no fencing to step down by)."""
        self.restart_on_exit = False
        self.thaw()
        self.kill()
        return None


def record_exit(history: Any, pid: int | None, code: int | None, expected: bool, tail: str) -> None:
    """Record a loader's exit: a ``loader``/``exit`` event with its code, whether the harness
    caused it and, if not, the tail of its log (what the checks of exits read)."""
    history.record(
        "loader", "info", "exit", pid=pid, code=code, expected=expected,
        message="" if expected else tail,
    )  # fmt: skip


EXIT_POLL_S = 0.2
FAILED_POLL_S = 2.0
SUPERVISOR_DELAY_S = 2.0


class ExitWatch:
    """Records the exits of a process loader the harness did not cause, and restarts it when
    supervised: the watcher icefloe's ``LoaderProcess`` has, for the other kinds.

    Each exit is a ``loader``/``exit`` event with its code, whether it was expected (the harness
    stopped or killed it) and, if not, the tail of its log; a supervised loader is started again
    ``SUPERVISOR_DELAY_S`` later, as systemd or Kubernetes would.

    A loader whose process lives on after it has stopped loading for good (a Kafka Connect
    worker whose tasks failed: "will not recover until manually restarted") is given
    ``failed``: when it returns a message, that is the loader's exit (unexpected, the message
    as its log tail) and its process is stopped, as an operator would, so a later start works;
    a supervised one is then started again, as after any other exit.

    Args:
        process: Its ``harness.stack.process.ManagedProcess``.
        history: Where exits go.
        restart: Starts it again (without waiting).
        log_tail: The tail of its log.
        failed: Why it stopped loading for good, or None while it has not (asked every
            ``FAILED_POLL_S``).
        stop: Stops its process (for ``failed``).
    """

    def __init__(
        self,
        process: Any,
        history: Any,
        restart: Callable[[], Any],
        log_tail: Callable[[int], str],
        failed: Callable[[], str | None] | None = None,
        stop: Callable[[], Any] | None = None,
    ) -> None:
        self.process = process
        self.history = history
        self.restart_on_exit = False
        self.expected = False
        self._restart = restart
        self._log_tail = log_tail
        self._failed = failed
        self._stop = stop
        self._asked = 0.0
        self._seen: int | None = None
        self._thread: threading.Thread | None = None
        self._watching = False
        self._lock = threading.Lock()

    def started(self) -> None:
        """Call after each start: its exit is unexpected until ``expect()``."""
        with self._lock:
            self.expected = False
            self._seen = self.process.started_pid
        if self._thread is None or not self._thread.is_alive():
            self._watching = True
            self._thread = threading.Thread(target=self._watch, name="loader-exit", daemon=True)
            self._thread.start()

    def expect(self) -> None:
        """The next exit is the harness's doing (a stop, a kill)."""
        with self._lock:
            self.expected = True

    def close(self) -> None:
        self._watching = False
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _failure(self) -> str | None:
        """Why a running loader stopped loading for good (None: it has not, or not asked)."""
        if self._failed is None or time.monotonic() - self._asked < FAILED_POLL_S:
            return None
        self._asked = time.monotonic()
        return self._failed()

    def _watch(self) -> None:
        while self._watching:
            failure = None
            with self._lock:
                pid = self._seen
                ended = pid is not None and not self.process.is_running()
                expected = self.expected
                if pid is not None and not ended and not expected:
                    failure = self._failure()
                if ended or failure:
                    self._seen = None
                if failure:
                    self.expected = True  # its process is stopped below
            if failure:
                # Stopped before its exit is recorded: whoever waits for the exit (a scenario's
                # next step, a supervisor) may start it again at once, and must find it gone.
                if self._stop is not None:
                    self._stop()
                self.history.record("loader", "info", "stopped_failed", pid=pid)
                record_exit(self.history, pid, None, False, failure)
                self._supervise()  # its exit, for the checks and for its supervisor alike
                continue
            if ended:
                code = self.process.returncode()
                tail = "" if expected else self._log_tail(30)
                record_exit(self.history, pid, code, expected, tail)
                if not expected:
                    self._supervise()
            time.sleep(EXIT_POLL_S)

    def _supervise(self) -> None:
        """After an exit the harness did not cause: start a supervised loader again."""
        if not (self.restart_on_exit and self._watching):
            return
        time.sleep(SUPERVISOR_DELAY_S)
        try:
            self.history.record("loader", "info", "supervisor_restart")
            self._restart()
        except Exception as exc:  # recorded; a later exit is watched again
            self.history.record("loader", "fail", "supervisor_restart", error=str(exc)[:300])
