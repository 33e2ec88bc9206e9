"""Who used the machine's cores while a figure was measured.

A freshness figure on a 2-core machine depends on what else runs beside the loader: Trino
answering the bench's polls, Kafka, MinIO, the catalog and the bench's own publisher. A
``CoreMeter`` reads each process tree's CPU time (user and system, its descendants included) at
the start and the end of a window, and the machine's busy time, and gives each as cores: CPU
seconds over the window's wall seconds. A process that is not a local process here (a
container's, or one that ended) is left out rather than guessed; "machine" is every core busy,
whoever used it.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping

import psutil

__all__ = ["MACHINE", "CoreMeter", "lifetime_cpu_s", "tree_cpu_s"]

MACHINE = "machine"
"""The key of the machine's own busy time, every process included."""


def tree_cpu_s(
    proc: psutil.Process | None, *, descendants: bool = True, reaped: bool = False
) -> float | None:
    """CPU seconds (user and system) of ``proc`` and, unless told not to, its live descendants;
    with ``reaped``, also of the children each of them waited for after they ended. None when
    ``proc`` is None or gone."""
    if proc is None:
        return None
    try:
        total = _cpu_s(proc, reaped)
        children = proc.children(recursive=True) if descendants else []
    except psutil.Error:
        return None
    for child in children:
        with contextlib.suppress(psutil.Error):  # a child that ended meanwhile
            total += _cpu_s(child, reaped)
    return total


def _cpu_s(proc: psutil.Process, reaped: bool) -> float:
    times = proc.cpu_times()
    total = times.user + times.system
    if reaped:
        total += getattr(times, "children_user", 0.0) + getattr(times, "children_system", 0.0)
    return total


def lifetime_cpu_s(pid: int | None) -> float | None:
    """CPU seconds process ``pid`` and its descendants used since they started, those that
    ended and were waited for included (None: no such process).

    Read just before a system is stopped, this is what it used for a whole run: a loader's
    Python and its JVM (with Spark's launcher, which ends before the JVM starts), a sink's
    worker.
    """
    if pid is None:
        return None
    with contextlib.suppress(psutil.Error):
        return tree_cpu_s(psutil.Process(pid), reaped=True)
    return None


def _machine_busy_s() -> float:
    """The machine's CPU seconds spent running anything (idle, I/O wait and steal left out)."""
    t = psutil.cpu_times()
    return sum(getattr(t, f, 0.0) for f in ("user", "nice", "system", "irq", "softirq"))


class CoreMeter:
    """Cores used by named processes over one window.

    Args:
        processes: name -> a function giving the live process (or None), read at the start and
            at the end, so a process restarted in between is not counted.
        own: names whose descendants are not theirs to count (the bench's own process, whose
            child is the loader).
    """

    def __init__(
        self,
        processes: Mapping[str, Callable[[], psutil.Process | None]],
        own: frozenset[str] = frozenset(),
    ) -> None:
        self.processes = dict(processes)
        self.own = own
        self._started: float | None = None
        self._before: dict[str, tuple[int, float]] = {}
        self._machine = 0.0

    def _read(self, name: str) -> tuple[int, float] | None:
        # OSError: a container engine's API that did not answer (its errors are OSErrors).
        with contextlib.suppress(psutil.Error, OSError):
            proc = self.processes[name]()
            cpu = tree_cpu_s(proc, descendants=name not in self.own)
            if proc is not None and cpu is not None:
                return proc.pid, cpu
        return None

    def start(self) -> None:
        """Begin the window."""
        self._before = {n: r for n in self.processes if (r := self._read(n)) is not None}
        self._machine = _machine_busy_s()
        self._started = time.monotonic()

    def cores(self) -> dict[str, float]:
        """End the window: cores each process used over it, and the machine's (``MACHINE``).

        Raises:
            RuntimeError: ``start`` was not called.
        """
        if self._started is None:
            raise RuntimeError("the window never started")
        wall = time.monotonic() - self._started
        if wall <= 0:
            return {}
        used: dict[str, float] = {}
        for name, (pid, before) in self._before.items():
            after = self._read(name)
            if after is not None and after[0] == pid:
                used[name] = max(0.0, after[1] - before) / wall
        used[MACHINE] = max(0.0, _machine_busy_s() - self._machine) / wall
        return used
