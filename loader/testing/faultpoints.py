"""Fault points: test hooks that make the loader crash or freeze at a named moment of a batch.

Timed faults from outside (a SIGKILL "somewhere", a SIGSTOP "at some point") hit the dangerous
windows of a commit only by luck. These hooks put the loader into those windows for sure, so a
test or a scenario can prove what happens there. They are read once from the environment, armed
from the process's start (the first batch after a restart carries the fault: nothing waits for
a commit), cost nothing when unset, and are never set in production.

The points of a batch are the core's (``loader.commit.hooks.Point``, in order in ``POINTS``);
this module is the test kit's ``Hooks``: it fires a fault at a point, and switches off the parts
of the protocol ``ICEFLOE_TEST_DISABLE`` names. The loader imports it only when an
``ICEFLOE_TEST_*`` variable is set (``loader.run.job.hooks_from_env``). The signal of a fault at
``write`` comes ``ICEFLOE_TEST_PAUSE_DELAY_MS`` (default 200) into the Spark write of the
batch's data files (inside the data-file write when the batch is large enough), that of a fault
at ``commit_sent`` as long after the publishing commit's request was sent, from a timer.

Variables:

- ``ICEFLOE_TEST_KILL_AT=POINT``: SIGKILL the loader's process group at ``POINT`` of the first
  batch with records to write after ``ICEFLOE_TEST_KILL_AFTER_COMMITS`` commits (default 0).
- ``ICEFLOE_TEST_KILL_AFTER_COMMIT=N``: the same as ``ICEFLOE_TEST_KILL_AT=committed`` with N-1
  commits let through: SIGKILL right after the N-th commit.
- ``ICEFLOE_TEST_PAUSE_AT=POINT``: SIGSTOP the loader's process group (the Python driver and
  Spark's JVM) at ``POINT`` after ``ICEFLOE_TEST_PAUSE_AFTER_COMMITS`` commits (default 0). It
  stays frozen until someone sends SIGCONT, as a garbage-collection pause, a frozen VM or a
  stalled container would. Spark's Python daemon and its workers are not stopped: the daemon
  puts itself in a process group of its own (``pyspark/daemon.py``), and waits on the JVM.
- ``ICEFLOE_TEST_DISABLE=PART[,PART]``: switch off parts of the protocol (``SWITCHES``:
  ``exactly_once``, ``fencing``, ``resolve_lost_commits``; ``loader.commit.hooks``), for every
  start it is given to: a break of a scenario, which proves its check catches what goes wrong.
- ``ICEFLOE_TEST_TRACE=FILE``: each fault that fires appends one JSON line to FILE (point,
  landed, action, commits so far, process id, time), written and synced before the signal: the
  record of where a fault landed, which no outside observer can get right for a kill.

``point`` is the point the fault was armed at; ``landed`` is the last point the process had
reached when the signal went. They differ only for a timed point whose batch moved on before
its timer ran out: a kill armed at ``commit_sent`` whose commit landed first is traced with
``landed`` ``committed``, and is a kill after a commit. Readers of older traces, which have no
``landed``, take ``point`` (``where_landed``).
"""

from __future__ import annotations

import json
import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import get_args

from icefloe.loader.commit.hooks import Hooks, Point

__all__ = [
    "DISABLE_ENV",
    "KILL_AFTER_COMMITS_ENV",
    "KILL_AFTER_COMMIT_ENV",
    "KILL_AT_ENV",
    "PAUSE_AFTER_COMMITS_ENV",
    "PAUSE_AT_ENV",
    "PAUSE_DELAY_MS_ENV",
    "PAUSE_POINTS",
    "POINTS",
    "SWITCHES",
    "TRACE_ENV",
    "FaultPoints",
    "Point",
    "read_trace",
    "where_landed",
]

log = logging.getLogger("icefloe.loader")

