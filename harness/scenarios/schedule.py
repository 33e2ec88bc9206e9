"""A fault schedule: timed fault events, as data, played lane by lane against one world.

Each :class:`ScheduledFault` is a fault kind with its typed parameters, the earliest moment
(``at_s`` seconds after the schedule starts) it may be injected, and how long it stays before
it is healed (``duration_s``). Events of one lane (``harness.scenarios.faults``: loader,
infra, maintenance, schema, topic, traffic) run one after another, lanes run side by side, so
a loader kill can land during a Kafka pause and a burst. A schedule is what Hypothesis
generates and shrinks, and what a ``schedule`` step of a scenario file plays back.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from icefloe.harness.scenarios.faults import FAULTS, parse_fault
from icefloe.harness.scenarios.params import ParamError, as_dict

__all__ = ["LANES", "Schedule", "ScheduledFault"]

LANES = ("loader", "infra", "maintenance", "schema", "topic", "traffic")


@dataclass(frozen=True)
class ScheduledFault:
    """One event of a schedule.

    Attributes:
        at_s: Not before this many seconds after the schedule starts.
        kind: A registered fault kind.
        params: Its typed parameters.
        duration_s: Seconds between inject and heal.
    """

    at_s: float
    kind: str
    params: Any
    duration_s: float = 0.0

    @property
    def lane(self) -> str:
        return FAULTS[self.kind].lane

    def to_doc(self) -> dict[str, Any]:
        """The event as a TOML-ready table (what :meth:`Schedule.parse` reads back)."""
        doc: dict[str, Any] = {"at_s": round(self.at_s, 2), "fault": self.kind}
        if self.duration_s:
            doc["duration_s"] = round(self.duration_s, 2)
        doc.update({k: v for k, v in as_dict(self.params).items() if v is not None})
        return doc

    def describe(self) -> str:
        """One line: ``12.0 s kill_loader(at=commit) for 0.0 s``."""
        args = ", ".join(f"{k}={v}" for k, v in as_dict(self.params).items() if v is not None)
        return f"{self.at_s:6.1f} s {self.kind}({args}) for {self.duration_s:.1f} s"


@dataclass(frozen=True)
class Schedule:
    """Timed fault events.

    Attributes:
        faults: The events, in the order given (lanes sort their own by ``at_s``).
    """

    faults: tuple[ScheduledFault, ...]

    def lanes(self) -> dict[str, list[ScheduledFault]]:
        """Events per lane, each in time order."""
        out: dict[str, list[ScheduledFault]] = {}
        for event in sorted(self.faults, key=lambda f: f.at_s):
            out.setdefault(event.lane, []).append(event)
        return out

    def counts(self) -> Counter[str]:
        """Events per fault kind."""
        return Counter(f.kind for f in self.faults)

    def to_docs(self) -> list[dict[str, Any]]:
        return [f.to_doc() for f in sorted(self.faults, key=lambda f: f.at_s)]

    @classmethod
    def parse(cls, raw: Sequence[Mapping[str, Any]], where: str) -> Schedule:
        """Read ``[{at_s, fault, duration_s, ...params}, ...]``.

        Raises:
            ParamError: An event without ``at_s``, an unknown fault or a bad parameter.
        """
        events = []
        for i, table in enumerate(raw):
            fields = dict(table)
            here = f"{where}: event {i}"
            try:
                at_s = float(fields.pop("at_s"))
                duration_s = float(fields.pop("duration_s", 0.0))
            except (KeyError, TypeError, ValueError) as exc:
                raise ParamError(f"{here}: at_s and duration_s must be numbers") from exc
            if at_s < 0 or duration_s < 0:
                raise ParamError(f"{here}: at_s and duration_s must be >= 0")
            kind, params = parse_fault(fields, here)
            events.append(ScheduledFault(at_s, kind, params, duration_s))
        return cls(tuple(events))
