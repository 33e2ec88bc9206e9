"""Pacing a long run's loader faults by the loader's progress: the next one only after a commit.

A kill that lands while a restarted loader is still starting proves little about
exactly-once: nothing was planned, written or half-committed. On a busy machine a restarted
loader needs tens of seconds before its first commit, so loader faults spaced by the clock
(every 3-28 s) mostly hit start-up. :class:`LoaderPacer` holds each loader fault until the
current loader (the one restarted after a kill, or the successor a zombie fault started) has
logged a commit since the previous loader fault was injected, and then lets it come promptly:
after a random delay of up to ``delay_s`` (so a kill ``at = now`` lands anywhere in the next
batch, not always between two). The loader logs ``batch N: committed ...`` only after the
catalog accepted the batch's commit (``loader/commit/sink.py``); the take-over snapshot a loader
commits when it starts is no batch and does not count.

Only the soak paces its loader lane (the other lanes keep their clock); a scenario file's
``schedule`` plays its events at their times, as written.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["LoaderPacer", "Pace", "committed_batches"]

# What the loader logs once a batch's commit is accepted (loader/commit/sink.py).
_COMMITTED = re.compile(r"icefloe\.loader: batch (\d+): committed (\d+) rows")


def committed_batches(log: str) -> list[int]:
    """The batch ids the loader logged as committed in ``log`` (a part of its log file)."""
    return [int(m.group(1)) for m in _COMMITTED.finditer(log)]


@dataclass(frozen=True)
class Pace:
    """How loader faults are paced.

    Attributes:
        timeout_s: The longest wait for a commit; after it the fault comes anyway (recorded as
            ``paced`` with phase ``fail``, counted apart in the soak's report).
        delay_s: After the commit, a random delay of up to this many seconds.
        poll_s: How often the loader's log is read.
    """

    timeout_s: float = 240.0
    delay_s: float = 4.0
    poll_s: float = 0.5


class LoaderPacer:
    """Holds loader faults until the loader has committed since the previous one.

    Args:
        pace: The timeout and delay.
        clock: Monotonic seconds (a fake in tests).
    """

    def __init__(self, pace: Pace | None = None, clock: Callable[[], float] = time.monotonic):
        self.pace = pace or Pace()
        self._clock = clock
        self._loader: Any = None
        self._mark = 0

    def mark(self, loaders: Any) -> None:
        """Note where the current loader's log ends: call right after a loader fault's inject."""
        current = loaders.current
        self._loader, self._mark = current, current.log_size()

    def committed(self, loaders: Any) -> list[int]:
        """Batches the current loader committed since the mark (its whole log when it was
        started after the mark, as a zombie's successor is)."""
        current = loaders.current
        since = self._mark if current is self._loader else 0
        return committed_batches(current.log_since(since))

    def wait(self, run: Any, stopped: threading.Event) -> bool:
        """Block until the loader committed since the mark, then for the random delay.

        Records a ``loader``/``paced`` event: ``ok`` with the batch that opened the way, or
        ``fail`` when the timeout ran out first (the fault comes anyway).

        Args:
            run: The run (its ``loaders``, ``history`` and ``rng``).
            stopped: Set when the player stops; the wait ends at once.

        Returns:
            False when stopped while waiting (inject nothing more).
        """
        began = self._clock()
        batches: list[int] = []
        while not batches:
            batches = self.committed(run.loaders)
            if batches or self._clock() - began >= self.pace.timeout_s:
                break
            if stopped.wait(self.pace.poll_s):
                return False
        delay = run.rng.uniform(0.0, self.pace.delay_s)
        run.history.record(
            "loader",
            "ok" if batches else "fail",
            "paced",
            waited_s=round(self._clock() - began, 2),
            batch=batches[0] if batches else None,
            delay_s=round(delay, 2),
            timeout_s=self.pace.timeout_s,
        )
        return not stopped.wait(delay)