KILL_AFTER_COMMIT_ENV = "ICEFLOE_TEST_KILL_AFTER_COMMIT"
KILL_AT_ENV = "ICEFLOE_TEST_KILL_AT"
KILL_AFTER_COMMITS_ENV = "ICEFLOE_TEST_KILL_AFTER_COMMITS"
PAUSE_AT_ENV = "ICEFLOE_TEST_PAUSE_AT"
PAUSE_AFTER_COMMITS_ENV = "ICEFLOE_TEST_PAUSE_AFTER_COMMITS"
PAUSE_DELAY_MS_ENV = "ICEFLOE_TEST_PAUSE_DELAY_MS"
TRACE_ENV = "ICEFLOE_TEST_TRACE"
DISABLE_ENV = "ICEFLOE_TEST_DISABLE"

SWITCHES = ("exactly_once", "fencing", "resolve_lost_commits")
"""The parts of the protocol ``DISABLE_ENV`` can switch off (the switches of ``Hooks``)."""

POINTS: tuple[Point, ...] = get_args(Point)
"""Every point, in the order a start and its first batch pass them."""

PAUSE_POINTS = ("planned", "write", "publish")
"""The points a scenario's ``pause_at`` draws from (``random``): inside a batch, before its
commit, where a frozen loader that thaws past its lease must be fenced."""

TIMED_POINTS = frozenset({"write", "commit_sent"})
"""Points whose signal comes from a timer, ``pause_delay_ms`` after the work began."""

KILL = "kill"
FREEZE = "freeze"


def _count(text: str | None, default: int | None) -> int | None:
    text = (text or "").strip()
    return int(text) if text.isdigit() else default


def _point(env: Mapping[str, str], name: str) -> str | None:
    point = (env.get(name) or "").strip() or None
    if point is not None and point not in POINTS:
        raise ValueError(f"{name}={point!r}: expected one of {POINTS}")
    return point


def _switches(env: Mapping[str, str]) -> frozenset[str]:
    named = {part.strip() for part in (env.get(DISABLE_ENV) or "").split(",") if part.strip()}
    unknown = sorted(named - set(SWITCHES))
    if unknown:
        raise ValueError(f"{DISABLE_ENV}: unknown {unknown}; expected some of {SWITCHES}")
    return frozenset(named)


def _signal_group(sig: int) -> None:
    """Signal the loader's process group (its JVM is in it; Spark's Python daemon is in a group
    of its own, and ends when the JVM does) if it leads one.

    A loader that does not lead its group (started inside another program's group) signals only
    itself, so the hook never reaches the program that started it.
    """
    if os.getpgrp() == os.getpid():
        os.killpg(os.getpgrp(), sig)
    else:
        os.kill(os.getpid(), sig)


