"""icefloe's loader as a supervised subprocess: write its config, start, kill -9, stop, restart.

A :class:`LoaderProcess` (a ``harness.loaders.base.Loader``) runs
``python -m icefloe.loader run --config FILE`` through
:class:`~harness.stack.process.ManagedProcess`, so it can be killed like any service. The S3 secret
reaches it through the environment (``ICEFLOE_LOADER_CATALOG_S3_SECRET_KEY``), never through
the config file or argv. A watcher thread notices when the loader exits by itself and records
that in the history with the exit code and the tail of its log; with ``restart_on_exit`` it
starts the loader again, as a supervisor (systemd, Kubernetes) would.

Each start gets a fault-point trace file of its own (``trace-N.jsonl`` in its folder,
``loader.testing.faultpoints``). Once a start has ended, what its trace says is recorded in the
history: a ``loader``/``fault_landed`` event per fault that fired (the point it was armed at,
the point it landed at and its action), or a ``loader``/``fault_not_landed`` event for a start
armed with a fault point that never fired.
A fault counts where it landed, from what the loader recorded, not where it was aimed.

A loader process runs the loader's own configuration model (``loader.config.LoaderConfig``),
the one record of its settings: its callers build it (``harness.loaders.icefloe.icefloe_config``)
and it is written to the process's file as it is, checkpoint and Spark scratch folder put in
the process's folder. The test hooks (``TestHooks``) are the harness's, not the loader's.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from icefloe.harness.history import History
from icefloe.harness.loaders.base import Health, TestHooks, log_since, log_size, record_exit
from icefloe.harness.stack.process import ManagedProcess
from icefloe.loader.config import LoaderConfig, env_var
from icefloe.loader.errors import EXIT_NOT_OWNER
from icefloe.loader.testing.faultpoints import (
    DISABLE_ENV,
    KILL_AFTER_COMMIT_ENV,
    KILL_AFTER_COMMITS_ENV,
    KILL_AT_ENV,
    PAUSE_AFTER_COMMITS_ENV,
    PAUSE_AT_ENV,
    PAUSE_DELAY_MS_ENV,
    TRACE_ENV,
    read_trace,
    where_landed,
)

HOOK_ENVS = (
    KILL_AT_ENV,
    KILL_AFTER_COMMITS_ENV,
    KILL_AFTER_COMMIT_ENV,
    PAUSE_AT_ENV,
    PAUSE_AFTER_COMMITS_ENV,
    PAUSE_DELAY_MS_ENV,
    DISABLE_ENV,
)
# The S3 secret reaches the loader through its environment, never its file or argv.
SECRET_ENV = env_var("catalog.s3_secret_key")
# How often ``retire`` asks whether the thawed loader holds the table again (a catalog read).
RETIRE_LEASE_POLL_S = 2.0
# The loader logs this when its streaming query has started (loader/run/job.py).
_STARTED_MARK = "icefloe.loader: starting "


def placed(config: LoaderConfig, checkpoint: Path) -> LoaderConfig:
    """``config`` with its checkpoint at ``checkpoint`` and Spark's scratch folder beside it,
    where it names none of its own (a setting given wins).

    A loader killed with kill -9 leaves its ``spark-*`` folder in the scratch folder: beside
    the checkpoint, it is removed with the run's folder, not left in the system's temp folder.
    """
    local_dir = config.spark.local_dir or str(checkpoint.parent / "spark-local")
    spark = dataclasses.replace(config.spark, local_dir=local_dir)
    location = config.checkpoint_location or str(checkpoint)
    return dataclasses.replace(config, checkpoint_location=location, spark=spark)


def env_hooks(env: Mapping[str, str]) -> dict[str, str]:
    """The fault-hook variables set in ``env``."""
    return {k: env[k] for k in HOOK_ENVS if k in env}


def armed_fault(hooks: Mapping[str, str]) -> dict[str, str] | None:
    """The fault a start's hooks arm, as ``{"point", "action"}``; None when they arm none.

    Args:
        hooks: The start's hook variables (``env_hooks``).

    Returns:
        The point and action (``kill`` or ``freeze``) armed, or None.
    """
    if hooks.get(KILL_AT_ENV):
        return {"point": hooks[KILL_AT_ENV], "action": "kill"}
    if hooks.get(KILL_AFTER_COMMIT_ENV):
        return {"point": "committed", "action": "kill"}
    if hooks.get(PAUSE_AT_ENV):
        return {"point": hooks[PAUSE_AT_ENV], "action": "freeze"}
    return None


@dataclass
class _Start:
    """One start of a loader process, until what its trace says is recorded."""

    number: int
    pid: int
    trace: Path
    hooks: dict[str, str]


class LoaderProcess:
    """One scenario's loader, started and stopped by the harness.

    Args:
        settings: What to load and how: the loader's own configuration (its checkpoint and
            Spark scratch folder are put in ``state_dir``).
        stack: The stack it loads from and into.
        state_dir: Its config, checkpoint and log live here.
        history: Where starts, exits, kills and stops are recorded.
        restart_on_exit: Restart after an exit the harness did not cause.
        start_timeout_s: How long to wait for the streaming query to start.
        hooks: Fault hooks for the first starts (none by default).
    """

    capabilities = frozenset(
        {"kill", "freeze", "fault_points", "fencing", "dead_letters", "routes", "settings",
         "supervised"}
    )  # fmt: skip

    def __init__(
        self,
        settings: LoaderConfig,
        stack: Any,
        state_dir: Path,
        history: History,
        *,
        restart_on_exit: bool = False,
        start_timeout_s: float = 180.0,
        hooks: TestHooks | None = None,
    ) -> None:
        self.settings = settings
        self.test_hooks = hooks if hooks is not None else TestHooks()
        self.stack = stack
        self.state_dir = state_dir
        self.history = history
        self.restart_on_exit = restart_on_exit
        self.start_timeout_s = start_timeout_s
        self.process = ManagedProcess("loader", state_dir)
        self.config_file = state_dir / "loader.toml"
        self._expected_exit = False
        self._lock = threading.RLock()
        self._watching = False
        self._watcher: threading.Thread | None = None
        self._expected_codes: set[int] = set()
        self._seen_pid: int | None = None
        self._recorded_pid: int | None = None  # the last pid whose exit is recorded
        self.starts = 0
        self.hooks: dict[str, str] = {}
        self._began = 0.0  # monotonic time and log size of the last start
        self._start_mark = 0
        self._unsettled: dict[int, _Start] = {}  # by pid: starts whose trace is not recorded
        self.trace_file: Path | None = None  # the last start's fault-point trace

    # -- lifecycle ----------------------------------------------------------

    def configure(self, settings: LoaderConfig) -> None:
        """Replace the configuration the next start runs (e.g. add a dead-letter topic)."""
        self.settings = settings

    @property
    def loader_id(self) -> str:
        """Its id (``loader_id`` of its configuration)."""
        return self.settings.loader_id

    @property
    def dead_letter_topic(self) -> str | None:
        """Where its dead letters go (``dead_letter_topic`` of its configuration)."""
        return self.settings.dead_letter_topic

    def config(self) -> LoaderConfig:
        """The configuration the next start writes to its file: its settings, placed in its
        folder."""
        return placed(self.settings, self.state_dir / "checkpoint")

    def configuration(self) -> dict[str, Any]:
        """The configuration file the last start ran with (none yet: the next one's)."""
        import tomllib

        if self.config_file.exists():
            return tomllib.loads(self.config_file.read_text())
        return tomllib.loads(self.config().to_toml())

    def progress(self) -> str:
        """Where it keeps its progress: the table (offsets in each snapshot) and its Spark
        checkpoint."""
        return f"the table's snapshot summaries and the checkpoint {self.state_dir / 'checkpoint'}"

    def health(self) -> Health:
        """Running, and healthy once its last start logged its streaming query as started."""
        running = self.is_running()
        healthy = running and not self.frozen() and self.has_started()
        return Health(running, healthy, "frozen" if running and self.frozen() else "")

    def start(
        self,
        *,
        wait: bool = True,
        track: bool = False,
        hooks: Mapping[str, str] | None = None,
        expect_codes: tuple[int, ...] = (),
    ) -> float:
        """Start the loader and (by default) wait until its streaming query runs.

        Args:
            wait: Wait for the query to start.
            track: When not waiting, record the start's outcome (``start`` ok or fail) from a
                background thread once it is known.
            hooks: Fault-hook variables (``loader.testing.faultpoints``) for this start only, on top
                of those the settings give the first starts.
            expect_codes: Exit codes of this start that are no failure (e.g. ``-9`` when a
                hook makes it kill itself).

        Returns:
            Seconds until started (0 when not waiting).

        Raises:
            RuntimeError: The loader exited or did not start within the timeout.
        """
        with self._lock:
            self.state_dir.mkdir(parents=True, exist_ok=True)
            config = self.config()
            self.config_file.write_text(config.to_toml())
            env = dict(os.environ)
            env[SECRET_ENV] = self.stack.credentials.secret_key.reveal()
            if config.catalog.type == self.stack.catalog.kind:  # how its clients sign, if at all
                for name, value in self.stack.catalog.client_environment().items():
                    env.setdefault(name, value)
            env.setdefault("PYTHONUNBUFFERED", "1")
            for hook in (*HOOK_ENVS, TRACE_ENV):
                env.pop(hook, None)
            previous = self.process.started_pid
            if previous not in (None, self._recorded_pid) and not self.process.is_running():
                self._record_exit(previous)  # it ended since the watcher last looked
            self._settle_exited()
            own = self.test_hooks
            self_kill = own.kill_after_commit is not None and self.starts < own.self_kills
            if self_kill:
                env[KILL_AFTER_COMMIT_ENV] = str(own.kill_after_commit)
            if own.pause_at and self.starts == 0:
                env[PAUSE_AT_ENV] = own.pause_at
                env[PAUSE_AFTER_COMMITS_ENV] = str(own.pause_after_commits)
            if own.disable:  # a break: every start runs without these parts of the protocol
                env[DISABLE_ENV] = ",".join(own.disable)
            env.update(hooks or {})
            trace = self.state_dir / f"trace-{self.starts + 1}.jsonl"
            trace.unlink(missing_ok=True)
            env[TRACE_ENV] = str(trace)
            mark = self.log_size()
            began = time.monotonic()
            self._began, self._start_mark = began, mark
            self.history.record(
                "loader",
                "invoke",
                "start",
                loader_id=self.loader_id,
                trigger_interval_s=config.trigger_interval,
                disable=list(own.disable) or None,
                pause_at=own.pause_at if self.starts == 0 else None,
                dead_letter_topic=config.dead_letter_topic,
                kill_after_commit=own.kill_after_commit if self_kill else None,
                hooks=dict(hooks) if hooks else None,
            )
            argv = [
                sys.executable,
                "-m",
                "icefloe.loader",
                "run",
                "-v",
                "--config",
                str(self.config_file),
            ]
            pid = self.process.start(argv, env, Path.cwd())
            self._expected_exit = False
            self._expected_codes = set(expect_codes)
            self.hooks = dict(env_hooks(env))
            self.starts += 1
            self.trace_file = trace
            self._unsettled[pid] = _Start(self.starts, pid, trace, dict(self.hooks))
        self._ensure_watcher()
        if wait:
            return self._await_started(mark, began, pid)
        if track:
            threading.Thread(
                target=self._track_start, args=(mark, began, pid), name="loader-start", daemon=True
            ).start()
        return 0.0

    def uptime_s(self) -> float:
        """Seconds since the last start was invoked."""
        return time.monotonic() - self._began

    def has_started(self) -> bool:
        """Whether the last start has logged its streaming query as started."""
        return _STARTED_MARK in self.log_since(self._start_mark)

    def _track_start(self, mark: int, began: float, pid: int) -> None:
        with contextlib.suppress(RuntimeError):  # recorded as a failed start
            self._await_started(mark, began, pid)

    def _await_started(self, mark: int, began: float, pid: int) -> float:
        deadline = began + self.start_timeout_s
        while time.monotonic() < deadline:
            if _STARTED_MARK in self.log_since(mark):
                took = time.monotonic() - began
                self.history.record("loader", "ok", "start", pid=pid, seconds=round(took, 2))
                return took
            if self.process.started_pid != pid:
                raise RuntimeError("the loader was started again before it had started")
            if not self.process.is_running():
                # Killed or stopped by the harness while starting, or killed by a fault point
                # armed for this start (``take_over``): no failed start.
                if self._expected_exit or self.process.returncode() in self._expected_codes:
                    self.history.record("loader", "info", "start_interrupted", pid=pid)
                    raise RuntimeError("the loader was stopped while starting")
                self.history.record("loader", "fail", "start", pid=pid, log=self.log_tail(20))
                raise RuntimeError(f"loader exited while starting:\n{self.log_tail(20)}")
            time.sleep(0.25)
        tail = self.log_tail(20)
        self.history.record("loader", "fail", "start", pid=pid, log=tail)
        raise RuntimeError(
            f"loader did not start in {self.start_timeout_s:.0f} s; its log ends:\n{tail}"
        )

    def kill(self) -> int | None:
        """kill -9 the loader (and its JVM), as a crash would.

        Returns:
            The killed pid, or None if it was not running.
        """
        with self._lock:
            pid = self.process.pid
            self._expected_exit = True
            self.process.kill()
        self.history.record("loader", "info", "killed", pid=pid)
        return pid

    def stop(self, timeout: float = 60.0) -> None:
        """Stop gracefully: SIGTERM to the loader's Python process, which stops its JVM.

        A SIGTERM to the whole group would reach Spark's JVM too, which then quits under the
        query instead of letting the batch in progress finish.
        """
        with self._lock:
            pid = self.process.pid
            self._expected_exit = True
            self.process.stop(timeout, leader_only=True)
        self.history.record("loader", "info", "stopped", pid=pid)

    def freeze(self) -> int | None:
        """SIGSTOP the loader's process group, as a GC pause or a frozen VM would.

        Returns:
            The frozen pid, or None if it was not running.
        """
        with self._lock:
            pid = self.process.pid
            self.process.pause()
        self.history.record("loader", "info", "frozen", pid=pid)
        return pid

    def thaw(self) -> None:
        """SIGCONT a frozen loader (it carries on as if nothing happened)."""
        with self._lock:
            pid = self.process.pid
            self.process.resume()
        self.history.record("loader", "info", "thawed", pid=pid)

    def frozen(self) -> bool:
        """Whether the loader is stopped (by ``freeze`` or by its own pause hook)."""
        return self.process.is_paused()

    def retire(
        self, timeout_s: float = 180.0, holds_table: Callable[[], bool] | None = None
    ) -> int | None:
        """Thaw a frozen loader that another loader has replaced and wait for it to step down.

        An exit with ``EXIT_NOT_OWNER`` (fenced off) is the expected end; any other exit is
        recorded as unexpected. A loader frozen from outside before its own pause hook fired
        freezes itself once more when it reaches the hook's point: it is thawed again.

        Args:
            timeout_s: How long to wait for the exit before killing it.
            holds_table: Asked every ``RETIRE_LEASE_POLL_S`` while waiting: True when the thawed
                loader holds the table again (its successor's lease lapsed, a catalog outage,
                and it took the table back). It then has nothing to step down from: it is
                killed at once, as it would be after ``timeout_s``.

        Returns:
            Its exit code, or None if it had to be killed.
        """
        with self._lock:
            self._expected_codes = {EXIT_NOT_OWNER}
            self.restart_on_exit = False  # replaced: it must not come back
            pid = self.process.pid
            self.process.resume()
        self.history.record("loader", "info", "thawed", pid=pid)
        deadline = time.monotonic() + timeout_s
        asked = time.monotonic()
        while not self.process.wait_exit(min(1.0, max(0.0, deadline - time.monotonic()))):
            if time.monotonic() >= deadline:
                self.kill()
                return None
            if holds_table is not None and time.monotonic() - asked >= RETIRE_LEASE_POLL_S:
                asked = time.monotonic()
                if holds_table():
                    self.history.record("loader", "info", "holds_table", pid=pid)
                    self.kill()
                    return None
            if self.process.is_paused():
                self.process.resume()
                self.history.record("loader", "info", "thawed", pid=pid, again=True)
        code = self.process.returncode()
        deadline = time.monotonic() + 5
        while self._seen_pid is not None and time.monotonic() < deadline:
            time.sleep(0.1)  # let the watcher record the exit first
        return code

    def close(self) -> None:
        """Stop watching and stop the loader if it runs."""
        self._watching = False
        if self.process.is_running():
            self.stop()
        if self._watcher is not None:
            self._watcher.join(timeout=5)
        self._settle_exited()

    # -- where faults landed -------------------------------------------------

    def last_trace(self) -> list[dict[str, Any]]:
        """The fault points the last start's trace records so far (none: nothing fired)."""
        return read_trace(self.trace_file) if self.trace_file is not None else []

    def _settle_exited(self) -> None:
        """Record the traces of the starts that have ended and are not recorded yet."""
        with self._lock:
            running = self.process.pid if self.process.is_running() else None
            for pid in [p for p in self._unsettled if p != running]:
                self._settle(self._unsettled.pop(pid))

    def _settle(self, start: _Start) -> None:
        fired = read_trace(start.trace)
        armed = armed_fault(start.hooks)
        where = {"loader_id": self.loader_id, "pid": start.pid, "start": start.number}
        for line in fired:
            self.history.record(
                "loader",
                "info",
                "fault_landed",
                **where,
                point=line.get("point"),
                landed=where_landed(line),
                action=line.get("action"),
                commits=line.get("commits"),
                at=line.get("time"),
                armed=armed,
            )
        if armed is not None and not fired:
            self.history.record("loader", "info", "fault_not_landed", **where, armed=armed)

    def is_running(self) -> bool:
        return self.process.is_running()

    def wait_exit(self, timeout_s: float) -> bool:
        """Wait until the loader has exited; True if it did within ``timeout_s``."""
        return self.process.wait_exit(timeout_s)

    # -- watching -----------------------------------------------------------

    def _ensure_watcher(self) -> None:
        if self._watcher is None or not self._watcher.is_alive():
            self._watching = True
            self._watcher = threading.Thread(target=self._watch, name="loader-watch", daemon=True)
            self._watcher.start()

    def _watch(self) -> None:
        while self._watching:
            with self._lock:
                running = self.process.is_running()
                started = self.process.started_pid
                seen_pid = self._seen_pid
                if running:
                    self._seen_pid = started if started is not None else seen_pid
                elif started is not None and seen_pid == started:
                    expected = self._record_exit(started)
                    if not expected and self.restart_on_exit and self._watching:
                        threading.Thread(target=self._restart_later, daemon=True).start()
            time.sleep(0.2)

    def _record_exit(self, pid: int) -> bool:
        """Record the exit of the last process started (pid ``pid``); True if expected."""
        code = self.process.returncode()
        expected = self._expected_exit or code in self._expected_codes
        record_exit(self.history, pid, code, expected, "" if expected else self.log_tail(30))
        self._seen_pid = None
        self._recorded_pid = pid
        self._settle_exited()
        return expected

    def _restart_later(self) -> None:
        time.sleep(2.0)
        try:
            self.history.record("loader", "info", "supervisor_restart")
            self.start(wait=False)
        except Exception as exc:  # recorded; the next watch round tries again
            self.history.record("loader", "fail", "supervisor_restart", error=str(exc))

    # -- logs ---------------------------------------------------------------

    def log_size(self) -> int:
        return log_size(self.process.log_file)

    def log_since(self, mark: int) -> str:
        return log_since(self.process.log_file, mark)

    def log_tail(self, lines: int = 40) -> str:
        return self.process.log_tail(lines)
