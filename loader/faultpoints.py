"""Fault points: test hooks that make the loader crash or freeze at a named moment of a batch.

Timed faults from outside (a SIGKILL "somewhere", a SIGSTOP "at some point") hit the dangerous
windows of a commit only by luck. These hooks put the loader into those windows for sure, so a
test or a scenario can prove what happens there. They are read once from the environment, cost
nothing when unset, and are never set in production.

- ``ICEFLOE_TEST_KILL_AFTER_COMMIT=N``: SIGKILL the loader's process group right after its
  N-th Iceberg commit, before Spark writes its checkpoint: the worst moment for exactly-once.
- ``ICEFLOE_TEST_PAUSE_AT=POINT``: SIGSTOP the loader's process group (Python driver, Spark's JVM
  and its Python workers) when the first batch with records to write reaches ``POINT``, after
  ``ICEFLOE_TEST_PAUSE_AFTER_COMMITS`` commits (default 0). It stays frozen until someone sends
  SIGCONT, as a garbage-collection pause, a frozen VM or a stalled container would. Points:

  * ``planned``: the table state is read and the lease checked, before decoding;
  * ``write``: ``ICEFLOE_TEST_PAUSE_DELAY_MS`` (default 200) into the Spark write of the batch's
    data files (inside the data-file write when the batch is large enough);
  * ``publish``: the batch's data files and staged snapshot are written, before the commit
    that publishes them.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = [
    "KILL_AFTER_COMMIT_ENV",
    "PAUSE_AFTER_COMMITS_ENV",
    "PAUSE_AT_ENV",
    "PAUSE_DELAY_MS_ENV",
    "PAUSE_POINTS",
    "FaultPoints",
]

KILL_AFTER_COMMIT_ENV = "ICEFLOE_TEST_KILL_AFTER_COMMIT"
PAUSE_AT_ENV = "ICEFLOE_TEST_PAUSE_AT"
PAUSE_AFTER_COMMITS_ENV = "ICEFLOE_TEST_PAUSE_AFTER_COMMITS"
PAUSE_DELAY_MS_ENV = "ICEFLOE_TEST_PAUSE_DELAY_MS"
PAUSE_POINTS = ("planned", "write", "publish")


def _count(text: str | None, default: int | None) -> int | None:
    text = (text or "").strip()
    return int(text) if text.isdigit() else default


@dataclass
class FaultPoints:
    """The fault hooks one loader process honours.

    Attributes:
        kill_after_commit: SIGKILL right after this many commits, or ``None``.
        pause_at: the point to freeze at once, or ``None``.
        pause_after_commits: commits to let through before the pause can fire.
        pause_delay_ms: for ``write``: how long into the write to freeze.
    """

    kill_after_commit: int | None = None
    pause_at: str | None = None
    pause_after_commits: int = 0
    pause_delay_ms: int = 200
    _paused: bool = False

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> FaultPoints:
        """Read the hooks from the environment.

        Raises:
            ValueError: ``ICEFLOE_TEST_PAUSE_AT`` names no known point.
        """
        env = os.environ if env is None else env
        pause_at = (env.get(PAUSE_AT_ENV) or "").strip() or None
        if pause_at is not None and pause_at not in PAUSE_POINTS:
            raise ValueError(f"{PAUSE_AT_ENV}={pause_at!r}: expected one of {PAUSE_POINTS}")
        return cls(
            kill_after_commit=_count(env.get(KILL_AFTER_COMMIT_ENV), None),
            pause_at=pause_at,
            pause_after_commits=_count(env.get(PAUSE_AFTER_COMMITS_ENV), 0) or 0,
            pause_delay_ms=_count(env.get(PAUSE_DELAY_MS_ENV), 200) or 0,
        )

    def committed(self, commits: int) -> None:
        """Called after each commit: the kill hook fires here."""
        if self.kill_after_commit is not None and commits >= self.kill_after_commit:
            _signal_group(signal.SIGKILL)

    def reached(self, point: str, commits: int) -> None:
        """Called when a batch reaches ``point``; freezes the process group if armed.

        For ``write`` the freeze comes ``pause_delay_ms`` later from a timer thread, so the
        caller can start the write it is about to make.
        """
        if self._paused or point != self.pause_at or commits < self.pause_after_commits:
            return
        self._paused = True
        if point == "write":
            timer = threading.Timer(self.pause_delay_ms / 1000, _signal_group, (signal.SIGSTOP,))
            timer.daemon = True
            timer.start()
        else:
            _signal_group(signal.SIGSTOP)


def _signal_group(sig: int) -> None:
    """Signal the loader's process group (its JVM and Python workers are in it) if it leads one.

    A loader that does not lead its group (started inside another program's group) signals only
    itself, so the hook never reaches the program that started it.
    """
    if os.getpgrp() == os.getpid():
        os.killpg(os.getpgrp(), sig)
    else:
        os.kill(os.getpid(), sig)