@dataclass
class FaultPoints(Hooks):
    """The fault hooks one loader process honours (the test kit's ``Hooks``).

    Attributes:
        kill_at: the point to SIGKILL at, or ``None``.
        kill_after_commits: commits to let through before the kill can fire.
        pause_at: the point to freeze at, or ``None``.
        pause_after_commits: commits to let through before the pause can fire.
        pause_delay_ms: for the timed points: how long after the work began to signal.
        trace: the file each fired fault is recorded in, or ``None``.
        send: sends the signal (the loader's process group); a test passes one that does not.
        exactly_once, fencing, resolve_lost_commits: the parts of the protocol left on
            (``Hooks``).
    """

    kill_at: str | None = None
    kill_after_commits: int = 0
    pause_at: str | None = None
    pause_after_commits: int = 0
    pause_delay_ms: int = 200
    trace: str | None = None
    send: Callable[[int], None] = field(default=_signal_group, repr=False)
    exactly_once: bool = True
    fencing: bool = True
    resolve_lost_commits: bool = True
    _fired: bool = False
    _at: str | None = None
    # Held by a timer from its trace line to its signal, so the point it records as reached is
    # still the last one reached when the signal goes.
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> FaultPoints:
        """Read the hooks from the environment.

        Raises:
            ValueError: a point that is not one of ``POINTS``, a part not one of ``SWITCHES``.
        """
        env = os.environ if env is None else env
        off = _switches(env)
        kill_at = _point(env, KILL_AT_ENV)
        kill_after = _count(env.get(KILL_AFTER_COMMITS_ENV), 0) or 0
        after_commit = _count(env.get(KILL_AFTER_COMMIT_ENV), None)
        if kill_at is None and after_commit is not None:
            kill_at, kill_after = "committed", max(after_commit - 1, 0)
        return cls(
            kill_at=kill_at,
            kill_after_commits=kill_after,
            pause_at=_point(env, PAUSE_AT_ENV),
            pause_after_commits=_count(env.get(PAUSE_AFTER_COMMITS_ENV), 0) or 0,
            pause_delay_ms=_count(env.get(PAUSE_DELAY_MS_ENV), 200) or 0,
            trace=(env.get(TRACE_ENV) or "").strip() or None,
            exactly_once="exactly_once" not in off,
            fencing="fencing" not in off,
            resolve_lost_commits="resolve_lost_commits" not in off,
        )

    @property
    def kill_after_commit(self) -> int | None:
        """The N of ``ICEFLOE_TEST_KILL_AFTER_COMMIT``: kill right after the N-th commit."""
        return self.kill_after_commits + 1 if self.kill_at == "committed" else None

    def committed(self, commits: int) -> None:
        """Called after each commit, before the checkpoint (``commits`` counts it)."""
        self.reached("committed", commits - 1)

    def reached(self, point: Point, commits: int) -> None:
        """Called when a batch reaches ``point`` after ``commits`` commits of this process.

        Fires at most one fault per process. For the timed points the signal comes
        ``pause_delay_ms`` later from a timer thread, so the caller can start the work it is
        about to do; every call, also after that, moves the point the timer records as
        reached.
        """
        with self._lock:
            self._at = point
            if self._fired:
                return
            action = None
            if point == self.kill_at and commits >= self.kill_after_commits:
                action = KILL
            elif point == self.pause_at and commits >= self.pause_after_commits:
                action = FREEZE
            if action is None:
                return
            self._fired = True
        sig = signal.SIGKILL if action == KILL else signal.SIGSTOP
        if point in TIMED_POINTS:
            timer = threading.Timer(
                self.pause_delay_ms / 1000, self._fire_timed, (point, action, commits, sig)
            )
            timer.daemon = True
            timer.start()
        else:
            self._fire(point, point, action, commits, sig)

    def _fire_timed(self, point: str, action: str, commits: int, sig: int) -> None:
        with self._lock:
            self._fire(point, self._at or point, action, commits, sig)

    def _fire(self, point: str, landed: str, action: str, commits: int, sig: int) -> None:
        self._record(point, landed, action, commits)
        self.send(sig)

    def _record(self, point: str, landed: str, action: str, commits: int) -> None:
        line = {
            "point": point,
            "landed": landed,
            "action": action,
            "commits": commits,
            "pid": os.getpid(),
            "time": time.time(),
        }
        log.warning("fault point %s: %s at %s (after %s commits)", point, action, landed, commits)
        for handler in logging.getLogger().handlers:
            handler.flush()
        if self.trace is None:
            return
        fd = os.open(self.trace, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, (json.dumps(line) + "\n").encode())
            os.fsync(fd)
        finally:
            os.close(fd)


def read_trace(path: str | os.PathLike[str]) -> list[dict[str, object]]:
    """The faults a trace file records, oldest first (none when the file does not exist)."""
    try:
        with open(path, encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]
    except FileNotFoundError:
        return []


def where_landed(line: Mapping[str, object]) -> str | None:
    """The point a traced fault landed at: ``landed``, or ``point`` in a trace older than it.

    Args:
        line: A trace line (``read_trace``) or a ``loader``/``fault_landed`` event's data.

    Returns:
        The point, or None when the line names none.
    """
    at = line.get("landed") or line.get("point")
    return None if at is None else str(at)
