"""Start Spark's session from a thread while the loader takes the table over.

Spark's JVM takes 10-40 s to start on a small machine; the take-over (a catalog read and one
commit) takes 1-3 s. Run side by side, a loader refused the table says so at once, a loader
fenced during its start-up (frozen, then thawed after another loader took the table) stops as
soon as its lease keeper finds out instead of after the JVM's start, and a loader that goes on
is ready a few seconds sooner.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["SessionStart"]

T = TypeVar("T")

POLL_S = 0.2
"""How often a wait for the session asks whether it should give up."""


class SessionStart(Generic[T]):
    """``create()`` run in a daemon thread; :meth:`wait` for its result.

    A process that exits before the session is up leaves the thread behind; under pyspark the
    JVM it was starting exits when the Python process's pipe to it closes.
    """

    def __init__(self, create: Callable[[], T]) -> None:
        self._create = create
        self._done = threading.Event()
        self._result: T | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="icefloe-spark-start", daemon=True)

    def begin(self) -> SessionStart[T]:
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            self._result = self._create()
        except BaseException as exc:  # handed to the waiting thread
            self._error = exc
        finally:
            self._done.set()

    def wait(self, give_up: Callable[[], bool]) -> T | None:
        """The session once created, or None as soon as ``give_up()`` is true.

        Raises:
            Whatever creating the session raised.
        """
        while not self._done.wait(POLL_S):
            if give_up():
                return None
        if self._error is not None:
            raise self._error
        return self._result
