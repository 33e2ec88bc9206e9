"""History: the ordered record of everything a scenario run did and saw.

Publishes, loader starts, exits and kills, fault injections and heals, SQL statements and
reads all go into one history, each as an :class:`Event` with a wall-clock time. Checkers run
afterwards over the history (plus the publisher's ledger and what Trino and Kafka returned),
never during the run, so a verdict can be recomputed from the saved file.

Event kinds: ``publish``, ``loader``, ``fault``, ``sql``, ``read``, ``check`` (a verdict,
during the run or after it), ``step``, ``info``.
Phases follow the invoke/complete shape: ``invoke`` when an operation starts, ``ok`` or
``fail`` when it ends, ``info`` for facts with no duration.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

KINDS = ("publish", "loader", "fault", "sql", "read", "check", "step", "info")
PHASES = ("invoke", "ok", "fail", "info")

PROXY_FIRED = "catalog_proxy.fired"
"""The name of the ``fault``/``info`` event the catalog proxy records each time a rule fires
(``harness.stack.catalogproxy``), read back where catalog faults are counted."""


@dataclass(frozen=True)
class Event:
    """One entry of a history.

    Attributes:
        index: Position in the history, from 0.
        time: Wall-clock seconds since the epoch when it was recorded.
        kind: What sort of thing happened (see :data:`KINDS`).
        phase: ``invoke``, ``ok``, ``fail`` or ``info``.
        name: The operation, e.g. ``kill`` or ``alter``.
        data: JSON-ready details (statement text, counts, pids, error text).
    """

    index: int
    time: float
    kind: str
    phase: str
    name: str
    data: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The event as a JSON-ready dict."""
        return {
            "index": self.index,
            "time": round(self.time, 6),
            "kind": self.kind,
            "phase": self.phase,
            "name": self.name,
            "data": dict(self.data),
        }

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Event:
        """Build an event from :meth:`to_json` output.

        Args:
            doc: A decoded history line.

        Returns:
            The event.
        """
        return cls(doc["index"], doc["time"], doc["kind"], doc["phase"], doc["name"], doc["data"])


class History:
    """A thread-safe, append-only list of events, optionally mirrored to a JSON Lines file.

    Args:
        path: Where to append each event as it is recorded; ``None`` keeps it in memory only.
        clock: Source of wall-clock time (tests pass a fake).
        listener: Called with each new event (live progress output).
    """

    def __init__(
        self,
        path: Path | None = None,
        *,
        clock: Any = time.time,
        listener: Any = None,
    ) -> None:
        self._events: list[Event] = []
        self._lock = threading.Lock()
        self._clock = clock
        self._listener = listener
        self.path = path
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("")

    def record(self, kind: str, phase: str, name: str, /, **data: Any) -> Event:
        """Append an event now.

        Args:
            kind: One of :data:`KINDS`.
            phase: One of :data:`PHASES`.
            name: The operation's name.
            **data: JSON-ready details.

        Returns:
            The recorded event.

        Raises:
            ValueError: For an unknown kind or phase.
        """
        if kind not in KINDS or phase not in PHASES:
            raise ValueError(f"unknown event kind/phase {kind}/{phase}")
        with self._lock:
            event = Event(len(self._events), self._clock(), kind, phase, name, data)
            self._events.append(event)
            if self.path is not None:
                with self.path.open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps(event.to_json(), default=str) + "\n")
        if self._listener is not None:
            self._listener(event)
        return event

    @property
    def events(self) -> tuple[Event, ...]:
        """A snapshot of the events recorded so far."""
        with self._lock:
            return tuple(self._events)

    def __iter__(self) -> Iterator[Event]:
        return iter(self.events)

    def __len__(self) -> int:
        return len(self.events)

    @classmethod
    def of(cls, events: Iterable[tuple[float, str, str, str, Mapping[str, Any]]]) -> History:
        """Build an in-memory history from (time, kind, phase, name, data) tuples (tests, breaks).

        Args:
            events: The events in order.

        Returns:
            The history.
        """
        history = cls()
        for when, kind, phase, name, data in events:
            history._clock = lambda when=when: when
            history.record(kind, phase, name, **dict(data))
        history._clock = time.time
        return history

    @classmethod
    def read(cls, path: Path) -> History:
        """Load a history written by a run.

        Args:
            path: The JSON Lines file.

        Returns:
            The history (in memory; further records are not written back).
        """
        history = cls()
        with path.open(encoding="utf-8") as fh:
            history._events = [Event.from_json(json.loads(line)) for line in fh if line.strip()]
        return history


def select(
    events: Iterable[Event],
    kind: str | None = None,
    name: str | None = None,
    phase: str | None = None,
) -> list[Event]:
    """The events matching every given attribute.

    Args:
        events: A history or any iterable of events.
        kind: Keep only this kind.
        name: Keep only this operation name.
        phase: Keep only this phase.

    Returns:
        The matching events, in order.
    """
    return [
        e
        for e in events
        if (kind is None or e.kind == kind)
        and (name is None or e.name == name)
        and (phase is None or e.phase == phase)
    ]
