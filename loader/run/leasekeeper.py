"""Keep a loader's lease alive while it starts.

A loader takes the table (``TableView.take_over``) before its warm-up, its Kafka reads and its
query's start, which take tens of seconds on a busy machine, longer than a short lease. Once the
query runs, batches and the job's maintenance loop renew the lease; until then nothing would,
and a lease that lapses mid-start lets a second loader take the table from one that is alive
(the first is then fenced at its first commit: safe, but not the "one loader per table" a
``ConcurrentLoader`` refusal promises). ``LeaseKeeper`` renews the lease from a thread for the
length of the start-up, with the same conditional commit the maintenance loop uses.
"""

from __future__ import annotations

import logging
import threading
from typing import Protocol

from icefloe.loader.commit.table import now_ms
from icefloe.loader.errors import Fenced

__all__ = ["LeaseKeeper"]

log = logging.getLogger("icefloe.loader")

JOIN_WAIT_S = 5.0
"""How long stopping the keeper waits for a renewal in flight (a paused catalog can hold one)."""


class _Renews(Protocol):
    def renew(self, instance: str, ttl_ms: int) -> bool: ...


class LeaseKeeper:
    """Renew a lease every third of its length from a daemon thread, until stopped or fenced.

    Use as a context manager around the start-up; ``fenced`` then holds the ``Fenced`` error if
    another process took the table meanwhile, and ``renewed_ms`` the time of the last renewal.
    """

    def __init__(self, view: _Renews, instance: str, ttl_ms: int, renewed_ms: int) -> None:
        self._view = view
        self._instance = instance
        self._ttl_ms = ttl_ms
        self.renewed_ms = renewed_ms
        self.fenced: Fenced | None = None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="icefloe-lease-keeper", daemon=True)

    def __enter__(self) -> LeaseKeeper:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._done.set()
        self._thread.join(JOIN_WAIT_S)

    def _run(self) -> None:
        interval_s = max(self._ttl_ms / 3000, 0.1)
        while not self._done.wait(interval_s):
            try:
                if self._view.renew(self._instance, self._ttl_ms):
                    self.renewed_ms = now_ms()
            except Fenced as exc:
                self.fenced = exc
                return
            except Exception as exc:  # the catalog may be restarting: try again next round
                log.warning("lease renewal during start-up failed: %s", exc)
